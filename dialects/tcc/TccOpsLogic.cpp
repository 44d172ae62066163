//===- TccOpsLogic.cpp - compare, logic, extrema: inference and gradients -===//
//
// Inference and verifiers of TccOpsLogic.td's ops, and the gradient rules of
// maximum/minimum and reduce_max/reduce_min. The rules are built from
// compare, cast and arithmetic ops rather than gradient kernels of their
// own: they are element-wise chains the fusion pass joins into one kernel.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;

//===----------------------------------------------------------------------===//
// compare, logic
//===----------------------------------------------------------------------===//

int64_t CompareOp::predicateCode(StringRef p) {
  return llvm::StringSwitch<int64_t>(p)
      .Case("eq", 0)
      .Case("lt", 1)
      .Case("le", 2)
      .Case("gt", 3)
      .Case("ge", 4)
      .Default(-1);
}

int64_t LogicOp::kindCode(StringRef k) {
  return llvm::StringSwitch<int64_t>(k)
      .Case("and", 0)
      .Case("or", 1)
      .Case("xor", 2)
      .Default(-1);
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          ValueRange operands, DictionaryAttr,
                                          OpaqueProperties, RegionRange,
                                          SmallVectorImpl<Type> &results) {
  return detail::inferBroadcast("compare", loc, operands, results,
                                IntegerType::get(ctx, 1));
}

LogicalResult CompareOp::verify() {
  if (predicateCode(getPredicate()) < 0)
    return emitOpError("has predicate '")
           << getPredicate() << "', expected eq, lt, le, gt or ge";
  return success();
}

LogicalResult LogicOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        ValueRange operands, DictionaryAttr,
                                        OpaqueProperties, RegionRange,
                                        SmallVectorImpl<Type> &results) {
  return detail::inferBroadcast("logic", loc, operands, results,
                                IntegerType::get(ctx, 1));
}

LogicalResult LogicOp::verify() {
  if (kindCode(getKind()) < 0)
    return emitOpError("has kind '")
           << getKind() << "', expected and, or or xor";
  return success();
}

//===----------------------------------------------------------------------===//
// maximum, minimum
//===----------------------------------------------------------------------===//

TCC_BINARY_INFER(MaximumOp, "maximum")
TCC_BINARY_INFER(MinimumOp, "minimum")

static Value splat(OpBuilder &b, Location loc, Type elementType, double v) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, v)));
}

/// `cond` (bools) as 0/1 of `elementType`.
static Value toFloat(OpBuilder &b, Location loc, Value cond, Type elementType) {
  return CastOp::create(b, loc, rankedType(cond).clone(elementType), cond);
}

/// dy * w to lhs and dy * (1 - w) to rhs, w = [lhs wins] + [tie] / 2: the
/// winner takes the gradient and a tie splits it, as PyTorch does.
static SmallVector<Value> extremumGradients(OpBuilder &b, Location loc,
                                            StringRef wins, Value lhs,
                                            Value rhs, Value dy) {
  Type et = rankedType(dy).getElementType();
  Value win = toFloat(b, loc, CompareOp::create(b, loc, wins, lhs, rhs), et);
  Value tie = toFloat(b, loc, CompareOp::create(b, loc, "eq", lhs, rhs), et);
  Value w = AddOp::create(b, loc, win,
                          MulOp::create(b, loc, tie, splat(b, loc, et, 0.5)));
  Value wr = SubOp::create(b, loc, splat(b, loc, et, 1.0), w);
  Value dl = MulOp::create(b, loc, dy, w), dr = MulOp::create(b, loc, dy, wr);
  return {reduceToType(b, loc, dl, rankedType(lhs)),
          reduceToType(b, loc, dr, rankedType(rhs))};
}

SmallVector<Value> MaximumOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return extremumGradients(b, getLoc(), "gt", getLhs(), getRhs(), grads[0]);
}

SmallVector<Value> MinimumOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return extremumGradients(b, getLoc(), "lt", getLhs(), getRhs(), grads[0]);
}

//===----------------------------------------------------------------------===//
// reduce_max, reduce_min
//===----------------------------------------------------------------------===//

TCC_REDUCE_INFER(ReduceMaxOp, "reduce_max")
TCC_REDUCE_INFER(ReduceMinOp, "reduce_min")

/// `v` (the reduction's result shape) reshaped to keep the reduced axes as
/// 1 and broadcast back over them.
static Value spread(OpBuilder &b, Location loc, Value v, RankedTensorType in,
                    ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, rankedType(v).getElementType());
  if (v.getType() != keptType)
    v = ReshapeOp::create(b, loc, keptType, v);
  auto full = in.clone(rankedType(v).getElementType());
  if (keptType != full)
    v = BroadcastToOp::create(b, loc, full, v);
  return v;
}

/// Every position that attains the extremum gets an equal share of dy, as
/// PyTorch's amax/amin: dx = [x == y] * dy / count.
template <class Op>
static SmallVector<Value> reduceExtremumGradients(Op op, OpBuilder &b,
                                                  Value dy) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  RankedTensorType in = rankedType(x);
  Value hit = toFloat(
      b, loc,
      CompareOp::create(b, loc, "eq", x,
                        spread(b, loc, op.getResult(), in, op.getAxes())),
      in.getElementType());
  Value count =
      ReduceSumOp::create(b, loc, hit, op.getAxes(), op.getKeepdims());
  Value share = DivOp::create(b, loc, dy, count);
  return {MulOp::create(b, loc, hit, spread(b, loc, share, in, op.getAxes()))};
}

SmallVector<Value> ReduceMaxOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return reduceExtremumGradients(*this, b, grads[0]);
}

SmallVector<Value> ReduceMinOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return reduceExtremumGradients(*this, b, grads[0]);
}

//===----------------------------------------------------------------------===//
// arg_max, arg_min
//===----------------------------------------------------------------------===//

#define TCC_ARG_INFER(OP, NAME)                                                \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,      \
      DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,       \
      SmallVectorImpl<Type> &results) {                                        \
    auto adaptor = adaptorFor<OP>(operands, attrs, props, regions);            \
    if (!adaptor.getProperties().axis)                                         \
      return emitOptionalError(loc,                                            \
                               "tcc." NAME ": requires attribute 'axis'");     \
    RankedTensorType in = rankedType(adaptor.getInput());                      \
    int64_t axis = adaptor.getAxis();                                          \
    if (axis < 0 || axis >= in.getRank())                                      \
      return emitOptionalError(loc, "tcc." NAME ": axis ", axis,               \
                               " is out of range for rank ", in.getRank());    \
    SmallVector<int64_t> shape(in.getShape());                                 \
    shape.erase(shape.begin() + axis);                                         \
    results.push_back(                                                         \
        RankedTensorType::get(shape, IntegerType::get(ctx, 64)));              \
    return success();                                                          \
  }
TCC_ARG_INFER(ArgMaxOp, "arg_max")
TCC_ARG_INFER(ArgMinOp, "arg_min")
#undef TCC_ARG_INFER
