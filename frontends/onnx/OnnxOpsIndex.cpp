//===- OnnxOpsIndex.cpp - Builders: gathers and scatters by data ----------===//
//
// GatherElements, ScatterElements (and the older Scatter), GatherND,
// ScatterND and TopK become the tcc indexing ops (TccOpsIndex.td); TopK's
// values are a gather_elements by its indices, so its gradient is that
// gather's. Tile, OneHot, DepthToSpace, SpaceToDepth, EyeLike and Compress
// decompose into older ops: OnnxOpsRearrange.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

/// The element type indices must have; Error otherwise.
static LogicalResult checkIndexType(NodeImporter &node, unsigned i) {
  FailureOr<RankedTensorType> t = node.inputType(i);
  if (failed(t))
    return failure();
  Type e = t->getElementType();
  if (!e.isInteger(64) && !e.isInteger(32))
    return node.emitError()
           << "indices have type " << *t << ", expected int32 or int64";
  return success();
}

/// Input `i` whatever its element type (integer constants as i64).
static FailureOr<Value> dataInput(NodeImporter &node, unsigned i) {
  return node.anyInput(i);
}

//===----------------------------------------------------------------------===//
// GatherElements, ScatterElements, Scatter
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importGatherElements(NodeImporter &node) {
  FailureOr<RankedTensorType> dataType = node.inputType(0);
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  if (failed(dataType) || failed(attr) || failed(checkIndexType(node, 1)))
    return failure();
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, dataType->getRank());
  FailureOr<Value> x = dataInput(node, 0);
  FailureOr<Value> indices = node.anyInput(1);
  if (failed(axis) || failed(x) || failed(indices))
    return failure();
  FailureOr<Value> y =
      node.create<GatherElementsOp>(*x, *indices, uint64_t(*axis));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

/// ScatterElements (opset 11; `reduction` add/mul from 16, max/min from
/// 18) and Scatter (9..10, the same without reduction).
LogicalResult mlir::tcc::importScatterElements(NodeImporter &node) {
  FailureOr<RankedTensorType> dataType = node.inputType(0);
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  if (failed(dataType) || failed(attr) || failed(checkIndexType(node, 1)))
    return failure();
  std::string reduction = "none";
  if (const onnx::AttributeProto *r = node.attr("reduction")) {
    reduction = r->s();
    int64_t since = reduction == "max" || reduction == "min" ? 18 : 16;
    if (node.opType() != "ScatterElements" || node.opset() < since ||
        ScatterElementsOp::reductionCode(reduction) < 0)
      return node.emitError() << "reduction '" << reduction
                              << "' does not exist at opset " << node.opset();
  }
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, dataType->getRank());
  FailureOr<Value> x = dataInput(node, 0);
  FailureOr<Value> indices = node.anyInput(1);
  FailureOr<Value> updates = dataInput(node, 2);
  if (failed(axis) || failed(x) || failed(indices) || failed(updates))
    return failure();
  FailureOr<Value> y = node.create<ScatterElementsOp>(
      reduction, *x, *indices, *updates, uint64_t(*axis));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// GatherND, ScatterND
//===----------------------------------------------------------------------===//

/// GatherND: 11; batch_dims from 12.
LogicalResult mlir::tcc::importGatherND(NodeImporter &node) {
  FailureOr<int64_t> b = node.intAttr("batch_dims", 0);
  if (failed(b) || failed(checkIndexType(node, 1)))
    return failure();
  if (*b != 0 && node.opset() < 12)
    return node.emitError() << "attribute 'batch_dims' does not exist at "
                               "opset "
                            << node.opset();
  DenseElementsAttr dataConst = node.constantInput(0);
  DenseElementsAttr idxConst = node.constantInput(1);
  if (dataConst && idxConst) {
    // Known data at known tuples (shape subgraphs, int32 tables) folds, so
    // the result keeps the data's element type.
    auto data = cast<RankedTensorType>(dataConst.getType()).getShape();
    auto idxShape = cast<RankedTensorType>(idxConst.getType()).getShape();
    int64_t r = data.size(), q = idxShape.size();
    int64_t m = q ? idxShape.back() : 0;
    if (*b < 0 || *b >= std::min(q, r) || m < 1 || m > r - *b ||
        data.take_front(*b) != idxShape.take_front(*b))
      return node.emitError()
             << "indices of shape " << shapeStr(idxShape) << " (batch_dims "
             << *b << ") do not index data of shape " << shapeStr(data);
    SmallVector<int64_t> shape(idxShape.drop_back());
    llvm::append_range(shape, data.drop_front(*b + m));
    if (foldable({dataConst, idxConst}, shape)) {
      SmallVector<int64_t> idx = intValues(idxConst), map;
      int64_t inner = numElements(data.drop_front(*b + m));
      int64_t batches = numElements(data.take_front(*b));
      int64_t tuples = (int64_t)idx.size() / m;
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off =
            (t / (tuples / batches)) * numElements(data.drop_front(*b));
        for (int64_t j = 0; j < m; ++j) {
          int64_t n = data[*b + j], k = idx[t * m + j];
          if (k < -n || k >= n)
            return node.emitError()
                   << "index " << k << " at flat position " << t * m + j
                   << " is out of range for "
                   << "dimension " << *b + j << " of size " << n;
          off += (k < 0 ? k + n : k) * numElements(data.drop_front(*b + j + 1));
        }
        for (int64_t i = 0; i < inner; ++i)
          map.push_back(off + i);
      }
      node.setConstantOutput(0, take(dataConst, shape, map));
      return success();
    }
  }
  FailureOr<Value> x = dataInput(node, 0);
  FailureOr<Value> indices = node.anyInput(1);
  if (failed(x) || failed(indices))
    return failure();
  FailureOr<Value> y = node.create<GatherNdOp>(*x, *indices, uint64_t(*b));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

/// ScatterND: 11; `reduction` add/mul from 16, max/min from 18.
LogicalResult mlir::tcc::importScatterND(NodeImporter &node) {
  if (failed(checkIndexType(node, 1)))
    return failure();
  std::string reduction = "none";
  if (const onnx::AttributeProto *r = node.attr("reduction")) {
    reduction = r->s();
    int64_t since = reduction == "max" || reduction == "min" ? 18 : 16;
    if (node.opset() < since || ScatterElementsOp::reductionCode(reduction) < 0)
      return node.emitError() << "reduction '" << reduction
                              << "' does not exist at opset " << node.opset();
  }
  FailureOr<Value> x = dataInput(node, 0);
  FailureOr<Value> indices = node.anyInput(1);
  FailureOr<Value> updates = dataInput(node, 2);
  if (failed(x) || failed(indices) || failed(updates))
    return failure();
  FailureOr<Value> y =
      node.create<ScatterNdOp>(reduction, *x, *indices, *updates, uint64_t(0));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

/// TopK: k an attribute before 10, a constant input from 10; `largest`,
/// `sorted` and negative axes from 11. Unsorted results may come in any
/// order (ONNX), so tcc's sorted ones serve both.
LogicalResult mlir::tcc::importTopK(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> attr = node.intAttr("axis", -1);
  FailureOr<int64_t> largest = node.intAttr("largest", 1);
  if (failed(type) || failed(attr) || failed(largest))
    return failure();
  if (node.opset() < 11 && (*attr < 0 ? *attr != -1 : false))
    return node.emitError() << "a negative axis other than -1 needs opset 11";
  if (node.opset() < 11 && (node.attr("largest") || node.attr("sorted")))
    return node.emitError() << "attributes 'largest' and 'sorted' need "
                               "opset 11";
  int64_t k = 0;
  if (node.opset() < 10) {
    FailureOr<int64_t> ka = node.intAttr("k", -1);
    if (failed(ka))
      return failure();
    k = *ka;
  } else {
    FailureOr<SmallVector<int64_t>> ks = node.constantInts(1, "k");
    if (failed(ks))
      return failure();
    if (ks->size() != 1)
      return node.emitError() << "k must hold one value, got " << ks->size();
    k = ks->front();
  }
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, type->getRank());
  if (failed(axis))
    return failure();
  if (k < 0 || k > type->getDimSize(*axis))
    return node.emitError()
           << "k " << k << " is outside [0, " << type->getDimSize(*axis)
           << "] for axis " << *axis;
  Type et = type->getElementType();
  if (!et.isF32() && !et.isInteger(64) && !et.isInteger(32))
    return node.emitUnsupported("input type") << "input 0 has type " << *type
                                              << "; TopK takes float32, int32 "
                                                 "or int64";
  FailureOr<Value> x = dataInput(node, 0);
  if (failed(x))
    return failure();
  FailureOr<Value> idx =
      node.create<TopKOp>(*x, uint64_t(*axis), uint64_t(k), *largest != 0);
  if (failed(idx))
    return failure();
  FailureOr<Value> values =
      node.create<GatherElementsOp>(*x, *idx, uint64_t(*axis));
  if (failed(values))
    return failure();
  node.setOutput(0, *values);
  node.setOutput(1, *idx);
  return success();
}
