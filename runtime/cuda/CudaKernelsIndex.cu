//===- CudaKernelsIndex.cu - gather_elements, scatters, gather_nd, top_k --===//
//
// Ports of runtime/cpu/KernelsIndex.cpp. Gathers run one thread per output
// element. Scatters copy `data`, then give each thread a set of positions
// no other thread writes (a line off the axis for scatter_elements, one
// slice element per batch for scatter_nd) and apply that set's updates in
// index order: no atomics, so repeated indices combine exactly as on the
// CPU and every run is the same bit for bit. top_k selects per line, k
// passes over it (each pass takes the best entry ranked after the previous
// one). A bad index raises CudaErrKind::Index with its flat position.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

namespace {
/// The element kernels' geometry: the indices' dims and the data's strides
/// (rank <= kCudaMaxRank, checked by prepare_index_rank).
struct ElemGeom {
  int rank = 0, axis = 0;
  long long n = 0; // data.shape[axis]
  long long idims[kCudaMaxRank] = {};
  long long dstrides[kCudaMaxRank] = {};
};

/// gather_nd/scatter_nd: tuples of m indices into dims [b, b + m).
struct NdGeom {
  int m = 0;
  long long tuplesPerBatch = 0, batches = 0, inner = 0, batchStride = 0;
  long long dims[kCudaMaxRank] = {};    // data.shape[b + j]
  long long strides[kCudaMaxRank] = {}; // their strides in data
};
} // namespace

static int64_t product(const std::vector<int64_t> &shape, size_t from,
                       size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    n *= shape[i];
  return n;
}

static ElemGeom elemGeom(const TensorView &X, const TensorView &I,
                         int64_t axis) {
  ElemGeom g;
  g.rank = static_cast<int>(X.rank());
  g.axis = static_cast<int>(axis);
  g.n = X.dim(axis);
  long long s = 1;
  for (int d = g.rank; d-- > 0;) {
    g.idims[d] = I.dim(d);
    g.dstrides[d] = s;
    s *= X.dim(d);
  }
  return g;
}

static NdGeom ndGeom(const TensorView &X, const TensorView &I, int64_t b) {
  NdGeom g;
  g.m = static_cast<int>(I.dim(I.rank() - 1));
  long long tuples = I.numel / g.m;
  g.batches = product(*X.shape, 0, b);
  g.tuplesPerBatch = g.batches ? tuples / g.batches : 0;
  g.inner = product(*X.shape, b + g.m, X.rank());
  g.batchStride = product(*X.shape, b, X.rank());
  for (int j = 0; j < g.m; ++j) {
    g.dims[j] = X.dim(b + j);
    g.strides[j] = product(*X.shape, b + j + 1, X.rank());
  }
  return g;
}

/// Index j wrapped into [0, n), or -1 after raising the error.
__device__ __forceinline__ long long
wrapIndex(const long long *idx, long long j, long long n, long long *err) {
  long long k = idx[j];
  if (k < -n || k >= n) {
    raiseError(err, j, k, n);
    return -1;
  }
  return k < 0 ? k + n : k;
}

/// Where position `j` of the indices lands in the data (its axis
/// coordinate replaced by index `k`).
__device__ __forceinline__ long long elemOffset(const ElemGeom &g, long long j,
                                                long long k) {
  long long off = 0;
  for (int d = g.rank; d-- > 0;) {
    long long c = j % g.idims[d];
    j /= g.idims[d];
    off += (d == g.axis ? k : c) * g.dstrides[d];
  }
  return off;
}

template <class T> __device__ __forceinline__ void combine(T &dst, T v, int r) {
  switch (r) {
  case 0:
    dst = v;
    break;
  case 1:
    dst += v;
    break;
  case 2:
    dst *= v;
    break;
  case 3: // NaN wins, as numpy.maximum
    if (v > dst || v != v)
      dst = v;
    break;
  default:
    if (v < dst || v != v)
      dst = v;
    break;
  }
}

/// Runs f(T) with the word type of a plain move or the value type (f32,
/// i64) of a reducing scatter.
template <class F> static void byScatterType(DType t, int64_t r, F &&f) {
  if (r == 0)
    byElementSize(t, [&](auto w) { f(typename decltype(w)::T()); });
  else if (t == DType::F32)
    f(float());
  else
    f((long long)0);
}

static void copyData(const CudaArgs &a, const TensorView &X,
                     const TensorView &Y) {
  size_t bytes = static_cast<size_t>(Y.numel) * dtypeSize(Y.dtype);
  if (X.data != Y.data && bytes)
    TCC_CUDA_CHECK(cudaMemcpyAsync(Y.data, X.data, bytes,
                                   cudaMemcpyDeviceToDevice, a.stream));
}

//===----------------------------------------------------------------------===//
// gather_elements, scatter_elements
//===----------------------------------------------------------------------===//

template <class T>
__global__ void gatherElementsKernel(const T *x, const long long *idx, T *y,
                                     long long count, ElemGeom g,
                                     long long *err) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       j < count; j += (long long)gridDim.x * blockDim.x) {
    long long k = wrapIndex(idx, j, g.n, err);
    y[j] = k < 0 ? T(0) : x[elemOffset(g, j, k)];
  }
}

void launch_gather_elements(const CudaArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  ElemGeom g =
      elemGeom(X, I, abi::attrs<abi::KernelId::GatherElements>(a.instr).axis);
  byElementSize(Y.dtype, [&](auto w) {
    using T = typename decltype(w)::T;
    TCC_LAUNCH(gatherElementsKernel<T>, gridFor(Y.numel, kBlock, a.smCount),
               kBlock, a.stream)
    (static_cast<const T *>(X.data), static_cast<const long long *>(I.data),
     static_cast<T *>(Y.data), Y.numel, g, a.err);
  });
  checkLaunch(a.instr.kernel.c_str());
}

/// One thread per line of the indices off the axis: its updates, in index
/// order, land on the data's matching line, which no other thread touches.
template <class T>
__global__ void scatterElementsKernel(const long long *idx, const T *u, T *y,
                                      long long lines, long long inner,
                                      ElemGeom g, int r, long long *err) {
  long long len = g.idims[g.axis];
  for (long long l = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       l < lines; l += (long long)gridDim.x * blockDim.x) {
    long long o = l / inner, i = l % inner;
    for (long long t = 0; t < len; ++t) {
      long long j = (o * len + t) * inner + i;
      long long k = wrapIndex(idx, j, g.n, err);
      if (k >= 0)
        combine(y[elemOffset(g, j, k)], u[j], r);
    }
  }
}

void launch_scatter_elements(const CudaArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &U = a.in[2], &Y = a.out[0];
  abi::ScatterAttrs at = abi::attrs<abi::KernelId::ScatterElements>(a.instr);
  copyData(a, X, Y);
  if (I.numel == 0)
    return;
  ElemGeom g = elemGeom(X, I, at.axis);
  long long inner = product(*I.shape, at.axis + 1, I.rank());
  long long lines = I.numel / I.dim(at.axis);
  byScatterType(X.dtype, at.reduction, [&](auto t) {
    using T = decltype(t);
    TCC_LAUNCH(scatterElementsKernel<T>, gridFor(lines, kBlock, a.smCount),
               kBlock, a.stream)
    (static_cast<const long long *>(I.data), static_cast<const T *>(U.data),
     static_cast<T *>(Y.data), lines, inner, g, int(at.reduction), a.err);
  });
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// gather_nd, scatter_nd
//===----------------------------------------------------------------------===//

/// Where tuple `t` (of batch t / tuplesPerBatch) starts in the data, or -1
/// after raising the error of a bad index.
__device__ __forceinline__ long long tupleOffset(const NdGeom &g,
                                                 const long long *idx,
                                                 long long t, long long *err) {
  long long off = (t / g.tuplesPerBatch) * g.batchStride;
  for (int j = 0; j < g.m; ++j) {
    long long k = wrapIndex(idx, t * g.m + j, g.dims[j], err);
    if (k < 0)
      return -1;
    off += k * g.strides[j];
  }
  return off;
}

template <class T>
__global__ void gatherNdKernel(const T *x, const long long *idx, T *y,
                               long long count, NdGeom g, long long *err) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       e < count; e += (long long)gridDim.x * blockDim.x) {
    long long off = tupleOffset(g, idx, e / g.inner, err);
    y[e] = off < 0 ? T(0) : x[off + e % g.inner];
  }
}

void launch_gather_nd(const CudaArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  NdGeom g =
      ndGeom(X, I, abi::attrs<abi::KernelId::GatherNd>(a.instr).batchDims);
  byElementSize(Y.dtype, [&](auto w) {
    using T = typename decltype(w)::T;
    TCC_LAUNCH(gatherNdKernel<T>, gridFor(Y.numel, kBlock, a.smCount), kBlock,
               a.stream)
    (static_cast<const T *>(X.data), static_cast<const long long *>(I.data),
     static_cast<T *>(Y.data), Y.numel, g, a.err);
  });
  checkLaunch(a.instr.kernel.c_str());
}

/// One thread per (batch, slice element): the batch's tuples in order.
template <class T>
__global__ void scatterNdKernel(const long long *idx, const T *u, T *y,
                                NdGeom g, int r, long long *err) {
  long long total = g.batches * g.inner;
  for (long long l = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       l < total; l += (long long)gridDim.x * blockDim.x) {
    long long bi = l / g.inner, i = l % g.inner;
    for (long long t = bi * g.tuplesPerBatch; t < (bi + 1) * g.tuplesPerBatch;
         ++t) {
      long long off = tupleOffset(g, idx, t, err);
      if (off >= 0)
        combine(y[off + i], u[t * g.inner + i], r);
    }
  }
}

void launch_scatter_nd(const CudaArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &U = a.in[2], &Y = a.out[0];
  abi::ScatterNdAttrs at = abi::attrs<abi::KernelId::ScatterNd>(a.instr);
  copyData(a, X, Y);
  if (I.numel == 0 || U.numel == 0)
    return;
  NdGeom g = ndGeom(X, I, at.batchDims);
  byScatterType(X.dtype, at.reduction, [&](auto t) {
    using T = decltype(t);
    TCC_LAUNCH(scatterNdKernel<T>,
               gridFor(g.batches * g.inner, kBlock, a.smCount), kBlock,
               a.stream)
    (static_cast<const long long *>(I.data), static_cast<const T *>(U.data),
     static_cast<T *>(Y.data), g, int(at.reduction), a.err);
  });
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// top_k
//===----------------------------------------------------------------------===//

/// Whether entry p ranks before q: more extreme first (NaN the largest),
/// equal values by lower index.
template <class T>
__device__ __forceinline__ bool ranksBefore(T a, long long p, T b, long long q,
                                            bool largest) {
  bool an = a != a, bn = b != b;
  if (an || bn)
    return an && bn ? p < q : (largest ? an : bn);
  if (a == b)
    return p < q;
  return largest ? a > b : a < b;
}

template <class T>
__global__ void topKKernel(const T *x, long long *y, long long lines,
                           long long n, long long k, long long inner,
                           bool largest) {
  for (long long l = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       l < lines; l += (long long)gridDim.x * blockDim.x) {
    const T *line = x + (l / inner) * n * inner + l % inner;
    long long *out = y + (l / inner) * k * inner + l % inner;
    long long prev = -1;
    for (long long t = 0; t < k; ++t) {
      long long best = -1;
      for (long long p = 0; p < n; ++p) {
        T v = line[p * inner];
        if (prev >= 0 && !ranksBefore(line[prev * inner], prev, v, p, largest))
          continue; // ranked at or before the previous pick
        if (best < 0 || ranksBefore(v, p, line[best * inner], best, largest))
          best = p;
      }
      out[t * inner] = best;
      prev = best;
    }
  }
}

void launch_top_k(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (Y.numel == 0)
    return;
  abi::TopKAttrs at = abi::attrs<abi::KernelId::TopK>(a.instr);
  long long n = X.dim(at.axis), k = Y.dim(at.axis);
  long long inner = product(*X.shape, at.axis + 1, X.rank());
  long long lines = Y.numel / k;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    TCC_LAUNCH(topKKernel<T>, gridFor(lines, kBlock, a.smCount), kBlock,
               a.stream)
    (static_cast<const T *>(X.data), static_cast<long long *>(Y.data), lines, n,
     k, inner, at.largest);
  };
  if (X.dtype == DType::F32)
    run(0.0f);
  else
    run(0ll);
  checkLaunch(a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda
