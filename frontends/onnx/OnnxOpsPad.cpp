//===- OnnxOpsPad.cpp - Builders: Pad ------------------------------------===//
//
// Pad decomposes per padded axis into ops that already have gradients:
// constant mode is a slice (for negative pads, which crop) between two
// broadcast fills joined by tcc.concat; reflect, edge and wrap are one
// tcc.gather along the axis with a constant index vector that maps each
// output position to the input position it copies. The gradient of that
// gather is the scatter-add of the result's gradient back onto the input
// (tcc.gather_grad), which is exactly what reflect/edge padding needs, and
// the concat's gradient is the slice of dy. Output position j reads input
// position j - before for every mode, so a negative pad on one side and a
// positive one on the other behave as "pad, then crop", as numpy.pad
// followed by slicing (ONNX's reference) does.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include <string>

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
enum class PadMode { Constant, Reflect, Edge, Wrap };
} // namespace

/// The input position that output position j (input coordinate q = j -
/// before) copies in a non-constant mode, for an axis of n entries.
static int64_t sourceIndex(PadMode mode, int64_t q, int64_t n) {
  if (q >= 0 && q < n)
    return q;
  switch (mode) {
  case PadMode::Edge:
    return q < 0 ? 0 : n - 1;
  case PadMode::Wrap:
    return ((q % n) + n) % n;
  case PadMode::Reflect: {
    if (n == 1)
      return 0;
    // Reflection without repeating the edge has period 2 (n - 1).
    int64_t period = 2 * (n - 1);
    int64_t r = ((q % period) + period) % period;
    return r < n ? r : period - r;
  }
  case PadMode::Constant:
    break;
  }
  return q;
}

FailureOr<Value> mlir::tcc::padAxisConstant(NodeImporter &node, Value x,
                                            int64_t axis, int64_t before,
                                            int64_t after, Value fill) {
  if (before == 0 && after == 0)
    return x;
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> shape(type.getShape());
  int64_t n = shape[axis];
  // Crop first: the part of the input that stays.
  int64_t lo = std::max<int64_t>(0, -before);
  int64_t hi = std::min<int64_t>(n, n + after);
  if (lo != 0 || hi != n) {
    SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
        steps(shape.size(), 1);
    starts[axis] = lo;
    sizes[axis] = hi - lo;
    FailureOr<Value> s = node.create<SliceOp>(x, ArrayRef<int64_t>(starts),
                                              ArrayRef<int64_t>(sizes),
                                              ArrayRef<int64_t>(steps));
    if (failed(s))
      return failure();
    x = *s;
  }
  SmallVector<Value> parts;
  auto addFill = [&](int64_t count) {
    if (count <= 0)
      return;
    SmallVector<int64_t> fshape(shape);
    fshape[axis] = count;
    auto ftype = RankedTensorType::get(fshape, type.getElementType());
    parts.push_back(
        BroadcastToOp::create(node.builder(), node.loc(), ftype, fill));
  };
  addFill(before);
  parts.push_back(x);
  addFill(after);
  if (parts.size() == 1)
    return x;
  return node.create<ConcatOp>(ValueRange(parts), uint64_t(axis));
}

/// Pads (or crops) `x` along `axis` in a mode that copies input entries.
static FailureOr<Value> padAxisGather(NodeImporter &node, Value x, PadMode mode,
                                      int64_t axis, int64_t before,
                                      int64_t after) {
  int64_t n = typeOf(x).getDimSize(axis);
  int64_t out = n + before + after;
  if (before == 0 && after == 0)
    return x;
  if (before <= 0 && after <= 0) {
    // Only cropping: a slice (its gradient is cheaper than a scatter).
    SmallVector<int64_t> shape(typeOf(x).getShape());
    SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    starts[axis] = -before;
    shape[axis] = out;
    return node.create<SliceOp>(x, ArrayRef<int64_t>(starts),
                                ArrayRef<int64_t>(shape),
                                ArrayRef<int64_t>(steps));
  }
  SmallVector<int64_t> idx;
  for (int64_t j = 0; j < out; ++j)
    idx.push_back(sourceIndex(mode, j - before, n));
  auto itype = RankedTensorType::get({out}, node.builder().getI64Type());
  Value indices =
      ConstantOp::create(node.builder(), node.loc(),
                         DenseElementsAttr::get(itype, ArrayRef<int64_t>(idx)));
  return node.create<GatherOp>(x, indices, uint64_t(axis));
}

// Pad 2: pads, mode and value are attributes. 11: pads and constant_value
// became inputs 1 and 2 (pads may be negative: crop). 13 types. 18: axes,
// input 3, says which axes the pads name. 19: mode "wrap". 21, 23, 24, 25
// types.
LogicalResult mlir::tcc::importPad(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();

  std::string modeName = "constant";
  if (const onnx::AttributeProto *a = node.attr("mode")) {
    if (a->type() != onnx::AttributeProto::STRING)
      return node.emitError() << "attribute 'mode' should be a string";
    modeName = a->s();
  }
  PadMode mode;
  if (modeName == "constant")
    mode = PadMode::Constant;
  else if (modeName == "reflect")
    mode = PadMode::Reflect;
  else if (modeName == "edge")
    mode = PadMode::Edge;
  else if (modeName == "wrap" && node.opset() >= 19)
    mode = PadMode::Wrap;
  else
    return node.emitError() << "attribute 'mode' = '" << modeName
                            << "' is not one of constant, reflect, edge"
                            << (node.opset() >= 19 ? ", wrap" : "")
                            << " at opset " << node.opset();

  SmallVector<int64_t> pads;
  Value fill;
  std::optional<SmallVector<int64_t>> axes;
  if (node.opset() < 11) {
    FailureOr<std::optional<SmallVector<int64_t>>> p = node.intsAttr("pads");
    FailureOr<float> value = node.floatAttr("value", 0.0f);
    if (failed(p) || failed(value))
      return failure();
    if (!*p)
      return node.emitError() << "requires attribute 'pads'";
    pads = **p;
    if (mode == PadMode::Constant)
      fill = node.scalar(*value);
  } else {
    FailureOr<SmallVector<int64_t>> p = node.constantInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (node.hasInput(2)) {
      FailureOr<Value> v = node.input(2);
      if (failed(v))
        return failure();
      if (typeOf(*v).getNumElements() != 1)
        return node.emitError()
               << "constant_value must hold one value, got shape "
               << shapeStr(typeOf(*v).getShape());
      FailureOr<Value> s = node.reshape(*v, {});
      if (failed(s))
        return failure();
      fill = *s;
    } else if (mode == PadMode::Constant) {
      fill = node.scalar(0.0f);
    }
    if (node.opset() >= 18 && node.hasInput(3)) {
      FailureOr<SmallVector<int64_t>> a = node.constantInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  }
  if (!axes)
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  int64_t n = axes->size();
  if ((int64_t)pads.size() != 2 * n)
    return node.emitError()
           << "pads has " << pads.size() << " values, expected " << 2 * n
           << " (begins and ends of " << n << " axes)";

  Value y = *x;
  SmallVector<bool> seen(rank, false);
  for (int64_t i = 0; i < n; ++i) {
    FailureOr<int64_t> axis =
        node.normalizeAxis("axes entry", (*axes)[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return node.emitError() << "axes name dimension " << *axis << " twice";
    seen[*axis] = true;
    int64_t before = pads[i], after = pads[i + n];
    int64_t dim = typeOf(y).getDimSize(*axis);
    if (dim + before + after < 0 || (before < 0 && -before > dim) ||
        (after < 0 && -after > dim))
      return node.emitError()
             << "pads " << before << " and " << after << " crop more than the "
             << dim << " entries of dimension " << *axis;
    if (mode != PadMode::Constant && dim == 0 && before + after > 0)
      return node.emitError() << "mode '" << modeName
                              << "' cannot pad the empty dimension " << *axis;
    FailureOr<Value> r =
        mode == PadMode::Constant
            ? padAxisConstant(node, y, *axis, before, after, fill)
            : padAxisGather(node, y, mode, *axis, before, after);
    if (failed(r))
      return failure();
    y = *r;
  }
  node.setOutput(0, y);
  return success();
}
