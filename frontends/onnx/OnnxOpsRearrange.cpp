//===- OnnxOpsRearrange.cpp - Builders: Tile, OneHot, DepthToSpace, ... ---===//
//
// ONNX ops that decompose exactly into ops tcc already has, so that their
// gradients, kernels and fusion come along: Tile is a reshape, broadcast
// and reshape; DepthToSpace and SpaceToDepth reshape, transpose and
// reshape; OneHot compares its indices with a constant range and selects;
// EyeLike is a constant; Compress with a constant condition is a Gather at
// constant indices (a condition computed at run time would give a shape
// only known then, which tcc's static shapes cannot hold).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

/// Binds output 0 to `y`, or fails.
static LogicalResult bind(NodeImporter &node, FailureOr<Value> y) {
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// Tile
//===----------------------------------------------------------------------===//

/// Tile (6, 13): x of shape [d0, d1, ...] viewed as [1, d0, 1, d1, ...],
/// broadcast to [r0, d0, r1, d1, ...] and flattened pairwise.
LogicalResult mlir::tcc::importTile(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<SmallVector<int64_t>> repeats = node.constantInts(1, "repeats");
  if (failed(type) || failed(repeats))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  if (repeats->size() != in.size())
    return node.emitError() << "repeats has " << repeats->size()
                            << " entries for an input of rank " << in.size();
  SmallVector<int64_t> spread, wide, out;
  for (auto [d, r] : llvm::zip(in, *repeats)) {
    if (r < 0)
      return node.emitError() << "repeats " << r << " is negative";
    spread.append({1, d});
    wide.append({r, d});
    out.push_back(r * d);
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> s = node.reshape(*x, spread);
  if (failed(s))
    return failure();
  Type et = cast<RankedTensorType>(s->getType()).getElementType();
  Value b = BroadcastToOp::create(node.builder(), node.loc(),
                                  RankedTensorType::get(wide, et), *s);
  return bind(node, node.reshape(b, out));
}

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth
//===----------------------------------------------------------------------===//

/// reshape(x, split) -> transpose(perm) -> reshape(out).
static LogicalResult rearrange(NodeImporter &node, ArrayRef<int64_t> split,
                               ArrayRef<int64_t> perm, ArrayRef<int64_t> out) {
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> s = node.reshape(*x, split);
  if (failed(s))
    return failure();
  FailureOr<Value> t = node.create<TransposeOp>(*s, perm);
  if (failed(t))
    return failure();
  return bind(node, node.reshape(*t, out));
}

/// The [N, C, H, W] input and the block size of DepthToSpace/SpaceToDepth.
static FailureOr<std::pair<SmallVector<int64_t>, int64_t>>
blockOperands(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> b = node.intAttr("blocksize", 0);
  if (failed(type) || failed(b))
    return failure();
  if (type->getRank() != 4)
    return node.emitError()
           << "input must have rank 4 ([N, C, H, W]), got " << type->getRank();
  if (*b < 1)
    return node.emitError() << "attribute 'blocksize' must be >= 1, got " << *b;
  return std::make_pair(SmallVector<int64_t>(type->getShape()), *b);
}

/// DepthToSpace: DCR (depth, column, row: the default) and, from 11, CRD.
LogicalResult mlir::tcc::importDepthToSpace(NodeImporter &node) {
  auto ops = blockOperands(node);
  if (failed(ops))
    return failure();
  auto [s, b] = *ops;
  std::string mode = "DCR";
  if (const onnx::AttributeProto *m = node.attr("mode")) {
    mode = m->s();
    if (node.opset() < 11)
      return node.emitError()
             << "attribute 'mode' does not exist at opset " << node.opset();
    if (mode != "DCR" && mode != "CRD")
      return node.emitError() << "mode '" << mode << "', expected DCR or CRD";
  }
  int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c % (b * b))
    return node.emitError() << "channels " << c
                            << " are not a multiple of blocksize^2 = " << b * b;
  SmallVector<int64_t> out = {n, c / (b * b), h * b, w * b};
  if (mode == "DCR")
    return rearrange(node, {n, b, b, c / (b * b), h, w}, {0, 3, 4, 1, 5, 2},
                     out);
  return rearrange(node, {n, c / (b * b), b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
}

LogicalResult mlir::tcc::importSpaceToDepth(NodeImporter &node) {
  auto ops = blockOperands(node);
  if (failed(ops))
    return failure();
  auto [s, b] = *ops;
  int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (h % b || w % b)
    return node.emitError() << "height " << h << " and width " << w
                            << " must be multiples of blocksize " << b;
  return rearrange(node, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4},
                   {n, c * b * b, h / b, w / b});
}

//===----------------------------------------------------------------------===//
// OneHot
//===----------------------------------------------------------------------===//

/// A constant input's values as doubles (float or integer).
static SmallVector<double> numbers(DenseElementsAttr c) {
  if (isa<FloatType>(c.getElementType()))
    return floatValues(c);
  SmallVector<double> out;
  for (int64_t v : intValues(c))
    out.push_back(double(v));
  return out;
}

/// OneHot (9, 11): position j along the new axis is `on` where the index
/// is j or j - depth (negative indices count from the end), else `off`.
/// Out-of-range indices give all `off`.
LogicalResult mlir::tcc::importOneHot(NodeImporter &node) {
  FailureOr<RankedTensorType> idxType = node.inputType(0);
  FailureOr<RankedTensorType> valType = node.inputType(2);
  FailureOr<int64_t> attr = node.intAttr("axis", -1);
  if (failed(idxType) || failed(valType) || failed(attr))
    return failure();
  DenseElementsAttr depthConst = node.constantInput(1);
  if (!depthConst || depthConst.getNumElements() != 1)
    return node.emitUnsupported("depth computed at run time")
           << "depth must be one constant value: it fixes the output's shape";
  double depthValue = numbers(depthConst).front();
  int64_t depth = static_cast<int64_t>(depthValue);
  if (depth < 1)
    return node.emitError() << "depth " << depthValue << " is not >= 1";
  if (valType->getNumElements() != 2)
    return node.emitError() << "values must hold [off, on], got " << *valType;
  ArrayRef<int64_t> in = idxType->getShape();
  // The axis counts in the output's rank (-1: a new last dimension).
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, in.size() + 1);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> out(in), unsq(in), rangeShape(in.size() + 1, 1);
  out.insert(out.begin() + *axis, depth);
  unsq.insert(unsq.begin() + *axis, 1);
  rangeShape[*axis] = depth;

  DenseElementsAttr idxConst = node.constantInput(0);
  DenseElementsAttr valConst = node.constantInput(2);
  if (foldable({idxConst, valConst}, out)) {
    // Known indices and values (an int32 table, say) fold, keeping the
    // values' element type.
    SmallVector<double> idx = numbers(idxConst);
    int64_t outer = numElements(in.take_front(*axis));
    int64_t inner = numElements(in.drop_front(*axis));
    SmallVector<int64_t> map;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < depth; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          double k = idx[o * inner + i];
          map.push_back(k == double(j) || k == double(j - depth) ? 1 : 0);
        }
    node.setConstantOutput(0, take(valConst, out, map));
    return success();
  }
  FailureOr<Value> indices = node.anyInput(0);
  FailureOr<Value> values = node.anyInput(2);
  if (failed(indices) || failed(values))
    return failure();
  FailureOr<Value> idx = node.reshape(*indices, unsq);
  if (failed(idx))
    return failure();
  // The range and the range shifted by -depth, in the indices' type.
  auto rangeType = RankedTensorType::get(
      rangeShape, cast<RankedTensorType>(idx->getType()).getElementType());
  SmallVector<int64_t> up, down;
  for (int64_t j = 0; j < depth; ++j) {
    up.push_back(j);
    down.push_back(j - depth);
  }
  OpBuilder &b = node.builder();
  Value r0 = ConstantOp::create(b, node.loc(), fromInts(rangeType, up));
  Value r1 = ConstantOp::create(b, node.loc(), fromInts(rangeType, down));
  FailureOr<Value> hit0 = node.create<CompareOp>("eq", *idx, r0);
  FailureOr<Value> hit1 = node.create<CompareOp>("eq", *idx, r1);
  if (failed(hit0) || failed(hit1))
    return failure();
  FailureOr<Value> hit = node.create<LogicOp>("or", *hit0, *hit1);
  if (failed(hit))
    return failure();
  // off = values[0], on = values[1], as scalars.
  SmallVector<int64_t> one = {1};
  FailureOr<Value> flat = node.reshape(*values, {2});
  if (failed(flat))
    return failure();
  FailureOr<Value> off = node.create<SliceOp>(*flat, ArrayRef<int64_t>{0},
                                              ArrayRef<int64_t>{1}, one);
  FailureOr<Value> on = node.create<SliceOp>(*flat, ArrayRef<int64_t>{1},
                                             ArrayRef<int64_t>{1}, one);
  if (failed(off) || failed(on))
    return failure();
  FailureOr<Value> y = node.create<WhereOp>(*hit, *on, *off);
  if (failed(y))
    return failure();
  return bind(node, node.reshape(*y, out));
}

//===----------------------------------------------------------------------===//
// EyeLike, Compress
//===----------------------------------------------------------------------===//

/// EyeLike (9): ones on diagonal k of a 2-D shape, in `dtype` (default: the
/// input's type).
LogicalResult mlir::tcc::importEyeLike(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> k = node.intAttr("k", 0);
  if (failed(type) || failed(k))
    return failure();
  if (type->getRank() != 2)
    return node.emitError()
           << "input must have rank 2, got " << type->getRank();
  Type et = type->getElementType();
  if (const onnx::AttributeProto *d = node.attr("dtype")) {
    et = onnxElementType(node.context(), static_cast<int32_t>(d->i()));
    if (!et)
      return node.emitUnsupported("dtype " + onnxTypeName(d->i()))
             << "dtype " << onnxTypeName(d->i())
             << " is not supported (float32, int32, int64 or bool)";
  }
  int64_t rows = type->getDimSize(0), cols = type->getDimSize(1);
  SmallVector<int64_t> v(rows * cols, 0);
  for (int64_t i = 0; i < rows; ++i)
    if (i + *k >= 0 && i + *k < cols)
      v[i * cols + i + *k] = 1;
  node.setConstantOutput(
      0, fromInts(RankedTensorType::get(type->getShape(), et), v));
  return success();
}

/// Compress (9, 11 negative axis): the positions whose condition is true,
/// gathered along `axis` (of the flattened input when absent).
LogicalResult mlir::tcc::importCompress(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  DenseElementsAttr cond = node.constantInput(1);
  if (!cond)
    return node.emitUnsupported("condition computed at run time")
           << "the condition must be a constant: it fixes the output's shape, "
              "and tcc's shapes are static";
  SmallVector<int64_t> keep;
  for (auto [j, c] : llvm::enumerate(intValues(cond)))
    if (c)
      keep.push_back(j);
  ArrayRef<int64_t> in = type->getShape();
  int64_t axis = 0, dim = numElements(in);
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  if (node.attr("axis")) {
    FailureOr<int64_t> attr = node.intAttr("axis", 0);
    if (failed(attr))
      return failure();
    if (*attr < 0 && node.opset() < 11)
      return node.emitError() << "a negative axis needs opset 11";
    FailureOr<int64_t> a =
        node.normalizeAxis("attribute 'axis'", *attr, in.size());
    if (failed(a))
      return failure();
    axis = *a;
    dim = in[axis];
  } else {
    x = node.reshape(*x, {dim});
    if (failed(x))
      return failure();
  }
  if (cond.getNumElements() > dim)
    return node.emitError() << "condition has " << cond.getNumElements()
                            << " entries for a dimension of size " << dim;
  auto idxType = RankedTensorType::get({(int64_t)keep.size()},
                                       node.builder().getI64Type());
  Value idx =
      ConstantOp::create(node.builder(), node.loc(), fromInts(idxType, keep));
  return bind(node, node.create<GatherOp>(*x, idx, uint64_t(axis)));
}
