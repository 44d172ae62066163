//===- TccOpsLinearCrossEntropy.cpp - LM head + loss: shapes, gradient ----===//
//
// The ops of TccOpsLinearCrossEntropy.td. Both check one operand contract
// (the kernels check it again at load, runtime/core/abi/CheckLoss.cpp): f32
// hidden [..., D], a rank-2 weight with D on the side `transpose_weight`
// says, labels shaped like hidden's rows, an optional bias [V].
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

/// Checks the operands and attributes shared by both ops; returns the lse
/// type (labels' shape, f32).
static FailureOr<RankedTensorType>
checkOperands(StringRef op, std::optional<Location> loc, Value hidden,
              Value weight, Value labels, Value bias, bool transposeWeight,
              double smoothing, int64_t block) {
  auto fail = [&](auto &&...parts) -> FailureOr<RankedTensorType> {
    (void)emitOptionalError(loc, "tcc.", op, ": ", parts...);
    return failure();
  };
  auto h = rankedType(hidden), w = rankedType(weight), y = rankedType(labels);
  if (!h.getElementType().isF32() || !w.getElementType().isF32() ||
      (bias && !rankedType(bias).getElementType().isF32()))
    return fail("hidden, weight and bias must be f32");
  if (h.getRank() < 1 || w.getRank() != 2)
    return fail("hidden must be [..., features] and weight rank 2, got ",
                shapeStr(h.getShape()), " and ", shapeStr(w.getShape()));
  int64_t d = h.getShape().back();
  int64_t wd = w.getDimSize(transposeWeight ? 1 : 0);
  int64_t v = w.getDimSize(transposeWeight ? 0 : 1);
  if (wd != d || v < 1)
    return fail("weight ", shapeStr(w.getShape()), " does not match hidden ",
                shapeStr(h.getShape()),
                transposeWeight ? " (transpose_weight: [classes, features])"
                                : " ([features, classes])");
  if (y.getShape() != h.getShape().drop_back())
    return fail("labels ", shapeStr(y.getShape()),
                " must have hidden's shape without its last axis");
  if (bias && rankedType(bias).getShape() != ArrayRef<int64_t>{v})
    return fail("bias ", shapeStr(rankedType(bias).getShape()), " must be [", v,
                "]");
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return fail("label_smoothing must be in [0, 1], got ", smoothing);
  if (block < 1)
    return fail("block must be positive, got ", block);
  return RankedTensorType::get(y.getShape(), h.getElementType());
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &results) {
  auto a = adaptorFor<LinearCrossEntropyOp>(operands, attrs, props, regions);
  auto lse =
      checkOperands("linear_cross_entropy", loc, a.getHidden(), a.getWeight(),
                    a.getLabels(), a.getBias(), a.getTransposeWeight(),
                    a.getLabelSmoothing().convertToDouble(), a.getBlock());
  if (failed(lse))
    return failure();
  results.push_back(RankedTensorType::get({}, lse->getElementType()));
  results.push_back(*lse);
  return success();
}

LogicalResult LinearCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &results) {
  auto a =
      adaptorFor<LinearCrossEntropyGradOp>(operands, attrs, props, regions);
  auto lse = checkOperands(
      "linear_cross_entropy_grad", loc, a.getHidden(), a.getWeight(),
      a.getLabels(), a.getBias(), a.getTransposeWeight(),
      a.getLabelSmoothing().convertToDouble(), a.getBlock());
  if (failed(lse))
    return failure();
  if (a.getLse().getType() != *lse)
    return emitOptionalError(loc, "tcc.linear_cross_entropy_grad: lse is ",
                             a.getLse().getType(), ", expected ", *lse);
  if (!rankedType(a.getGrad()).getElementType().isF32())
    return emitOptionalError(loc, "tcc.linear_cross_entropy_grad: grad must "
                                  "be an f32 scalar");
  results.push_back(a.getHidden().getType());
  results.push_back(a.getWeight().getType());
  if (a.getBias())
    results.push_back(a.getBias().getType());
  return success();
}

/// The logits are recomputed by the gradient kernel from the saved lse, so
/// the backward keeps hidden, weight, labels and one float per row.
SmallVector<Value> LinearCrossEntropyOp::buildGradients(OpBuilder &b,
                                                        ValueRange grads) {
  if (grads[1]) {
    emitError("tcc.linear_cross_entropy: the loss depends on the log-sum-exp "
              "result, which has no gradient rule");
    return {};
  }
  if (!grads[0])
    return SmallVector<Value>(getNumOperands(), Value());
  Location loc = getLoc();
  Value perPosition = crossEntropyGradPerPosition(b, loc, grads[0], getLabels(),
                                                  getIgnoreIndexAttr());
  auto g = LinearCrossEntropyGradOp::create(
      b, loc, perPosition, getHidden(), getWeight(), getLabels(), getLse(),
      getBias(), getTransposeWeightAttr(), getIgnoreIndexAttr(),
      getLabelSmoothingAttr(), getBlockAttr());
  SmallVector<Value> out{g.getGrads()[0], g.getGrads()[1], Value()};
  if (getBias())
    out.push_back(g.getGrads()[2]);
  return out;
}
