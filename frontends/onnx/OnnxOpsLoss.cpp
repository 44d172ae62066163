//===- OnnxOpsLoss.cpp - Builders: NegativeLogLikelihoodLoss, SCE loss ----===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss decompose into
// existing tcc ops rather than a kernel of their own: the graphs that carry
// them are small, and the decomposition is exact and trains (every op on the
// path from the scores has a gradient rule; targets and weights get none).
// tcc.softmax_cross_entropy, the loss --loss cross_entropy adds, has no
// weights, ignore_index or reduction, so it does not fit.
//
// With x = log-probabilities [N, C, d1..dk] (SCE: log_softmax of the scores
// on axis 1), t = targets [N, d1..dk] and w = weights [C]:
//
//   mask[n,c,d] = (c == t[n,d]) and t[n,d] != ignore_index
//   picked      = sum_c where(mask, x, 0)           (x[n, t[n,d], d] or 0)
//   wt          = sum_c where(mask, w, 0)           (w[t[n,d]] or 0)
//   loss        = -wt * picked      (no weights: -picked)
//   mean        = sum(loss) / sum(wt)   (no weights: / count of targets kept)
//
// A class index never equals an ignore_index outside [0, C), so mask needs
// the second term only for one inside it. An ignored position contributes
// 0 to the loss and to the divisor, as the ONNX specification and PyTorch
// say.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// The attributes and inputs the two losses share.
struct LossSpec {
  std::string reduction = "mean";
  std::optional<int64_t> ignoreIndex;
  Value target; // i64 [N, d1..dk]
  Value weight; // f32 [C], or null
};
} // namespace

/// Reads `reduction`, `ignore_index`, the targets (input 1) and the optional
/// weights (input 2), checking their shapes against `scores` [N, C, ...].
static FailureOr<LossSpec> readLossSpec(NodeImporter &node,
                                        RankedTensorType scores) {
  LossSpec spec;
  if (const onnx::AttributeProto *a = node.attr("reduction")) {
    if (a->type() != onnx::AttributeProto::STRING)
      return node.emitError() << "attribute 'reduction' should be a string";
    spec.reduction = a->s();
  }
  if (spec.reduction != "none" && spec.reduction != "sum" &&
      spec.reduction != "mean")
    return node.emitError() << "attribute 'reduction' is '" << spec.reduction
                            << "', expected 'none', 'sum' or 'mean'";
  if (node.attr("ignore_index")) {
    FailureOr<int64_t> ii = node.intAttr("ignore_index", 0);
    if (failed(ii))
      return failure();
    spec.ignoreIndex = *ii;
  }

  ArrayRef<int64_t> shape = scores.getShape();
  if (shape.size() < 2)
    return node.emitError() << "the scores have shape " << shapeStr(shape)
                            << "; expected [N, C] or [N, C, d1, ..., dk]";
  SmallVector<int64_t> targetShape{shape[0]};
  targetShape.append(shape.begin() + 2, shape.end());

  if (!node.hasInput(1))
    return node.emitError() << "needs the target input";
  FailureOr<RankedTensorType> tt = node.inputType(1);
  if (failed(tt))
    return failure();
  if (!tt->getElementType().isInteger(64) &&
      !tt->getElementType().isInteger(32))
    return node.emitError() << "the target has type " << *tt
                            << ", expected int32 or int64 class indices";
  if (tt->getShape() != ArrayRef<int64_t>(targetShape))
    return node.emitError()
           << "the target has shape " << shapeStr(tt->getShape())
           << ", expected " << shapeStr(targetShape)
           << " (the scores' shape without axis 1)";
  FailureOr<Value> target = node.anyInput(1);
  if (failed(target))
    return failure();
  if (!typeOf(*target).getElementType().isInteger(64))
    return node.emitUnsupported("int32 target")
           << "an int32 target computed at run time is not supported "
              "(int64 is)";
  spec.target = *target;

  if (node.hasInput(2)) {
    FailureOr<Value> weight = node.input(2);
    if (failed(weight))
      return failure();
    if (typeOf(*weight).getShape() != ArrayRef<int64_t>{shape[1]})
      return node.emitError()
             << "the weight has shape " << shapeStr(typeOf(*weight).getShape())
             << ", expected [" << shape[1] << "] (one per class)";
    spec.weight = *weight;
  }
  return spec;
}

/// `shape` with every dimension but axis 1 set to 1 ([1, C, 1, ..., 1]).
static SmallVector<int64_t> classAxisShape(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> out(shape.size(), 1);
  out[1] = shape[1];
  return out;
}

/// The negative log-likelihood of log-probabilities `logProb` [N, C, ...]
/// under `spec`, reduced as it says (see the file comment).
static FailureOr<Value> negativeLogLikelihood(NodeImporter &node, Value logProb,
                                              const LossSpec &spec) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  ArrayRef<int64_t> shape = typeOf(logProb).getShape();
  int64_t rank = shape.size(), classes = shape[1];
  auto i64 = b.getI64Type();

  // Targets equal to an ignore_index that is a class index become -1,
  // which matches no class.
  Value target = spec.target;
  if (spec.ignoreIndex && *spec.ignoreIndex >= 0 &&
      *spec.ignoreIndex < classes) {
    auto scalarType = RankedTensorType::get({}, i64);
    Value ii = ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalarType, *spec.ignoreIndex));
    Value none =
        ConstantOp::create(b, loc, DenseElementsAttr::get(scalarType, -1L));
    FailureOr<Value> ignored =
        node.create<CompareOp>(b.getStringAttr("eq"), target, ii);
    if (failed(ignored))
      return failure();
    FailureOr<Value> kept = node.create<WhereOp>(*ignored, none, target);
    if (failed(kept))
      return failure();
    target = *kept;
  }

  // mask[n, c, d] = (c == target[n, d]): class indices [1, C, 1..] against
  // the targets with a unit class axis [N, 1, d..].
  SmallVector<int64_t> iotaShape = classAxisShape(shape);
  SmallVector<int64_t> iota;
  for (int64_t c = 0; c < classes; ++c)
    iota.push_back(c);
  Value classIds = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get(iotaShape, i64),
                             ArrayRef<int64_t>(iota)));
  SmallVector<int64_t> unitClass(shape);
  unitClass[1] = 1;
  FailureOr<Value> t = node.reshape(target, unitClass);
  if (failed(t))
    return failure();
  FailureOr<Value> mask =
      node.create<CompareOp>(b.getStringAttr("eq"), classIds, *t);
  if (failed(mask))
    return failure();

  Value zero = node.scalar(0.0f);
  auto sumClasses = [&](Value v) -> FailureOr<Value> {
    FailureOr<Value> sel = node.create<WhereOp>(*mask, v, zero);
    if (failed(sel))
      return failure();
    return node.create<ReduceSumOp>(*sel, ArrayRef<int64_t>{1}, false);
  };
  FailureOr<Value> picked = sumClasses(logProb);
  if (failed(picked))
    return failure();

  // Per-position weights: w[target], 0 where ignored; without weights, 1
  // for a kept target, needed only for the mean's divisor.
  Value posWeight;
  Value loss;
  if (spec.weight) {
    FailureOr<Value> w = node.reshape(spec.weight, iotaShape);
    if (failed(w))
      return failure();
    FailureOr<Value> wt = sumClasses(*w);
    if (failed(wt))
      return failure();
    posWeight = *wt;
    FailureOr<Value> weighted = node.create<MulOp>(*wt, *picked);
    if (failed(weighted))
      return failure();
    loss = *weighted;
  } else {
    loss = *picked;
  }
  FailureOr<Value> neg = node.create<NegOp>(loss);
  if (failed(neg))
    return failure();
  loss = *neg;
  if (spec.reduction == "none")
    return loss;

  SmallVector<int64_t> all;
  for (int64_t d = 0; d < rank - 1; ++d)
    all.push_back(d);
  // Without weights or ignore_index, the mean is over every position.
  if (spec.reduction == "mean" && !spec.weight && !spec.ignoreIndex)
    return node.create<ReduceMeanOp>(loss, ArrayRef<int64_t>(all), false);
  FailureOr<Value> total =
      node.create<ReduceSumOp>(loss, ArrayRef<int64_t>(all), false);
  if (failed(total) || spec.reduction == "sum")
    return total;
  if (!posWeight) {
    FailureOr<Value> kept = sumClasses(node.scalar(1.0f));
    if (failed(kept))
      return failure();
    posWeight = *kept;
  }
  FailureOr<Value> divisor =
      node.create<ReduceSumOp>(posWeight, ArrayRef<int64_t>(all), false);
  if (failed(divisor))
    return failure();
  return node.create<DivOp>(*total, *divisor);
}

LogicalResult mlir::tcc::importNegativeLogLikelihoodLoss(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<LossSpec> spec = readLossSpec(node, typeOf(*x));
  if (failed(spec))
    return failure();
  FailureOr<Value> loss = negativeLogLikelihood(node, *x, *spec);
  if (failed(loss))
    return failure();
  node.setOutput(0, *loss);
  return success();
}

LogicalResult mlir::tcc::importSoftmaxCrossEntropyLoss(NodeImporter &node) {
  FailureOr<Value> scores = node.input(0);
  if (failed(scores))
    return failure();
  FailureOr<LossSpec> spec = readLossSpec(node, typeOf(*scores));
  if (failed(spec))
    return failure();
  FailureOr<Value> logProb = node.create<LogSoftmaxOp>(*scores, uint64_t(1));
  if (failed(logProb))
    return failure();
  FailureOr<Value> loss = negativeLogLikelihood(node, *logProb, *spec);
  if (failed(loss))
    return failure();
  node.setOutput(0, *loss);
  // The optional second output: the log-probabilities themselves.
  if (node.proto().output_size() > 1 && !node.proto().output(1).empty())
    node.setOutput(1, *logProb);
  return success();
}
