//===- KernelsIndex.cpp - gather_elements, scatters, gather_nd, top_k -----===//
//
// Moves are by element size (2, 4 or 8 bytes, whatever they hold); the
// reducing scatters compute in the stored type (f32 or i64, the ABI check's
// rule). Every index is range-checked before anything is written, and a bad
// one is an Error naming its value and position in the indices. Scatters
// apply their updates in index order, so repeats are deterministic.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace tcc::rt::kernels {

using abi::ScatterReduction;

static int64_t product(const std::vector<int64_t> &shape, size_t from,
                       size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    n *= shape[i];
  return n;
}

/// Flat index `j` of `indices` wrapped into [0, n), or an Error naming the
/// kernel, the index, its position and `dim` (which data dimension it
/// indexes).
static int64_t wrapIndex(const char *kernel, const TensorView &indices,
                         int64_t j, int64_t n, int64_t dim) {
  int64_t k = indices.i64()[j];
  if (k >= -n && k < n)
    return k < 0 ? k + n : k;
  std::vector<int64_t> pos(indices.rank());
  int64_t rest = j;
  for (size_t d = pos.size(); d-- > 0;) {
    pos[d] = rest % indices.dim(d);
    rest /= indices.dim(d);
  }
  throw Error(std::string(kernel) + ": index " + std::to_string(k) +
              " at position " + formatShape(pos) +
              " of the indices is outside [" + std::to_string(-n) + ", " +
              std::to_string(n) + ") (dimension " + std::to_string(dim) +
              " of the data has size " + std::to_string(n) + ")");
}

/// Calls f(W) with an unsigned word of `dtype`'s size.
template <class F> static void byWord(DType dtype, F &&f) {
  switch (dtypeSize(dtype)) {
  case 2:
    f(uint16_t());
    break;
  case 4:
    f(uint32_t());
    break;
  default:
    f(uint64_t());
  }
}

template <class T> static void combine(T &dst, T v, ScatterReduction r) {
  switch (r) {
  case ScatterReduction::None:
    dst = v;
    break;
  case ScatterReduction::Add:
    dst += v;
    break;
  case ScatterReduction::Mul:
    dst *= v;
    break;
  case ScatterReduction::Max: // NaN wins, as numpy.maximum
    if (v > dst || v != v)
      dst = v;
    break;
  case ScatterReduction::Min:
    if (v < dst || v != v)
      dst = v;
    break;
  }
}

/// Runs f(T) with the word type for a plain move or the value type (f32,
/// i64) for a reducing scatter.
template <class F>
static void byScatterType(DType dtype, ScatterReduction r, F &&f) {
  if (r == ScatterReduction::None)
    byWord(dtype, f);
  else if (dtype == DType::F32)
    f(float());
  else
    f(int64_t());
}

/// The data offsets of the element kernels: for every position of
/// `indices` (row-major), where it lands in data of shape `data` when its
/// coordinate along `axis` is replaced by the (wrapped) index.
static std::vector<int64_t> elementOffsets(const char *kernel,
                                           const TensorView &I,
                                           const std::vector<int64_t> &data,
                                           int64_t axis) {
  size_t rank = data.size();
  std::vector<int64_t> strides(rank, 1), coord(rank, 0), out(I.numel);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * data[d];
  int64_t n = data[axis];
  for (int64_t j = 0; j < I.numel; ++j) {
    int64_t off = wrapIndex(kernel, I, j, n, axis) * strides[axis];
    for (size_t d = 0; d < rank; ++d)
      if (static_cast<int64_t>(d) != axis)
        off += coord[d] * strides[d];
    out[j] = off;
    for (size_t d = rank; d-- > 0;) { // next position, row-major
      if (++coord[d] < I.dim(d))
        break;
      coord[d] = 0;
    }
  }
  return out;
}

void run_gather_elements(const KernelArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &Y = a.out[0];
  int64_t axis = abi::attrs<KernelId::GatherElements>(a.instr).axis;
  std::vector<int64_t> off =
      elementOffsets("gather_elements", I, *X.shape, axis);
  byWord(X.dtype, [&](auto w) {
    using W = decltype(w);
    const W *x = static_cast<const W *>(X.data);
    W *y = static_cast<W *>(Y.data);
    for (int64_t j = 0; j < I.numel; ++j)
      y[j] = x[off[j]];
  });
}

/// y = a copy of data (unless it is data's own buffer).
static void copyData(const TensorView &X, const TensorView &Y) {
  if (X.data != Y.data && Y.numel)
    std::memcpy(Y.data, X.data, Y.numel * dtypeSize(Y.dtype));
}

void run_scatter_elements(const KernelArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &U = a.in[2], &Y = a.out[0];
  abi::ScatterAttrs at = abi::attrs<KernelId::ScatterElements>(a.instr);
  auto r = static_cast<ScatterReduction>(at.reduction);
  std::vector<int64_t> off =
      elementOffsets("scatter_elements", I, *X.shape, at.axis);
  copyData(X, Y);
  byScatterType(X.dtype, r, [&](auto t) {
    using T = decltype(t);
    const T *u = static_cast<const T *>(U.data);
    T *y = static_cast<T *>(Y.data);
    for (int64_t j = 0; j < I.numel; ++j)
      combine(y[off[j]], u[j], r);
  });
}

/// Where each index tuple of gather_nd/scatter_nd starts in the data, in
/// elements; `inner` is the size of the slice a tuple names.
static std::vector<int64_t> tupleOffsets(const char *kernel,
                                         const TensorView &I,
                                         const std::vector<int64_t> &data,
                                         int64_t b, int64_t &inner) {
  int64_t m = I.dim(I.rank() - 1);
  int64_t tuples = m ? I.numel / m : 0;
  int64_t batches = product(data, 0, b);
  int64_t perBatch = batches ? tuples / batches : 0;
  inner = product(data, b + m, data.size());
  std::vector<int64_t> strides(m);
  for (int64_t j = 0; j < m; ++j)
    strides[j] = product(data, b + j + 1, data.size());
  int64_t batchStride = product(data, b, data.size());
  std::vector<int64_t> out(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / perBatch) * batchStride;
    for (int64_t j = 0; j < m; ++j)
      off += wrapIndex(kernel, I, t * m + j, data[b + j], b + j) * strides[j];
    out[t] = off;
  }
  return out;
}

void run_gather_nd(const KernelArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &Y = a.out[0];
  int64_t inner = 0;
  std::vector<int64_t> off =
      tupleOffsets("gather_nd", I, *X.shape,
                   abi::attrs<KernelId::GatherNd>(a.instr).batchDims, inner);
  size_t bytes = inner * dtypeSize(X.dtype);
  const char *x = static_cast<const char *>(X.data);
  char *y = static_cast<char *>(Y.data);
  for (size_t t = 0; t < off.size(); ++t)
    std::memcpy(y + t * bytes, x + off[t] * dtypeSize(X.dtype), bytes);
}

void run_scatter_nd(const KernelArgs &a) {
  const TensorView &X = a.in[0], &I = a.in[1], &U = a.in[2], &Y = a.out[0];
  abi::ScatterNdAttrs at = abi::attrs<KernelId::ScatterNd>(a.instr);
  auto r = static_cast<ScatterReduction>(at.reduction);
  int64_t inner = 0;
  std::vector<int64_t> off =
      tupleOffsets("scatter_nd", I, *X.shape, at.batchDims, inner);
  copyData(X, Y);
  byScatterType(X.dtype, r, [&](auto t) {
    using T = decltype(t);
    const T *u = static_cast<const T *>(U.data);
    T *y = static_cast<T *>(Y.data);
    for (size_t k = 0; k < off.size(); ++k)
      for (int64_t i = 0; i < inner; ++i)
        combine(y[off[k] + i], u[k * inner + i], r);
  });
}

/// Whether x[p] comes before x[q] in top_k's order: more extreme first
/// (NaN the largest), equal values by lower index.
template <class T>
static bool ranksBefore(const T *x, int64_t stride, int64_t p, int64_t q,
                        bool largest) {
  T a = x[p * stride], b = x[q * stride];
  bool an = a != a, bn = b != b;
  if (an || bn) {
    if (an && bn)
      return p < q;
    return largest ? an : bn;
  }
  if (a == b)
    return p < q;
  return largest ? a > b : a < b;
}

void run_top_k(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  abi::TopKAttrs at = abi::attrs<KernelId::TopK>(a.instr);
  int64_t axis = at.axis, n = X.dim(axis), k = Y.dim(axis);
  int64_t outer = product(*X.shape, 0, axis);
  int64_t inner = product(*X.shape, axis + 1, X.rank());
  auto run = [&](auto *x) {
    std::vector<int64_t> order(n);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const auto *line = x + o * n * inner + i;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int64_t p, int64_t q) {
                            return ranksBefore(line, inner, p, q, at.largest);
                          });
        for (int64_t t = 0; t < k; ++t)
          Y.i64()[(o * k + t) * inner + i] = order[t];
      }
  };
  if (X.dtype == DType::F32)
    run(X.f32());
  else
    run(X.i64());
}

} // namespace tcc::rt::kernels
