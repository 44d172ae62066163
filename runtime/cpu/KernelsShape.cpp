//===- KernelsShape.cpp - gather, concat, slice, where, cast --------------===//
//
// Data movement is dtype-agnostic: f32 and i64 (which also holds bools as
// 0/1) are moved as 4- or 8-byte words. Gather indices are data, not part of
// the artifact, so they are range-checked as they are read and a bad one is
// an Error naming its value and position.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tcc::rt::kernels {

static int64_t product(const std::vector<int64_t> &shape, size_t from,
                       size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    n *= shape[i];
  return n;
}

/// Calls f(T) with the C++ type stored for `dtype`.
template <class F> static void byDType(DType dtype, F &&f) {
  if (dtype == DType::F32)
    f(float());
  else
    f(int64_t());
}

//===----------------------------------------------------------------------===//
// gather, gather_grad
//===----------------------------------------------------------------------===//

/// Index `j` of `indices`, wrapped into [0, n) as ONNX allows, or an Error.
static int64_t gatherIndex(const TensorView &indices, int64_t j, int64_t n,
                           int64_t axis) {
  int64_t k = indices.i64()[j];
  if (k < -n || k >= n) {
    std::vector<int64_t> pos(indices.rank());
    int64_t rest = j;
    for (size_t d = pos.size(); d-- > 0;) {
      pos[d] = rest % indices.dim(d);
      rest /= indices.dim(d);
    }
    throw Error("gather: index " + std::to_string(k) + " at position " +
                formatShape(pos) + " of the indices is outside [" +
                std::to_string(-n) + ", " + std::to_string(n) + ") (axis " +
                std::to_string(axis) + " has size " + std::to_string(n) + ")");
  }
  return k < 0 ? k + n : k;
}

void run_gather(const KernelArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &Y = a.out[0];
  int64_t axis = abi::attrs<KernelId::Gather>(a.instr).axis;
  int64_t outer = product(*X.shape, 0, axis), n = X.dim(axis);
  int64_t inner = product(*X.shape, axis + 1, X.rank());
  size_t bytes = inner * dtypeSize(X.dtype);
  const char *x = static_cast<const char *>(X.data);
  char *y = static_cast<char *>(Y.data);
  for (int64_t j = 0; j < I.numel; ++j)
    gatherIndex(I, j, n, axis); // all checked before anything is written
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < I.numel; ++j) {
      int64_t k = gatherIndex(I, j, n, axis);
      std::memcpy(y + ((o * I.numel + j) * bytes), x + ((o * n + k) * bytes),
                  bytes);
    }
}

void run_gather_grad(const KernelArgs &a) {
  const TensorView &G = a.in[0], &I = a.in[1], &D = a.out[0];
  int64_t axis = abi::attrs<KernelId::GatherGrad>(a.instr).axis;
  int64_t outer = product(*D.shape, 0, axis), n = D.dim(axis);
  int64_t inner = product(*D.shape, axis + 1, D.rank());
  const float *g = G.f32();
  float *d = D.f32();
  for (int64_t j = 0; j < I.numel; ++j)
    gatherIndex(I, j, n, axis);
  std::fill(d, d + D.numel, 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < I.numel; ++j) {
      float *dst = d + (o * n + gatherIndex(I, j, n, axis)) * inner;
      const float *src = g + (o * I.numel + j) * inner;
      for (int64_t i = 0; i < inner; ++i)
        dst[i] += src[i];
    }
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

void run_concat(const KernelArgs &a) {
  const TensorView &Y = a.out[0];
  int64_t axis = abi::attrs<KernelId::Concat>(a.instr).axis;
  int64_t outer = product(*Y.shape, 0, axis);
  size_t esize = dtypeSize(Y.dtype);
  int64_t rowBytes = product(*Y.shape, axis, Y.rank()) * esize;
  char *y = static_cast<char *>(Y.data);
  int64_t offset = 0;
  for (const TensorView &X : a.in) {
    int64_t chunk = product(*X.shape, axis, X.rank()) * esize;
    const char *x = static_cast<const char *>(X.data);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y + o * rowBytes + offset, x + o * chunk, chunk);
    offset += chunk;
  }
}

//===----------------------------------------------------------------------===//
// slice, slice_grad
//===----------------------------------------------------------------------===//

/// Visits the window's indices [r0, r1) of its first dim (all of a rank-0
/// window): f(windowOffset, fullOffset, n, fullStride) for each innermost
/// row of n elements (the window's rows are contiguous).
template <class F>
static void forEachWindowRow(const Instr &instr,
                             const std::vector<int64_t> &full,
                             const std::vector<int64_t> &window, int64_t r0,
                             int64_t r1, F &&f) {
  size_t rank = full.size();
  // slice and slice_grad share WindowAttrs (one start and step per dim).
  const abi::WindowAttrs w = abi::attrsOf<abi::WindowAttrs>(instr);
  std::vector<int64_t> fst = contiguousStrides(full), strided(rank);
  std::vector<int64_t> wst = contiguousStrides(window), part = window;
  int64_t base = 0, wbase = 0;
  for (size_t d = 0; d < rank; ++d) {
    base += w.starts[d] * fst[d];
    strided[d] = fst[d] * w.steps[d];
  }
  if (rank > 0) {
    base += r0 * strided[0];
    wbase = r0 * wst[0];
    part[0] = r1 - r0;
  }
  LoopNest<2> nest(part, {wst, strided});
  int64_t n = nest.innerDim(), sf = nest.innerStrides()[1];
  // Up to two outer dims as plain loops: a convolution weight's 2x2 taps
  // are 2-element rows, too many to visit through forEachOuter's odometer.
  if (nest.dims.size() <= 3) {
    size_t k = nest.dims.size();
    int64_t d0 = k == 3 ? nest.dims[0] : 1, d1 = k >= 2 ? nest.dims[k - 2] : 1;
    std::array<int64_t, 2> s0 = k == 3 ? nest.strides[0]
                                       : std::array<int64_t, 2>{0, 0},
                           s1 = k >= 2 ? nest.strides[k - 2]
                                       : std::array<int64_t, 2>{0, 0};
    for (int64_t i = 0; i < d0; ++i)
      for (int64_t j = 0; j < d1; ++j)
        f(wbase + i * s0[0] + j * s1[0], base + i * s0[1] + j * s1[1], n, sf);
    return;
  }
  nest.forEachOuter(1, [&](const std::array<int64_t, 2> &off) {
    f(wbase + off[0], base + off[1], n, sf);
  });
}

/// Runs fn(r0, r1) over ranges covering [0, rows), on the ThreadPool when
/// `elements` are enough to be worth waking it; chunks of ~16K elements
/// keep a slice_grad's zero fill and scatter of one chunk in the cache.
static void forRowChunks(int64_t rows, int64_t elements,
                         const std::function<void(int64_t, int64_t)> &fn) {
  ThreadPool &pool = ThreadPool::global();
  int64_t chunks = std::min<int64_t>(
      rows, std::max<int64_t>(pool.size() * 2, elements >> 14));
  if (elements < (1 << 16) || chunks < 2 || pool.size() < 2)
    return fn(0, rows);
  pool.parallelFor(chunks, [&](int64_t k) {
    fn(rows * k / chunks, rows * (k + 1) / chunks);
  });
}

template <class T> static void sliceTyped(const KernelArgs &a) {
  const T *x = static_cast<const T *>(a.in[0].data);
  T *y = static_cast<T *>(a.out[0].data);
  const std::vector<int64_t> &window = *a.out[0].shape;
  // Window rows along the first dim write distinct outputs: shared out.
  int64_t rows = window.empty() ? 1 : window[0];
  forRowChunks(rows, a.out[0].numel, [&](int64_t r0, int64_t r1) {
    forEachWindowRow(a.instr, *a.in[0].shape, window, r0, r1,
                     [&](int64_t yo, int64_t xo, int64_t n, int64_t sx) {
                       if (sx == 1 && n >= 16)
                         std::memcpy(y + yo, x + xo, n * sizeof(T));
                       else
                         for (int64_t i = 0; i < n; ++i)
                           y[yo + i] = x[xo + i * sx];
                     });
  });
}

void run_slice(const KernelArgs &a) {
  if (a.out[0].numel == 0)
    return;
  byDType(a.out[0].dtype, [&](auto t) { sliceTyped<decltype(t)>(a); });
}

void run_slice_grad(const KernelArgs &a) {
  const float *g = a.in[0].f32();
  float *d = a.out[0].f32();
  const std::vector<int64_t> &full = *a.out[0].shape, &window = *a.in[0].shape;
  // Distinct window positions never overlap (steps are non-zero), so each
  // element is written once.
  auto scatter = [&](int64_t r0, int64_t r1) {
    forEachWindowRow(a.instr, full, window, r0, r1,
                     [&](int64_t go, int64_t dofs, int64_t n, int64_t sd) {
                       // Unit steps (tcc-pad-shapes' zero pads): whole rows.
                       if (sd == 1 && n >= 16)
                         std::memcpy(d + dofs, g + go, n * sizeof(float));
                       else
                         for (int64_t i = 0; i < n; ++i)
                           d[dofs + i * sd] = g[go + i];
                     });
  };
  const abi::WindowAttrs w = abi::attrsOf<abi::WindowAttrs>(a.instr);
  // A window over all of the first dim (a convolution weight's taps sliced
  // by tcc-trim-conv-taps): each chunk of rows zeroes its part of the
  // result and scatters into it while it is in the cache.
  if (!full.empty() && a.in[0].numel > 0 && window[0] == full[0] &&
      w.starts[0] == 0 && w.steps[0] == 1) {
    int64_t perRow = a.out[0].numel / full[0];
    return forRowChunks(full[0], a.out[0].numel, [&](int64_t r0, int64_t r1) {
      std::fill(d + r0 * perRow, d + r1 * perRow, 0.0f);
      scatter(r0, r1);
    });
  }
  std::fill(d, d + a.out[0].numel, 0.0f);
  if (a.in[0].numel == 0)
    return;
  scatter(0, window.empty() ? 1 : window[0]);
}

//===----------------------------------------------------------------------===//
// where
//===----------------------------------------------------------------------===//

template <class T> static void whereTyped(const KernelArgs &a) {
  const TensorView &Y = a.out[0];
  const int64_t *c = a.in[0].i64();
  const T *x = static_cast<const T *>(a.in[1].data);
  const T *z = static_cast<const T *>(a.in[2].data);
  T *y = static_cast<T *>(Y.data);
  size_t rank = Y.rank();
  LoopNest<4> nest(*Y.shape, {contiguousStrides(*Y.shape),
                              broadcastStrides(*a.in[0].shape, rank),
                              broadcastStrides(*a.in[1].shape, rank),
                              broadcastStrides(*a.in[2].shape, rank)});
  int64_t n = nest.innerDim();
  auto st = nest.innerStrides();
  nest.forEachOuter(1, [&](const std::array<int64_t, 4> &off) {
    for (int64_t i = 0; i < n; ++i)
      y[off[0] + i] =
          c[off[1] + i * st[1]] ? x[off[2] + i * st[2]] : z[off[3] + i * st[3]];
  });
}

void run_where(const KernelArgs &a) {
  byDType(a.out[0].dtype, [&](auto t) { whereTyped<decltype(t)>(a); });
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

/// ONNX leaves float -> int64 undefined outside the range; C++ makes it
/// undefined behaviour. Truncate toward zero, NaN to 0, saturate the rest.
static int64_t floatToI64(float v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18f)
    return std::numeric_limits<int64_t>::max();
  if (v < -9.2233720368547758e18f)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

void run_cast(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  int64_t n = X.numel;
  bool toBool = abi::attrs<KernelId::Cast>(a.instr).toBool;
  if (X.dtype == DType::F32 && Y.dtype == DType::I64) {
    const float *x = X.f32();
    int64_t *y = Y.i64();
    for (int64_t i = 0; i < n; ++i)
      y[i] = toBool ? x[i] != 0.0f : floatToI64(x[i]);
  } else if (X.dtype == DType::I64 && Y.dtype == DType::F32) {
    const int64_t *x = X.i64();
    float *y = Y.f32();
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(x[i]);
  } else if (X.dtype == DType::I64) { // i64 -> i64 (or bool)
    const int64_t *x = X.i64();
    int64_t *y = Y.i64();
    for (int64_t i = 0; i < n; ++i)
      y[i] = toBool ? x[i] != 0 : x[i];
  } else {
    std::memmove(Y.data, X.data, n * sizeof(float));
  }
}

} // namespace tcc::rt::kernels
