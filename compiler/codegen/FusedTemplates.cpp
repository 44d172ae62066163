//===- FusedTemplates.cpp - C++ templates of the element-wise ops ---------===//
//
// The expression each element-wise op becomes in a fused region ($0, $1..
// are its operands' values, $j the column), shared by both emitters: the
// formulas of runtime/cpu/KernelsMath.cpp and KernelsElementwise.cpp, term
// by term, and how a 16-bit constant or result is written.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

#include "runtime/core/prelude/Half.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

namespace tcc::fusedgen {

/// The arguments of the prelude's tcc_unary_fn (UnaryFn.h) for `f`: the
/// function's enumerator, the operands, alpha and beta. The code is a
/// constant, so the host and CUDA compilers fold the function's switch away.
template <class OpT>
static std::string unaryFnArgs(OpT f, const std::string &operands) {
  std::string name = f.getFn().upper();
  return "TCC_UFN_" + name + ", " + operands + ", " +
         floatLiteral(f.getAlpha().convertToDouble()) + ", " +
         floatLiteral(f.getBeta().convertToDouble());
}

/// Element-wise templates: $0.. are operands.
std::string elementwiseTemplate(Operation *o) {
  return llvm::TypeSwitch<Operation *, std::string>(o)
      .Case<AddOp>([](auto) { return "($0 + $1)"; })
      .Case<SubOp>([](auto) { return "($0 - $1)"; })
      .Case<MulOp>([](auto) { return "($0 * $1)"; })
      .Case<DivOp>([](auto) { return "($0 / $1)"; })
      .Case<PowOp>([](auto) { return "std::pow($0, $1)"; })
      .Case<NegOp>([](auto) { return "(-$0)"; })
      .Case<ReluOp>([](auto) { return "($0 > 0.0f ? $0 : 0.0f)"; })
      .Case<ReluGradOp>([](auto) { return "($1 > 0.0f ? $0 : 0.0f)"; })
      .Case<ExpOp>([](auto) { return "tcc_exp($0)"; })
      .Case<LogOp>([](auto) { return "std::log($0)"; })
      .Case<SqrtOp>([](auto) { return "std::sqrt($0)"; })
      .Case<TanhOp>([](auto) { return "tcc_tanh($0)"; })
      .Case<SigmoidOp>([](auto) { return "tcc_sigmoid($0)"; })
      .Case<ErfOp>([](auto) { return "tcc_erf($0)"; })
      .Case<SqrtGradOp>([](auto) { return "($0 / (2.0f * $1))"; })
      .Case<TanhGradOp>([](auto) { return "($0 * (1.0f - $1 * $1))"; })
      .Case<SigmoidGradOp>([](auto) { return "($0 * (1.0f - $1) * $1)"; })
      .Case<ErfGradOp>([](auto) {
        return "(1.12837916709551257390f * tcc_exp(-($1 * $1)) * $0)";
      })
      .Case<GeluOp>([](GeluOp g) {
        return g.getApproximate() == "tanh" ? "tcc_gelu_tanh($0)"
                                            : "tcc_gelu_erf($0)";
      })
      .Case<GeluGradOp>([](GeluGradOp g) {
        return g.getApproximate() == "tanh" ? "tcc_gelu_tanh_grad($0, $1)"
                                            : "tcc_gelu_erf_grad($0, $1)";
      })
      .Case<UnaryFnOp>([](UnaryFnOp f) {
        return "tcc_unary_fn(" + unaryFnArgs(f, "$0") + ")";
      })
      .Case<UnaryFnGradOp>([](UnaryFnGradOp f) {
        return "tcc_unary_fn_grad(" + unaryFnArgs(f, "$0, $1") + ")";
      })
      .Case<BroadcastToOp, ReshapeOp, CastOp, SliceOp>(
          [](auto) { return "$0"; })
      .Case<WhereOp>([](auto) { return "($0 != 0 ? $1 : $2)"; })
      // NaN propagates from either operand, as in KernelsCompare.cpp.
      .Case<MaximumOp>([](auto) { return "(($0 > $1 || $0 != $0) ? $0 : $1)"; })
      .Case<MinimumOp>([](auto) { return "(($0 < $1 || $0 != $0) ? $0 : $1)"; })
      // runtime/core/prelude/Mod.h, as the mod kernels.
      .Case<ModOp>([](ModOp m) {
        return m.getFmod() ? "tcc_mod($0, $1, 1)" : "tcc_mod($0, $1, 0)";
      })
      .Default([](Operation *) { return ""; });
}

/// The template of an op whose result is bf16/f16: the prelude's fast exp,
/// erf and tanh (and the sigmoid and GELU formulas built on them) become the
/// libm ones runtime/cpu/KernelsMath.cpp calls, so that the rounded result
/// is the unfused kernel's bit for bit (an error of 1e-7 would move a value
/// across a rounding boundary now and then). f32 results keep the fast ones.
std::string libmMath(std::string t) {
  for (StringRef f : {"exp", "erf", "tanh", "sigmoid", "gelu_erf", "gelu_tanh",
                      "gelu_erf_grad", "gelu_tanh_grad"}) {
    std::string from = "tcc_" + f.str() + "(", to = "tcc_libm_" + f.str() + "(";
    for (size_t pos = 0; (pos = t.find(from, pos)) != std::string::npos;
         pos += to.size())
      t.replace(pos, from.size(), to);
  }
  return t;
}

/// A bf16/f16 splat constant as the f32 value the runtime widens it to
/// (exact; a NaN keeps its bits).
std::string halfLiteral(const APFloat &v, Half h) {
  uint16_t bits = (uint16_t)v.bitcastToAPInt().getZExtValue();
  float f =
      h == Half::BF16 ? ::tcc::rt::bf16ToF32(bits) : ::tcc::rt::f16ToF32(bits);
  if (!std::isnan(f))
    return floatLiteral(f);
  char buf[48];
  std::snprintf(buf, sizeof buf, "tcc_bits_to_f(0x%08xu)",
                ::tcc::rt::floatBits(f));
  return buf;
}

/// x^e with the special cases of runtime/cpu/KernelsMath.cpp's powScalar.
std::string powTemplate(double e, const std::string &x) {
  float f = static_cast<float>(e);
  if (f == 2.0f)
    return "(" + x + " * " + x + ")";
  if (f == 3.0f)
    return "(" + x + " * " + x + " * " + x + ")";
  if (f == 0.5f)
    return "std::sqrt(" + x + ")";
  if (f == -0.5f)
    return "(1.0f / std::sqrt(" + x + "))";
  if (f == -1.0f)
    return "(1.0f / " + x + ")";
  if (f == -2.0f)
    return "(1.0f / (" + x + " * " + x + "))";
  return "std::pow(" + x + ", " + floatLiteral(e) + ")";
}

} // namespace tcc::fusedgen
