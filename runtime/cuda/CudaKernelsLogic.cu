//===- CudaKernelsLogic.cu - compare, logic, extrema, mod, arg_max/min ----===//
//
// Ports of runtime/cpu/KernelsLogic.cpp, test for test: bools are i64 words
// 0/1, maximum/minimum and the reductions propagate NaN, arg_max/arg_min
// take a NaN as the extremum. Float operands of any width load as f32 (the
// CPU's half adapter widens them alike) and a 16-bit result is rounded once
// on store. The reductions and arg reductions run one thread per output
// over its reduced elements: they are small in the models these ops come
// from (masks, pooled features), so no block-wide tree is worth it.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/Mod.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <algorithm>

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;
using K = abi::KernelId;

/// Strides of the output and both operands of a broadcasting binary call.
static Strided<3> binaryStrides(const CudaArgs &a) {
  const TensorView &Y = a.out[0];
  size_t rank = Y.rank();
  return makeStrided<3>(*Y.shape,
                        {abi::contiguousStrides(*Y.shape),
                         abi::broadcastStrides(*a.in[0].shape, rank),
                         abi::broadcastStrides(*a.in[1].shape, rank)});
}

#define TCC_GRID_STRIDE(i, n)                                                  \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;  \
       i += (long long)gridDim.x * blockDim.x)

//===----------------------------------------------------------------------===//
// compare, logic
//===----------------------------------------------------------------------===//

template <class T>
__device__ __forceinline__ bool comparePred(int p, T l, T r) {
  switch (p) {
  case 0:
    return l == r;
  case 1:
    return l < r;
  case 2:
    return l <= r;
  case 3:
    return l > r;
  default:
    return l >= r;
  }
}

__global__ void compareKernel(const void *l, const void *r, int t, int pred,
                              long long *y, long long n, Strided<3> s) {
  TCC_GRID_STRIDE(i, n) {
    long long off[3];
    s.offsets(i, off);
    bool v = t == kDtI64
                 ? comparePred(pred, static_cast<const long long *>(l)[off[1]],
                               static_cast<const long long *>(r)[off[2]])
                 : comparePred(pred, ldf(l, t, off[1]), ldf(r, t, off[2]));
    y[off[0]] = v ? 1 : 0;
  }
}

void launch_compare(const CudaArgs &a) {
  const TensorView &Y = a.out[0];
  if (Y.numel == 0)
    return;
  int pred = static_cast<int>(abi::attrs<K::Compare>(a.instr).predicate);
  TCC_LAUNCH(compareKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (a.in[0].data, a.in[1].data, dt(a.in[0]), pred,
   static_cast<long long *>(Y.data), Y.numel, binaryStrides(a));
  checkLaunch(a.instr.kernel.c_str());
}

__global__ void logicKernel(const long long *l, const long long *r, int kind,
                            long long *y, long long n, Strided<3> s) {
  TCC_GRID_STRIDE(i, n) {
    long long off[3];
    s.offsets(i, off);
    bool a = l[off[1]] != 0, b = r[off[2]] != 0;
    bool v = kind == 0 ? (a && b) : kind == 1 ? (a || b) : (a != b);
    y[off[0]] = v ? 1 : 0;
  }
}

void launch_logic(const CudaArgs &a) {
  const TensorView &Y = a.out[0];
  if (Y.numel == 0)
    return;
  int kind = static_cast<int>(abi::attrs<K::Logic>(a.instr).kind);
  TCC_LAUNCH(logicKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock, a.stream)
  (static_cast<const long long *>(a.in[0].data),
   static_cast<const long long *>(a.in[1].data), kind,
   static_cast<long long *>(Y.data), Y.numel, binaryStrides(a));
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// maximum, minimum
//===----------------------------------------------------------------------===//

/// Whether v replaces acc in a max (or min) that propagates NaN.
template <class T>
__device__ __forceinline__ bool wins(bool isMax, T v, T acc) {
  return (isMax ? v > acc : v < acc) || v != v;
}

__global__ void extremumKernel(const void *l, const void *r, void *y, int t,
                               bool isMax, long long n, Strided<3> s) {
  TCC_GRID_STRIDE(i, n) {
    long long off[3];
    s.offsets(i, off);
    if (t == kDtI64) {
      long long a = static_cast<const long long *>(l)[off[1]],
                b = static_cast<const long long *>(r)[off[2]];
      static_cast<long long *>(y)[off[0]] = wins(isMax, a, b) ? a : b;
    } else {
      // l when it wins or is NaN, else r (NaN or not): the CPU's maxOf.
      float a = ldf(l, t, off[1]), b = ldf(r, t, off[2]);
      stf(y, t, off[0], wins(isMax, a, b) ? a : b);
    }
  }
}

static void launchExtremum(const CudaArgs &a, bool isMax) {
  const TensorView &Y = a.out[0];
  if (Y.numel == 0)
    return;
  TCC_LAUNCH(extremumKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (a.in[0].data, a.in[1].data, Y.data, dt(Y), isMax, Y.numel, binaryStrides(a));
  checkLaunch(a.instr.kernel.c_str());
}

void launch_maximum(const CudaArgs &a) { launchExtremum(a, true); }
void launch_minimum(const CudaArgs &a) { launchExtremum(a, false); }

//===----------------------------------------------------------------------===//
// mod
//===----------------------------------------------------------------------===//

__global__ void modKernel(const void *l, const void *r, void *y, int t,
                          int fmod, long long n, Strided<3> s) {
  TCC_GRID_STRIDE(i, n) {
    long long off[3];
    s.offsets(i, off);
    if (t == kDtI64)
      static_cast<long long *>(y)[off[0]] =
          tcc_mod_i64(static_cast<const long long *>(l)[off[1]],
                      static_cast<const long long *>(r)[off[2]], fmod);
    else
      stf(y, t, off[0], tcc_mod(ldf(l, t, off[1]), ldf(r, t, off[2]), fmod));
  }
}

void launch_mod(const CudaArgs &a) {
  const TensorView &Y = a.out[0];
  if (Y.numel == 0)
    return;
  int fmod = abi::attrs<K::Mod>(a.instr).fmod ? 1 : 0;
  TCC_LAUNCH(modKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, a.in[1].data, Y.data, dt(Y), fmod, Y.numel, binaryStrides(a));
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// reduce_max, reduce_min
//===----------------------------------------------------------------------===//

__global__ void reduceExtremumKernel(const void *x, int tx, void *y, int ty,
                                     bool isMax, long long outputs,
                                     long long count, Strided<1> kept,
                                     Strided<1> red) {
  TCC_GRID_STRIDE(o, outputs) {
    long long base[1];
    kept.offsets(o, base);
    float acc = isMax ? -INFINITY : INFINITY;
    for (long long k = 0; k < count; ++k) {
      long long off[1];
      red.offsets(k, off);
      float v = ldf(x, tx, base[0] + off[0]);
      if (wins(isMax, v, acc))
        acc = v;
    }
    stf(y, ty, o, acc);
  }
}

/// The kept and reduced dims of x with their strides.
static void splitAxes(const std::vector<int64_t> &xs, const abi::AttrList &axes,
                      std::vector<int64_t> &keptShape,
                      std::vector<int64_t> &keptSt,
                      std::vector<int64_t> &redShape,
                      std::vector<int64_t> &redSt) {
  std::vector<int64_t> xst = abi::contiguousStrides(xs);
  for (size_t d = 0; d < xs.size(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), int64_t(d));
    (reduced ? redShape : keptShape).push_back(xs[d]);
    (reduced ? redSt : keptSt).push_back(xst[d]);
  }
}

// Also reduce_prod and reduce_prod_grad.
int64_t prepare_reduce_extremum(const Instr &in,
                                const std::vector<TensorInfo> &t) {
  const TensorInfo &x = t[in.inputs[0]];
  if (x.shape.size() > static_cast<size_t>(kCudaMaxRank))
    throw Error("no CUDA kernel for rank " + std::to_string(x.shape.size()) +
                " operands ('" + x.name + "'); the CUDA kernels take rank <= " +
                std::to_string(kCudaMaxRank));
  return 0;
}

void launch_reduce_extremum(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  std::vector<int64_t> keptShape, keptSt, redShape, redSt;
  splitAxes(*X.shape, abi::attrsOf<abi::AxesAttrs>(a.instr).axes, keptShape,
            keptSt, redShape, redSt);
  long long count = 1;
  for (int64_t d : redShape)
    count *= d;
  bool isMax = abi::is(a.instr, K::ReduceMax);
  TCC_LAUNCH(reduceExtremumKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (X.data, dt(X), Y.data, dt(Y), isMax, Y.numel, X.numel == 0 ? 0 : count,
   makeStrided<1>(keptShape, {keptSt}), makeStrided<1>(redShape, {redSt}));
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// arg_max, arg_min
//===----------------------------------------------------------------------===//

/// KernelsLogic.cpp's replaces(): better, a first NaN, or equal (NaN as
/// NaN) with select_last_index.
template <class T>
__device__ __forceinline__ bool argReplaces(bool isMax, T v, T best,
                                            bool last) {
  if (best != best)
    return last && v != v;
  if (v != v)
    return true;
  return (isMax ? v > best : v < best) || (last && v == best);
}

__global__ void argKernel(const void *x, int tx, long long *y, bool isMax,
                          bool last, long long outputs, long long n,
                          long long inner) {
  TCC_GRID_STRIDE(o, outputs) {
    long long base = (o / inner) * n * inner + o % inner;
    long long best = 0;
    if (tx == kDtI64) {
      const long long *p = static_cast<const long long *>(x) + base;
      for (long long k = 1; k < n; ++k)
        if (argReplaces(isMax, p[k * inner], p[best * inner], last))
          best = k;
    } else {
      for (long long k = 1; k < n; ++k)
        if (argReplaces(isMax, ldf(x, tx, base + k * inner),
                        ldf(x, tx, base + best * inner), last))
          best = k;
    }
    y[o] = best;
  }
}

void launch_arg_extremum(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  abi::ArgAttrs at = abi::attrsOf<abi::ArgAttrs>(a.instr);
  long long n = X.dim(at.axis), inner = 1;
  for (size_t d = at.axis + 1; d < X.rank(); ++d)
    inner *= X.dim(d);
  bool isMax = abi::is(a.instr, K::ArgMax);
  TCC_LAUNCH(argKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock, a.stream)
  (X.data, dt(X), static_cast<long long *>(Y.data), isMax, at.selectLast,
   Y.numel, n, inner);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// reduce_prod, reduce_prod_grad, cumsum
//===----------------------------------------------------------------------===//

// One thread per group, its elements in the CPU kernels' order
// (runtime/cpu/KernelsReduce.cpp), so both round alike.
__global__ void reduceProdKernel(const void *x, int tx, void *y, int ty,
                                 long long outputs, long long count,
                                 Strided<1> kept, Strided<1> red) {
  TCC_GRID_STRIDE(o, outputs) {
    long long base[1];
    kept.offsets(o, base);
    float p = 1.0f;
    for (long long k = 0; k < count; ++k) {
      long long off[1];
      red.offsets(k, off);
      p *= ldf(x, tx, base[0] + off[0]);
    }
    stf(y, ty, o, p);
  }
}

// dx = dy * prefix product * suffix product: the prefixes are written to dx
// first, then multiplied by the suffixes on the way back.
__global__ void reduceProdGradKernel(const void *dy, int tdy, const void *x,
                                     int tx, void *dx, int tdx,
                                     long long outputs, long long count,
                                     Strided<1> kept, Strided<1> red) {
  TCC_GRID_STRIDE(o, outputs) {
    long long base[1];
    kept.offsets(o, base);
    float p = 1.0f;
    for (long long k = 0; k < count; ++k) {
      long long off[1];
      red.offsets(k, off);
      stf(dx, tdx, base[0] + off[0], p);
      p *= ldf(x, tx, base[0] + off[0]);
    }
    float g = ldf(dy, tdy, o), s = 1.0f;
    for (long long k = count; k-- > 0;) {
      long long off[1];
      red.offsets(k, off);
      long long at = base[0] + off[0];
      stf(dx, tdx, at, g * (ldf(dx, tdx, at) * s));
      s *= ldf(x, tx, at);
    }
  }
}

static void launchProd(const CudaArgs &a, bool grad) {
  const TensorView &X = a.in[grad ? 1 : 0], &Y = a.out[0];
  long long groups = grad ? a.in[0].numel : Y.numel;
  if (groups == 0 || (grad && X.numel == 0))
    return;
  std::vector<int64_t> keptShape, keptSt, redShape, redSt;
  splitAxes(*X.shape, abi::attrsOf<abi::AxesAttrs>(a.instr).axes, keptShape,
            keptSt, redShape, redSt);
  long long count = 1;
  for (int64_t d : redShape)
    count *= d;
  Strided<1> kept = makeStrided<1>(keptShape, {keptSt}),
             red = makeStrided<1>(redShape, {redSt});
  dim3 grid = gridFor(groups, kBlock, a.smCount);
  if (grad) {
    const TensorView &DY = a.in[0];
    TCC_LAUNCH(reduceProdGradKernel, grid, kBlock, a.stream)
    (DY.data, dt(DY), X.data, dt(X), Y.data, dt(Y), groups, count, kept, red);
  } else {
    TCC_LAUNCH(reduceProdKernel, grid, kBlock, a.stream)
    (X.data, dt(X), Y.data, dt(Y), groups, X.numel == 0 ? 0 : count, kept,
     red);
  }
  checkLaunch(a.instr.kernel.c_str());
}

void launch_reduce_prod(const CudaArgs &a) { launchProd(a, false); }
void launch_reduce_prod_grad(const CudaArgs &a) { launchProd(a, true); }

// One thread per line along the axis, summing in order as the CPU does.
__global__ void cumsumKernel(const void *x, int tx, void *y, int ty,
                             long long lines, long long n, long long inner,
                             bool exclusive, bool reverse) {
  TCC_GRID_STRIDE(l, lines) {
    long long base = (l / inner) * n * inner + l % inner;
    float acc = 0.0f;
    for (long long j = 0; j < n; ++j) {
      long long off = base + (reverse ? n - 1 - j : j) * inner;
      float v = ldf(x, tx, off);
      if (exclusive) {
        stf(y, ty, off, acc);
        acc += v;
      } else {
        acc += v;
        stf(y, ty, off, acc);
      }
    }
  }
}

void launch_cumsum(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (X.numel == 0)
    return;
  abi::CumSumAttrs at = abi::attrsOf<abi::CumSumAttrs>(a.instr);
  long long n = X.dim(at.axis), inner = 1;
  for (size_t d = at.axis + 1; d < X.rank(); ++d)
    inner *= X.dim(d);
  long long lines = X.numel / n;
  TCC_LAUNCH(cumsumKernel, gridFor(lines, kBlock, a.smCount), kBlock, a.stream)
  (X.data, dt(X), Y.data, dt(Y), lines, n, inner, at.exclusive, at.reverse);
  checkLaunch(a.instr.kernel.c_str());
}

#undef TCC_GRID_STRIDE

} // namespace tcc::rt::cuda
