//===- OnnxOpsReduce.cpp - Builders: norms, log-sums, scans, Hardmax ------===//
//
// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp are
// element-wise ops around tcc.reduce_sum (and reduce_max), so their
// gradients, kernels and fusion come from those ops (ReduceProd, one
// tcc.reduce_prod, imports with ReduceSum in OnnxOpsMath.cpp); CumSum is
// tcc.cumsum. Hardmax is a one-hot of tcc.arg_max.
// Every Reduce* took its axes as an attribute until opset 18 and as an
// optional constant input from 18 (reduceAxes, OnnxOpsMath.cpp).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"

#include <limits>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// reduce_sum of `x` over r's axes, or `x` itself when there are none
/// (noop_with_empty_axes: ONNX's reference still applies the element-wise
/// part, a "sum" over no axes).
static FailureOr<Value> sumOver(NodeImporter &node, Value x,
                                const ReduceAxes &r) {
  if (r.axes.empty())
    return x;
  return node.create<ReduceSumOp>(x, ArrayRef<int64_t>(r.axes), r.keepdims);
}

static FailureOr<Value> unaryFn(NodeImporter &node, StringRef fn, Value x) {
  OpBuilder &b = node.builder();
  return node.create<UnaryFnOp>(x, b.getStringAttr(fn), b.getF64FloatAttr(0),
                                b.getF64FloatAttr(0));
}

namespace {
enum class Norm { L1, L2, SumSquare, LogSum };
} // namespace

// L1: sum |x|. L2: norm_sqrt(sum x*x). SumSquare: sum x*x. LogSum: log(sum
// x). norm_sqrt's gradient is 0 at 0, so L2's at an all-zero group is 0 as
// torch.linalg.vector_norm's, not sqrt's Inf times 0.
static LogicalResult importNorm(NodeImporter &node, Norm kind) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<ReduceAxes> r = reduceAxes(node, typeOf(*x).getRank(), 18);
  if (failed(r))
    return failure();
  FailureOr<Value> v = *x;
  if (kind == Norm::L1)
    v = unaryFn(node, "abs", *x);
  else if (kind != Norm::LogSum)
    v = node.create<MulOp>(*x, *x);
  if (failed(v))
    return failure();
  v = sumOver(node, *v, *r);
  if (succeeded(v) && kind == Norm::L2)
    v = unaryFn(node, "norm_sqrt", *v);
  if (succeeded(v) && kind == Norm::LogSum)
    v = node.create<LogOp>(*v);
  if (failed(v))
    return failure();
  node.setOutput(0, *v);
  return success();
}

LogicalResult mlir::tcc::importReduceL1(NodeImporter &node) {
  return importNorm(node, Norm::L1);
}
LogicalResult mlir::tcc::importReduceL2(NodeImporter &node) {
  return importNorm(node, Norm::L2);
}
LogicalResult mlir::tcc::importReduceSumSquare(NodeImporter &node) {
  return importNorm(node, Norm::SumSquare);
}
LogicalResult mlir::tcc::importReduceLogSum(NodeImporter &node) {
  return importNorm(node, Norm::LogSum);
}

// m + log(sum(exp(x - m))) with m the group's maximum, so exp cannot
// overflow. As in torch.logsumexp, an infinite m is replaced by 0 (a group
// holding +inf then gives +inf, not inf - inf). The gradient reaching m
// through both terms cancels: x's is dy * softmax(x), torch's.
LogicalResult mlir::tcc::importReduceLogSumExp(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<ReduceAxes> r = reduceAxes(node, typeOf(*x).getRank(), 18);
  if (failed(r))
    return failure();
  if (r->axes.empty()) // log(exp(x)), exactly
    return node.forwardInput(0, 0);
  ArrayRef<int64_t> axes = r->axes;
  FailureOr<Value> m = node.create<ReduceMaxOp>(*x, axes, true);
  if (failed(m))
    return failure();
  FailureOr<Value> absM = unaryFn(node, "abs", *m);
  if (failed(absM))
    return failure();
  FailureOr<Value> finite = node.create<CompareOp>(
      "lt", *absM, node.scalar(std::numeric_limits<float>::infinity()));
  if (failed(finite))
    return failure();
  m = node.create<WhereOp>(*finite, *m, node.scalar(0));
  FailureOr<Value> shifted = failed(m) ? m : node.create<SubOp>(*x, *m);
  if (failed(shifted))
    return failure();
  FailureOr<Value> s = node.create<ExpOp>(*shifted);
  if (succeeded(s))
    s = node.create<ReduceSumOp>(*s, axes, r->keepdims);
  if (succeeded(s))
    s = node.create<LogOp>(*s);
  if (failed(s))
    return failure();
  if (!r->keepdims)
    m = node.reshape(*m, typeOf(*s).getShape());
  FailureOr<Value> y = failed(m) ? m : node.create<AddOp>(*s, *m);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

// Opset 11 and 14 (bfloat16) mean the same. The axis is input 1, a scalar
// (or one-element) integer that tcc needs at compile time.
LogicalResult mlir::tcc::importCumSum(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  FailureOr<int64_t> exclusive = node.intAttr("exclusive", 0);
  FailureOr<int64_t> reverse = node.intAttr("reverse", 0);
  if (failed(x) || failed(exclusive) || failed(reverse))
    return failure();
  if (!node.hasInput(1))
    return node.emitError() << "needs the axis (input 1)";
  FailureOr<SmallVector<int64_t>> axisIn = node.constantInts(1, "axis");
  if (failed(axisIn))
    return failure();
  if (axisIn->size() != 1)
    return node.emitError()
           << "axis must be a scalar, has " << axisIn->size() << " elements";
  FailureOr<int64_t> axis =
      node.normalizeAxis("axis", (*axisIn)[0], typeOf(*x).getRank());
  if (failed(axis))
    return failure();
  FailureOr<Value> y = node.create<CumSumOp>(*x, uint64_t(*axis),
                                             *exclusive != 0, *reverse != 0);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// Hardmax
//===----------------------------------------------------------------------===//

// 1 at the first maximum along the axis, 0 elsewhere: arg_max compared with
// the positions along the axis. Before opset 13 the input is coerced to 2-D
// [prod(dims < axis), prod(dims >= axis)] (default axis 1) and the maximum
// taken over each row, as Softmax did; from 13 along one axis (default -1).
// Not differentiable (its gradient is zero almost everywhere).
LogicalResult mlir::tcc::importHardmax(NodeImporter &node) {
  bool coerce = node.opset() < 13;
  FailureOr<Value> x = node.input(0);
  FailureOr<int64_t> attr = node.intAttr("axis", coerce ? 1 : -1);
  if (failed(x) || failed(attr))
    return failure();
  ArrayRef<int64_t> shape = typeOf(*x).getShape();
  int64_t rank = shape.size();
  FailureOr<int64_t> axis = node.normalizeAxis("attribute 'axis'", *attr, rank);
  if (failed(axis))
    return failure();
  Value in = *x;
  int64_t ax = *axis;
  if (coerce) {
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < ax ? rows : cols) *= shape[d];
    FailureOr<Value> flat = node.reshape(*x, {rows, cols});
    if (failed(flat))
      return failure();
    in = *flat;
    ax = 1;
  }
  ArrayRef<int64_t> inShape = typeOf(in).getShape();
  if (typeOf(in).getNumElements() == 0)
    return node.forwardInput(0, 0); // nothing to mark
  FailureOr<Value> idx = node.create<ArgMaxOp>(in, uint64_t(ax), false);
  SmallVector<int64_t> kept(inShape);
  kept[ax] = 1;
  if (succeeded(idx))
    idx = node.reshape(*idx, kept);
  if (failed(idx))
    return failure();
  SmallVector<int64_t> iotaShape(inShape.size(), 1), iota;
  iotaShape[ax] = inShape[ax];
  for (int64_t i = 0; i < inShape[ax]; ++i)
    iota.push_back(i);
  auto i64 = IntegerType::get(node.context(), 64);
  Value positions =
      ConstantOp::create(node.builder(), node.loc(),
                         fromInts(RankedTensorType::get(iotaShape, i64), iota));
  FailureOr<Value> hit = node.create<CompareOp>("eq", *idx, positions);
  if (failed(hit))
    return failure();
  Value y = CastOp::create(node.builder(), node.loc(),
                           typeOf(in).clone(node.builder().getF32Type()), *hit);
  if (coerce) {
    FailureOr<Value> out = node.reshape(y, shape);
    if (failed(out))
      return failure();
    y = *out;
  }
  node.setOutput(0, y);
  return success();
}
