//===- TccOpsShape.cpp - Inference and verifiers of data-movement ops -----===//
//
// gather, gather_grad, concat, slice, slice_grad, where, cast. Every
// axis and window is checked here, in the IR, so the kernels only need to
// re-check what an artifact could have been tampered with.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

static LogicalResult checkAxis(StringRef name, std::optional<Location> loc,
                               IntegerAttr axis, int64_t rank) {
  if (!axis)
    return emitOptionalError(loc, "tcc.", name, ": requires attribute 'axis'");
  if (axis.getInt() < 0 || axis.getInt() >= rank)
    return emitOptionalError(loc, "tcc.", name, ": axis ", axis.getInt(),
                             " is out of range for rank ", rank);
  return success();
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

LogicalResult
GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attrs,
                           OpaqueProperties props, RegionRange regions,
                           SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<GatherOp>(operands, attrs, props, regions);
  auto data = rankedType(adaptor.getData());
  auto indices = rankedType(adaptor.getIndices());
  if (failed(checkAxis("gather", loc, adaptor.getProperties().axis,
                       data.getRank())))
    return failure();
  int64_t axis = adaptor.getProperties().axis.getInt();
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult
GatherGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               ValueRange operands, DictionaryAttr attrs,
                               OpaqueProperties props, RegionRange regions,
                               SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<GatherGradOp>(operands, attrs, props, regions);
  auto grad = rankedType(adaptor.getGrad());
  auto indices = rankedType(adaptor.getIndices());
  IntegerAttr axisAttr = adaptor.getProperties().axis;
  IntegerAttr sizeAttr = adaptor.getProperties().size;
  if (!axisAttr || !sizeAttr)
    return emitOptionalError(loc, "tcc.gather_grad: requires attributes "
                                  "'axis' and 'size'");
  int64_t axis = axisAttr.getInt(), size = sizeAttr.getInt();
  if (axis < 0 || axis + indices.getRank() > grad.getRank())
    return emitOptionalError(
        loc, "tcc.gather_grad: axis ", axis, " and rank-", indices.getRank(),
        " indices do not fit a gradient of shape ", shapeStr(grad.getShape()));
  ArrayRef<int64_t> gs = grad.getShape();
  if (gs.slice(axis, indices.getRank()) != indices.getShape())
    return emitOptionalError(loc, "tcc.gather_grad: gradient shape ", shapeStr(gs),
                             " does not hold indices of shape ",
                             shapeStr(indices.getShape()), " at axis ", axis);
  if (size < 0)
    return emitOptionalError(loc, "tcc.gather_grad: size ", size,
                             " is negative");
  SmallVector<int64_t> shape(gs.take_front(axis));
  shape.push_back(size);
  llvm::append_range(shape, gs.drop_front(axis + indices.getRank()));
  results.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Concat
//===----------------------------------------------------------------------===//

LogicalResult
ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attrs,
                           OpaqueProperties props, RegionRange regions,
                           SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<ConcatOp>(operands, attrs, props, regions);
  if (operands.empty())
    return emitOptionalError(loc, "tcc.concat: needs at least one input");
  auto first = rankedType(operands[0]);
  if (failed(checkAxis("concat", loc, adaptor.getProperties().axis,
                       first.getRank())))
    return failure();
  int64_t axis = adaptor.getProperties().axis.getInt();
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = rankedType(v);
    if (t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "tcc.concat: input ", i,
                               " has element "
                               "type ",
                               t.getElementType(), ", input 0 has ",
                               first.getElementType());
    bool same = t.getRank() == first.getRank();
    for (int64_t d = 0; same && d < t.getRank(); ++d)
      same = d == axis || t.getDimSize(d) == first.getDimSize(d);
    if (!same)
      return emitOptionalError(loc, "tcc.concat: input ", i, " has shape ",
                               shapeStr(t.getShape()),
                               ", which differs from "
                               "input 0's ",
                               shapeStr(first.getShape()), " outside axis ", axis);
    shape[axis] += t.getDimSize(axis);
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs()[0];
  return {};
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

/// Checks a window of `sizes` elements, `starts` and `steps` per dimension,
/// against `shape`: every index it touches must be inside.
static LogicalResult checkWindow(StringRef name, std::optional<Location> loc,
                                 ArrayRef<int64_t> shape,
                                 ArrayRef<int64_t> starts,
                                 ArrayRef<int64_t> sizes,
                                 ArrayRef<int64_t> steps) {
  size_t rank = shape.size();
  if (starts.size() != rank || sizes.size() != rank || steps.size() != rank)
    return emitOptionalError(loc, "tcc.", name,
                             ": starts, sizes and steps "
                             "need one entry per dimension of the rank-",
                             rank, " input, got ", starts.size(), ", ",
                             sizes.size(), " and ", steps.size());
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0 || sizes[d] < 0)
      return emitOptionalError(loc, "tcc.", name, ": dimension ", d,
                               " has step ", steps[d], " and size ", sizes[d],
                               " (steps must be non-zero, sizes >= 0)");
    int64_t first = starts[d], last = starts[d] + (sizes[d] - 1) * steps[d];
    bool inside = sizes[d] == 0 ? first >= 0 && first <= shape[d]
                                : first >= 0 && first < shape[d] && last >= 0 &&
                                      last < shape[d];
    if (!inside)
      return emitOptionalError(loc, "tcc.", name, ": dimension ", d, " reads ",
                               sizes[d], " elements from ", first,
                               " in steps of ", steps[d], ", outside [0, ",
                               shape[d], ")");
  }
  return success();
}

LogicalResult
SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                          ValueRange operands, DictionaryAttr attrs,
                          OpaqueProperties props, RegionRange regions,
                          SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<SliceOp>(operands, attrs, props, regions);
  const auto &p = adaptor.getProperties();
  if (!p.starts || !p.sizes || !p.steps)
    return emitOptionalError(loc, "tcc.slice: requires attributes 'starts', "
                                  "'sizes' and 'steps'");
  auto in = rankedType(adaptor.getInput());
  if (failed(checkWindow("slice", loc, in.getShape(), adaptor.getStarts(),
                         adaptor.getSizes(), adaptor.getSteps())))
    return failure();
  results.push_back(
      RankedTensorType::get(adaptor.getSizes(), in.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getInput();
  // Slicing back exactly the window a slice_grad (a pad) wrote.
  if (auto pad = getInput().getDefiningOp<SliceGradOp>())
    if (pad.getGrad().getType() == getType() &&
        pad.getStarts() == getStarts() && pad.getSteps() == getSteps())
      return pad.getGrad();
  return {};
}

LogicalResult
SliceGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              ValueRange operands, DictionaryAttr attrs,
                              OpaqueProperties props, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<SliceGradOp>(operands, attrs, props, regions);
  const auto &p = adaptor.getProperties();
  if (!p.shape || !p.starts || !p.steps)
    return emitOptionalError(loc, "tcc.slice_grad: requires attributes "
                                  "'shape', 'starts' and 'steps'");
  auto grad = rankedType(adaptor.getGrad());
  if (failed(checkWindow("slice_grad", loc, adaptor.getShape(),
                         adaptor.getStarts(), grad.getShape(),
                         adaptor.getSteps())))
    return failure();
  results.push_back(
      RankedTensorType::get(adaptor.getShape(), grad.getElementType()));
  return success();
}

OpFoldResult SliceGradOp::fold(FoldAdaptor) {
  // A window as large as the result covers all of it (starts are 0).
  if (getGrad().getType() == getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getGrad();
  return {};
}

bool SliceGradOp::padsLastAxisOnly() {
  ArrayRef<int64_t> in = rankedType(getGrad()).getShape(),
                    out = rankedType(getResult()).getShape();
  if (in.empty() || out.size() != in.size())
    return false;
  return llvm::all_of(getStarts(), [](int64_t v) { return v == 0; }) &&
         llvm::all_of(getSteps(), [](int64_t v) { return v == 1; }) &&
         in.drop_back() == out.drop_back();
}

//===----------------------------------------------------------------------===//
// Where, cast
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        ValueRange operands, DictionaryAttr,
                                        OpaqueProperties, RegionRange,
                                        SmallVectorImpl<Type> &results) {
  auto cond = rankedType(operands[0]), lhs = rankedType(operands[1]),
       rhs = rankedType(operands[2]);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "tcc.where: element types differ (",
                             lhs.getElementType(), " vs ", rhs.getElementType(),
                             ")");
  auto shape = broadcastShapes(cond.getShape(), lhs.getShape());
  if (succeeded(shape))
    shape = broadcastShapes(*shape, rhs.getShape());
  if (failed(shape))
    return emitOptionalError(loc, "tcc.where: shapes ", shapeStr(cond.getShape()),
                             ", ", shapeStr(lhs.getShape()), " and ",
                             shapeStr(rhs.getShape()), " do not broadcast");
  results.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

LogicalResult CastOp::verify() {
  auto in = rankedType(getInput()), out = rankedType(getResult());
  if (in.getShape() != out.getShape())
    return emitOpError("changes the shape from ")
           << shapeStr(in.getShape()) << " to " << shapeStr(out.getShape());
  return success();
}

bool CastOp::isExactWidening() {
  Type from = rankedType(getInput()).getElementType();
  Type to = rankedType(getResult()).getElementType();
  return (from.isBF16() || from.isF16()) && to.isF32();
}

Value CastOp::beforeExactWidening(Value v) {
  if (auto c = v.getDefiningOp<CastOp>(); c && c.isExactWidening())
    return c.getInput();
  return v;
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // narrow(widen(x)) with x's type back: the widening is exact, so rounding
  // it back gives x.
  if (auto up = getInput().getDefiningOp<CastOp>())
    if (up.isExactWidening() && up.getInput().getType() == getType())
      return up.getInput();
  return {};
}
