//===- OnnxOpsConv3d.cpp - 3-D convolution and pooling as 2-D ops ---------===//
//
// ONNX Conv, ConvTranspose, MaxPool and AveragePool on [N, C, D, H, W]
// become the 2-D tcc ops plus reshapes, transposes, slices and concats, so
// their gradients, the CPU and CUDA kernels and the fuser are the 2-D ones.
//
// Convolution folds the depth taps into the channels: the input padded
// along D and moved to [N, D, C, H, W] is sliced once per depth tap kd (the
// depths kd * dd + i * sd that output depth i reads), the kD slices are
// joined per group into [N * OD, G * kD * Cg, H, W], and one conv2d with
// the weight [O, Cg, kD, kH, kW] seen as [O, kD * Cg, kH, kW] computes
// every output depth at once. That is vol2col's unfolding along one axis:
// the GEMM is the 3-D one, the extra memory kD copies of the input.
//
// Pooling is separable: the max (average) over a box is the max (average)
// along D of the maxima (averages) over H x W, with PyTorch's first-index
// tie rule, NaN and divisor rules holding axis by axis. So a 2-D pool over
// [N, C * D, H, W] is followed by one over [N, C, D, OH * OW] with a
// [kD, 1] window.
//
// The transposed convolution is conv2d_grad_input over the input with
// sd - 1 zeros inserted between depths, giving every depth tap's
// contribution at once; each is then shifted to its depth by a pad.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"
#include "runtime/core/abi/WindowGeometry.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// [N, C, D, H, W] <-> [N, D, C, H, W].
static FailureOr<Value> swapCD(NodeImporter &node, Value x) {
  return node.create<TransposeOp>(x, ArrayRef<int64_t>{0, 2, 1, 3, 4});
}

/// Entries [start, start + size * step) of `x` along `axis`.
static FailureOr<Value> sliceAxis(NodeImporter &node, Value x, int64_t axis,
                                  int64_t start, int64_t size, int64_t step) {
  ArrayRef<int64_t> s = typeOf(x).getShape();
  if (start == 0 && size == s[axis] && (step == 1 || size == 1))
    return x;
  SmallVector<int64_t> starts(s.size(), 0), sizes(s), steps(s.size(), 1);
  starts[axis] = start;
  sizes[axis] = size;
  steps[axis] = step;
  return node.create<SliceOp>(x, ArrayRef<int64_t>(starts),
                              ArrayRef<int64_t>(sizes),
                              ArrayRef<int64_t>(steps));
}

/// A weight [A, B, kD, kH, kW] as [A, kD * B, kH, kW] (depth tap major).
static FailureOr<Value> foldWeightDepth(NodeImporter &node, Value w) {
  ArrayRef<int64_t> s = typeOf(w).getShape();
  Value t = w;
  if (s[2] > 1) {
    FailureOr<Value> r = swapCD(node, w);
    if (failed(r))
      return failure();
    t = *r;
  }
  return node.reshape(t, {s[0], s[2] * s[1], s[3], s[4]});
}

FailureOr<Value> mlir::tcc::conv3dAs2d(NodeImporter &node, Value x, Value w,
                                       Value bias, ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> pads,
                                       ArrayRef<int64_t> dilations,
                                       int64_t groups) {
  ArrayRef<int64_t> xs = typeOf(x).getShape(), ws = typeOf(w).getShape();
  int64_t n = xs[0], c = xs[1], h = xs[3], wd = xs[4];
  int64_t o = ws[0], cg = ws[1], kd = ws[2];
  if (groups < 1 || c % groups || o % groups || cg * groups != c)
    return node.emitError()
           << "weight of shape " << shapeStr(ws) << " and group " << groups
           << " do not fit the input of shape " << shapeStr(xs);
  int64_t sd = strides[0], dd = dilations[0];
  FailureOr<Value> xp =
      padAxisConstant(node, x, 2, pads[0], pads[3], node.scalar(0.0f));
  if (failed(xp))
    return failure();
  int64_t dp = xs[2] + pads[0] + pads[3];
  int64_t od = ::tcc::rt::abi::windowOut(dp, kd, sd, 0, 0, dd, false);
  if (od < 1)
    return node.emitError()
           << "the kernel " << shapeStr(ws.drop_front(2)) << " (dilations "
           << shapeStr(dilations) << ", pads " << shapeStr(pads)
           << ") does not fit the input " << shapeStr(xs);
  FailureOr<Value> xt = swapCD(node, *xp);
  if (failed(xt))
    return failure();
  // One [N * OD, G, Cg, H, W] slice per depth tap, joined tap-major within
  // each group, as the folded weight's input channels are.
  SmallVector<Value> taps;
  for (int64_t k = 0; k < kd; ++k) {
    FailureOr<Value> s = sliceAxis(node, *xt, 1, k * dd, od, sd);
    if (failed(s))
      return failure();
    FailureOr<Value> r = node.reshape(*s, {n * od, groups, cg, h, wd});
    if (failed(r))
      return failure();
    taps.push_back(*r);
  }
  Value joined = taps[0];
  if (kd > 1) {
    FailureOr<Value> cat = node.create<ConcatOp>(ValueRange(taps), uint64_t(2));
    if (failed(cat))
      return failure();
    joined = *cat;
  }
  FailureOr<Value> x2 = node.reshape(joined, {n * od, kd * c, h, wd});
  FailureOr<Value> w2 = foldWeightDepth(node, w);
  if (failed(x2) || failed(w2))
    return failure();
  SmallVector<int64_t> pads2{pads[1], pads[2], pads[4], pads[5]};
  FailureOr<Value> y = node.create<Conv2dOp>(
      *x2, *w2, bias, strides.drop_front(), ArrayRef<int64_t>(pads2),
      dilations.drop_front(), groups);
  if (failed(y))
    return failure();
  ArrayRef<int64_t> ys = typeOf(*y).getShape();
  FailureOr<Value> y5 = node.reshape(*y, {n, od, o, ys[2], ys[3]});
  if (failed(y5))
    return failure();
  return swapCD(node, *y5);
}

FailureOr<Value> mlir::tcc::convTranspose3dAs2d(
    NodeImporter &node, Value x, Value w, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> dilations, ArrayRef<int64_t> begin, ArrayRef<int64_t> end,
    int64_t groups) {
  ArrayRef<int64_t> xs = typeOf(x).getShape(), ws = typeOf(w).getShape();
  int64_t n = xs[0], c = xs[1], id = xs[2], ih = xs[3], iw = xs[4];
  int64_t og = ws[1], kd = ws[2], o = og * groups;
  int64_t sd = strides[0], dd = dilations[0];
  int64_t e = sd * (id - 1) + 1; // depths with the zeros inserted
  int64_t outD = sd * (id - 1) + dd * (kd - 1) + 1 - begin[0] - end[0];
  FailureOr<Value> xt = swapCD(node, x);
  if (failed(xt))
    return failure();
  Value spread = *xt;
  if (sd > 1) {
    // [N, ID, 1, K] padded to [N, ID, sd, K], flattened, the trailing zeros
    // dropped: input depth i lands at i * sd.
    FailureOr<Value> r = node.reshape(spread, {n, id, 1, c * ih * iw});
    if (failed(r))
      return failure();
    FailureOr<Value> p =
        padAxisConstant(node, *r, 2, 0, sd - 1, node.scalar(0.0f));
    if (failed(p))
      return failure();
    FailureOr<Value> f = node.reshape(*p, {n, id * sd, c, ih, iw});
    if (failed(f))
      return failure();
    FailureOr<Value> cut = sliceAxis(node, *f, 1, 0, e, 1);
    if (failed(cut))
      return failure();
    spread = *cut;
  }
  FailureOr<Value> x2 = node.reshape(spread, {n * e, c, ih, iw});
  FailureOr<Value> w2 = foldWeightDepth(node, w);
  if (failed(x2) || failed(w2))
    return failure();
  // The 2-D op crops H and W by their non-negative pads; the caller pads
  // where they are negative.
  SmallVector<int64_t> pads2{
      std::max<int64_t>(0, begin[1]), std::max<int64_t>(0, begin[2]),
      std::max<int64_t>(0, end[1]), std::max<int64_t>(0, end[2])};
  int64_t oh = strides[1] * (ih - 1) + dilations[1] * (ws[3] - 1) + 1 -
               pads2[0] - pads2[2];
  int64_t ow = strides[2] * (iw - 1) + dilations[2] * (ws[4] - 1) + 1 -
               pads2[1] - pads2[3];
  if (oh < 1 || ow < 1)
    return node.emitError() << "the pads crop the whole output";
  OpBuilder &b = node.builder();
  auto ztype = RankedTensorType::get({n * e, kd * o, oh, ow},
                                     typeOf(x).getElementType());
  Value z =
      Conv2dGradInputOp::create(b, node.loc(), ztype, *x2, *w2,
                                b.getDenseI64ArrayAttr(strides.drop_front()),
                                b.getDenseI64ArrayAttr(pads2),
                                b.getDenseI64ArrayAttr(dilations.drop_front()),
                                b.getI64IntegerAttr(groups));
  // Channel g * kD * Og + k * Og + j is tap k's part of output channel
  // g * Og + j; it belongs at depth e + k * dd of the uncropped output.
  int64_t plane = og * oh * ow;
  FailureOr<Value> z5 = node.reshape(z, {n, e, groups, kd, plane});
  if (failed(z5))
    return failure();
  Value sum;
  for (int64_t k = 0; k < kd; ++k) {
    int64_t before = k * dd - begin[0], after = outD - (e + before);
    if (before >= outD || after >= outD)
      continue; // cropped away entirely
    FailureOr<Value> t = sliceAxis(node, *z5, 3, k, 1, 1);
    if (failed(t))
      return failure();
    FailureOr<Value> r = node.reshape(*t, {n, e, o * oh * ow});
    if (failed(r))
      return failure();
    FailureOr<Value> shifted =
        padAxisConstant(node, *r, 1, before, after, node.scalar(0.0f));
    if (failed(shifted))
      return failure();
    if (!sum) {
      sum = *shifted;
      continue;
    }
    FailureOr<Value> add = node.create<AddOp>(sum, *shifted);
    if (failed(add))
      return failure();
    sum = *add;
  }
  if (!sum)
    return node.emitUnsupported("pads cropping every depth tap")
           << "pads " << shapeStr(begin) << " / " << shapeStr(end)
           << " leave no tap inside the output";
  FailureOr<Value> y5 = node.reshape(sum, {n, outD, o, oh, ow});
  if (failed(y5))
    return failure();
  return swapCD(node, *y5);
}

/// A 2-D pool over H x W of [N, C * D, H, W], then over D of
/// [N, C, D, OH * OW]; `pool(x, kernel, strides, pads, dilations)` builds
/// one 2-D pool.
template <typename PoolFn>
static FailureOr<Value>
separablePool(NodeImporter &node, Value x, ArrayRef<int64_t> kernel,
              ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
              ArrayRef<int64_t> dilations, PoolFn pool) {
  ArrayRef<int64_t> xs = typeOf(x).getShape();
  int64_t n = xs[0], c = xs[1], d = xs[2];
  FailureOr<Value> planes = node.reshape(x, {n, c * d, xs[3], xs[4]});
  if (failed(planes))
    return failure();
  SmallVector<int64_t> padsHW{pads[1], pads[2], pads[4], pads[5]};
  FailureOr<Value> hw = pool(*planes, kernel.drop_front(), strides.drop_front(),
                             ArrayRef<int64_t>(padsHW), dilations.drop_front());
  if (failed(hw))
    return failure();
  ArrayRef<int64_t> hs = typeOf(*hw).getShape();
  int64_t oh = hs[2], ow = hs[3];
  FailureOr<Value> cols = node.reshape(*hw, {n, c, d, oh * ow});
  if (failed(cols))
    return failure();
  SmallVector<int64_t> kD{kernel[0], 1}, sD{strides[0], 1},
      pD{pads[0], 0, pads[3], 0}, dD{dilations[0], 1};
  FailureOr<Value> y = pool(*cols, ArrayRef<int64_t>(kD), ArrayRef<int64_t>(sD),
                            ArrayRef<int64_t>(pD), ArrayRef<int64_t>(dD));
  if (failed(y))
    return failure();
  return node.reshape(*y, {n, c, typeOf(*y).getDimSize(2), oh, ow});
}

FailureOr<Value>
mlir::tcc::maxPool3dAs2d(NodeImporter &node, Value x, ArrayRef<int64_t> kernel,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                         ArrayRef<int64_t> dilations, bool ceil) {
  return separablePool(node, x, kernel, strides, pads, dilations,
                       [&](Value v, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                           ArrayRef<int64_t> p, ArrayRef<int64_t> d) {
                         return node.create<MaxPool2dOp>(v, k, s, p, d, ceil);
                       });
}

FailureOr<Value> mlir::tcc::avgPool3dAs2d(NodeImporter &node, Value x,
                                          ArrayRef<int64_t> kernel,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> pads, bool ceil,
                                          bool includePad) {
  SmallVector<int64_t> ones(3, 1);
  return separablePool(node, x, kernel, strides, pads, ones,
                       [&](Value v, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                           ArrayRef<int64_t> p, ArrayRef<int64_t>) {
                         return node.create<AvgPool2dOp>(v, k, s, p, ceil,
                                                         includePad);
                       });
}
