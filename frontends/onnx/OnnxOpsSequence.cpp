//===- OnnxOpsSequence.cpp - Builders: sequences of tensors ---------------===//
//
// tcc has no sequence type: a sequence is a list of tensor entries the
// importer keeps while it imports (OnnxValue::sequence), so every position
// must be known at import time. That is what exporters write for
// torch.split and torch.chunk (SplitToSequence, then SequenceAt with constant
// positions) and what ConcatFromSequence of a constructed list needs; the
// tensors themselves are ordinary values, differentiated as such.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"
#include "frontends/onnx/OnnxGraph.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(const OnnxValue &v) {
  return cast<RankedTensorType>(v.value ? v.value.getType()
                                        : v.constant.getType());
}

/// A constant scalar position of a sequence of `n` (input `i`), normalized
/// into [0, n + extra): SequenceInsert may insert at n, the others read
/// [-n, n - 1].
static FailureOr<int64_t> position(NodeImporter &node, unsigned i, int64_t n,
                                   int64_t extra) {
  FailureOr<SmallVector<int64_t>> p = node.constantInts(i, "the position");
  if (failed(p))
    return failure();
  if (p->size() != 1)
    return node.emitError()
           << "the position must be a scalar, got " << p->size() << " values";
  int64_t at = (*p)[0];
  if (at < -n || at >= n + extra)
    return node.emitError()
           << "position " << at << " is outside the sequence of " << n
           << " tensors ([" << -n << ", " << n + extra - 1 << "])";
  return at < 0 ? at + n : at;
}

// SplitToSequence: input 1 is a scalar (chunks of that size, the last one
// smaller when the dimension does not divide), a list of sizes, or absent
// (pieces of size 1, the axis dropped unless keepdims).
LogicalResult mlir::tcc::importSplitToSequence(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  FailureOr<int64_t> keepdims = node.intAttr("keepdims", 1);
  if (failed(type) || failed(attr) || failed(keepdims))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, in.size());
  if (failed(axis))
    return failure();
  int64_t dim = in[*axis];
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (node.hasInput(1)) {
    FailureOr<RankedTensorType> splitType = node.inputType(1);
    FailureOr<SmallVector<int64_t>> split = node.constantInts(1, "split");
    if (failed(splitType) || failed(split))
      return failure();
    if (splitType->getRank() == 0) {
      int64_t chunk = (*split)[0];
      if (chunk <= 0)
        return node.emitError() << "split " << chunk << " is not positive";
      for (int64_t left = dim; left > 0; left -= chunk)
        sizes.push_back(std::min(chunk, left));
    } else {
      int64_t total = 0;
      for (int64_t s : *split) {
        if (s < 0)
          return node.emitError() << "split sizes " << shapeStr(*split)
                                  << " include a negative size";
        total += s;
      }
      if (total != dim)
        return node.emitError()
               << "split sizes " << shapeStr(*split) << " do not add up to "
               << "dimension " << *axis << " of size " << dim;
      sizes = *split;
    }
  } else {
    sizes.assign(dim, 1);
    squeeze = *keepdims == 0;
  }
  std::vector<OnnxValue> pieces;
  SmallVector<int64_t> starts(in.size(), 0), steps(in.size(), 1);
  SmallVector<int64_t> window(in);
  for (int64_t s : sizes) {
    window[*axis] = s;
    FailureOr<OnnxValue> piece = sliceWindow(node, in, starts, window, steps);
    if (failed(piece))
      return failure();
    if (squeeze) {
      SmallVector<int64_t> shape(window);
      shape.erase(shape.begin() + *axis);
      Value v =
          piece->value ? piece->value : node.graphState().materialize(*piece);
      FailureOr<Value> r = node.reshape(v, shape);
      if (failed(r))
        return failure();
      piece = OnnxValue{*r, {}, {}};
    }
    pieces.push_back(*piece);
    starts[*axis] += s;
  }
  node.setSequenceOutput(0, std::move(pieces));
  return success();
}

LogicalResult mlir::tcc::importSequenceAt(NodeImporter &node) {
  FailureOr<ArrayRef<OnnxValue>> seq = node.sequenceInput(0);
  if (failed(seq))
    return failure();
  FailureOr<int64_t> at = position(node, 1, seq->size(), 0);
  if (failed(at))
    return failure();
  node.setEntryOutput(0, (*seq)[*at]);
  return success();
}

LogicalResult mlir::tcc::importSequenceConstruct(NodeImporter &node) {
  std::vector<OnnxValue> elements;
  for (unsigned i = 0; i < node.numInputs(); ++i) {
    FailureOr<OnnxValue> v = node.tensorEntry(i);
    if (failed(v))
      return failure();
    if (!elements.empty() &&
        typeOf(*v).getElementType() != typeOf(elements[0]).getElementType())
      return node.emitError()
             << "input " << i << " has another element type than input 0";
    elements.push_back(*v);
  }
  node.setSequenceOutput(0, std::move(elements));
  return success();
}

LogicalResult mlir::tcc::importSequenceEmpty(NodeImporter &node) {
  node.setSequenceOutput(0, {});
  return success();
}

LogicalResult mlir::tcc::importSequenceLength(NodeImporter &node) {
  FailureOr<ArrayRef<OnnxValue>> seq = node.sequenceInput(0);
  if (failed(seq))
    return failure();
  auto type = RankedTensorType::get({}, node.builder().getI64Type());
  node.setConstantOutput(0, fold::fromInts(type, {(int64_t)seq->size()}));
  return success();
}

LogicalResult mlir::tcc::importSequenceInsert(NodeImporter &node) {
  FailureOr<ArrayRef<OnnxValue>> seq = node.sequenceInput(0);
  FailureOr<OnnxValue> v = node.tensorEntry(1);
  if (failed(seq) || failed(v))
    return failure();
  int64_t n = seq->size(), at = n;
  if (node.hasInput(2)) {
    FailureOr<int64_t> p = position(node, 2, n, 1);
    if (failed(p))
      return failure();
    at = *p;
  }
  if (n > 0 &&
      typeOf(*v).getElementType() != typeOf((*seq)[0]).getElementType())
    return node.emitError()
           << "the tensor has another element type than the sequence";
  std::vector<OnnxValue> elements(seq->begin(), seq->end());
  elements.insert(elements.begin() + at, *v);
  node.setSequenceOutput(0, std::move(elements));
  return success();
}

LogicalResult mlir::tcc::importSequenceErase(NodeImporter &node) {
  FailureOr<ArrayRef<OnnxValue>> seq = node.sequenceInput(0);
  if (failed(seq))
    return failure();
  int64_t n = seq->size();
  if (n == 0)
    return node.emitError() << "cannot erase from an empty sequence";
  int64_t at = n - 1;
  if (node.hasInput(1)) {
    FailureOr<int64_t> p = position(node, 1, n, 0);
    if (failed(p))
      return failure();
    at = *p;
  }
  std::vector<OnnxValue> elements(seq->begin(), seq->end());
  elements.erase(elements.begin() + at);
  node.setSequenceOutput(0, std::move(elements));
  return success();
}

// Concatenation along `axis`, or with new_axis a stack: every tensor gets a
// dimension of size 1 at `axis` first (which may then be one past the
// tensors' last).
LogicalResult mlir::tcc::importConcatFromSequence(NodeImporter &node) {
  FailureOr<ArrayRef<OnnxValue>> seq = node.sequenceInput(0);
  if (failed(seq))
    return failure();
  if (!node.attr("axis"))
    return node.emitError() << "requires attribute 'axis'";
  FailureOr<int64_t> attr = node.intAttr("axis", 0);
  FailureOr<int64_t> newAxis = node.intAttr("new_axis", 0);
  if (failed(attr) || failed(newAxis))
    return failure();
  if (seq->empty())
    return node.emitError() << "cannot concatenate an empty sequence";
  RankedTensorType first = typeOf((*seq)[0]);
  int64_t rank = first.getRank();
  bool stack = *newAxis != 0;
  // With new_axis the axis indexes the result, one rank higher.
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, stack ? rank + 1 : rank);
  if (failed(axis))
    return failure();
  SmallVector<Value> values;
  for (auto [i, e] : llvm::enumerate(*seq)) {
    RankedTensorType t = typeOf(e);
    if (t.getElementType() != first.getElementType())
      return node.emitError() << "tensor " << i
                              << " of the sequence has another element type "
                                 "than tensor 0";
    OnnxValue entry = e;
    Value v = node.graphState().materialize(entry);
    if (stack) {
      SmallVector<int64_t> shape(t.getShape());
      shape.insert(shape.begin() + *axis, 1);
      FailureOr<Value> r = node.reshape(v, shape);
      if (failed(r))
        return failure();
      v = *r;
    }
    values.push_back(v);
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
