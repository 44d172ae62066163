//===- TccGradients.cpp - Reverse-mode gradient rules of tcc ops ----------===//
//
// Each rule builds the vector-Jacobian product of one op. Broadcasting ops
// reduce a result gradient back to their operand's shape (sum over the
// broadcast dimensions), so every returned gradient has its operand's type.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                            double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

// Declared in TccOps.h: the family files' rules (TccGradients*.cpp) use it.
Value mlir::tcc::reduceToType(OpBuilder &b, Location loc, Value grad,
                              RankedTensorType target) {
  RankedTensorType gt = typeOf(grad);
  if (gt == target)
    return grad;
  int64_t lead = gt.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < gt.getRank(); ++i)
    if (i < lead || (target.getDimSize(i - lead) == 1 && gt.getDimSize(i) != 1))
      axes.push_back(i);
  Value r = grad;
  if (!axes.empty())
    r = ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/false);
  if (r.getType() != target)
    r = ReshapeOp::create(b, loc, target, r);
  return r;
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

SmallVector<Value> ReshapeOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {ReshapeOp::create(b, getLoc(), getInput().getType(), grads[0])};
}

SmallVector<Value> BroadcastToOp::buildGradients(OpBuilder &b,
                                                 ValueRange grads) {
  return {reduceToType(b, getLoc(), grads[0], typeOf(getInput()))};
}

SmallVector<Value> TransposeOp::buildGradients(OpBuilder &b, ValueRange grads) {
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = i;
  return {TransposeOp::create(b, getLoc(), grads[0], inverse)};
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

SmallVector<Value> MatmulOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  Value g = grads[0], a = getLhs(), w = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  // With op(X) = X or X^T:  C = op(A) op(B), so
  //   d op(A) = dC op(B)^T   and   d op(B) = op(A)^T dC,
  // and each is transposed back when the operand was stored transposed.
  Value da, db;
  if (!ta)
    da = MatmulOp::create(b, loc, g, w, false, !tb);       // dC op(B)^T
  else
    da = MatmulOp::create(b, loc, w, g, tb, true);         // (dC op(B)^T)^T
  auto aType = cast<RankedTensorType>(a.getType());
  auto gType = cast<RankedTensorType>(g.getType());
  if (!ta && aType.getRank() > 2 && typeOf(w).getRank() == 2 &&
      gType.getRank() == aType.getRank() &&
      aType.getShape().drop_back() == gType.getShape().drop_back()) {
    // A 2-D weight applied to a batch of rows ([..., M, K] x [K, N]): its
    // gradient sums A_b^T dC_b over the batch, which is one GEMM over all
    // rows at once. Without this the batched product [..., K, N] is built
    // and then reduced: a temporary as large as the weight times the batch.
    int64_t rows = aType.getNumElements() / aType.getShape().back();
    auto flat = [&](Value v, RankedTensorType t) -> Value {
      return ReshapeOp::create(
          b, loc, RankedTensorType::get({rows, t.getShape().back()},
                                        t.getElementType()),
          v);
    };
    Value a2 = flat(a, aType), g2 = flat(g, gType);
    if (!tb)
      db = MatmulOp::create(b, loc, a2, g2, true, false);  // A^T dC
    else
      db = MatmulOp::create(b, loc, g2, a2, true, false);  // dC^T A
  } else if (!tb) {
    db = MatmulOp::create(b, loc, a, g, !ta, false);       // op(A)^T dC
  } else {
    db = MatmulOp::create(b, loc, g, a, true, ta);         // (op(A)^T dC)^T
  }
  return {reduceToType(b, loc, da, typeOf(a)),
          reduceToType(b, loc, db, typeOf(w))};
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

SmallVector<Value> AddOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {reduceToType(b, getLoc(), grads[0], typeOf(getLhs())),
          reduceToType(b, getLoc(), grads[0], typeOf(getRhs()))};
}

SmallVector<Value> SubOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Value neg = NegOp::create(b, getLoc(), grads[0]);
  return {reduceToType(b, getLoc(), grads[0], typeOf(getLhs())),
          reduceToType(b, getLoc(), neg, typeOf(getRhs()))};
}

SmallVector<Value> MulOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  Value da = MulOp::create(b, loc, grads[0], getRhs());
  Value db = MulOp::create(b, loc, grads[0], getLhs());
  return {reduceToType(b, loc, da, typeOf(getLhs())),
          reduceToType(b, loc, db, typeOf(getRhs()))};
}

SmallVector<Value> DivOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  // c = a / b:  da = g / b,  db = -g * a / b^2 = -(g * c) / b.
  Value da = DivOp::create(b, loc, grads[0], getRhs());
  Value gc = MulOp::create(b, loc, grads[0], getResult());
  Value db = NegOp::create(b, loc, DivOp::create(b, loc, gc, getRhs()));
  return {reduceToType(b, loc, da, typeOf(getLhs())),
          reduceToType(b, loc, db, typeOf(getRhs()))};
}

SmallVector<Value> NegOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {NegOp::create(b, getLoc(), grads[0])};
}

SmallVector<Value> ReluOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {ReluGradOp::create(b, getLoc(), grads[0], getInput())};
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

/// Spreads a reduction's result gradient back over the reduced axes.
static Value expandReduced(OpBuilder &b, Location loc, Value g,
                           RankedTensorType inType, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(inType.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, inType.getElementType());
  Value r = g;
  if (r.getType() != keptType)
    r = ReshapeOp::create(b, loc, keptType, r);
  if (keptType != inType)
    r = BroadcastToOp::create(b, loc, inType, r);
  return r;
}

SmallVector<Value> ReduceSumOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {expandReduced(b, getLoc(), grads[0], typeOf(getInput()), getAxes())};
}

SmallVector<Value> ReduceMeanOp::buildGradients(OpBuilder &b,
                                                ValueRange grads) {
  Location loc = getLoc();
  RankedTensorType in = typeOf(getInput());
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= in.getDimSize(a);
  Value scale = scalarConstant(b, loc, in.getElementType(), 1.0 / count);
  Value g = MulOp::create(b, loc, grads[0], scale);
  return {expandReduced(b, loc, g, in, getAxes())};
}

SmallVector<Value> SoftmaxOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {SoftmaxGradOp::create(b, getLoc(), grads[0], getResult(), getAxis())};
}

SmallVector<Value> LogSoftmaxOp::buildGradients(OpBuilder &b,
                                                ValueRange grads) {
  return {
      LogSoftmaxGradOp::create(b, getLoc(), grads[0], getResult(), getAxis())};
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The loss is a mean over the positions whose label is not ignore_index,
/// so each gets dl / max(count, 1) (no position: no gradient). The count is
/// computed here, in the graph, rather than in the gradient kernel: a fused
/// region computes its rows independently and could not count the labels
/// of all rows before its first one.
Value mlir::tcc::crossEntropyGradPerPosition(OpBuilder &b, Location loc,
                                             Value grad, Value labels,
                                             IntegerAttr ignoreIndex) {
  Type et = typeOf(grad).getElementType();
  RankedTensorType labelType = typeOf(labels);
  auto i64Scalar = RankedTensorType::get({}, labelType.getElementType());
  Value ignore = ConstantOp::create(
      b, loc, DenseElementsAttr::get(i64Scalar, ignoreIndex.getValue()));
  Value ignored = CompareOp::create(b, loc, "eq", labels, ignore);
  Value skipped = CastOp::create(b, loc, labelType.clone(et), ignored);
  if (labelType.getRank() > 0) {
    auto all = llvm::seq<int64_t>(0, labelType.getRank());
    SmallVector<int64_t> axes(all.begin(), all.end());
    skipped = ReduceSumOp::create(b, loc, skipped, axes, /*keepdims=*/false);
  }
  Value count = SubOp::create(
      b, loc,
      scalarConstant(b, loc, et,
                     static_cast<double>(labelType.getNumElements())),
      skipped);
  return DivOp::create(
      b, loc, grad,
      MaximumOp::create(b, loc, count, scalarConstant(b, loc, et, 1.0)));
}

SmallVector<Value> SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b,
                                                         ValueRange grads) {
  Location loc = getLoc();
  Value perPosition = crossEntropyGradPerPosition(b, loc, grads[0], getLabels(),
                                                  getIgnoreIndexAttr());
  Value d = SoftmaxCrossEntropyGradOp::create(b, loc, perPosition, getLogits(),
                                              getLabels(), getIgnoreIndexAttr(),
                                              getLabelSmoothingAttr());
  return {d, Value()};
}

SmallVector<Value> MseLossOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Value d = MseLossGradOp::create(b, getLoc(), grads[0], getPrediction(),
                                  getTarget());
  return {d, NegOp::create(b, getLoc(), d)};
}
