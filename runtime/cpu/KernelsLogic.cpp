//===- KernelsLogic.cpp - compare, logic, extrema, mod, arg_max/arg_min ---===//
//
// Bools are i64 words 0/1 (docs/ARCHITECTURE.md); logic reads any non-zero
// word as true. maximum/minimum and the reductions propagate NaN as PyTorch
// does; arg_max/arg_min take a NaN as the extremum, as numpy (ONNX's
// reference) does. Element-wise loops read element i before writing it, so
// an output may alias a same-sized input.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/Mod.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <limits>

namespace tcc::rt::kernels {

/// Calls f(T) with the C++ type stored for `dtype` (f32 or i64).
template <class F> static void byDType(DType dtype, F &&f) {
  if (dtype == DType::F32)
    f(float());
  else
    f(int64_t());
}

template <class T> static bool isNaN(T v) { return v != v; }

/// y[i] = op(l[i], r[i]) over the broadcast of two operands.
template <class T, class R, class Op>
static void broadcastBinary(const KernelArgs &a, R *y, Op op) {
  const TensorView &Y = a.out[0];
  const T *l = static_cast<const T *>(a.in[0].data);
  const T *r = static_cast<const T *>(a.in[1].data);
  size_t rank = Y.rank();
  LoopNest<3> nest(*Y.shape, {contiguousStrides(*Y.shape),
                              broadcastStrides(*a.in[0].shape, rank),
                              broadcastStrides(*a.in[1].shape, rank)});
  int64_t n = nest.innerDim();
  auto st = nest.innerStrides();
  nest.forEachOuter(1, [&](const std::array<int64_t, 3> &off) {
    for (int64_t i = 0; i < n; ++i)
      y[off[0] + i] = op(l[off[1] + i * st[1]], r[off[2] + i * st[2]]);
  });
}

//===----------------------------------------------------------------------===//
// compare, logic
//===----------------------------------------------------------------------===//

template <class T> static void compareTyped(const KernelArgs &a, int64_t p) {
  using P = abi::ComparePredicate;
  int64_t *y = a.out[0].i64();
  switch (static_cast<P>(p)) {
  case P::Eq:
    return broadcastBinary<T>(a, y, [](T l, T r) -> int64_t { return l == r; });
  case P::Lt:
    return broadcastBinary<T>(a, y, [](T l, T r) -> int64_t { return l < r; });
  case P::Le:
    return broadcastBinary<T>(a, y, [](T l, T r) -> int64_t { return l <= r; });
  case P::Gt:
    return broadcastBinary<T>(a, y, [](T l, T r) -> int64_t { return l > r; });
  case P::Ge:
    return broadcastBinary<T>(a, y, [](T l, T r) -> int64_t { return l >= r; });
  }
}

void run_compare(const KernelArgs &a) {
  int64_t p = abi::attrs<KernelId::Compare>(a.instr).predicate;
  byDType(a.in[0].dtype, [&](auto t) { compareTyped<decltype(t)>(a, p); });
}

void run_logic(const KernelArgs &a) {
  using L = abi::LogicKind;
  int64_t *y = a.out[0].i64();
  switch (static_cast<L>(abi::attrs<KernelId::Logic>(a.instr).kind)) {
  case L::And:
    return broadcastBinary<int64_t>(
        a, y, [](int64_t l, int64_t r) -> int64_t { return l && r; });
  case L::Or:
    return broadcastBinary<int64_t>(
        a, y, [](int64_t l, int64_t r) -> int64_t { return l || r; });
  case L::Xor:
    return broadcastBinary<int64_t>(
        a, y, [](int64_t l, int64_t r) -> int64_t { return !l != !r; });
  }
}

//===----------------------------------------------------------------------===//
// maximum, minimum
//===----------------------------------------------------------------------===//

// NaN in either operand gives NaN: l when l is NaN, else r (NaN or not)
// unless l wins. The fused templates (FusedTemplates.cpp) are this formula.
template <class T> static T maxOf(T l, T r) {
  return (l > r || isNaN(l)) ? l : r;
}
template <class T> static T minOf(T l, T r) {
  return (l < r || isNaN(l)) ? l : r;
}

void run_maximum(const KernelArgs &a) {
  byDType(a.out[0].dtype, [&](auto t) {
    using T = decltype(t);
    broadcastBinary<T>(a, static_cast<T *>(a.out[0].data), maxOf<T>);
  });
}

void run_minimum(const KernelArgs &a) {
  byDType(a.out[0].dtype, [&](auto t) {
    using T = decltype(t);
    broadcastBinary<T>(a, static_cast<T *>(a.out[0].data), minOf<T>);
  });
}

//===----------------------------------------------------------------------===//
// mod
//===----------------------------------------------------------------------===//

// The remainder is runtime/core/prelude/Mod.h's, as on the GPU and in the
// generated kernels.
void run_mod(const KernelArgs &a) {
  int fmod = abi::attrs<KernelId::Mod>(a.instr).fmod ? 1 : 0;
  if (a.out[0].dtype == DType::F32)
    return broadcastBinary<float>(a, a.out[0].f32(), [fmod](float l, float r) {
      return tcc_mod(l, r, fmod);
    });
  broadcastBinary<int64_t>(a, a.out[0].i64(), [fmod](int64_t l, int64_t r) {
    return (int64_t)tcc_mod_i64(l, r, fmod);
  });
}

//===----------------------------------------------------------------------===//
// reduce_max, reduce_min
//===----------------------------------------------------------------------===//

/// Folds x into y (y's stride 0 along the reduced axes) with `pick`, y
/// starting at `init`.
template <class Pick>
static void reduceExtremum(const KernelArgs &a, float init, Pick pick) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const float *x = X.f32();
  float *y = Y.f32();
  const abi::AttrList axes = abi::attrsOf<abi::AxesAttrs>(a.instr).axes;
  const auto &xs = *X.shape;
  std::fill(y, y + Y.numel, init);
  std::vector<int64_t> yst(xs.size(), 0);
  int64_t stride = 1;
  for (size_t d = xs.size(); d-- > 0;)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(d))) {
      yst[d] = stride;
      stride *= xs[d];
    }
  if (X.numel == 0)
    return;
  LoopNest<2> nest(xs, {contiguousStrides(xs), yst});
  int64_t n = nest.innerDim();
  int64_t sy = nest.innerStrides()[1];
  nest.forEachOuter(1, [&](const std::array<int64_t, 2> &off) {
    const float *src = x + off[0];
    float *dst = y + off[1];
    for (int64_t i = 0; i < n; ++i)
      dst[i * sy] = pick(dst[i * sy], src[i]);
  });
}

// A NaN in the set makes the result NaN (the accumulator keeps it).
void run_reduce_max(const KernelArgs &a) {
  reduceExtremum(
      a, -std::numeric_limits<float>::infinity(),
      [](float acc, float v) { return (v > acc || isNaN(v)) ? v : acc; });
}

void run_reduce_min(const KernelArgs &a) {
  reduceExtremum(
      a, std::numeric_limits<float>::infinity(),
      [](float acc, float v) { return (v < acc || isNaN(v)) ? v : acc; });
}

//===----------------------------------------------------------------------===//
// arg_max, arg_min
//===----------------------------------------------------------------------===//

/// Whether v replaces best: it is better, or a first NaN (numpy takes NaN
/// as the extremum), or equal (NaN as NaN) with select_last_index.
template <class T, bool Max>
static bool replaces(T v, T best, bool selectLast) {
  if (isNaN(best))
    return selectLast && isNaN(v);
  if (isNaN(v))
    return true;
  return (Max ? v > best : v < best) || (selectLast && v == best);
}

template <class T, bool Max> static void argTyped(const KernelArgs &a) {
  const TensorView &X = a.in[0];
  const T *x = static_cast<const T *>(X.data);
  int64_t *y = a.out[0].i64();
  abi::ArgAttrs at = abi::attrsOf<abi::ArgAttrs>(a.instr);
  const auto &xs = *X.shape;
  int64_t outer = 1, inner = 1, n = xs[at.axis];
  for (int64_t d = 0; d < at.axis; ++d)
    outer *= xs[d];
  for (size_t d = at.axis + 1; d < xs.size(); ++d)
    inner *= xs[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T *p = x + o * n * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k)
        if (replaces<T, Max>(p[k * inner], p[best * inner], at.selectLast))
          best = k;
      y[o * inner + i] = best;
    }
}

void run_arg_max(const KernelArgs &a) {
  byDType(a.in[0].dtype, [&](auto t) { argTyped<decltype(t), true>(a); });
}

void run_arg_min(const KernelArgs &a) {
  byDType(a.in[0].dtype, [&](auto t) { argTyped<decltype(t), false>(a); });
}

} // namespace tcc::rt::kernels
