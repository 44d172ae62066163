//===- OnnxOpsMath.cpp - Builders: products, element-wise, reductions -----===//
#include "frontends/onnx/OnnxGraph.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

// numpy.matmul: a 1-D lhs is a row vector and a 1-D rhs a column vector, and
// the dimension they add is removed again from the result.
LogicalResult mlir::tcc::importMatMul(NodeImporter &node) {
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  if (failed(in))
    return failure();
  Value a = (*in)[0], b = (*in)[1];
  int64_t rankA = typeOf(a).getRank(), rankB = typeOf(b).getRank();
  if (rankA == 0 || rankB == 0)
    return node.emitError()
           << "operands need rank >= 1, got " << rankA << " and " << rankB;
  if (rankA == 1) {
    FailureOr<Value> r = node.reshape(a, {1, typeOf(a).getDimSize(0)});
    if (failed(r))
      return failure();
    a = *r;
  }
  if (rankB == 1) {
    FailureOr<Value> r = node.reshape(b, {typeOf(b).getDimSize(0), 1});
    if (failed(r))
      return failure();
    b = *r;
  }
  FailureOr<Value> y = node.create<MatmulOp>(a, b, false, false);
  if (failed(y))
    return failure();
  if (rankA == 1 || rankB == 1) {
    SmallVector<int64_t> shape(typeOf(*y).getShape());
    int64_t rank = shape.size();
    if (rankB == 1)
      shape.erase(shape.begin() + rank - 1);
    if (rankA == 1)
      shape.erase(shape.begin() + rank - 2);
    y = node.reshape(*y, shape);
    if (failed(y))
      return failure();
  }
  node.setOutput(0, *y);
  return success();
}

// alpha * op(A) * op(B) + beta * C, with the scalings emitted only when they
// are not 1 (and C dropped when beta is 0) so the common Linear layer stays a
// plain matmul + add.
LogicalResult mlir::tcc::importGemm(NodeImporter &node) {
  FailureOr<float> alpha = node.floatAttr("alpha", 1.0f);
  FailureOr<float> beta = node.floatAttr("beta", 1.0f);
  FailureOr<int64_t> transA = node.intAttr("transA", 0);
  FailureOr<int64_t> transB = node.intAttr("transB", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  if (failed(in))
    return failure();
  Value a = (*in)[0], b = (*in)[1];
  if (typeOf(a).getRank() != 2 || typeOf(b).getRank() != 2)
    return node.emitError() << "A and B must be 2-D, got shapes "
                            << shapeStr(typeOf(a).getShape()) << " and "
                            << shapeStr(typeOf(b).getShape());
  FailureOr<Value> y = node.create<MatmulOp>(a, b, *transA != 0, *transB != 0);
  if (failed(y))
    return failure();
  if (*alpha != 1.0f) {
    y = node.create<MulOp>(*y, node.scalar(*alpha));
    if (failed(y))
      return failure();
  }
  if (node.hasInput(2) && *beta != 0.0f) {
    FailureOr<Value> c = node.input(2);
    if (failed(c))
      return failure();
    // C broadcasts one way only: onto [M, N], never enlarging the result.
    // Before opset 7 only with `broadcast` = 1, and then in the same way.
    ArrayRef<int64_t> yShape = typeOf(*y).getShape();
    auto shape = broadcastShapes(typeOf(*c).getShape(), yShape);
    FailureOr<int64_t> legacy = node.intAttr("broadcast", 0);
    if (failed(legacy))
      return failure();
    bool mayBroadcast = node.opset() >= 7 || *legacy;
    if (failed(shape) || ArrayRef<int64_t>(*shape) != yShape ||
        (!mayBroadcast && typeOf(*c).getShape() != yShape))
      return node.emitError()
             << "C of shape " << shapeStr(typeOf(*c).getShape())
             << " does not broadcast to the result shape " << shapeStr(yShape);
    if (*beta != 1.0f) {
      c = node.create<MulOp>(*c, node.scalar(*beta));
      if (failed(c))
        return failure();
    }
    y = node.create<AddOp>(*y, *c);
    if (failed(y))
      return failure();
  }
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

// Before opset 7, B broadcast to A's shape only with `broadcast` = 1, either
// as a one-element tensor or with its shape a contiguous run of A's starting
// at `axis` (default: A's trailing dimensions). Reshaping B to A's rank with
// ones around that run turns this into NumPy broadcasting.
FailureOr<Value> mlir::tcc::legacyBroadcastRhs(NodeImporter &node, Value a,
                                               Value b) {
  FailureOr<int64_t> broadcast = node.intAttr("broadcast", 0);
  if (failed(broadcast))
    return failure();
  ArrayRef<int64_t> shapeA = typeOf(a).getShape(),
                    shapeB = typeOf(b).getShape();
  if (!*broadcast) {
    if (shapeA != shapeB)
      return node.emitError()
             << "operands of shapes " << shapeStr(shapeA) << " and "
             << shapeStr(shapeB) << " differ, and attribute 'broadcast' (opset "
             << node.opset() << ") is not 1";
    return b;
  }
  int64_t rankA = shapeA.size(), rankB = shapeB.size();
  if (typeOf(b).getNumElements() == 1 && rankB <= rankA)
    return node.reshape(b, {});
  FailureOr<int64_t> axis = rankA - rankB;
  if (node.attr("axis")) {
    FailureOr<int64_t> attr = node.intAttr("axis", 0);
    if (failed(attr))
      return failure();
    axis = node.normalizeAxis("attribute 'axis'", *attr, rankA);
    if (failed(axis))
      return failure();
  }
  // A dimension of 1 in B also broadcasts (PyTorch's exports of opset 6
  // rely on it, and ONNX's tests of them expect NumPy's answer).
  auto fits = [&] {
    for (int64_t d = 0; d < rankB; ++d)
      if (shapeB[d] != 1 && shapeB[d] != shapeA[*axis + d])
        return false;
    return true;
  };
  if (*axis < 0 || *axis + rankB > rankA || !fits())
    return node.emitError()
           << "B of shape " << shapeStr(shapeB) << " is not a run of A's shape "
           << shapeStr(shapeA) << " at axis " << *axis;
  if (*axis == rankA - rankB)
    return b; // trailing dimensions: NumPy aligns them the same way
  SmallVector<int64_t> shape(rankA, 1);
  llvm::copy(shapeB, shape.begin() + *axis);
  return node.reshape(b, shape);
}

template <typename OpTy> static LogicalResult importBinary(NodeImporter &node) {
  // Arithmetic on constants folds (OnnxOpsLogic.cpp).
  FailureOr<bool> folded = foldConstantArithmetic(node);
  if (failed(folded) || *folded)
    return failure(failed(folded));
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  if (failed(in))
    return failure();
  if (node.opset() < 7) {
    FailureOr<Value> b = legacyBroadcastRhs(node, (*in)[0], (*in)[1]);
    if (failed(b))
      return failure();
    (*in)[1] = *b;
  }
  FailureOr<Value> y = node.create<OpTy>((*in)[0], (*in)[1]);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

LogicalResult mlir::tcc::importAdd(NodeImporter &node) {
  return importBinary<AddOp>(node);
}
LogicalResult mlir::tcc::importSub(NodeImporter &node) {
  return importBinary<SubOp>(node);
}
LogicalResult mlir::tcc::importMul(NodeImporter &node) {
  return importBinary<MulOp>(node);
}
LogicalResult mlir::tcc::importDiv(NodeImporter &node) {
  return importBinary<DivOp>(node);
}

LogicalResult mlir::tcc::importRelu(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.create<ReluOp>(*x);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// `axesInputSince` is the opset where `axes` moved from an attribute to an
// optional input (ReduceSum 13, the others 18); `noop_with_empty_axes` came
// with it.
FailureOr<ReduceAxes> mlir::tcc::reduceAxes(NodeImporter &node, int64_t rank,
                                            int64_t axesInputSince) {
  FailureOr<int64_t> keepdims = node.intAttr("keepdims", 1);
  if (failed(keepdims))
    return failure();
  SmallVector<int64_t> axes;
  bool noop = false;
  if (node.opset() >= axesInputSince) {
    if (node.attr("axes"))
      return node.emitError() << "attribute 'axes' does not exist at opset "
                              << node.opset() << "; axes is the second input";
    FailureOr<int64_t> noopAttr = node.intAttr("noop_with_empty_axes", 0);
    if (failed(noopAttr))
      return failure();
    noop = *noopAttr != 0;
    if (node.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> in = node.constantInts(1, "axes");
      if (failed(in))
        return failure();
      axes = *in;
    }
  } else {
    FailureOr<std::optional<SmallVector<int64_t>>> attr = node.intsAttr("axes");
    if (failed(attr))
      return failure();
    if (*attr)
      axes = **attr;
  }
  if (axes.empty()) {
    if (noop)
      return ReduceAxes{{}, *keepdims != 0};
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  for (int64_t &axis : axes) {
    FailureOr<int64_t> a = node.normalizeAxis("axes entry", axis, rank);
    if (failed(a))
      return failure();
    axis = *a;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return node.emitError() << "axes name a dimension twice";
  return ReduceAxes{axes, *keepdims != 0};
}

template <typename OpTy>
static LogicalResult importReduce(NodeImporter &node, int64_t axesInputSince) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<ReduceAxes> r =
      reduceAxes(node, typeOf(*x).getRank(), axesInputSince);
  if (failed(r))
    return failure();
  if (r->axes.empty())
    return node.forwardInput(0, 0);
  FailureOr<Value> y =
      node.create<OpTy>(*x, ArrayRef<int64_t>(r->axes), r->keepdims);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

LogicalResult mlir::tcc::importReduceSum(NodeImporter &node) {
  return importReduce<ReduceSumOp>(node, 13);
}
LogicalResult mlir::tcc::importReduceMean(NodeImporter &node) {
  return importReduce<ReduceMeanOp>(node, 18);
}
LogicalResult mlir::tcc::importReduceProd(NodeImporter &node) {
  return importReduce<ReduceProdOp>(node, 18);
}
// Float inputs only at run time (there is no integer reduction kernel).
LogicalResult mlir::tcc::importReduceMax(NodeImporter &node) {
  return importReduce<ReduceMaxOp>(node, 18);
}
LogicalResult mlir::tcc::importReduceMin(NodeImporter &node) {
  return importReduce<ReduceMinOp>(node, 18);
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

// Opset 13 normalizes along one axis (default -1). Before, the input was
// coerced to 2-D [prod(dims < axis), prod(dims >= axis)] (default axis 1) and
// normalized along the second dimension, i.e. over all trailing dimensions
// together; that is a reshape around the one-axis op.
template <typename OpTy>
static LogicalResult importSoftmaxLike(NodeImporter &node) {
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
  if (!coerce || *axis == rank - 1) {
    FailureOr<Value> y = node.create<OpTy>(*x, uint64_t(*axis));
    if (failed(y))
      return failure();
    node.setOutput(0, *y);
    return success();
  }
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < *axis ? rows : cols) *= shape[d];
  FailureOr<Value> flat = node.reshape(*x, {rows, cols});
  if (failed(flat))
    return failure();
  FailureOr<Value> y = node.create<OpTy>(*flat, uint64_t(1));
  if (failed(y))
    return failure();
  FailureOr<Value> out = node.reshape(*y, shape);
  if (failed(out))
    return failure();
  node.setOutput(0, *out);
  return success();
}

LogicalResult mlir::tcc::importSoftmax(NodeImporter &node) {
  return importSoftmaxLike<SoftmaxOp>(node);
}
LogicalResult mlir::tcc::importLogSoftmax(NodeImporter &node) {
  return importSoftmaxLike<LogSoftmaxOp>(node);
}
