//===- TrimConvTaps.cpp - Drop kernel taps that only ever read padding ----===//
//
// tcc-trim-conv-taps runs on the forward before autodiff. With static
// shapes, the taps of a convolution that read padding for every output are
// known at compile time: a 3x3 convolution with pad 1 on a 1x1 map (the
// last stage of ResNet on 32x32 images) only ever reads its centre tap, a
// 3x3 stride-2 one from 2x2 to 1x1 only the bottom-right 2x2. Such taps
// multiply zeros, so
//
//   conv2d(x, W, pads p) = conv2d(x, slice(W), pads p')
//
// exactly, where the slice keeps the kernel rows and columns between the
// first and the last tap that reads the input for some output, and p'
// moves the window's origin by the taps dropped in front (the leading pad
// shrinks by first * dilation) and keeps the trailing pad only as far as
// the trimmed window still reaches into it (never below zero, with the
// output size unchanged). The convolution then costs what its useful taps
// cost, in all three directions: autodiff differentiates the slice, so the
// dropped taps get a zero gradient (what the full convolution computes for
// them) and the optimizer still updates them (weight decay, moments).
//
// Per spatial axis, tap t reads input position i * stride - pad + t * dil
// for output i; it is live when some output puts that inside [0, in).
// Taps strictly between live ones are kept even if dead (the window stays a
// rectangle). An axis is left alone when its leading pad would go negative
// (dilation > 1 can do that) or the output size would change; a
// convolution with no live tap at all (its result is its bias) is left
// alone too.
//
// Then a convolution (trimmed or not) with a 1x1 output, no leading pads
// (trailing ones it does not reach), one group and unit dilation reads
// x[:, :, 0:kH, 0:kW] once per image: it is
// a GEMM, reshape(x') [N, C*kH*kW] times reshape(W) [O, C*kH*kW]
// transposed (+ bias), x' the input's first kH x kW positions (a slice when
// the stride skips the rest, as in a 1x1 stride-2 shortcut from 2x2 to
// 1x1). The three directions then run as GEMMs on the thread pool's BLAS
// with no layout conversion around them.
//
// Not handled: conv2d_grad_input used as a forward op (ConvTranspose).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <optional>

#define DEBUG_TYPE "tcc-trim-conv-taps"

namespace mlir::tcc {
#define GEN_PASS_DEF_TRIMCONVTAPSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

/// One spatial axis of a convolution.
struct Axis {
  int64_t in, out, kernel, stride, dilation, padBegin, padEnd;
};

/// The trimmed axis: taps [first, first + kernel) and the new pads.
struct Trim {
  int64_t first, kernel, padBegin, padEnd;
};

/// Whether tap `t` reads the input for some output.
static bool isLive(const Axis &a, int64_t t) {
  int64_t c = t * a.dilation - a.padBegin; // position for output 0
  // The first output whose position is >= 0 (positions grow with i).
  int64_t i = c >= 0 ? 0 : (-c + a.stride - 1) / a.stride;
  return i < a.out && i * a.stride + c < a.in;
}

static int64_t outSize(int64_t in, int64_t padBegin, int64_t padEnd,
                       int64_t kernel, int64_t stride, int64_t dilation) {
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

/// The trimmed axis, or nothing when no tap is live; the axis unchanged when
/// it cannot be trimmed.
static std::optional<Trim> trimAxis(const Axis &a) {
  int64_t first = -1, last = -1;
  for (int64_t t = 0; t < a.kernel; ++t)
    if (isLive(a, t)) {
      if (first < 0)
        first = t;
      last = t;
    }
  if (first < 0)
    return std::nullopt;
  Trim same{0, a.kernel, a.padBegin, a.padEnd};
  int64_t kernel = last - first + 1;
  int64_t padBegin = a.padBegin - first * a.dilation;
  if (kernel == a.kernel || padBegin < 0)
    return same;
  // The last output's last tap must still fall inside the padded input.
  int64_t reach = (a.out - 1) * a.stride - padBegin + (kernel - 1) * a.dilation;
  int64_t padEnd = std::max<int64_t>(0, reach - a.in + 1);
  if (outSize(a.in, padBegin, padEnd, kernel, a.stride, a.dilation) != a.out)
    return same;
  return Trim{first, kernel, padBegin, padEnd};
}

/// The GEMM form of a convolution with a 1x1 output that reads the input's
/// first kH x kW positions, if `conv` is one.
static void asGemm(Conv2dOp conv) {
  auto xt = cast<RankedTensorType>(conv.getInput().getType());
  auto wt = cast<RankedTensorType>(conv.getWeight().getType());
  auto yt = cast<RankedTensorType>(conv.getType());
  if (!xt.hasStaticShape() || !wt.hasStaticShape() || xt.getRank() != 4 ||
      conv.getPads().size() != 4 || conv.getDilations().size() != 2 ||
      conv.getGroups() != 1 || yt.getDimSize(2) != 1 || yt.getDimSize(3) != 1 ||
      conv.getPads()[0] != 0 || conv.getPads()[1] != 0)
    return;
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), o = wt.getDimSize(0);
  int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  ArrayRef<int64_t> dil = conv.getDilations();
  if ((kh > 1 && dil[0] != 1) || (kw > 1 && dil[1] != 1) ||
      kh > xt.getDimSize(2) || kw > xt.getDimSize(3))
    return;
  LLVM_DEBUG(llvm::dbgs() << "as a GEMM: " << conv << "\n");
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  Type f = xt.getElementType();
  Value x = conv.getInput();
  if (kh < xt.getDimSize(2) || kw < xt.getDimSize(3)) {
    SmallVector<int64_t> sizes{n, c, kh, kw};
    x = SliceOp::create(b, loc, xt.clone(sizes), x, SmallVector<int64_t>(4, 0),
                        sizes, SmallVector<int64_t>(4, 1));
  }
  int64_t k = c * kh * kw;
  Value rows = ReshapeOp::create(b, loc, RankedTensorType::get({n, k}, f), x);
  Value w = ReshapeOp::create(b, loc, RankedTensorType::get({o, k}, f),
                              conv.getWeight());
  Value y = MatmulOp::create(b, loc, rows, w, /*transpose_lhs=*/false,
                             /*transpose_rhs=*/true);
  if (Value bias = conv.getBias())
    y = AddOp::create(b, loc, y, bias);
  Value r = ReshapeOp::create(b, loc, yt, y);
  conv.replaceAllUsesWith(r);
  conv.erase();
}

static void trim(Conv2dOp conv) {
  auto xt = cast<RankedTensorType>(conv.getInput().getType());
  auto wt = cast<RankedTensorType>(conv.getWeight().getType());
  auto yt = cast<RankedTensorType>(conv.getType());
  ArrayRef<int64_t> strides = conv.getStrides(), pads = conv.getPads(),
                    dil = conv.getDilations();
  if (!xt.hasStaticShape() || !wt.hasStaticShape() || !yt.hasStaticShape() ||
      xt.getRank() != 4 || strides.size() != 2 || pads.size() != 4 ||
      dil.size() != 2)
    return;
  Trim axes[2];
  bool changed = false;
  for (int d = 0; d < 2; ++d) {
    std::optional<Trim> t = trimAxis(
        {xt.getDimSize(2 + d), yt.getDimSize(2 + d), wt.getDimSize(2 + d),
         strides[d], dil[d], pads[d], pads[2 + d]});
    if (!t)
      return; // only padding: the result is the bias, leave it
    axes[d] = *t;
    changed |= t->kernel != wt.getDimSize(2 + d);
  }
  if (!changed)
    return;
  LLVM_DEBUG(llvm::dbgs() << "trimming " << conv << "\n");
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  SmallVector<int64_t> starts{0, 0, axes[0].first, axes[1].first};
  SmallVector<int64_t> sizes{wt.getDimSize(0), wt.getDimSize(1), axes[0].kernel,
                             axes[1].kernel};
  SmallVector<int64_t> steps(4, 1);
  Value w = SliceOp::create(b, loc, wt.clone(sizes), conv.getWeight(), starts,
                            sizes, steps);
  SmallVector<int64_t> newPads{axes[0].padBegin, axes[1].padBegin,
                               axes[0].padEnd, axes[1].padEnd};
  auto trimmed =
      Conv2dOp::create(b, loc, yt, conv.getInput(), w, conv.getBias(),
                       conv.getStridesAttr(), b.getDenseI64ArrayAttr(newPads),
                       conv.getDilationsAttr(), conv.getGroupsAttr());
  conv.replaceAllUsesWith(trimmed.getResult());
  conv.erase();
}

struct TrimConvTapsPass final
    : tcc::impl::TrimConvTapsPassBase<TrimConvTapsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Conv2dOp> convs;
    getOperation().walk([&](Conv2dOp c) { convs.push_back(c); });
    for (Conv2dOp c : convs)
      trim(c);
    if (!gemm)
      return;
    convs.clear();
    getOperation().walk([&](Conv2dOp c) { convs.push_back(c); });
    for (Conv2dOp c : convs)
      asGemm(c);
  }
};
} // namespace
