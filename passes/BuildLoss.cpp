//===- BuildLoss.cpp - @forward + loss -> @train_step ---------------------===//
//
// Clones `@forward` into `@train_step` (inserted right after it), appends a
// data argument `labels` and returns the scalar loss of the forward's first
// result instead of the forward's outputs:
//
//   cross_entropy: labels : tensor<shape(out)[:-1] x i64>,
//                  loss = tcc.softmax_cross_entropy %out, %labels
//   mse:           labels : type(out),  loss = tcc.mse_loss %out, %labels
//
// The single result carries `{tcc.kind = "loss", tcc.name = "loss"}`. Forward
// ops that no longer reach the return are erased. `@forward` is untouched.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-build-loss"

namespace mlir::tcc {
#define GEN_PASS_DEF_BUILDLOSSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static constexpr StringLiteral kForward = "forward";
static constexpr StringLiteral kTrainStep = "train_step";

/// Returns the string attribute `name` of argument `i`, or "".
static StringRef argString(func::FuncOp f, unsigned i, StringRef name) {
  if (auto s = f.getArgAttrOfType<StringAttr>(i, name))
    return s.getValue();
  return {};
}

/// Erases the ops of `block` that nothing uses any more, last first, so that
/// whole dead chains go.
static void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

namespace {
struct BuildLossPass final
    : public tcc::impl::BuildLossPassBase<BuildLossPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (loss != "cross_entropy" && loss != "mse") {
      module.emitError("tcc-build-loss: unknown loss '")
          << loss << "' (valid: cross_entropy, mse)";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>(kForward);
    if (!forward || forward.isExternal()) {
      module.emitError("tcc-build-loss: no func.func @forward with a body");
      return signalPassFailure();
    }
    if (module.lookupSymbol(kTrainStep)) {
      module.emitError("tcc-build-loss: @train_step already exists");
      return signalPassFailure();
    }
    if (failed(checkForward(forward)))
      return signalPassFailure();

    auto out = cast<RankedTensorType>(forward.getResultTypes()[0]);
    Type labelType = out;
    if (loss == "cross_entropy")
      labelType = RankedTensorType::get(
          out.getShape().drop_back(),
          IntegerType::get(&getContext(), 64, IntegerType::Signless));

    OpBuilder b(&getContext());
    b.setInsertionPointAfter(forward);
    auto step = cast<func::FuncOp>(b.clone(*forward));
    step.setSymName(kTrainStep);

    // labels: the last argument, a data input.
    NamedAttrList labelAttrs;
    labelAttrs.set("tcc.kind", b.getStringAttr("input"));
    labelAttrs.set("tcc.name", b.getStringAttr("labels"));
    unsigned labelIdx = step.getNumArguments();
    if (failed(step.insertArgument(labelIdx, labelType,
                                   labelAttrs.getDictionary(&getContext()),
                                   forward.getLoc()))) {
      step.emitError("tcc-build-loss: cannot add the labels argument");
      return signalPassFailure();
    }
    Value labels = step.getArgument(labelIdx);

    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    Value prediction = ret.getOperand(0);
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    Value lossValue;
    if (loss == "cross_entropy")
      lossValue = SoftmaxCrossEntropyOp::create(b, loc, prediction, labels);
    else
      lossValue = MseLossOp::create(b, loc, prediction, labels);
    func::ReturnOp::create(b, loc, lossValue);
    ret.erase();

    step.setFunctionType(FunctionType::get(
        &getContext(), step.getArgumentTypes(), {lossValue.getType()}));
    NamedAttrList resAttrs;
    resAttrs.set("tcc.kind", b.getStringAttr("loss"));
    resAttrs.set("tcc.name", b.getStringAttr("loss"));
    DictionaryAttr lossAttrs = resAttrs.getDictionary(&getContext());
    step.setAllResultAttrs(ArrayRef<DictionaryAttr>(lossAttrs));

    eraseDeadOps(step.getBody().front());
    LLVM_DEBUG(llvm::dbgs() << "built @train_step with " << loss << " loss\n");
  }

  /// Diagnoses a @forward this pass cannot turn into a loss.
  LogicalResult checkForward(func::FuncOp forward) {
    if (!forward.getBody().hasOneBlock())
      return forward.emitError("tcc-build-loss: @forward must have one block");
    if (forward.getNumResults() == 0)
      return forward.emitError("tcc-build-loss: @forward has no result");
    auto out = dyn_cast<RankedTensorType>(forward.getResultTypes()[0]);
    if (!out || !isa<FloatType>(out.getElementType()))
      return forward.emitError("tcc-build-loss: the first result of @forward "
                               "must be a float tensor, got ")
             << forward.getResultTypes()[0];
    if (loss == "cross_entropy" && out.getRank() == 0)
      return forward.emitError("tcc-build-loss: cross_entropy needs a class "
                               "axis, but the first result of @forward is "
                               "rank 0 (")
             << out << ")";
    for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
      if (argString(forward, i, "tcc.name") == "labels")
        return forward.emitError("tcc-build-loss: @forward already has an "
                                 "argument named 'labels'");
    return success();
  }
};
} // namespace
