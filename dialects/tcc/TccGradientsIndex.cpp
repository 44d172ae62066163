//===- TccGradientsIndex.cpp - Gradient rules of the indexing ops ---------===//
//
// A gather's gradient is the scatter-add of the result gradient into zeros
// (repeated indices accumulate); a scatter's is the gradient left where
// `data` survived and the gradient gathered back for `updates`. Scatters
// that multiply or take extrema have no rule: they report so rather than
// differentiate wrongly.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tcc;

static Value zerosLike(OpBuilder &b, Location loc, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  // A splat: stored as one scalar and broadcast when the step runs.
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
}

/// Whether `reduction` has a gradient rule; reports at `op` when not.
static bool differentiable(Operation *op, StringRef reduction) {
  if (reduction == "none" || reduction == "add")
    return true;
  op->emitError("tcc-autodiff: '")
      << op->getName() << "' with reduction '" << reduction
      << "' lies between a param and the loss but has no gradient (only "
         "'none' and 'add' are differentiable)";
  return false;
}

SmallVector<Value> GatherElementsOp::buildGradients(OpBuilder &b,
                                                    ValueRange grads) {
  Location loc = getLoc();
  Value d =
      ScatterElementsOp::create(b, loc, "add", zerosLike(b, loc, getData()),
                                getIndices(), grads[0], getAxis());
  return {d, Value()};
}

SmallVector<Value> ScatterElementsOp::buildGradients(OpBuilder &b,
                                                     ValueRange grads) {
  if (!differentiable(*this, getReduction()))
    return {};
  Location loc = getLoc();
  Value dy = grads[0];
  Value dData = dy;
  if (getReduction() == "none")
    dData =
        ScatterElementsOp::create(b, loc, "none", dy, getIndices(),
                                  zerosLike(b, loc, getUpdates()), getAxis());
  Value dUpdates =
      GatherElementsOp::create(b, loc, dy, getIndices(), getAxis());
  return {dData, Value(), dUpdates};
}

SmallVector<Value> GatherNdOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  Value d = ScatterNdOp::create(b, loc, "add", zerosLike(b, loc, getData()),
                                getIndices(), grads[0], getBatchDims());
  return {d, Value()};
}

SmallVector<Value> ScatterNdOp::buildGradients(OpBuilder &b, ValueRange grads) {
  if (!differentiable(*this, getReduction()))
    return {};
  Location loc = getLoc();
  Value dy = grads[0];
  Value dData = dy;
  if (getReduction() == "none")
    dData =
        ScatterNdOp::create(b, loc, "none", dy, getIndices(),
                            zerosLike(b, loc, getUpdates()), getBatchDims());
  Value dUpdates = GatherNdOp::create(b, loc, dy, getIndices(), getBatchDims());
  return {dData, Value(), dUpdates};
}
