//===- TccPatternsCast.cpp - Casts moved ahead of data movement -----------===//
//
// tcc-mixed-precision inserts each cast where an op needs its operand in
// another type, after differentiation. Many such operands reach their op
// through data movement: a layer norm's f32 output is transposed and then
// cast down for the attention projection's GEMM; the backward reshapes the
// same f32 value and casts it down again for the weight gradient; the loss
// gradient is padded (tcc-pad-shapes) in f32 and then cast down for the
// head's GEMMs. Moving the narrowing cast ahead of the data movement
//   cast(T(x)) -> T(cast(x))   T in reshape, transpose, broadcast_to and
//                              slice_grad (a zero pad: 0 is 0 in every type)
// is exact (a cast is element-wise) and pays three ways: the data movement
// copies half the bytes; the cast joins the fused region that computes x
// (one kernel fewer, and x itself is often no longer stored); and the casts
// of one value in the forward and the backward become one (CSE), so the
// backward reads the 16-bit value the forward kept instead of keeping an f32
// copy alive across the loss.
//
// Two rewrites make more such chains single-use:
//  * reduce_sum over all leading axes of a reshape or transpose that keeps
//    the last axis in place sums the same columns: it reads the operand
//    directly (a bias gradient next to its GEMM's reshaped operand);
//  * a zero pad of the last axis commutes with a reshape that keeps the
//    last axis: slice_grad(reshape(x)) -> reshape(slice_grad(x)), so both
//    GEMMs of a padded head share one padded gradient.
// A folder (CastOp::fold) removes the narrow(widen(x)) pairs that appear.
// And a sum of zero pads that tile one axis is a concat (q, k and v's
// gradients summed into their projection's).
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::rankedType;

static unsigned floatWidth(Type t) {
  auto f = dyn_cast<FloatType>(t);
  return f ? f.getWidth() : 0;
}

/// Whether `c` converts a float type to a narrower float type.
static bool isNarrowingFloatCast(CastOp c) {
  unsigned from = floatWidth(rankedType(c.getInput()).getElementType());
  unsigned to = floatWidth(rankedType(c.getResult()).getElementType());
  return from && to && to < from;
}

/// Whether every user of `v` is a cast to `elem` (then all of them move and
/// `v` dies; with another user the data movement would be done twice).
static bool onlyCastsTo(Value v, Type elem) {
  return llvm::all_of(v.getUsers(), [&](Operation *u) {
    auto c = dyn_cast<CastOp>(u);
    return c && rankedType(c.getResult()).getElementType() == elem;
  });
}

namespace {
/// cast(T(x)) -> T(cast(x)) for a narrowing float cast.
struct CastBeforeDataMovement : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp c,
                                PatternRewriter &rewriter) const override {
    if (!isNarrowingFloatCast(c))
      return failure();
    Operation *def = c.getInput().getDefiningOp();
    if (!def || !isa<ReshapeOp, TransposeOp, BroadcastToOp, SliceGradOp>(def) ||
        def->getNumOperands() != 1)
      return failure();
    Type elem = rankedType(c.getResult()).getElementType();
    Value x = def->getOperand(0);
    auto xt = rankedType(x);
    if (!isa<FloatType>(xt.getElementType()) ||
        !onlyCastsTo(c.getInput(), elem))
      return failure();
    Value narrow =
        CastOp::create(rewriter, c.getLoc(), xt.clone(elem), x).getResult();
    Operation *moved = rewriter.clone(*def);
    moved->setOperand(0, narrow);
    moved->getResult(0).setType(c.getType());
    rewriter.replaceOp(c, moved->getResults());
    return success();
  }
};

/// reduce_sum(T(x)) over all leading axes -> reduce_sum(x) over x's leading
/// axes, when T (a reshape or a transpose) keeps the last axis in place.
struct SumThroughRowPermutation : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceSumOp r,
                                PatternRewriter &rewriter) const override {
    if (!r.sumsAllButLastAxis())
      return failure();
    auto in = rankedType(r.getInput());
    int64_t rank = in.getRank();
    Operation *def = r.getInput().getDefiningOp();
    Value x;
    if (auto t = dyn_cast_or_null<TransposeOp>(def)) {
      if (t.getPerm().back() != rank - 1)
        return failure();
      x = t.getInput();
    } else if (auto s = dyn_cast_or_null<ReshapeOp>(def)) {
      x = s.getInput();
    } else {
      return failure();
    }
    auto xt = rankedType(x);
    if (xt.getRank() < 2 || xt.getShape().back() != in.getShape().back() ||
        xt.getElementType() != in.getElementType())
      return failure();
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i + 1 < xt.getRank(); ++i)
      axes.push_back(i);
    rewriter.replaceOpWithNewOp<ReduceSumOp>(r, r.getType(), x, axes,
                                             /*keepdims=*/false);
    return success();
  }
};

/// slice_grad(reshape(x)) -> reshape(slice_grad(x)) for a zero pad of the
/// last axis only, when the reshape keeps the last axis.
struct PadBeforeReshape : OpRewritePattern<SliceGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceGradOp p,
                                PatternRewriter &rewriter) const override {
    auto s = p.getGrad().getDefiningOp<ReshapeOp>();
    if (!s || !p.padsLastAxisOnly())
      return failure();
    auto gt = rankedType(p.getGrad()), rt = rankedType(p.getResult());
    auto xt = rankedType(s.getInput());
    if (xt.getRank() < 1 || xt.getShape().back() != gt.getShape().back())
      return failure();
    SmallVector<int64_t> shape(xt.getShape());
    shape.back() = rt.getShape().back();
    SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    Value padded = SliceGradOp::create(rewriter, p.getLoc(), xt.clone(shape),
                                       s.getInput(), shape, starts, steps)
                       .getResult();
    rewriter.replaceOpWithNewOp<ReshapeOp>(p, rt, padded);
    return success();
  }
};
/// A sum of zero pads that place their operands side by side along one
/// axis, tiling it, is their concatenation: autodiff of q, k and v sliced
/// from one projection sums three [.., 3d] pads (four kernels, six tensors
/// of traffic) where one concat writes the result once. Each term is
/// exact (x + 0 = x; only -0 + 0 turns into +0, which the concat keeps as
/// -0).
struct SumOfPadsIsConcat : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  struct Piece {
    Value value;
    int64_t start, size;
  };

  /// The pads summed by `v` (through adds used only inside the sum), all
  /// windowing the same single axis; false when some term is anything else.
  static bool collect(Value v, bool root, int64_t &axis,
                      SmallVectorImpl<Piece> &pieces) {
    if (auto add = v.getDefiningOp<AddOp>()) {
      if (!root && !v.hasOneUse())
        return false;
      if (add.getLhs().getType() != v.getType() ||
          add.getRhs().getType() != v.getType())
        return false;
      return collect(add.getLhs(), false, axis, pieces) &&
             collect(add.getRhs(), false, axis, pieces);
    }
    auto p = v.getDefiningOp<SliceGradOp>();
    if (!p || root)
      return false;
    auto in = rankedType(p.getGrad()), out = rankedType(p.getResult());
    int64_t padded = -1;
    for (int64_t i = 0; i < in.getRank(); ++i) {
      if (p.getSteps()[i] != 1)
        return false;
      if (in.getShape()[i] == out.getShape()[i] && p.getStarts()[i] == 0)
        continue;
      if (padded >= 0)
        return false;
      padded = i;
    }
    if (padded < 0 || (axis >= 0 && padded != axis))
      return false;
    axis = padded;
    pieces.push_back(
        {p.getGrad(), p.getStarts()[padded], in.getShape()[padded]});
    return true;
  }

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    int64_t axis = -1;
    SmallVector<Piece> pieces;
    if (!collect(add.getResult(), true, axis, pieces) || pieces.size() < 2)
      return failure();
    llvm::sort(pieces, [](const Piece &a, const Piece &b) {
      return a.start < b.start;
    });
    int64_t at = 0;
    for (const Piece &p : pieces) {
      if (p.start != at)
        return failure(); // a gap or an overlap
      at += p.size;
    }
    if (at != rankedType(add.getResult()).getShape()[axis])
      return failure();
    SmallVector<Value> inputs;
    for (const Piece &p : pieces)
      inputs.push_back(p.value);
    rewriter.replaceOpWithNewOp<ConcatOp>(add, add.getType(), inputs, axis);
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *ctx) {
  patterns.add<SumOfPadsIsConcat>(ctx);
}

void CastOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *ctx) {
  patterns.add<CastBeforeDataMovement>(ctx);
}

void ReduceSumOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *ctx) {
  patterns.add<SumThroughRowPermutation>(ctx);
}

void SliceGradOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *ctx) {
  patterns.add<PadBeforeReshape>(ctx);
}
