//===- ClipGradients.cpp - Gradient clipping by the global norm -----------===//
//
// tcc-clip-gradients: torch.nn.utils.clip_grad_norm_ inside @train_step.
// After tcc-autodiff (and tcc-accumulate-gradients, whose @train_step
// returns the accumulated gradients), before tcc-apply-optimizer, which
// then reads the clipped gradients wherever it reads a `grad` result.
//
//   n = tcc.global_norm(g_1, ..., g_k)          one reduction, f64 sums
//                                                (of acc_i, times 1/K, when
//                                                the g_i are acc_i * (1/K))
//   c = min(1, max_norm / (n + 1e-6))           as clip_grad_norm_
//   g_i = g_i * c                                a broadcast scalar: the
//                                                element-wise fusion takes it
//   return ..., n {tcc.kind = "metric", tcc.name = "grad_norm"}
//
// The multiply is kept even when c is 1 (no branch in a schedule); a tcc.mul
// by a scalar joins the fused region of whatever computes or reads the
// gradient. With fp16 loss scaling the gradients here are still scaled: the
// norm is unscaled, and c folded into the unscaling factor, by
// tcc-mixed-precision (it owns the scale; see unscaleAndSkip there).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <optional>

#define DEBUG_TYPE "tcc-clip-gradients"

namespace mlir::tcc {
#define GEN_PASS_DEF_CLIPGRADIENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static StringRef resultString(func::FuncOp fn, unsigned i, StringRef name) {
  auto a = fn.getResultAttrOfType<StringAttr>(i, name);
  return a ? a.getValue() : StringRef();
}

/// `g` as `x * c` with c a positive scalar constant (the apply step of
/// tcc-accumulate-gradients returns `grad_acc * (1/K)`), or {g, 1}.
static std::pair<Value, double> constantMultiple(Value g) {
  auto m = g.getDefiningOp<MulOp>();
  auto c = m ? m.getRhs().getDefiningOp<ConstantOp>() : ConstantOp();
  auto d =
      c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : DenseFPElementsAttr();
  if (!d || cast<RankedTensorType>(d.getType()).getRank() != 0 ||
      m.getLhs().getType() != g.getType())
    return {g, 1.0};
  double v = (*d.getValues<APFloat>().begin()).convertToDouble();
  if (!(v > 0) || !std::isfinite(v))
    return {g, 1.0};
  return {m.getLhs(), v};
}

static Value f32Scalar(OpBuilder &b, Location loc, double v) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, static_cast<float>(v)));
}

namespace {
struct ClipGradientsPass final
    : public tcc::impl::ClipGradientsPassBase<ClipGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!std::isfinite(double(maxNorm)) || maxNorm < 0) {
      module.emitError("tcc-clip-gradients: max-norm must be a positive "
                       "finite number (0: no clipping), got ")
          << double(maxNorm);
      return signalPassFailure();
    }
    bool clip = maxNorm > 0;
    if (!clip && !track)
      return;
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || step.isExternal() || !step.getBody().hasOneBlock()) {
      module.emitError("tcc-clip-gradients: no func.func @train_step with a "
                       "body (run tcc-build-loss and tcc-autodiff first)");
      return signalPassFailure();
    }
    SmallVector<unsigned> grads;
    for (unsigned i = 0; i < step.getNumResults(); ++i) {
      StringRef kind = resultString(step, i, "tcc.kind");
      if (kind == "grad")
        grads.push_back(i);
      if (kind == "metric" &&
          resultString(step, i, "tcc.name") == "grad_norm") {
        step.emitError("tcc-clip-gradients: @train_step already returns "
                       "grad_norm");
        return signalPassFailure();
      }
    }
    if (grads.empty()) {
      step.emitError("tcc-clip-gradients: @train_step has no gradients to ")
          << (clip ? "clip" : "measure")
          << " (no trainable parameter, or tcc-autodiff has not run)";
      return signalPassFailure();
    }

    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    // When every gradient is one constant multiple of a value (the
    // accumulators times 1/K), the norm is taken of those values and
    // multiplied: the scaled gradients are then not all held in memory at
    // once for the norm, each is made where it is clipped and consumed.
    SmallVector<Value> operands, unscaled;
    std::optional<double> common;
    for (unsigned i : grads) {
      operands.push_back(ret.getOperand(i));
      auto [x, c] = constantMultiple(ret.getOperand(i));
      unscaled.push_back(x);
      if (!common || *common == c)
        common = c;
      else
        common = 0;
    }
    Value norm;
    if (*common > 0 && *common != 1)
      norm = MulOp::create(b, loc, GlobalNormOp::create(b, loc, unscaled),
                           f32Scalar(b, loc, *common));
    else
      norm = GlobalNormOp::create(b, loc, operands);
    if (clip) {
      Value q =
          DivOp::create(b, loc, f32Scalar(b, loc, maxNorm),
                        AddOp::create(b, loc, norm, f32Scalar(b, loc, 1e-6)));
      Value coef = MinimumOp::create(b, loc, q, f32Scalar(b, loc, 1.0));
      for (unsigned i : grads) {
        Value g = ret.getOperand(i);
        auto type = cast<RankedTensorType>(g.getType());
        Value c = coef;
        if (!type.getElementType().isF32())
          c = CastOp::create(
              b, loc, RankedTensorType::get({}, type.getElementType()), coef);
        ret.setOperand(i, MulOp::create(b, loc, g, c));
      }
    }

    // The norm, before clipping, as the last result.
    SmallVector<Value> results(ret.getOperands());
    results.push_back(norm);
    SmallVector<DictionaryAttr> attrs;
    for (unsigned i = 0; i < step.getNumResults(); ++i)
      attrs.push_back(step.getResultAttrDict(i));
    attrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("tcc.kind", b.getStringAttr("metric")),
         b.getNamedAttr("tcc.name", b.getStringAttr("grad_norm"))}));
    func::ReturnOp::create(b, loc, results);
    ret.erase();
    step.setFunctionType(FunctionType::get(&getContext(),
                                           step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);
  }
};
} // namespace
