//===- OnnxOpsNorm.cpp - Builders: PRelu, normalizations, GlobalMaxPool ---===//
//
// PRelu, InstanceNormalization, GroupNormalization, RMSNormalization, LRN,
// MeanVarianceNormalization and GlobalMaxPool decompose into element-wise
// ops and reductions that already have gradients, CPU and CUDA kernels and
// fusion rules, so nothing new runs below the importer. Each follows the
// formula of the ONNX operator (its function body, where it has one):
//   instance / group:  (x - mean) / sqrt(var + eps) * scale + bias
//   RMS:               x / sqrt(mean(x^2) + eps) * scale
//   MVN:               (x - mean) / (sqrt(var) + 1e-9)
//   LRN:               x / (bias + alpha / size * windowed sum of x^2)^beta
// with the population variance, as ONNX and PyTorch use for normalization.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include <string>

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Shorthand for the binary element-wise ops, which broadcast.
template <typename OpTy>
static FailureOr<Value> binary(NodeImporter &node, FailureOr<Value> a,
                               FailureOr<Value> b) {
  if (failed(a) || failed(b))
    return failure();
  return node.create<OpTy>(*a, *b);
}

/// (x - mean) / sqrt(var + eps) over `axes`, keeping dimensions.
static FailureOr<Value> standardize(NodeImporter &node, Value x,
                                    ArrayRef<int64_t> axes, float eps) {
  FailureOr<Value> mean = node.create<ReduceMeanOp>(x, axes, true);
  FailureOr<Value> d = binary<SubOp>(node, x, mean);
  FailureOr<Value> sq = binary<MulOp>(node, d, d);
  if (failed(sq))
    return failure();
  FailureOr<Value> var = node.create<ReduceMeanOp>(*sq, axes, true);
  FailureOr<Value> shifted = binary<AddOp>(node, var, node.scalar(eps));
  if (failed(shifted))
    return failure();
  FailureOr<Value> sd = node.create<SqrtOp>(*shifted);
  return binary<DivOp>(node, d, sd);
}

/// `v` (a per-channel vector of C entries, or anything holding C values) as
/// [1, C, 1, ...] for an input of `rank`.
static FailureOr<Value> perChannel(NodeImporter &node, Value v, int64_t c,
                                   int64_t rank, StringRef what) {
  if (typeOf(v).getNumElements() != c)
    return node.emitError()
           << what << " of shape " << shapeStr(typeOf(v).getShape())
           << " must hold " << c << " values, one per channel";
  SmallVector<int64_t> shape(rank, 1);
  shape[1] = c;
  return node.reshape(v, shape);
}

static SmallVector<int64_t> axesFrom(int64_t first, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(first, rank));
}

//===----------------------------------------------------------------------===//
// PRelu
//===----------------------------------------------------------------------===//

// PRelu 6 (a slope of C values is per channel, as PyTorch exported it),
// 7 (slope broadcasts to X, unidirectionally), 9 and 16 types.
LogicalResult mlir::tcc::importPRelu(NodeImporter &node) {
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  if (failed(in))
    return failure();
  Value x = (*in)[0], slope = (*in)[1];
  int64_t rank = typeOf(x).getRank();
  if (node.opset() < 7 && rank >= 2 && typeOf(slope).getRank() == 1 &&
      typeOf(slope).getDimSize(0) == typeOf(x).getDimSize(1)) {
    FailureOr<Value> s =
        perChannel(node, slope, typeOf(x).getDimSize(1), rank, "slope");
    if (failed(s))
      return failure();
    slope = *s;
  }
  auto shape = broadcastShapes(typeOf(x).getShape(), typeOf(slope).getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != typeOf(x).getShape())
    return node.emitError()
           << "slope of shape " << shapeStr(typeOf(slope).getShape())
           << " does not broadcast to X's " << shapeStr(typeOf(x).getShape());
  // where(x < 0, x * slope, x): the slope's gradient is dy * x where x < 0,
  // summed over the broadcast dimensions by mul's gradient.
  FailureOr<Value> neg =
      node.create<CompareOp>(StringRef("lt"), x, node.scalar(0.0f));
  FailureOr<Value> scaled = binary<MulOp>(node, x, slope);
  if (failed(neg) || failed(scaled))
    return failure();
  FailureOr<Value> y = node.create<WhereOp>(*neg, *scaled, x);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// InstanceNormalization, GroupNormalization
//===----------------------------------------------------------------------===//

/// y * scale + bias with per-channel scale and bias.
static LogicalResult affineOutput(NodeImporter &node, Value y, Value scale,
                                  Value bias) {
  int64_t rank = typeOf(y).getRank(), c = typeOf(y).getDimSize(1);
  FailureOr<Value> s = perChannel(node, scale, c, rank, "scale");
  FailureOr<Value> b = perChannel(node, bias, c, rank, "bias");
  FailureOr<Value> out = binary<AddOp>(node, binary<MulOp>(node, y, s), b);
  if (failed(out))
    return failure();
  node.setOutput(0, *out);
  return success();
}

static FailureOr<Value> channelInput(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  if (typeOf(*x).getRank() < 3)
    return node.emitError() << "input must be [N, C, D1, ...], got "
                            << shapeStr(typeOf(*x).getShape());
  return x;
}

// InstanceNormalization 6 (dropped consumed_inputs), 22 types.
LogicalResult mlir::tcc::importInstanceNormalization(NodeImporter &node) {
  FailureOr<Value> x = channelInput(node);
  FailureOr<float> eps = node.floatAttr("epsilon", 1e-5f);
  FailureOr<SmallVector<Value>> in = node.inputs(3);
  if (failed(x) || failed(eps) || failed(in))
    return failure();
  FailureOr<Value> y =
      standardize(node, *x, axesFrom(2, typeOf(*x).getRank()), *eps);
  if (failed(y))
    return failure();
  return affineOutput(node, *y, (*in)[1], (*in)[2]);
}

// GroupNormalization 18: scale and bias hold one value per group. 21: one
// per channel, and stash_type (statistics in float: the only choice here).
LogicalResult mlir::tcc::importGroupNormalization(NodeImporter &node) {
  FailureOr<Value> x = channelInput(node);
  FailureOr<float> eps = node.floatAttr("epsilon", 1e-5f);
  FailureOr<int64_t> groups = node.intAttr("num_groups", 0);
  FailureOr<int64_t> stash = node.intAttr("stash_type", 1);
  FailureOr<SmallVector<Value>> in = node.inputs(3);
  if (failed(x) || failed(eps) || failed(groups) || failed(stash) || failed(in))
    return failure();
  if (*stash != 1)
    return node.emitUnsupported("stash_type " + std::to_string(*stash))
           << "attribute 'stash_type' = " << *stash
           << " is not supported; statistics are computed in float (1)";
  ArrayRef<int64_t> shape = typeOf(*x).getShape();
  int64_t n = shape[0], c = shape[1], g = *groups;
  if (g < 1 || c % g != 0)
    return node.emitError()
           << "attribute 'num_groups' = " << g
           << " must be positive and divide the " << c << " channels";
  int64_t rest = typeOf(*x).getNumElements() / (n * c);
  FailureOr<Value> grouped = node.reshape(*x, {n, g, c / g * rest});
  if (failed(grouped))
    return failure();
  FailureOr<Value> y = standardize(node, *grouped, {2}, *eps);
  if (failed(y))
    return failure();
  Value scale = (*in)[1], bias = (*in)[2];
  if (node.opset() < 21) {
    // One value per group: apply on [N, G, C/G * rest], then restore.
    FailureOr<Value> s = perChannel(node, scale, g, 3, "scale");
    FailureOr<Value> b = perChannel(node, bias, g, 3, "bias");
    FailureOr<Value> out = binary<AddOp>(node, binary<MulOp>(node, *y, s), b);
    if (failed(out))
      return failure();
    FailureOr<Value> r = node.reshape(*out, shape);
    if (failed(r))
      return failure();
    node.setOutput(0, *r);
    return success();
  }
  FailureOr<Value> r = node.reshape(*y, shape);
  if (failed(r))
    return failure();
  return affineOutput(node, *r, scale, bias);
}

//===----------------------------------------------------------------------===//
// RMSNormalization, MeanVarianceNormalization
//===----------------------------------------------------------------------===//

// RMSNormalization 23 (axis: the first normalized dimension; stash_type).
LogicalResult mlir::tcc::importRMSNormalization(NodeImporter &node) {
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  FailureOr<int64_t> axisAttr = node.intAttr("axis", -1);
  FailureOr<float> eps = node.floatAttr("epsilon", 1e-5f);
  FailureOr<int64_t> stash = node.intAttr("stash_type", 1);
  if (failed(in) || failed(axisAttr) || failed(eps) || failed(stash))
    return failure();
  if (*stash != 1)
    return node.emitUnsupported("stash_type " + std::to_string(*stash))
           << "attribute 'stash_type' = " << *stash
           << " is not supported; statistics are computed in float (1)";
  Value x = (*in)[0], scale = (*in)[1];
  int64_t rank = typeOf(x).getRank();
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *axisAttr, rank);
  if (failed(axis))
    return failure();
  FailureOr<Value> sq = binary<MulOp>(node, x, x);
  if (failed(sq))
    return failure();
  FailureOr<Value> ms =
      node.create<ReduceMeanOp>(*sq, axesFrom(*axis, rank), true);
  FailureOr<Value> shifted = binary<AddOp>(node, ms, node.scalar(*eps));
  if (failed(shifted))
    return failure();
  FailureOr<Value> rms = node.create<SqrtOp>(*shifted);
  FailureOr<Value> y = binary<MulOp>(node, binary<DivOp>(node, x, rms), scale);
  if (failed(y))
    return failure();
  if (typeOf(*y).getShape() != typeOf(x).getShape())
    return node.emitError()
           << "scale of shape " << shapeStr(typeOf(scale).getShape())
           << " does not broadcast to X's " << shapeStr(typeOf(x).getShape());
  node.setOutput(0, *y);
  return success();
}

// MeanVarianceNormalization 9 (axes attribute, default [0, 2, 3]), 13 types.
LogicalResult mlir::tcc::importMeanVarianceNormalization(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> attr = node.intsAttr("axes");
  if (failed(x) || failed(attr))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t a : attr->value_or(SmallVector<int64_t>{0, 2, 3})) {
    FailureOr<int64_t> axis = node.normalizeAxis("axes entry", a, rank);
    if (failed(axis))
      return failure();
    if (llvm::is_contained(axes, *axis))
      return node.emitError() << "axes name dimension " << *axis << " twice";
    axes.push_back(*axis);
  }
  llvm::sort(axes);
  FailureOr<Value> mean = node.create<ReduceMeanOp>(*x, axes, true);
  FailureOr<Value> d = binary<SubOp>(node, *x, mean);
  FailureOr<Value> sq = binary<MulOp>(node, d, d);
  if (failed(sq))
    return failure();
  FailureOr<Value> var = node.create<ReduceMeanOp>(*sq, axes, true);
  if (failed(var))
    return failure();
  FailureOr<Value> sd = node.create<SqrtOp>(*var);
  FailureOr<Value> y =
      binary<DivOp>(node, d, binary<AddOp>(node, sd, node.scalar(1e-9f)));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// LRN
//===----------------------------------------------------------------------===//

// LRN 1, 13 types. The window over channels c - floor((size - 1) / 2) ..
// c + ceil((size - 1) / 2) is a sum of `size` shifted slices of x^2 padded
// with zeros along the channels.
LogicalResult mlir::tcc::importLRN(NodeImporter &node) {
  FailureOr<Value> x = channelInput(node);
  FailureOr<int64_t> size = node.intAttr("size", 0);
  FailureOr<float> alpha = node.floatAttr("alpha", 1e-4f);
  FailureOr<float> beta = node.floatAttr("beta", 0.75f);
  FailureOr<float> bias = node.floatAttr("bias", 1.0f);
  if (failed(x) || failed(size) || failed(alpha) || failed(beta) ||
      failed(bias))
    return failure();
  if (*size < 1)
    return node.emitError()
           << "attribute 'size' must be positive, got " << *size;
  SmallVector<int64_t> shape(typeOf(*x).getShape());
  int64_t c = shape[1];
  FailureOr<Value> sq = binary<MulOp>(node, *x, *x);
  if (failed(sq))
    return failure();
  int64_t lo = (*size - 1) / 2, hi = *size - 1 - lo;
  FailureOr<Value> padded =
      padAxisConstant(node, *sq, 1, lo, hi, node.scalar(0.0f));
  if (failed(padded))
    return failure();
  Value sum;
  SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
  for (int64_t k = 0; k < *size; ++k) {
    starts[1] = k;
    Value term = *padded;
    if (typeOf(term).getDimSize(1) != c) {
      FailureOr<Value> s = node.create<SliceOp>(
          *padded, ArrayRef<int64_t>(starts), ArrayRef<int64_t>(shape),
          ArrayRef<int64_t>(steps));
      if (failed(s))
        return failure();
      term = *s;
    }
    if (!sum) {
      sum = term;
      continue;
    }
    FailureOr<Value> a = binary<AddOp>(node, sum, term);
    if (failed(a))
      return failure();
    sum = *a;
  }
  FailureOr<Value> base =
      binary<AddOp>(node, binary<MulOp>(node, sum, node.scalar(*alpha / *size)),
                    node.scalar(*bias));
  if (failed(base))
    return failure();
  FailureOr<Value> denom =
      node.create<PowScalarOp>(*base, node.builder().getF64FloatAttr(*beta));
  FailureOr<Value> y = binary<DivOp>(node, *x, denom);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// GlobalMaxPool
//===----------------------------------------------------------------------===//

// GlobalMaxPool 1, 22 types.
LogicalResult mlir::tcc::importGlobalMaxPool(NodeImporter &node) {
  FailureOr<Value> x = channelInput(node);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.create<ReduceMaxOp>(
      *x, ArrayRef<int64_t>(axesFrom(2, typeOf(*x).getRank())), true);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}
