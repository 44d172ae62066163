//===- TccGradientsShape.cpp - Gradient rules of data-movement ops --------===//
//
// Each rule routes the result gradient back to where the forward read its
// elements: gather scatters (adding where an index repeats), concat and slice
// cut and place, where selects. Indices and conditions get no gradient.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

SmallVector<Value> GatherOp::buildGradients(OpBuilder &b, ValueRange grads) {
  int64_t axis = getAxis();
  int64_t size = typeOf(getData()).getDimSize(axis);
  Value d = GatherGradOp::create(b, getLoc(), grads[0], getIndices(),
                                 uint64_t(axis), uint64_t(size));
  return {d, Value()};
}

SmallVector<Value> ConcatOp::buildGradients(OpBuilder &b, ValueRange grads) {
  int64_t axis = getAxis();
  int64_t rank = typeOf(getResult()).getRank();
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
  SmallVector<Value> out;
  for (Value in : getInputs()) {
    ArrayRef<int64_t> sizes = typeOf(in).getShape();
    out.push_back(SliceOp::create(b, getLoc(), grads[0], starts, sizes, steps));
    starts[axis] += sizes[axis];
  }
  return out;
}

SmallVector<Value> SliceOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {SliceGradOp::create(b, getLoc(), grads[0],
                              typeOf(getInput()).getShape(), getStarts(),
                              getSteps())};
}

SmallVector<Value> WhereOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  Type elementType = typeOf(getResult()).getElementType();
  auto scalar = RankedTensorType::get({}, elementType);
  Value zero = ConstantOp::create(
      b, loc, DenseElementsAttr::get(scalar, b.getFloatAttr(elementType, 0.0)));
  // The result gradient has the broadcast shape of all three operands, so
  // each select has it too before it is summed down to its operand's shape.
  Value dl = WhereOp::create(b, loc, getCondition(), grads[0], zero);
  Value dr = WhereOp::create(b, loc, getCondition(), zero, grads[0]);
  return {Value(), reduceToType(b, loc, dl, typeOf(getLhs())),
          reduceToType(b, loc, dr, typeOf(getRhs()))};
}
