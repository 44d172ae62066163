//===- CheckMath.cpp - Element-wise math, GELU, dropout, layer norm -------===//
#include "runtime/core/abi/KernelCheck.h"
#include "runtime/core/prelude/UnaryFn.h"

#include <cmath>
#include <initializer_list>
#include <utility>

namespace tcc::rt::abi {

void check_unary_grad(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  expectNumel(s, true, 1, s.in[0]->numElements());
  expectNumel(s, false, 0, s.in[0]->numElements());
}

void check_pow_scalar(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  expectNumel(s, false, 0, s.in[0]->numElements());
}

void check_pow_scalar_grad(const KernelSig &s) { check_unary_grad(s); }

void check_pow_grad(const KernelSig &s) {
  expectArity(s, 3, 2);
  expectAllF32(s);
  int64_t n = s.in[0]->numElements();
  for (size_t i = 1; i < 3; ++i)
    expectNumel(s, true, i, n);
  for (size_t i = 0; i < 2; ++i)
    expectNumel(s, false, i, n);
}

/// The function code is one of UnaryFn.h's list (its parameters may be any
/// double: clip's bounds are infinite where absent).
static void expectUnaryFn(const KernelSig &s) {
  int64_t fn = attrs<KernelId::UnaryFn>(s.instr).fn;
  if (fn < 0 || fn >= TCC_UFN_COUNT)
    throw Error("fn must be a code in [0, " + std::to_string(TCC_UFN_COUNT) +
                "), got " + std::to_string(fn));
}

void check_unary_fn(const KernelSig &s) {
  check_pow_scalar(s);
  expectUnaryFn(s);
}

void check_unary_fn_grad(const KernelSig &s) {
  check_unary_grad(s);
  expectUnaryFn(s);
}

// GELU's one attribute is a flag (erf or tanh form): checkAttrs checked it.
void check_gelu(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  expectNumel(s, false, 0, s.in[0]->numElements());
}

void check_gelu_grad(const KernelSig &s) { check_unary_grad(s); }

void check_dropout(const KernelSig &s) {
  expectArity(s, 2, 2);
  if (s.in[0]->dtype != DType::F32)
    throw Error(operandName(s, true, 0) + " must be f32");
  if (s.in[1]->dtype != DType::I64 || s.in[1]->numElements() != 1)
    throw Error(operandName(s, true, 1) +
                " must be the step counter, one i64 element; it is " +
                dtypeName(s.in[1]->dtype) + " " + formatShape(s.in[1]->shape));
  for (size_t i = 0; i < 2; ++i) {
    if (s.out[i]->dtype != DType::F32)
      throw Error(operandName(s, false, i) + " must be f32");
    expectNumel(s, false, i, s.in[0]->numElements());
  }
  double ratio = attrs<KernelId::Dropout>(s.instr).ratio;
  if (!(ratio >= 0.0 && ratio <= 1.0))
    throw Error("ratio must be in [0, 1], got " + std::to_string(ratio));
}

void check_random(const KernelSig &s) {
  expectArity(s, 1, 1);
  if (s.in[0]->dtype != DType::I64 || s.in[0]->numElements() != 1)
    throw Error(operandName(s, true, 0) +
                " must be the step counter, one i64 element; it is " +
                dtypeName(s.in[0]->dtype) + " " + formatShape(s.in[0]->shape));
  if (s.out[0]->dtype != DType::F32)
    throw Error(operandName(s, false, 0) + " must be f32");
  RandomAttrs r = attrs<KernelId::Random>(s.instr);
  if (!std::isfinite(r.a) || !std::isfinite(r.b) || (!r.normal && r.a > r.b))
    throw Error("the distribution's parameters must be finite (and low <= "
                "high for uniform), got " +
                std::to_string(r.a) + " and " + std::to_string(r.b));
}

void check_increment(const KernelSig &s) {
  expectArity(s, 1, 1);
  for (const TensorInfo *t : {s.in[0], s.out[0]})
    if (t->dtype != DType::I64 || t->numElements() != 1)
      throw Error("operands must be one i64 element, got " +
                  std::string(dtypeName(t->dtype)) + " " +
                  formatShape(t->shape));
}

//===----------------------------------------------------------------------===//
// Layer normalization: x viewed as [rows, n] around the axis
//===----------------------------------------------------------------------===//

/// Checks that x's [axis, rank) dims are normalized (the axis is not
/// negative: the compiler normalizes it) and the operands `params` have n
/// elements, those at `stats` rows.
static void checkNorm(const KernelSig &s, const TensorInfo &x, int64_t axis,
                      std::initializer_list<std::pair<bool, size_t>> params,
                      std::initializer_list<std::pair<bool, size_t>> stats) {
  expectAllF32(s);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axis < 0 || axis >= rank)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  int64_t rows = 1, n = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? rows : n) *= x.shape[d];
  for (auto [isIn, i] : params)
    expectNumel(s, isIn, i, n);
  for (auto [isIn, i] : stats)
    expectNumel(s, isIn, i, rows);
}

void check_layer_norm(const KernelSig &s) {
  expectArity(s, 3, 3);
  LayerNormAttrs a = attrs<KernelId::LayerNorm>(s.instr);
  checkNorm(s, *s.in[0], a.axis, {{true, 1}, {true, 2}},
            {{false, 1}, {false, 2}});
  expectNumel(s, false, 0, s.in[0]->numElements());
  if (!(a.eps >= 0.0))
    throw Error("epsilon must not be negative, got " + std::to_string(a.eps));
}

void check_layer_norm_grad(const KernelSig &s) {
  expectArity(s, 5, 3);
  checkNorm(s, *s.in[1], attrs<KernelId::LayerNormGrad>(s.instr).axis,
            {{true, 2}, {false, 1}, {false, 2}}, {{true, 3}, {true, 4}});
  expectNumel(s, true, 0, s.in[1]->numElements());
  expectNumel(s, false, 0, s.in[1]->numElements());
}

void check_layer_norm_param_grad(const KernelSig &s) {
  expectArity(s, 4, 2);
  checkNorm(s, *s.in[1], attrs<KernelId::LayerNormParamGrad>(s.instr).axis,
            {{false, 0}, {false, 1}}, {{true, 2}, {true, 3}});
  expectNumel(s, true, 0, s.in[1]->numElements());
}

} // namespace tcc::rt::abi
