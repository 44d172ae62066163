//===- LoopNest.h - Strided index spaces of the kernel ABI ------*- C++ -*-===//
//
// Shape math every backend shares: numpy broadcasting strides and the loop
// nest that walks an operand set with one element stride per operand. The
// CPU kernels loop over it directly; the CUDA kernels copy its merged dims
// and strides to the device, so both backends visit one index space.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_LOOPNEST_H
#define TCC_RUNTIME_CORE_ABI_LOOPNEST_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tcc::rt::abi {

/// Row-major element strides of `shape`.
inline std::vector<int64_t>
contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

/// Row-major element strides of `shape`, right-aligned in `rank` dims, with
/// stride 0 for size-1 and missing dims (numpy broadcasting).
inline std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                             size_t rank) {
  std::vector<int64_t> st(rank, 0), own = contiguousStrides(shape);
  size_t shift = rank - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    st[i + shift] = shape[i] == 1 ? 0 : own[i];
  return st;
}

/// A loop over `dims` (outer to inner) with an element stride per dim for
/// each of N operands. Size-1 dims are dropped and neighbouring dims that are
/// contiguous for every operand merged, so e.g. a bias add over [B,S,H]
/// becomes two loops, the inner one unit-stride.
template <size_t N> struct LoopNest {
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, N>> strides;

  LoopNest(const std::vector<int64_t> &shape,
           const std::array<std::vector<int64_t>, N> &operandStrides) {
    for (size_t d = 0; d < shape.size(); ++d) {
      empty = empty || shape[d] == 0;
      if (shape[d] == 1)
        continue;
      std::array<int64_t, N> st;
      for (size_t k = 0; k < N; ++k)
        st[k] = operandStrides[k][d];
      if (!dims.empty() && mergeable(st, shape[d])) {
        dims.back() *= shape[d];
        strides.back() = st;
        continue;
      }
      dims.push_back(shape[d]);
      strides.push_back(st);
    }
    if (dims.empty()) { // a single element
      dims.push_back(1);
      strides.push_back({});
    }
  }

  /// Calls f(offsets) for every index of all dims except the inner `keep`
  /// ones; offsets[k] is operand k's element offset.
  template <class F> void forEachOuter(size_t keep, F &&f) const {
    if (empty)
      return;
    size_t outer = dims.size() > keep ? dims.size() - keep : 0;
    std::array<int64_t, N> off{};
    std::vector<int64_t> idx(outer, 0);
    for (;;) {
      f(off);
      size_t d = outer;
      while (d > 0) {
        --d;
        for (size_t k = 0; k < N; ++k)
          off[k] += strides[d][k];
        if (++idx[d] < dims[d])
          break;
        for (size_t k = 0; k < N; ++k)
          off[k] -= strides[d][k] * dims[d];
        idx[d] = 0;
        if (d == 0)
          return;
      }
      if (outer == 0)
        return;
    }
  }

  int64_t innerDim() const { return dims.back(); }
  const std::array<int64_t, N> &innerStrides() const { return strides.back(); }

private:
  bool empty = false; // some dim is 0: there is nothing to visit

  bool mergeable(const std::array<int64_t, N> &inner, int64_t innerDim) const {
    for (size_t k = 0; k < N; ++k)
      if (strides.back()[k] != inner[k] * innerDim)
        return false;
    return true;
  }
};

} // namespace tcc::rt::abi

#endif // TCC_RUNTIME_CORE_ABI_LOOPNEST_H
