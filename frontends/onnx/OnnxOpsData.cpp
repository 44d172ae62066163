//===- OnnxOpsData.cpp - Builders: gather, shapes, slices, joins ---------===//
//
// Gather, Shape, Size, Unsqueeze, Squeeze, Concat, Split, Slice, Expand
// (Where, Equal, Cast, ConstantOfShape, Range: OnnxOpsLogic.cpp).
//
// Every builder folds when its inputs are known at import: exporters compute
// shapes at run time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) and
// masks from constant buffers (Slice -> Equal -> Where), and all of that is
// static here, so none of it reaches the IR. What depends on run-time values
// becomes tcc.gather, tcc.slice, tcc.concat, tcc.where, tcc.equal, tcc.cast,
// tcc.reshape or tcc.broadcast_to. Folds that would write very large tensors
// (a mask broadcast to [B,H,T,T]) run at run time instead.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

/// Binds output `i` to input 0 reshaped to `shape`, whatever its type.
static LogicalResult bindReshaped(NodeImporter &node, unsigned i,
                                  ArrayRef<int64_t> shape) {
  if (DenseElementsAttr c = node.constantInput(0)) {
    node.setConstantOutput(
        i, c.reshape(RankedTensorType::get(shape, c.getElementType())));
    return success();
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.reshape(*x, shape);
  if (failed(y))
    return failure();
  node.setOutput(i, *y);
  return success();
}

/// Axes from an INTS attribute (before `inputSince`) or a constant input 1,
/// normalized against `rank`, sorted, without repeats; nullopt when absent.
static FailureOr<std::optional<SmallVector<int64_t>>>
axesOperand(NodeImporter &node, int64_t inputSince, int64_t rank) {
  std::optional<SmallVector<int64_t>> axes;
  if (node.opset() >= inputSince) {
    if (node.attr("axes"))
      return node.emitError() << "attribute 'axes' does not exist at opset "
                              << node.opset() << "; axes is input 1";
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
    axes = *attr;
  }
  if (!axes)
    return axes;
  for (int64_t &a : *axes) {
    FailureOr<int64_t> n = node.normalizeAxis("axes entry", a, rank);
    if (failed(n))
      return failure();
    a = *n;
  }
  llvm::sort(*axes);
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end())
    return node.emitError() << "axes name a dimension twice";
  return axes;
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importGather(NodeImporter &node) {
  FailureOr<RankedTensorType> dataType = node.inputType(0);
  FailureOr<RankedTensorType> idxType = node.inputType(1);
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  if (failed(dataType) || failed(idxType) || failed(attr))
    return failure();
  ArrayRef<int64_t> data = dataType->getShape();
  if (data.empty())
    return node.emitError() << "data must have rank >= 1";
  Type idxElement = idxType->getElementType();
  if (!idxElement.isInteger(64) && !idxElement.isInteger(32))
    return node.emitError()
           << "indices have type " << *idxType << ", expected int32 or int64";
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, data.size());
  if (failed(axis))
    return failure();
  int64_t n = data[*axis], inner = numElements(data.drop_front(*axis + 1));
  SmallVector<int64_t> shape(data.take_front(*axis));
  llvm::append_range(shape, idxType->getShape());
  llvm::append_range(shape, data.drop_front(*axis + 1));

  DenseElementsAttr dataConst = node.constantInput(0);
  DenseElementsAttr idxConst = node.constantInput(1);
  if (idxConst) {
    // Known indices are checked here rather than when the step runs.
    SmallVector<int64_t> idx = intValues(idxConst);
    for (size_t j = 0; j < idx.size(); ++j) {
      int64_t &k = idx[j];
      if (k < -n || k >= n)
        return node.emitError()
               << "index " << k << " at flat position " << j
               << " is out of range for axis " << *axis << " of size " << n;
      if (k < 0)
        k += n;
    }
    if (foldable({dataConst, idxConst}, shape)) {
      SmallVector<int64_t> map;
      int64_t outer = numElements(data.take_front(*axis));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k : idx)
          for (int64_t i = 0; i < inner; ++i)
            map.push_back((o * n + k) * inner + i);
      node.setConstantOutput(0, take(dataConst, shape, map));
      return success();
    }
  }
  FailureOr<Value> x = node.anyInput(0);
  FailureOr<Value> indices = node.anyInput(1);
  if (failed(x) || failed(indices))
    return failure();
  FailureOr<Value> y = node.create<GatherOp>(*x, *indices, uint64_t(*axis));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// Shape, Size, Unsqueeze, Squeeze
//===----------------------------------------------------------------------===//

// Shapes are static, so Shape is always a constant. `start`/`end` (opset 15)
// select a range of dimensions; negative values count from the end and both
// are clamped to [0, rank].
LogicalResult mlir::tcc::importShape(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  int64_t start = 0, end = rank;
  if (node.opset() >= 15) {
    FailureOr<int64_t> s = node.intAttr("start", 0);
    FailureOr<int64_t> e = node.intAttr("end", rank);
    if (failed(s) || failed(e))
      return failure();
    auto clampDim = [&](int64_t v) {
      return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank);
    };
    start = clampDim(*s);
    end = std::max(start, clampDim(*e));
  }
  ArrayRef<int64_t> dims = type->getShape().slice(start, end - start);
  auto i64 = IntegerType::get(node.context(), 64);
  node.setConstantOutput(
      0, DenseElementsAttr::get(
             RankedTensorType::get({(int64_t)dims.size()}, i64), dims));
  return success();
}

LogicalResult mlir::tcc::importSize(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  auto i64 = IntegerType::get(node.context(), 64);
  node.setConstantOutput(0,
                         DenseElementsAttr::get(RankedTensorType::get({}, i64),
                                                type->getNumElements()));
  return success();
}

// Axes are an attribute before opset 13 and input 1 from 13; they index the
// output, whose rank is the input's plus the number of axes.
LogicalResult mlir::tcc::importUnsqueeze(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  // Count the axes first: they are normalized against the output's rank.
  int64_t count = 0;
  if (node.opset() >= 13) {
    FailureOr<SmallVector<int64_t>> in = node.constantInts(1, "axes");
    if (failed(in))
      return failure();
    count = in->size();
  } else if (const onnx::AttributeProto *a = node.attr("axes")) {
    count = a->ints_size();
  }
  int64_t outRank = type->getRank() + count;
  FailureOr<std::optional<SmallVector<int64_t>>> axes =
      axesOperand(node, 13, outRank);
  if (failed(axes))
    return failure();
  if (!*axes)
    return node.emitError() << "needs axes";
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> in = type->getShape();
  for (int64_t d = 0, next = 0; d < outRank; ++d)
    shape.push_back(llvm::is_contained(**axes, d) ? 1 : in[next++]);
  return bindReshaped(node, 0, shape);
}

// Without axes every dimension of size 1 goes; named axes must have size 1.
LogicalResult mlir::tcc::importSqueeze(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  FailureOr<std::optional<SmallVector<int64_t>>> axes =
      axesOperand(node, 13, in.size());
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < (int64_t)in.size(); ++d) {
    bool named = *axes && llvm::is_contained(**axes, d);
    if (named && in[d] != 1)
      return node.emitError()
             << "cannot squeeze axis " << d << " of size " << in[d]
             << " (input shape " << shapeStr(in) << ")";
    if (!(named || (!*axes && in[d] == 1)))
      shape.push_back(in[d]);
  }
  return bindReshaped(node, 0, shape);
}

//===----------------------------------------------------------------------===//
// Concat
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importConcat(NodeImporter &node) {
  if (node.numInputs() == 0)
    return node.emitError() << "needs at least one input";
  if (!node.attr("axis"))
    return node.emitError() << "requires attribute 'axis'";
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  if (failed(attr))
    return failure();
  SmallVector<RankedTensorType> types;
  for (unsigned i = 0; i < node.numInputs(); ++i) {
    FailureOr<RankedTensorType> t = node.inputType(i);
    if (failed(t))
      return failure();
    types.push_back(*t);
  }
  int64_t rank = types[0].getRank();
  FailureOr<int64_t> axis = node.normalizeAxis("attribute 'axis'", *attr, rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(types[0].getShape());
  shape[*axis] = 0;
  for (auto [i, t] : llvm::enumerate(types)) {
    bool same = t.getRank() == rank;
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == *axis || t.getDimSize(d) == shape[d];
    if (!same)
      return node.emitError()
             << "input " << i << " has shape " << shapeStr(t.getShape())
             << ", which differs from input 0's "
             << shapeStr(types[0].getShape()) << " outside axis " << *axis;
    shape[*axis] += t.getDimSize(*axis);
  }

  SmallVector<DenseElementsAttr> consts;
  for (unsigned i = 0; i < node.numInputs(); ++i)
    consts.push_back(node.constantInput(i));
  if (foldable(consts, shape)) {
    Type et = types[0].getElementType();
    if (llvm::any_of(types, [&](auto t) { return t.getElementType() != et; }))
      return node.emitError() << "inputs have different element types";
    // With the inputs laid end to end, each row of the result takes one
    // block (its extent along the axis and below) from every input in turn.
    int64_t outer = numElements(ArrayRef<int64_t>(shape).take_front(*axis));
    SmallVector<int64_t> start, map;
    int64_t offset = 0;
    for (DenseElementsAttr c : consts) {
      start.push_back(offset);
      offset += c.getNumElements();
    }
    for (int64_t o = 0; o < outer; ++o)
      for (auto [k, t] : llvm::enumerate(types)) {
        int64_t block = numElements(t.getShape().drop_front(*axis));
        for (int64_t i = 0; i < block; ++i)
          map.push_back(start[k] + o * block + i);
      }
    node.setConstantOutput(0, take(joinFlat(consts), shape, map));
    return success();
  }

  // Empty inputs add nothing (exporters concatenate empty shape lists).
  SmallVector<Value> values;
  for (auto [i, t] : llvm::enumerate(types)) {
    if (t.getDimSize(*axis) == 0 && shape[*axis] != 0)
      continue;
    FailureOr<Value> v = node.anyInput(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  if (values.size() == 1) {
    node.setOutput(0, values[0]);
    return success();
  }
  FailureOr<Value> y =
      node.create<ConcatOp>(ValueRange(values), uint64_t(*axis));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// Slice, Split
//===----------------------------------------------------------------------===//

/// Binds output `out` to the window of input 0 that starts at `starts`,
/// takes `sizes` elements with `steps` per dimension (all inside the input).
FailureOr<OnnxValue> mlir::tcc::sliceWindow(NodeImporter &node,
                                            ArrayRef<int64_t> in,
                                            ArrayRef<int64_t> starts,
                                            ArrayRef<int64_t> sizes,
                                            ArrayRef<int64_t> steps) {
  DenseElementsAttr c = node.constantInput(0);
  if (foldable({c}, sizes)) {
    SmallVector<int64_t> inStrides(in.size(), 1), idx(in.size(), 0), map;
    for (int64_t d = (int64_t)in.size() - 2; d >= 0; --d)
      inStrides[d] = inStrides[d + 1] * in[d + 1];
    for (int64_t e = 0, n = numElements(sizes); e < n; ++e) {
      int64_t flat = 0;
      for (size_t d = 0; d < in.size(); ++d)
        flat += (starts[d] + idx[d] * steps[d]) * inStrides[d];
      map.push_back(flat);
      for (size_t d = in.size(); d-- > 0;) {
        if (++idx[d] < sizes[d])
          break;
        idx[d] = 0;
      }
    }
    return OnnxValue{{}, take(c, sizes, map), node.loc()};
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.create<SliceOp>(*x, starts, sizes, steps);
  if (failed(y))
    return failure();
  return OnnxValue{*y, {}, {}};
}

static LogicalResult bindWindow(NodeImporter &node, unsigned out,
                                ArrayRef<int64_t> in, ArrayRef<int64_t> starts,
                                ArrayRef<int64_t> sizes,
                                ArrayRef<int64_t> steps) {
  FailureOr<OnnxValue> v = sliceWindow(node, in, starts, sizes, steps);
  if (failed(v))
    return failure();
  node.setEntryOutput(out, *v);
  return success();
}

/// One ONNX slice range (after `axes` are resolved) on a dimension of size
/// `dim`, as ONNX specifies it: negative bounds count from the end, then
/// both are clamped ([0, dim] going forward, [-1, dim - 1] going backward).
/// Sets start, size and step of the equivalent in-bounds window.
static void resolveRange(int64_t dim, int64_t start, int64_t end, int64_t step,
                         int64_t &outStart, int64_t &outSize,
                         int64_t &outStep) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  int64_t size;
  if (dim == 0) {
    size = 0;
  } else if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    // A step beyond the dimension takes at most one element either way.
    int64_t s = std::min(step, std::max<int64_t>(dim, 1));
    size = end > start ? (end - start + s - 1) / s : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    int64_t s = std::min(-std::max(step, -std::numeric_limits<int64_t>::max()),
                         std::max<int64_t>(dim, 1));
    size = start > end ? (start - end + s - 1) / s : 0;
  }
  // Empty and single-element windows need no step; an empty one no start.
  outStart = size == 0 ? 0 : start;
  outSize = size;
  outStep = size <= 1 ? 1 : step;
}

// Opset 10 moved starts/ends/axes from attributes to inputs and added steps.
LogicalResult mlir::tcc::importSlice(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  int64_t rank = in.size();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (node.opset() < 10) {
    FailureOr<std::optional<SmallVector<int64_t>>> s = node.intsAttr("starts");
    FailureOr<std::optional<SmallVector<int64_t>>> e = node.intsAttr("ends");
    FailureOr<std::optional<SmallVector<int64_t>>> a = node.intsAttr("axes");
    if (failed(s) || failed(e) || failed(a))
      return failure();
    if (!*s || !*e)
      return node.emitError() << "requires attributes 'starts' and 'ends'";
    starts = **s;
    ends = **e;
    if (*a)
      axes = **a;
  } else {
    FailureOr<SmallVector<int64_t>> s = node.constantInts(1, "starts");
    FailureOr<SmallVector<int64_t>> e = node.constantInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (node.hasInput(3)) {
      FailureOr<SmallVector<int64_t>> a = node.constantInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (node.hasInput(4)) {
      FailureOr<SmallVector<int64_t>> st = node.constantInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  size_t n = starts.size();
  if (axes.empty())
    axes = llvm::to_vector(llvm::seq<int64_t>(0, n));
  if (steps.empty())
    steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    return node.emitError()
           << "starts, ends, axes and steps have " << starts.size() << ", "
           << ends.size() << ", " << axes.size() << " and " << steps.size()
           << " entries; they must match";
  SmallVector<int64_t> wStarts(rank, 0), wSizes(in), wSteps(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    FailureOr<int64_t> axis = node.normalizeAxis("axes entry", axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return node.emitError() << "axes name dimension " << *axis << " twice";
    seen[*axis] = true;
    if (steps[i] == 0)
      return node.emitError()
             << "steps entry " << i << " is 0; steps must be non-zero";
    resolveRange(in[*axis], starts[i], ends[i], steps[i], wStarts[*axis],
                 wSizes[*axis], wSteps[*axis]);
  }
  if (wSizes == SmallVector<int64_t>(in) &&
      llvm::all_of(wSteps, [](int64_t s) { return s == 1; }))
    return node.forwardInput(0, 0);
  return bindWindow(node, 0, in, wStarts, wSizes, wSteps);
}

// Split sizes: the `split` attribute before opset 13, input 1 from 13; at 18
// the alternative `num_outputs` splits into that many chunks of
// ceil(dim / num_outputs), the last one smaller. Without either, the outputs
// share the dimension equally.
LogicalResult mlir::tcc::importSplit(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  if (failed(type) || failed(attr))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, in.size());
  if (failed(axis))
    return failure();
  int64_t dim = in[*axis], outputs = node.proto().output_size();
  SmallVector<int64_t> sizes;
  if (node.opset() < 13) {
    FailureOr<std::optional<SmallVector<int64_t>>> s = node.intsAttr("split");
    if (failed(s))
      return failure();
    if (*s)
      sizes = **s;
  } else if (node.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = node.constantInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  }
  const onnx::AttributeProto *num =
      node.opset() >= 18 ? node.attr("num_outputs") : nullptr;
  if (num && !sizes.empty())
    return node.emitError() << "give either split or num_outputs, not both";
  if (num) {
    FailureOr<int64_t> k = node.intAttr("num_outputs", 0);
    if (failed(k))
      return failure();
    if (*k <= 0 || *k != outputs)
      return node.emitError() << "num_outputs is " << *k << " but the node has "
                              << outputs << " outputs";
    int64_t chunk = (dim + *k - 1) / *k;
    for (int64_t i = 0, left = dim; i < *k; ++i, left -= chunk)
      sizes.push_back(std::clamp<int64_t>(left, 0, chunk));
  } else if (sizes.empty()) {
    if (node.opset() >= 18)
      return node.emitError()
             << "needs input 'split' or attribute 'num_outputs' at opset "
             << node.opset() << " (one of them is required from opset 18)";
    if (outputs == 0 || dim % outputs != 0)
      return node.emitError()
             << "cannot split dimension " << *axis << " of size " << dim
             << " into " << outputs << " equal parts";
    sizes.assign(outputs, dim / outputs);
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return node.emitError()
             << "split sizes " << shapeStr(sizes) << " include a negative size";
    total += s;
  }
  if ((int64_t)sizes.size() != outputs || total != dim)
    return node.emitError()
           << "split sizes " << shapeStr(sizes) << " do not cut dimension "
           << *axis << " of size " << dim << " into " << outputs << " outputs";
  SmallVector<int64_t> starts(in.size(), 0), steps(in.size(), 1);
  SmallVector<int64_t> window(in);
  for (int64_t i = 0; i < outputs; ++i) {
    window[*axis] = sizes[i];
    if (failed(bindWindow(node, i, in, starts, window, steps)))
      return failure();
    starts[*axis] += sizes[i];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Expand
//===----------------------------------------------------------------------===//

// The output shape is the broadcast of the input's and the given shape, in
// both directions (a 1 in the given shape keeps the input's dimension).
LogicalResult mlir::tcc::importExpand(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<SmallVector<int64_t>> target =
      node.constantInts(1, "the target shape");
  if (failed(type) || failed(target))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(in, *target);
  if (llvm::any_of(*target, [](int64_t d) { return d < 0; }) || failed(shape))
    return node.emitError() << "cannot expand shape " << shapeStr(in) << " to "
                            << shapeStr(*target);
  if (ArrayRef<int64_t>(*shape) == in)
    return node.forwardInput(0, 0);
  DenseElementsAttr c = node.constantInput(0);
  if (c && (c.isSplat() || foldable({c}, *shape))) {
    node.setConstantOutput(0, take(c, *shape, broadcastMap(in, *shape)));
    return success();
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  auto outType = RankedTensorType::get(*shape, type->getElementType());
  node.setOutput(0,
                 BroadcastToOp::create(node.builder(), node.loc(), outType, *x)
                     .getResult());
  return success();
}
