//===- TccOpsIndex.cpp - Inference and verifiers of the indexing ops ------===//
//
// gather_elements, scatter_elements, gather_nd, scatter_nd, top_k. Shapes
// are checked here, in the IR; index values are data, checked by the
// kernels as they read them.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

/// `indices` has `data`'s rank and is no larger off `axis` (ONNX
/// GatherElements and ScatterElements, torch.gather).
static LogicalResult checkElementIndices(StringRef name,
                                         std::optional<Location> loc,
                                         IntegerAttr axisAttr,
                                         RankedTensorType data,
                                         RankedTensorType indices) {
  if (!axisAttr)
    return emitOptionalError(loc, "tcc.", name, ": requires attribute 'axis'");
  int64_t axis = axisAttr.getInt(), rank = data.getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "tcc.", name, ": axis ", axis,
                             " is out of range for rank ", rank);
  bool fits = indices.getRank() == rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == axis || indices.getDimSize(d) <= data.getDimSize(d);
  if (!fits)
    return emitOptionalError(loc, "tcc.", name, ": indices of shape ",
                             shapeStr(indices.getShape()),
                             " do not fit data of shape ",
                             shapeStr(data.getShape()), " off axis ", axis);
  return success();
}

static LogicalResult checkReduction(Operation *op, StringRef reduction) {
  if (ScatterElementsOp::reductionCode(reduction) < 0)
    return op->emitOpError("has reduction '")
           << reduction << "', expected none, add, mul, max or min";
  return success();
}

int64_t ScatterElementsOp::reductionCode(StringRef r) {
  return llvm::StringSwitch<int64_t>(r)
      .Case("none", 0)
      .Case("add", 1)
      .Case("mul", 2)
      .Case("max", 3)
      .Case("min", 4)
      .Default(-1);
}

//===----------------------------------------------------------------------===//
// gather_elements, scatter_elements
//===----------------------------------------------------------------------===//

LogicalResult
GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   ValueRange operands, DictionaryAttr attrs,
                                   OpaqueProperties props, RegionRange regions,
                                   SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<GatherElementsOp>(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  if (failed(checkElementIndices("gather_elements", loc,
                                 adaptor.getProperties().axis, data, indices)))
    return failure();
  results.push_back(
      RankedTensorType::get(indices.getShape(), data.getElementType()));
  return success();
}

LogicalResult
ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    ValueRange operands, DictionaryAttr attrs,
                                    OpaqueProperties props, RegionRange regions,
                                    SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<ScatterElementsOp>(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  auto updates = rankedType(adaptor.getUpdates());
  if (failed(checkElementIndices("scatter_elements", loc,
                                 adaptor.getProperties().axis, data, indices)))
    return failure();
  if (updates.getShape() != indices.getShape() ||
      updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, "tcc.scatter_elements: updates ", updates,
                             " must have the indices' shape ",
                             shapeStr(indices.getShape()),
                             " and the data's element type");
  results.push_back(data);
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  return checkReduction(*this, getReduction());
}

//===----------------------------------------------------------------------===//
// gather_nd, scatter_nd
//===----------------------------------------------------------------------===//

/// The shape of the slices that index tuples select: indices.shape[:-1] +
/// data.shape[b + m:], after checking that the tuples fit `data`.
static FailureOr<SmallVector<int64_t>>
ndSliceShape(StringRef name, std::optional<Location> loc, RankedTensorType data,
             RankedTensorType indices, int64_t batchDims) {
  int64_t r = data.getRank(), q = indices.getRank();
  if (q < 1 || r < 1) {
    (void)emitOptionalError(loc, "tcc.", name,
                            ": data and indices need rank >= 1");
    return failure();
  }
  int64_t m = indices.getDimSize(q - 1);
  if (batchDims < 0 || batchDims >= std::min(q, r) || m < 1 ||
      m > r - batchDims ||
      data.getShape().take_front(batchDims) !=
          indices.getShape().take_front(batchDims)) {
    (void)emitOptionalError(loc, "tcc.", name, ": indices of shape ",
                            shapeStr(indices.getShape()), " (batch_dims ",
                            batchDims, ") do not index data of shape ",
                            shapeStr(data.getShape()));
    return failure();
  }
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(batchDims + m));
  return shape;
}

LogicalResult
GatherNdOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                             ValueRange operands, DictionaryAttr attrs,
                             OpaqueProperties props, RegionRange regions,
                             SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<GatherNdOp>(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  IntegerAttr b = adaptor.getProperties().batch_dims;
  if (!b)
    return emitOptionalError(loc,
                             "tcc.gather_nd: requires attribute 'batch_dims'");
  FailureOr<SmallVector<int64_t>> shape = ndSliceShape(
      "gather_nd", loc, data, rankedType(adaptor.getIndices()), b.getInt());
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, data.getElementType()));
  return success();
}

LogicalResult
ScatterNdOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              ValueRange operands, DictionaryAttr attrs,
                              OpaqueProperties props, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<ScatterNdOp>(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto updates = rankedType(adaptor.getUpdates());
  IntegerAttr b = adaptor.getProperties().batch_dims;
  FailureOr<SmallVector<int64_t>> shape =
      ndSliceShape("scatter_nd", loc, data, rankedType(adaptor.getIndices()),
                   b ? b.getInt() : 0);
  if (failed(shape))
    return failure();
  if (updates.getShape() != ArrayRef<int64_t>(*shape) ||
      updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, "tcc.scatter_nd: updates ", updates,
                             " must have shape ", shapeStr(*shape),
                             " and the data's element type");
  results.push_back(data);
  return success();
}

LogicalResult ScatterNdOp::verify() {
  return checkReduction(*this, getReduction());
}

//===----------------------------------------------------------------------===//
// top_k
//===----------------------------------------------------------------------===//

LogicalResult
TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                         ValueRange operands, DictionaryAttr attrs,
                         OpaqueProperties props, RegionRange regions,
                         SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<TopKOp>(operands, attrs, props, regions);
  IntegerAttr axisAttr = adaptor.getProperties().axis;
  IntegerAttr kAttr = adaptor.getProperties().k;
  if (!axisAttr || !kAttr)
    return emitOptionalError(loc, "tcc.top_k: requires attributes 'axis' "
                                  "and 'k'");
  RankedTensorType in = rankedType(adaptor.getInput());
  int64_t axis = axisAttr.getInt(), k = kAttr.getInt();
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "tcc.top_k: axis ", axis,
                             " is out of range for rank ", in.getRank());
  if (k < 0 || k > in.getDimSize(axis))
    return emitOptionalError(loc, "tcc.top_k: k ", k, " is not in [0, ",
                             in.getDimSize(axis), "]");
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = k;
  results.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}
