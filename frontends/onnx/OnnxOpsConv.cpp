//===- OnnxOpsConv.cpp - Builders: Conv, pooling, BatchNormalization ------===//
//
// The tcc ops are 2-D (NCHW); 1-D ONNX convolutions and pools (NCL) become
// 2-D ones over an [N, C, 1, L] view, 3-D ones (NCDHW) 2-D ones over folded
// views (OnnxOpsConv3d.cpp). auto_pad is resolved to explicit pads here,
// since shapes are static.
//
// BatchNormalization in training mode normalizes with the batch statistics
// and returns the new running statistics
//   running = running * momentum + batch * (1 - momentum)
// built from element-wise ops. ONNX defines the batch variance used there
// as the population variance; torch.nn.BatchNorm uses the unbiased one
// (times M / (M - 1), M values per channel), so models whose producer is
// "pytorch" get PyTorch's rule: training them in tcc then matches training
// them in PyTorch. The running statistics that are initializers are state
// (see batchNormalizationState): @forward returns their new values as
// "update" results. In inference mode (a pretrained CNN fine-tuned with
// frozen statistics) the statistics are constants and the op is
// element-wise arithmetic.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// Window attributes as the 2-D tcc ops take them.
struct Spatial {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};
} // namespace

/// The rank of the input's spatial part (1, 2 or 3), or an error naming
/// what is not supported.
static FailureOr<int64_t> spatialRank(NodeImporter &node, Value x) {
  int64_t rank = typeOf(x).getRank();
  if (rank >= 3 && rank <= 5)
    return rank - 2;
  if (rank >= 6)
    return node.emitUnsupported("rank-" + std::to_string(rank) + " input")
           << "input of shape " << shapeStr(typeOf(x).getShape())
           << " would need a " << rank - 2
           << "-D window; tcc supports 1-D, 2-D and 3-D (inputs [N, C, L], "
              "[N, C, H, W] and [N, C, D, H, W])";
  return node.emitError() << "input must be [N, C, L], [N, C, H, W] or "
                             "[N, C, D, H, W], got "
                          << shapeStr(typeOf(x).getShape());
}

/// An INTS attribute with `n` entries, or `dflt` when absent.
static FailureOr<SmallVector<int64_t>> intsOfSize(NodeImporter &node,
                                                  StringRef name, size_t n,
                                                  SmallVector<int64_t> dflt) {
  auto v = node.intsAttr(name);
  if (failed(v))
    return failure();
  if (!*v)
    return dflt;
  if ((*v)->size() != n)
    return node.emitError() << "attribute '" << name << "' has " << (*v)->size()
                            << " values, expected " << n;
  return **v;
}

/// Reads strides, dilations and pads (or auto_pad) for a window of size
/// `kernel` over the spatial dims `in`, and widens 1-D ones to 2-D.
static FailureOr<Spatial> readSpatial(NodeImporter &node, ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> kernel) {
  size_t r = in.size();
  auto strides = intsOfSize(node, "strides", r, SmallVector<int64_t>(r, 1));
  auto dilations = intsOfSize(node, "dilations", r, SmallVector<int64_t>(r, 1));
  auto pads = intsOfSize(node, "pads", 2 * r, SmallVector<int64_t>(2 * r, 0));
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  for (int64_t v : *strides)
    if (v < 1)
      return node.emitError()
             << "strides must be positive, got " << shapeStr(*strides);
  for (int64_t v : *dilations)
    if (v < 1)
      return node.emitError()
             << "dilations must be positive, got " << shapeStr(*dilations);
  for (int64_t v : *pads)
    if (v < 0)
      return node.emitError()
             << "pads must not be negative, got " << shapeStr(*pads);

  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *a = node.attr("auto_pad")) {
    if (a->type() != onnx::AttributeProto::STRING)
      return node.emitError() << "attribute 'auto_pad' should be a string";
    autoPad = a->s();
  }
  if (autoPad != "NOTSET" && node.attr("pads"))
    return node.emitError() << "attributes 'pads' and 'auto_pad' = " << autoPad
                            << " exclude each other";
  if (autoPad == "VALID") {
    pads->assign(2 * r, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // The output has ceil(in / stride) elements; the padding that takes is
    // split evenly, the odd one at the end (UPPER) or the beginning (LOWER).
    for (size_t i = 0; i < r; ++i) {
      int64_t s = (*strides)[i], out = (in[i] + s - 1) / s;
      int64_t total = std::max<int64_t>(
          0, (out - 1) * s + ((*dilations)[i] * (kernel[i] - 1) + 1) - in[i]);
      int64_t small = total / 2, large = total - small;
      (*pads)[i] = autoPad == "SAME_UPPER" ? small : large;
      (*pads)[i + r] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return node.emitUnsupported("attribute auto_pad=" + autoPad)
           << "auto_pad '" << autoPad
           << "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER";
  }

  Spatial sp;
  if (r == 1) { // [N, C, L] as [N, C, 1, L]
    sp.kernel = {1, kernel[0]};
    sp.strides = {1, (*strides)[0]};
    sp.dilations = {1, (*dilations)[0]};
    sp.pads = {0, (*pads)[0], 0, (*pads)[1]};
  } else {
    sp.kernel.assign(kernel.begin(), kernel.end());
    sp.strides = *strides;
    sp.dilations = *dilations;
    sp.pads = *pads;
  }
  return sp;
}

/// `x` as 4-D: [N, C, L] -> [N, C, 1, L]; other ranks stay.
static FailureOr<Value> as4d(NodeImporter &node, Value x) {
  ArrayRef<int64_t> s = typeOf(x).getShape();
  if (s.size() != 3)
    return x;
  return node.reshape(x, {s[0], s[1], 1, s[2]});
}

/// Undoes as4d on a result when the input was 3-D.
static LogicalResult setSpatialOutput(NodeImporter &node, int64_t rank,
                                      Value y) {
  if (rank == 1) {
    ArrayRef<int64_t> s = typeOf(y).getShape();
    FailureOr<Value> r = node.reshape(y, {s[0], s[1], s[3]});
    if (failed(r))
      return failure();
    y = *r;
  }
  node.setOutput(0, y);
  return success();
}

/// kernel_shape: required for pools; for Conv it must agree with `fromWeight`.
static FailureOr<SmallVector<int64_t>>
kernelShape(NodeImporter &node, int64_t rank,
            std::optional<ArrayRef<int64_t>> fromWeight) {
  auto k = node.intsAttr("kernel_shape");
  if (failed(k))
    return failure();
  if (!*k) {
    if (fromWeight)
      return SmallVector<int64_t>(*fromWeight);
    return node.emitError() << "attribute 'kernel_shape' is required";
  }
  if ((int64_t)(*k)->size() != rank ||
      llvm::any_of(**k, [](int64_t v) { return v < 1; }))
    return node.emitError() << "kernel_shape " << shapeStr(**k) << " must be "
                            << rank << " positive sizes";
  if (fromWeight && ArrayRef<int64_t>(**k) != *fromWeight)
    return node.emitError() << "kernel_shape " << shapeStr(**k)
                            << " differs from the weight's spatial shape "
                            << shapeStr(*fromWeight);
  return **k;
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importConv(NodeImporter &node) {
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  if (failed(in))
    return failure();
  Value x = (*in)[0], w = (*in)[1], bias;
  FailureOr<int64_t> rank = spatialRank(node, x);
  if (failed(rank))
    return failure();
  if (typeOf(w).getRank() != *rank + 2)
    return node.emitError()
           << "weight of shape " << shapeStr(typeOf(w).getShape())
           << " does not match the rank-" << *rank + 2 << " input";
  if (node.hasInput(2)) {
    FailureOr<Value> b = node.input(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  FailureOr<int64_t> group = node.intAttr("group", 1);
  FailureOr<SmallVector<int64_t>> kernel =
      kernelShape(node, *rank, typeOf(w).getShape().drop_front(2));
  if (failed(group) || failed(kernel))
    return failure();
  FailureOr<Spatial> sp =
      readSpatial(node, typeOf(x).getShape().drop_front(2), *kernel);
  if (failed(sp))
    return failure();
  if (*rank == 3) {
    FailureOr<Value> y = conv3dAs2d(node, x, w, bias, sp->strides, sp->pads,
                                    sp->dilations, *group);
    if (failed(y))
      return failure();
    node.setOutput(0, *y);
    return success();
  }
  FailureOr<Value> x4 = as4d(node, x), w4 = as4d(node, w);
  if (failed(x4) || failed(w4))
    return failure();
  FailureOr<Value> y = node.create<Conv2dOp>(
      *x4, *w4, bias, ArrayRef<int64_t>(sp->strides),
      ArrayRef<int64_t>(sp->pads), ArrayRef<int64_t>(sp->dilations), *group);
  if (failed(y))
    return failure();
  return setSpatialOutput(node, *rank, *y);
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

static FailureOr<Value> convTranspose2d(NodeImporter &node, Value x, Value w,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> dilations,
                                        ArrayRef<int64_t> begin,
                                        ArrayRef<int64_t> end, int64_t group);

// ConvTranspose 1, 11 (output_shape and auto_pad rules clarified), 22
// types. It is the input gradient of a convolution with the same weight
// (tcc.conv2d_grad_input). Along each spatial axis the taps cover the
// "natural" extent s (in - 1) + d (k - 1) + 1; the output is the window of
// `out` positions starting at pads[begin], where `out` comes from
// output_shape, or from the pads and output_padding, and auto_pad SAME
// splits the padding ceil(in * s)-wise like ONNX's reference. Positive
// crops are the op's pads; a window reaching past the taps (output_padding,
// a larger output_shape, a negative pad) holds zeros, added with Pad's
// concat, before the bias.
LogicalResult mlir::tcc::importConvTranspose(NodeImporter &node) {
  FailureOr<SmallVector<Value>> in = node.inputs(2);
  if (failed(in))
    return failure();
  Value x = (*in)[0], w = (*in)[1];
  FailureOr<int64_t> rank = spatialRank(node, x);
  if (failed(rank))
    return failure();
  int64_t r = *rank;
  if (typeOf(w).getRank() != r + 2)
    return node.emitError()
           << "weight of shape " << shapeStr(typeOf(w).getShape())
           << " does not match the rank-" << r + 2 << " input";
  FailureOr<int64_t> group = node.intAttr("group", 1);
  FailureOr<SmallVector<int64_t>> kernel =
      kernelShape(node, r, typeOf(w).getShape().drop_front(2));
  if (failed(group) || failed(kernel))
    return failure();
  ArrayRef<int64_t> xs = typeOf(x).getShape();
  if (*group < 1 || xs[1] % *group != 0 || typeOf(w).getDimSize(0) != xs[1])
    return node.emitError()
           << "weight of shape " << shapeStr(typeOf(w).getShape())
           << " and group " << *group << " do not fit the input's " << xs[1]
           << " channels";
  auto strides = intsOfSize(node, "strides", r, SmallVector<int64_t>(r, 1));
  auto dilations = intsOfSize(node, "dilations", r, SmallVector<int64_t>(r, 1));
  auto outPad =
      intsOfSize(node, "output_padding", r, SmallVector<int64_t>(r, 0));
  auto padsAttr = node.intsAttr("pads");
  auto outShape = node.intsAttr("output_shape");
  if (failed(strides) || failed(dilations) || failed(outPad) ||
      failed(padsAttr) || failed(outShape))
    return failure();
  for (int64_t i = 0; i < r; ++i)
    if ((*strides)[i] < 1 || (*dilations)[i] < 1 || (*outPad)[i] < 0)
      return node.emitError() << "strides and dilations must be positive and "
                                 "output_padding not negative";
  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *a = node.attr("auto_pad")) {
    if (a->type() != onnx::AttributeProto::STRING)
      return node.emitError() << "attribute 'auto_pad' should be a string";
    autoPad = a->s();
  }
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "NOTSET" && autoPad != "VALID")
    return node.emitUnsupported("attribute auto_pad=" + autoPad)
           << "auto_pad '" << autoPad
           << "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER";
  SmallVector<int64_t> pads(2 * r, 0);
  if (*padsAttr && !same && autoPad != "VALID") {
    if ((int64_t)(*padsAttr)->size() != 2 * r)
      return node.emitError() << "attribute 'pads' has " << (*padsAttr)->size()
                              << " values, expected " << 2 * r;
    pads = **padsAttr;
  }
  std::optional<SmallVector<int64_t>> outSpatial;
  if (*outShape) {
    ArrayRef<int64_t> o = **outShape;
    if ((int64_t)o.size() == r + 2)
      o = o.drop_front(2);
    if ((int64_t)o.size() != r)
      return node.emitError()
             << "attribute 'output_shape' " << shapeStr(**outShape)
             << " must have " << r << " spatial sizes";
    outSpatial = SmallVector<int64_t>(o);
  }

  // Per axis: the begin pad and the output extent, then the end crop.
  SmallVector<int64_t> begin(r), end(r);
  for (int64_t i = 0; i < r; ++i) {
    int64_t s = (*strides)[i], nat = s * (xs[2 + i] - 1) +
                                     (*dilations)[i] * ((*kernel)[i] - 1) + 1;
    int64_t out;
    if (same) {
      out = outSpatial ? (*outSpatial)[i] : xs[2 + i] * s;
      int64_t total = nat + (*outPad)[i] - out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); // floor
      begin[i] = autoPad == "SAME_UPPER" ? half : total - half;
    } else {
      begin[i] = pads[i];
      out = outSpatial ? (*outSpatial)[i]
                       : nat + (*outPad)[i] - pads[i] - pads[i + r];
    }
    if (out < 1)
      return node.emitError() << "the output would have " << out
                              << " entries along spatial axis " << i;
    end[i] = nat - begin[i] - out;
  }

  Value y;
  int64_t channels = typeOf(w).getDimSize(1) * *group;
  if (r == 3) {
    FailureOr<Value> y3 = convTranspose3dAs2d(node, x, w, *strides, *dilations,
                                              begin, end, *group);
    if (failed(y3))
      return failure();
    y = *y3;
  } else {
    FailureOr<Value> y2 =
        convTranspose2d(node, x, w, *strides, *dilations, begin, end, *group);
    if (failed(y2))
      return failure();
    y = *y2;
  }
  // Where a crop is negative the output reaches past the taps: zeros.
  for (int64_t i = r == 3 ? 1 : 0; i < r; ++i) {
    int64_t a = r == 1 ? 3 : 2 + i;
    if (begin[i] >= 0 && end[i] >= 0)
      continue;
    FailureOr<Value> p =
        padAxisConstant(node, y, a, std::max<int64_t>(0, -begin[i]),
                        std::max<int64_t>(0, -end[i]), node.scalar(0.0f));
    if (failed(p))
      return failure();
    y = *p;
  }
  if (node.hasInput(2)) {
    FailureOr<Value> bias = node.input(2);
    if (failed(bias))
      return failure();
    int64_t c = channels;
    if (typeOf(*bias).getNumElements() != c)
      return node.emitError()
             << "B of shape " << shapeStr(typeOf(*bias).getShape())
             << " must hold " << c << " values, one per output channel";
    SmallVector<int64_t> perChannel(typeOf(y).getRank(), 1);
    perChannel[1] = c;
    FailureOr<Value> bc = node.reshape(*bias, perChannel);
    if (failed(bc))
      return failure();
    FailureOr<Value> sum = node.create<AddOp>(y, *bc);
    if (failed(sum))
      return failure();
    y = *sum;
  }
  return setSpatialOutput(node, r, y);
}

/// ConvTranspose of a 1-D or 2-D input as conv2d_grad_input, with the
/// non-negative crops as its pads.
static FailureOr<Value> convTranspose2d(NodeImporter &node, Value x, Value w,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> dilations,
                                        ArrayRef<int64_t> begin,
                                        ArrayRef<int64_t> end, int64_t group) {
  int64_t r = begin.size();
  // The op on 2-D windows, with the crops as its pads.
  SmallVector<int64_t> opPads(4, 0), opStrides(2, 1), opDil(2, 1);
  for (int64_t i = 0; i < r; ++i) {
    int64_t a = r == 1 ? 1 : i;
    opPads[a] = std::max<int64_t>(0, begin[i]);
    opPads[a + 2] = std::max<int64_t>(0, end[i]);
    opStrides[a] = strides[i];
    opDil[a] = dilations[i];
  }
  FailureOr<Value> x4 = as4d(node, x), w4 = as4d(node, w);
  if (failed(x4) || failed(w4))
    return failure();
  ArrayRef<int64_t> x4s = typeOf(*x4).getShape(), w4s = typeOf(*w4).getShape();
  SmallVector<int64_t> yshape{x4s[0], w4s[1] * group, 0, 0};
  for (int a = 0; a < 2; ++a)
    yshape[2 + a] = opStrides[a] * (x4s[2 + a] - 1) +
                    opDil[a] * (w4s[2 + a] - 1) + 1 - opPads[a] - opPads[a + 2];
  auto ytype = RankedTensorType::get(yshape, typeOf(x).getElementType());
  OpBuilder &b = node.builder();
  Value y = Conv2dGradInputOp::create(
      b, node.loc(), ytype, *x4, *w4, b.getDenseI64ArrayAttr(opStrides),
      b.getDenseI64ArrayAttr(opPads), b.getDenseI64ArrayAttr(opDil),
      b.getI64IntegerAttr(group));
  return y;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importMaxPool(NodeImporter &node) {
  // MaxPool picks values: integers of 16 bits or fewer (UINT8 images) go
  // through float32 exactly and come back as int64 of their type.
  FailureOr<Type> declared = node.declaredType(0);
  if (failed(declared))
    return failure();
  bool viaFloat =
      isNarrowInt(*declared) && declared->getIntOrFloatBitWidth() <= 16;
  FailureOr<Value> x = viaFloat ? node.anyInput(0) : node.input(0);
  if (failed(x))
    return failure();
  if (viaFloat)
    x = CastOp::create(node.builder(), node.loc(),
                       RankedTensorType::get(typeOf(*x).getShape(),
                                             node.builder().getF32Type()),
                       *x)
            .getResult();
  if (node.proto().output_size() > 1 && !node.proto().output(1).empty())
    return node.emitUnsupported("Indices output")
           << "the Indices output is not supported (only the pooled values)";
  FailureOr<int64_t> rank = spatialRank(node, *x);
  if (failed(rank))
    return failure();
  FailureOr<SmallVector<int64_t>> kernel =
      kernelShape(node, *rank, std::nullopt);
  FailureOr<int64_t> ceil = node.intAttr("ceil_mode", 0);
  if (failed(kernel) || failed(ceil))
    return failure();
  FailureOr<Spatial> sp =
      readSpatial(node, typeOf(*x).getShape().drop_front(2), *kernel);
  if (failed(sp))
    return failure();
  if (*rank == 3) {
    FailureOr<Value> y = maxPool3dAs2d(node, *x, sp->kernel, sp->strides,
                                       sp->pads, sp->dilations, *ceil != 0);
    if (failed(y))
      return failure();
    node.setOutput(0, *y);
  } else {
    FailureOr<Value> x4 = as4d(node, *x);
    if (failed(x4))
      return failure();
    FailureOr<Value> y = node.create<MaxPool2dOp>(
        *x4, ArrayRef<int64_t>(sp->kernel), ArrayRef<int64_t>(sp->strides),
        ArrayRef<int64_t>(sp->pads), ArrayRef<int64_t>(sp->dilations),
        *ceil != 0);
    if (failed(y) || failed(setSpatialOutput(node, *rank, *y)))
      return failure();
  }
  if (!viaFloat)
    return success();
  Value y = node.graphState().lookup(node.proto().output(0))->value;
  auto i64 =
      RankedTensorType::get(typeOf(y).getShape(), node.builder().getI64Type());
  node.setOutput(0, CastOp::create(node.builder(), node.loc(), i64, y),
                 *declared);
  return success();
}

LogicalResult mlir::tcc::importAveragePool(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<int64_t> rank = spatialRank(node, *x);
  if (failed(rank))
    return failure();
  // Dilations came at opset 19, where the tcc op has none to offer.
  if (node.opset() < 19 && node.attr("dilations"))
    return node.emitError() << "attribute 'dilations' does not exist at opset "
                            << node.opset() << " (AveragePool has it from 19)";
  FailureOr<SmallVector<int64_t>> kernel =
      kernelShape(node, *rank, std::nullopt);
  FailureOr<int64_t> ceil = node.intAttr("ceil_mode", 0);
  FailureOr<int64_t> includePad = node.intAttr("count_include_pad", 0);
  if (failed(kernel) || failed(ceil) || failed(includePad))
    return failure();
  if (node.opset() < 7 && node.attr("count_include_pad"))
    return node.emitError() << "attribute 'count_include_pad' does not exist "
                               "at opset "
                            << node.opset() << " (AveragePool has it from 7)";
  FailureOr<Spatial> sp =
      readSpatial(node, typeOf(*x).getShape().drop_front(2), *kernel);
  FailureOr<Value> x4 = as4d(node, *x);
  if (failed(sp) || failed(x4))
    return failure();
  if (llvm::any_of(sp->dilations, [](int64_t d) { return d != 1; })) {
    const onnx::AttributeProto *d = node.attr("dilations");
    SmallVector<int64_t> given(d->ints().begin(), d->ints().end());
    return node.emitUnsupported("attribute dilations")
           << "dilated average pooling is not supported (attribute "
              "'dilations' = "
           << shapeStr(given) << " at opset " << node.opset()
           << "; tcc pools undilated windows only)";
  }
  if (*rank == 3) {
    FailureOr<Value> y = avgPool3dAs2d(node, *x, sp->kernel, sp->strides,
                                       sp->pads, *ceil != 0, *includePad != 0);
    if (failed(y))
      return failure();
    node.setOutput(0, *y);
    return success();
  }
  FailureOr<Value> y = node.create<AvgPool2dOp>(
      *x4, ArrayRef<int64_t>(sp->kernel), ArrayRef<int64_t>(sp->strides),
      ArrayRef<int64_t>(sp->pads), *ceil != 0, *includePad != 0);
  if (failed(y))
    return failure();
  return setSpatialOutput(node, *rank, *y);
}

// The mean over every spatial axis, kept as size 1: [N, C, 1, 1, ...].
LogicalResult mlir::tcc::importGlobalAveragePool(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  if (rank < 3)
    return node.emitError() << "input must be [N, C, D1, ...], got "
                            << shapeStr(typeOf(*x).getShape());
  SmallVector<int64_t> axes;
  for (int64_t a = 2; a < rank; ++a)
    axes.push_back(a);
  FailureOr<Value> y =
      node.create<ReduceMeanOp>(*x, ArrayRef<int64_t>(axes), true);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

/// Whether a BatchNormalization normalizes with the batch's statistics:
/// from 14 the training_mode attribute says so; before, asking for the
/// running statistics as outputs does.
static bool isTrainingMode(const onnx::NodeProto &node, int64_t opset) {
  if (opset >= 14) {
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "training_mode")
        return a.i() != 0;
    return false;
  }
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return true;
  return false;
}

SmallVector<unsigned>
mlir::tcc::batchNormalizationState(const onnx::NodeProto &node, int64_t opset,
                                   const OnnxImportOptions &opts) {
  // In inference mode the statistics are read, never updated: constants.
  if (!opts.batchNormTrain && !isTrainingMode(node, opset))
    return {};
  return {3, 4};
}

static bool hasOutput(NodeImporter &node, int i) {
  return node.proto().output_size() > i && !node.proto().output(i).empty();
}

/// Inference mode: scale * (x - mean) / sqrt(var + eps) + bias with the
/// running statistics as constants, as a pretrained CNN is fine-tuned with
/// frozen batch norm; plain element-wise ops, so the gradients of x, scale
/// and bias are the existing rules and the fuser merges the chain.
static LogicalResult importBatchNormInference(NodeImporter &node,
                                              ArrayRef<Value> in, float eps) {
  Value x = in[0];
  RankedTensorType xt = typeOf(x);
  // [C] -> [C, 1, ...]: broadcasts over the spatial dimensions.
  SmallVector<int64_t> perChannel(xt.getRank() - 1, 1);
  perChannel[0] = xt.getDimSize(1);
  SmallVector<Value> c;
  for (int i = 1; i < 5; ++i) {
    FailureOr<Value> r = node.reshape(in[i], perChannel);
    if (failed(r))
      return failure();
    c.push_back(*r);
  }
  FailureOr<Value> varEps = node.create<AddOp>(c[3], node.scalar(eps));
  if (failed(varEps))
    return failure();
  FailureOr<Value> stddev = node.create<SqrtOp>(*varEps);
  if (failed(stddev))
    return failure();
  FailureOr<Value> factor = node.create<DivOp>(c[0], *stddev);
  FailureOr<Value> centered = node.create<SubOp>(x, c[2]);
  if (failed(factor) || failed(centered))
    return failure();
  FailureOr<Value> scaled = node.create<MulOp>(*centered, *factor);
  if (failed(scaled))
    return failure();
  FailureOr<Value> y = node.create<AddOp>(*scaled, c[1]);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

/// running * momentum + batch * factor, element-wise on [C].
static FailureOr<Value> blend(NodeImporter &node, Value running, Value batch,
                              float momentum, float factor) {
  FailureOr<Value> kept = node.create<MulOp>(running, node.scalar(momentum));
  FailureOr<Value> added = node.create<MulOp>(batch, node.scalar(factor));
  if (failed(kept) || failed(added))
    return failure();
  return node.create<AddOp>(*kept, *added);
}

LogicalResult mlir::tcc::importBatchNormalization(NodeImporter &node) {
  FailureOr<float> eps = node.floatAttr("epsilon", 1e-5f);
  FailureOr<float> momentum = node.floatAttr("momentum", 0.9f);
  if (failed(eps) || failed(momentum))
    return failure();
  if (node.opset() >= 14 && failed(node.intAttr("training_mode", 0)))
    return failure();
  // Opsets 6 to 8: `spatial` = 0 keeps statistics per activation, not per
  // channel; opset 6's `is_test` must say what the outputs asked for say.
  if (node.opset() < 9) {
    FailureOr<int64_t> spatial = node.intAttr("spatial", 1);
    if (failed(spatial))
      return failure();
    if (*spatial != 1)
      return node.emitUnsupported("spatial=0")
             << "attribute 'spatial' = 0 (statistics per activation) is not "
                "supported; only per-channel batch normalization (1)";
  }
  if (node.opset() < 7) {
    FailureOr<int64_t> isTest = node.intAttr("is_test", 0);
    if (failed(isTest))
      return failure();
    bool training = isTrainingMode(node.proto(), node.opset());
    if ((*isTest != 0) == training)
      return node.emitUnsupported("is_test=" + std::to_string(*isTest))
             << "attribute 'is_test' = " << *isTest << " with "
             << (training ? "running statistics outputs" : "output Y only")
             << " is not supported: tcc infers with Y alone and trains "
                "when the statistics are asked for";
  } else if (node.attr("is_test")) {
    return node.emitError()
           << "attribute 'is_test' does not exist at opset " << node.opset();
  }
  FailureOr<SmallVector<Value>> in = node.inputs(5);
  if (failed(in))
    return failure();
  Value x = (*in)[0];
  RankedTensorType xt = typeOf(x);
  if (xt.getRank() < 2)
    return node.emitError()
           << "input must be [N, C, ...], got " << shapeStr(xt.getShape());
  bool exportedTraining = isTrainingMode(node.proto(), node.opset());
  if (!exportedTraining && !node.graphState().batchNormTrain()) {
    // PyTorch's dynamo exporter names nodes after the aten op; it writes
    // the training-mode batch norm of a module in train() in inference
    // mode, which would silently train a different model.
    bool fromTrainingOp = node.name().contains("_native_batch_norm_legit") &&
                          !node.name().contains("no_training");
    if (fromTrainingOp) {
      if (node.graphState().firstWarning("batch norm from training op"))
        mlir::emitWarning(node.loc())
            << node.describe()
            << ": BatchNormalization in inference mode, exported from "
               "PyTorch's training-mode batch norm "
               "(aten._native_batch_norm_legit_functional): the dynamo "
               "exporter writes it so. As exported it normalizes with "
               "constant running statistics, unlike the module in train(); "
               "pass --batchnorm=train to normalize with batch statistics "
               "and update the running ones, as PyTorch's training does";
    } else if (node.graphState().firstWarning("batch norm inference")) {
      // What an export in eval mode gives: fine for fine-tuning with frozen
      // statistics, a surprise for anyone who meant to train them.
      mlir::emitWarning(node.loc())
          << node.describe()
          << ": BatchNormalization in inference mode: it normalizes with "
             "its running statistics, which stay constant (frozen batch "
             "norm); to train with batch statistics, export in training "
             "mode (training=torch.onnx.TrainingMode.TRAINING) or pass "
             "--batchnorm=train";
    }
    return importBatchNormInference(node, *in, *eps);
  }
  FailureOr<Operation *> bn = node.createOp<BatchNormTrainOp>(
      x, (*in)[1], (*in)[2], node.builder().getF64FloatAttr(*eps));
  if (failed(bn))
    return failure();
  Value y = (*bn)->getResult(0), mean = (*bn)->getResult(1),
        var = (*bn)->getResult(2);
  node.setOutput(0, y);

  int64_t perChannel = xt.getNumElements() / xt.getDimSize(1);
  bool unbiased = node.graphState().producer() == "pytorch";
  if (unbiased && perChannel < 2)
    return node.emitError() << "input " << shapeStr(xt.getShape())
                            << " has one value per channel; training needs "
                               "more (PyTorch raises the same error)";
  float varFactor = 1.0f - *momentum;
  if (unbiased)
    varFactor = float(double(varFactor) * perChannel / (perChannel - 1));
  // Forced into training mode (--batchnorm=train), a node without outputs
  // for its running statistics still updates them: they are state.
  for (int i : {1, 2}) {
    const std::string &stateName = node.proto().input(i + 2);
    bool isState = node.graphState().isState(stateName);
    if (!hasOutput(node, i) && !isState)
      continue;
    FailureOr<Value> running =
        i == 1 ? blend(node, (*in)[3], mean, *momentum, 1.0f - *momentum)
               : blend(node, (*in)[4], var, *momentum, varFactor);
    if (failed(running))
      return failure();
    if (hasOutput(node, i))
      node.setOutput(i, *running);
    if (isState && !node.graphState().setStateUpdate(stateName, *running))
      return node.emitError() << "running statistic '" << stateName
                              << "' is updated by more than one node";
  }
  // Before 14: the statistics used (saved_mean, saved_var).
  if (node.opset() < 14 && exportedTraining) {
    node.setOutput(3, mean);
    node.setOutput(4, var);
  }
  return success();
}
