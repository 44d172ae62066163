//===- AccumulateGradients.cpp - Micro-batch gradient accumulation --------===//
//
// Stages:
//   1. Clone @train_step (after tcc-autodiff: loss, other updates, grads) into
//      @accumulate_step; append one state argument `<p>.grad_acc` per grad
//      and return `grad_acc + grad` in place of each grad, as an update.
//   2. Replace @train_step by a function of the parameters and accumulators
//      that returns `grad_acc * (1/K)` as grads and zeros as the accumulators'
//      updates, for tcc-apply-optimizer to turn into parameter updates.
// Invariants: accumulators have exactly their gradient's type; parameters
// keep their names, so both programs share them in the artifact.
// Not handled: micro-batches of different sizes (the feeder drops partial
// batches, so all are equal).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#define DEBUG_TYPE "tcc-accumulate-gradients"

namespace mlir::tcc {
#define GEN_PASS_DEF_ACCUMULATEGRADIENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static DictionaryAttr kindAndName(OpBuilder &b, StringRef kind,
                                  StringRef name) {
  return b.getDictionaryAttr({b.getNamedAttr("tcc.kind", b.getStringAttr(kind)),
                              b.getNamedAttr("tcc.name", b.getStringAttr(name))});
}

static StringRef attrOf(func::FuncOp fn, unsigned result, StringRef name) {
  auto a = fn.getResultAttrOfType<StringAttr>(result, name);
  return a ? a.getValue() : StringRef();
}

static Value splat(OpBuilder &b, Location loc, Type type, double value) {
  auto t = cast<RankedTensorType>(type);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), value)));
}

namespace {
struct AccumulateGradientsPass final
    : public tcc::impl::AccumulateGradientsPassBase<AccumulateGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (steps <= 1)
      return;
    ModuleOp module = getOperation();
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train) {
      module.emitError("tcc-accumulate-gradients: no @train_step (run "
                       "tcc-build-loss and tcc-autodiff first)");
      return signalPassFailure();
    }
    if (module.lookupSymbol("accumulate_step")) {
      module.emitError("tcc-accumulate-gradients: @accumulate_step exists");
      return signalPassFailure();
    }
    SmallVector<unsigned> gradResults;
    for (unsigned i = 0; i < train.getNumResults(); ++i)
      if (attrOf(train, i, "tcc.kind") == "grad")
        gradResults.push_back(i);
    if (gradResults.empty()) {
      train.emitError("tcc-accumulate-gradients: @train_step has no grad "
                      "results (run tcc-autodiff first)");
      return signalPassFailure();
    }
    buildAccumulate(train, gradResults);
    buildApply(train, gradResults);
  }

  /// Stage 1: @accumulate_step returns grad_acc + grad for each grad.
  void buildAccumulate(func::FuncOp train, ArrayRef<unsigned> gradResults) {
    OpBuilder b(train);
    b.setInsertionPointAfter(train);
    auto acc = cast<func::FuncOp>(b.clone(*train));
    acc.setSymName("accumulate_step");
    Block &body = acc.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    SmallVector<Value> results(ret.getOperands());
    for (unsigned i : gradResults) {
      std::string name = (attrOf(acc, i, "tcc.name") + ".grad_acc").str();
      Type type = results[i].getType();
      unsigned argNo = acc.getNumArguments();
      if (failed(acc.insertArgument(argNo, type, kindAndName(b, "state", name),
                                    acc.getLoc())))
        return signalPassFailure();
      results[i] = AddOp::create(b, ret.getLoc(), acc.getArgument(argNo),
                                 results[i]);
      acc.setResultAttrs(i, kindAndName(b, "update", name));
    }
    ret->setOperands(results);
  }

  /// Stage 2: @train_step(params, grad_acc) -> (grad_acc / K, zeros).
  void buildApply(func::FuncOp train, ArrayRef<unsigned> gradResults) {
    OpBuilder b(train);
    Location loc = train.getLoc();
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    SmallVector<unsigned> params;
    for (unsigned i = 0; i < train.getNumArguments(); ++i) {
      auto kind = train.getArgAttrOfType<StringAttr>(i, "tcc.kind");
      if (kind && kind.getValue() == "param") {
        params.push_back(i);
        argTypes.push_back(train.getArgument(i).getType());
        argAttrs.push_back(train.getArgAttrDict(i));
      }
    }
    for (unsigned i : gradResults) {
      std::string name = (attrOf(train, i, "tcc.name") + ".grad_acc").str();
      argTypes.push_back(train.getResultTypes()[i]);
      argAttrs.push_back(kindAndName(b, "state", name));
    }
    for (unsigned i : gradResults) {
      resultTypes.push_back(train.getResultTypes()[i]);
      resultAttrs.push_back(train.getResultAttrDict(i));
    }
    for (unsigned i : gradResults) {
      std::string name = (attrOf(train, i, "tcc.name") + ".grad_acc").str();
      resultTypes.push_back(train.getResultTypes()[i]);
      resultAttrs.push_back(kindAndName(b, "update", name));
    }
    auto apply = func::FuncOp::create(b, loc, "train_step",
                                      b.getFunctionType(argTypes, resultTypes));
    apply.setAllArgAttrs(argAttrs);
    apply.setAllResultAttrs(resultAttrs);
    Block *body = apply.addEntryBlock();
    b.setInsertionPointToStart(body);
    SmallVector<Value> results;
    size_t firstAcc = params.size();
    for (size_t k = 0; k < gradResults.size(); ++k) {
      Value a = body->getArgument(firstAcc + k);
      Value scale = splat(b, loc, RankedTensorType::get({}, cast<RankedTensorType>(
                                                                a.getType())
                                                                .getElementType()),
                          1.0 / double(steps));
      results.push_back(MulOp::create(b, loc, a, scale));
    }
    for (size_t k = 0; k < gradResults.size(); ++k)
      results.push_back(
          splat(b, loc, body->getArgument(firstAcc + k).getType(), 0.0));
    func::ReturnOp::create(b, loc, results);
    train.erase();
  }
};
} // namespace
