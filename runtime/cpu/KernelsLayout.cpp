//===- KernelsLayout.cpp - broadcast_to and transpose ---------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cstring>

namespace tcc::rt::kernels {

template <class T> static void broadcastTyped(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const T *x = static_cast<const T *>(X.data);
  T *y = static_cast<T *>(Y.data);
  if (X.numel == 1) {
    std::fill(y, y + Y.numel, x[0]);
    return;
  }
  LoopNest<2> nest(*Y.shape, {contiguousStrides(*Y.shape),
                              broadcastStrides(*X.shape, Y.rank())});
  int64_t n = nest.innerDim();
  int64_t sx = nest.innerStrides()[1];
  nest.forEachOuter(1, [&](const std::array<int64_t, 2> &off) {
    if (sx == 0)
      std::fill(y + off[0], y + off[0] + n, x[off[1]]);
    else
      std::memcpy(y + off[0], x + off[1], n * sizeof(T));
  });
}

void run_broadcast_to(const KernelArgs &a) {
  if (a.out[0].dtype == DType::F32)
    broadcastTyped<float>(a);
  else
    broadcastTyped<int64_t>(a);
}

/// Copies an [R,C] block whose source is strided in both dims in 32x32
/// tiles, so both the reads and the writes stay within a few cache lines.
template <class T>
static void transposeTiles(T *y, int64_t ysR, const T *x, int64_t xsR,
                           int64_t xsC, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          y[r * ysR + c] = x[r * xsR + c * xsC];
    }
  }
}

template <class T> static void transposeTyped(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const T *x = static_cast<const T *>(X.data);
  T *y = static_cast<T *>(Y.data);
  const abi::AttrList perm = abi::attrs<KernelId::Transpose>(a.instr).perm;
  std::vector<int64_t> xst = contiguousStrides(*X.shape), permuted(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    permuted[i] = xst[perm[i]];
  LoopNest<2> nest(*Y.shape, {contiguousStrides(*Y.shape), permuted});
  size_t r = nest.dims.size();
  if (r >= 2 && nest.strides[r - 1][1] != 1) {
    int64_t rows = nest.dims[r - 2], cols = nest.dims[r - 1];
    int64_t ysR = nest.strides[r - 2][0], xsR = nest.strides[r - 2][1],
            xsC = nest.strides[r - 1][1];
    nest.forEachOuter(2, [&](const std::array<int64_t, 2> &off) {
      transposeTiles(y + off[0], ysR, x + off[1], xsR, xsC, rows, cols);
    });
    return;
  }
  int64_t n = nest.innerDim(), sx = nest.innerStrides()[1];
  nest.forEachOuter(1, [&](const std::array<int64_t, 2> &off) {
    const T *src = x + off[1];
    T *dst = y + off[0];
    for (int64_t i = 0; i < n; ++i)
      dst[i] = src[i * sx];
  });
}

void run_transpose(const KernelArgs &a) {
  if (a.out[0].dtype == DType::F32)
    transposeTyped<float>(a);
  else
    transposeTyped<int64_t>(a);
}

} // namespace tcc::rt::kernels
