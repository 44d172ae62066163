//===- BuildLoss.cpp - @forward + loss -> @train_step ---------------------===//
//
// Clones `@forward` into `@train_step` (inserted right after it), appends a
// data argument `labels` and returns the scalar loss of the forward's first
// result instead of the forward's outputs:
//
//   cross_entropy: labels : tensor<shape(out)[:-1] x i64>,
//                  loss = tcc.softmax_cross_entropy %out, %labels
//                  {ignore_index, label_smoothing} (the pass options)
//   mse:           labels : type(out),  loss = tcc.mse_loss %out, %labels
//   output:NAME:   no labels; loss = the forward's result named NAME, a
//                  float scalar the graph computes itself (an export of a
//                  model whose forward returns F.cross_entropy)
//
// The first result carries `{tcc.kind = "loss", tcc.name = "loss"}`. Forward
// ops that no longer reach the return are erased.
//
// State updates: results of @forward of kind `update` (the new value of a
// `state` argument, e.g. batch norm's running statistics) follow the loss in
// @train_step unchanged, so each step updates that state. @forward, the
// evaluation program, drops them: evaluating must not change the state.
//
// Step counters: a `state` argument of @forward (tensor<i64>; the frontend
// adds `rng.step` for tcc.dropout) is read by the model. @train_step advances
// each one it reads by one per step, returning `tcc.increment` of it as an
// `update` result after the loss. @forward becomes the evaluation program:
// tcc.dropout there is the identity (torch's model.eval()), and counters it
// no longer reads are removed from its arguments.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#include <cmath>
#include <cstdio>

#define DEBUG_TYPE "tcc-build-loss"

namespace mlir::tcc {
#define GEN_PASS_DEF_BUILDLOSSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static constexpr StringLiteral kForward = "forward";
static constexpr StringLiteral kTrainStep = "train_step";
/// `--loss output:NAME` trains the graph's own scalar output NAME.
static constexpr StringLiteral kOutputPrefix = "output:";

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

/// `v` as %g writes it (1.5, not 1.500000e+00).
static std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

namespace {
struct BuildLossPass final
    : public tcc::impl::BuildLossPassBase<BuildLossPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringRef lossName = loss;
    bool fromOutput = lossName.consume_front(kOutputPrefix);
    if (fromOutput && lossName.empty()) {
      module.emitError("tcc-build-loss: --loss output:NAME needs the name of "
                       "a graph output after 'output:'");
      return signalPassFailure();
    }
    if (!fromOutput && loss != "cross_entropy" && loss != "mse") {
      module.emitError("tcc-build-loss: unknown loss '")
          << loss << "' (valid: cross_entropy, mse, output:NAME)";
      return signalPassFailure();
    }
    if (failed(checkCrossEntropyOptions(module)))
      return signalPassFailure();
    auto forward = module.lookupSymbol<func::FuncOp>(kForward);
    if (!forward || forward.isExternal()) {
      module.emitError("tcc-build-loss: no func.func @forward with a body");
      return signalPassFailure();
    }
    if (module.lookupSymbol(kTrainStep)) {
      module.emitError("tcc-build-loss: @train_step already exists");
      return signalPassFailure();
    }
    if (failed(checkForward(forward, /*builtInLoss=*/!fromOutput)))
      return signalPassFailure();
    FailureOr<unsigned> lossResult = 0u;
    if (fromOutput && failed(lossResult = findLossOutput(forward, lossName)))
      return signalPassFailure();

    OpBuilder b(&getContext());
    b.setInsertionPointAfter(forward);
    auto step = cast<func::FuncOp>(b.clone(*forward));
    step.setSymName(kTrainStep);
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    Value lossValue;
    if (fromOutput) {
      lossValue = ret.getOperand(*lossResult);
    } else {
      FailureOr<Value> built = appendLoss(b, step, ret, forward.getLoc());
      if (failed(built))
        return signalPassFailure();
      lossValue = *built;
    }

    NamedAttrList resAttrs;
    resAttrs.set("tcc.kind", b.getStringAttr("loss"));
    resAttrs.set("tcc.name", b.getStringAttr("loss"));
    SmallVector<Value> results{lossValue};
    SmallVector<DictionaryAttr> attrs{resAttrs.getDictionary(&getContext())};
    for (unsigned i : stateUpdateResults(forward)) {
      results.push_back(ret.getOperand(i));
      attrs.push_back(forward.getResultAttrDict(i));
    }
    func::ReturnOp::create(b, loc, results);
    ret.erase();
    step.setFunctionType(FunctionType::get(&getContext(),
                                           step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);

    eraseDeadOps(step.getBody().front());
    advanceStepCounters(step);
    dropStateUpdates(forward);
    toInferenceMode(forward);
    LLVM_DEBUG(llvm::dbgs() << "built @train_step with " << loss << " loss\n");
  }

  /// Adds the `labels` argument to @train_step and returns the built-in
  /// loss (`loss`) of its first result against them, built before `ret`.
  FailureOr<Value> appendLoss(OpBuilder &b, func::FuncOp step,
                              func::ReturnOp ret, Location argLoc) {
    auto out = cast<RankedTensorType>(step.getResultTypes()[0]);
    Type labelType = out;
    if (loss == "cross_entropy")
      labelType = RankedTensorType::get(
          out.getShape().drop_back(),
          IntegerType::get(&getContext(), 64, IntegerType::Signless));
    // labels: the last argument, a data input.
    NamedAttrList labelAttrs;
    labelAttrs.set("tcc.kind", b.getStringAttr("input"));
    labelAttrs.set("tcc.name", b.getStringAttr("labels"));
    unsigned labelIdx = step.getNumArguments();
    if (failed(step.insertArgument(labelIdx, labelType,
                                   labelAttrs.getDictionary(&getContext()),
                                   argLoc)))
      return step.emitError("tcc-build-loss: cannot add the labels argument");
    Value labels = step.getArgument(labelIdx);
    Value prediction = ret.getOperand(0);
    if (loss == "cross_entropy")
      return SoftmaxCrossEntropyOp::create(b, ret.getLoc(), prediction, labels,
                                           b.getI64IntegerAttr(ignoreIndex),
                                           b.getF64FloatAttr(labelSmoothing))
          .getResult();
    return MseLossOp::create(b, ret.getLoc(), prediction, labels).getResult();
  }

  /// ignore-index and label-smoothing shape cross_entropy only; a smoothing
  /// outside [0, 1] is no distribution.
  LogicalResult checkCrossEntropyOptions(ModuleOp module) {
    double s = labelSmoothing;
    if (!std::isfinite(s) || s < 0.0 || s > 1.0)
      return module.emitError("tcc-build-loss: label-smoothing must be in "
                              "[0, 1], got ")
             << shortNumber(s);
    if (loss == "cross_entropy")
      return success();
    if (ignoreIndex != -100)
      return module.emitError("tcc-build-loss: ignore-index applies to the "
                              "cross_entropy loss only, not to '")
             << loss << "'";
    if (s != 0.0)
      return module.emitError("tcc-build-loss: label-smoothing applies to the "
                              "cross_entropy loss only, not to '")
             << loss << "'";
    return success();
  }

  /// The index of @forward's result named `name` (an ONNX graph output),
  /// which must be a float scalar that is not a state update.
  FailureOr<unsigned> findLossOutput(func::FuncOp forward, StringRef name) {
    std::string names;
    for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i) {
      auto n = forward.getResultAttrOfType<StringAttr>(i, "tcc.name");
      if (!n)
        continue;
      if (n.getValue() != name) {
        if (!llvm::is_contained(stateUpdateResults(forward), i))
          names += (names.empty() ? "" : ", ") + n.getValue().str();
        continue;
      }
      if (llvm::is_contained(stateUpdateResults(forward), i))
        return forward.emitError("tcc-build-loss: --loss output:")
               << name << " names the update of state '" << name
               << "', not a graph output";
      auto type = dyn_cast<RankedTensorType>(forward.getResultTypes()[i]);
      if (!type || type.getRank() != 0 ||
          !isa<FloatType>(type.getElementType()))
        return forward.emitError("tcc-build-loss: --loss output:")
               << name << ": the output is " << forward.getResultTypes()[i]
               << "; a loss must be a float scalar (rank 0), such as a "
                  "reduced NegativeLogLikelihoodLoss or "
                  "SoftmaxCrossEntropyLoss";
      return i;
    }
    return forward.emitError("tcc-build-loss: --loss output:")
           << name << ": the model has no output named '" << name
           << "' (outputs: " << names << ")";
  }

  /// The indices of @forward's results of kind `update`.
  static SmallVector<unsigned> stateUpdateResults(func::FuncOp forward) {
    SmallVector<unsigned> out;
    for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i)
      if (auto k = forward.getResultAttrOfType<StringAttr>(i, "tcc.kind"))
        if (k.getValue() == "update")
          out.push_back(i);
    return out;
  }

  /// Whether @forward returns a new value for the state named `name`.
  static bool updatedByForward(func::FuncOp forward, StringRef name) {
    return llvm::any_of(stateUpdateResults(forward), [&](unsigned i) {
      auto n = forward.getResultAttrOfType<StringAttr>(i, "tcc.name");
      return n && n.getValue() == name;
    });
  }

  /// Removes @forward's `update` results (and the ops only they used).
  void dropStateUpdates(func::FuncOp forward) {
    SmallVector<unsigned> drop = stateUpdateResults(forward);
    if (drop.empty())
      return;
    Block &body = forward.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> kept;
    SmallVector<DictionaryAttr> keptAttrs;
    for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i) {
      if (llvm::is_contained(drop, i))
        continue;
      kept.push_back(ret.getOperand(i));
      DictionaryAttr a = forward.getResultAttrDict(i);
      keptAttrs.push_back(a ? a : DictionaryAttr::get(&getContext()));
    }
    OpBuilder b(ret);
    func::ReturnOp::create(b, ret.getLoc(), kept);
    ret.erase();
    forward.setFunctionType(FunctionType::get(
        &getContext(), forward.getArgumentTypes(), ValueRange(kept).getTypes()));
    forward.setAllResultAttrs(keptAttrs);
    eraseDeadOps(body);
  }

  /// Each step counter @train_step reads (a `state` argument, e.g. the
  /// `rng.step` of tcc.dropout) is advanced by one: `tcc.increment` returned
  /// as an `update` result after the loss.
  void advanceStepCounters(func::FuncOp step) {
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    OpBuilder b(ret);
    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> attrs;
    step.getAllResultAttrs(attrs);
    for (BlockArgument arg : step.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (argString(step, i, "tcc.kind") != "state" || arg.use_empty() ||
          llvm::any_of(attrs, [&](DictionaryAttr a) {
            return a && a.get("tcc.name") == step.getArgAttr(i, "tcc.name");
          }))
        continue; // not read, or already updated (running statistics)
      results.push_back(IncrementOp::create(b, arg.getLoc(), arg));
      NamedAttrList a;
      a.set("tcc.kind", b.getStringAttr("update"));
      a.set("tcc.name", step.getArgAttr(i, "tcc.name"));
      attrs.push_back(a.getDictionary(&getContext()));
    }
    if (results.size() == ret.getNumOperands())
      return;
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(FunctionType::get(
        &getContext(), step.getArgumentTypes(), ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);
  }

  /// @forward is the evaluation program, so training-only behaviour goes:
  /// tcc.dropout becomes the identity (as torch's model.eval()), and step
  /// counters nothing reads any more are dropped from its arguments.
  void toInferenceMode(func::FuncOp forward) {
    forward.walk([](DropoutOp op) {
      OpBuilder b(op);
      if (!op.getMask().use_empty()) {
        auto type = cast<RankedTensorType>(op.getMask().getType());
        op.getMask().replaceAllUsesWith(ConstantOp::create(
            b, op.getLoc(),
            DenseElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), 1.0))));
      }
      op.getResult().replaceAllUsesWith(op.getInput());
      op.erase();
    });
    llvm::BitVector unused(forward.getNumArguments());
    for (BlockArgument arg : forward.getArguments())
      if (argString(forward, arg.getArgNumber(), "tcc.kind") == "state" &&
          arg.use_empty())
        unused.set(arg.getArgNumber());
    if (unused.any())
      (void)forward.eraseArguments(unused);
  }

  /// Diagnoses a @forward this pass cannot turn into a loss; a built-in
  /// loss also needs a float first result and the name `labels` free.
  LogicalResult checkForward(func::FuncOp forward, bool builtInLoss) {
    if (!forward.getBody().hasOneBlock())
      return forward.emitError("tcc-build-loss: @forward must have one block");
    if (forward.getNumResults() == 0)
      return forward.emitError("tcc-build-loss: @forward has no result");
    for (unsigned i : stateUpdateResults(forward)) {
      auto name = forward.getResultAttrOfType<StringAttr>(i, "tcc.name");
      bool namesState = false;
      for (unsigned a = 0, e = forward.getNumArguments(); a < e; ++a)
        namesState |= name && argString(forward, a, "tcc.kind") == "state" &&
                      argString(forward, a, "tcc.name") == name.getValue() &&
                      forward.getArgument(a).getType() ==
                          forward.getResultTypes()[i];
      if (i == 0 || !namesState)
        return forward.emitError("tcc-build-loss: result #")
               << i << " of @forward is an update of '"
               << (name ? name.getValue() : "")
               << "', which is not a state argument of its type"
               << (i == 0 ? " (and result 0 must be the model's output)"
                          : "");
    }
    auto out = dyn_cast<RankedTensorType>(forward.getResultTypes()[0]);
    if (builtInLoss && (!out || !isa<FloatType>(out.getElementType())))
      return forward.emitError("tcc-build-loss: the first result of @forward "
                               "must be a float tensor, got ")
             << forward.getResultTypes()[0];
    if (builtInLoss && loss == "cross_entropy" && out.getRank() == 0)
      return forward.emitError("tcc-build-loss: cross_entropy needs a class "
                               "axis, but the first result of @forward is "
                               "rank 0 (")
             << out << ")";
    for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
      if (builtInLoss && argString(forward, i, "tcc.name") == "labels")
        return forward.emitError("tcc-build-loss: @forward already has an "
                                 "argument named 'labels'");
      // State the model updates itself has an update result; any other
      // state it reads is a step counter (see advanceStepCounters).
      auto type = dyn_cast<RankedTensorType>(forward.getArgument(i).getType());
      if (argString(forward, i, "tcc.kind") == "state" &&
          !updatedByForward(forward, argString(forward, i, "tcc.name")) &&
          (!type || type.getRank() != 0 ||
           !type.getElementType().isSignlessInteger(64)))
        return forward.emitError("tcc-build-loss: state argument '")
               << argString(forward, i, "tcc.name")
               << "' of @forward must be a step counter (tensor<i64>), got "
               << forward.getArgument(i).getType();
    }
    return success();
  }
};
} // namespace
