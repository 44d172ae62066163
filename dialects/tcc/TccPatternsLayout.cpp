//===- TccPatternsLayout.cpp - Selections moved through layout changes ----===//
//
// PyTorch 2.x's torch.onnx.export writes nn.MultiheadAttention's q/k/v split
// (F.multi_head_attention_forward's _in_projection_packed) as
//
//   proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
//   q, k, v = proj[0], proj[1], proj[2]
//
// which imports as reshape -> transpose -> reshape -> three scalar gathers:
// a full transposed copy of the projection, then three more copies. PyTorch
// 1.13 wrote the same split as three slices of the last axis. The patterns
// here bring the first form to the second, so that tcc-fuse-attention,
// tcc-sink-transposes and tcc-pack-attention see one shape of the graph:
//
// * gather(x, constant consecutive indices) -> reshape(slice(x))
// * slice(transpose(x)) -> transpose(slice(x)), when every user of the
//   transpose is a slice (the full transpose then goes away)
// * slice(reshape(x)) -> reshape(slice(x)), when the window is a contiguous
//   range of one axis of x
// * transpose(reshape(x)) -> reshape(transpose(x)), when the reshape only
//   splits or merges axes that the transpose moves together, and the
//   transpose gets smaller (fewer axes, or none: it only moved unit axes)
//
// All of them copy the same elements to the same places.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// Axes [inBegin, inEnd) of a reshape's input become axes [outBegin,
/// outEnd) of its result, with equal element counts.
struct Group {
  int64_t inBegin, inEnd, outBegin, outEnd;
};
} // namespace

/// The finest grouping of `in`'s and `out`'s axes into runs of equal
/// products; empty when the shapes have a zero. A unit axis joins the group
/// after it (trailing ones make groups of their own).
static SmallVector<Group> reshapeGroups(ArrayRef<int64_t> in,
                                        ArrayRef<int64_t> out) {
  SmallVector<Group> groups;
  int64_t n = in.size(), m = out.size(), i = 0, j = 0;
  if (llvm::is_contained(in, 0) || llvm::is_contained(out, 0))
    return {};
  while (i < n || j < m) {
    Group g{i, i, j, j};
    int64_t pi = 1, pj = 1;
    if (i < n)
      pi *= in[i++];
    if (j < m)
      pj *= out[j++];
    while (pi != pj) {
      if (pi < pj && i < n)
        pi *= in[i++];
      else if (pj < pi && j < m)
        pj *= out[j++];
      else
        return {};
    }
    g.inEnd = i;
    g.outEnd = j;
    groups.push_back(g);
  }
  return groups;
}

/// `shape` without its unit axes.
static SmallVector<int64_t> withoutUnits(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s;
  for (int64_t d : shape)
    if (d != 1)
      s.push_back(d);
  return s;
}

/// x's entries [start, start + size) along `axis`, the other axes whole.
static Value sliceOfAxis(PatternRewriter &rewriter, Location loc, Value x,
                         int64_t axis, int64_t start, int64_t size) {
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
      steps(shape.size(), 1);
  starts[axis] = start;
  sizes[axis] = size;
  return SliceOp::create(rewriter, loc, x, starts, sizes, steps);
}

/// The integer values of a constant index tensor, if `v` is one.
static std::optional<SmallVector<int64_t>> constantIndices(Value v) {
  DenseIntElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : attr.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

namespace {
/// gather(x, c, axis) with c a constant of consecutive in-range indices
/// (a scalar, as `proj[0]`, or [i, i+1, ...]) reads a window of the axis.
struct GatherOfConsecutiveIsSlice final : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<SmallVector<int64_t>> idx = constantIndices(op.getIndices());
    if (!idx || idx->empty())
      return rewriter.notifyMatchFailure(op, "indices are not constant");
    ArrayRef<int64_t> shape = typeOf(op.getData()).getShape();
    int64_t axis = op.getAxis(), n = shape[axis];
    int64_t first = (*idx)[0] < 0 ? (*idx)[0] + n : (*idx)[0];
    for (auto [k, i] : llvm::enumerate(*idx)) {
      int64_t at = i < 0 ? i + n : i;
      // Out of range stays a gather: its kernel reports the index.
      if (at < 0 || at >= n || at != first + (int64_t)k)
        return rewriter.notifyMatchFailure(op, "not consecutive in range");
    }
    Value s = sliceOfAxis(rewriter, op.getLoc(), op.getData(), axis, first,
                          static_cast<int64_t>(idx->size()));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), s);
    return success();
  }
};

/// slice(transpose(x, p)) -> transpose(slice'(x), p) when the transpose
/// only feeds slices: each then transposes just its window.
struct SliceBeforeTranspose final : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getInput().getDefiningOp<TransposeOp>();
    if (!t || !llvm::all_of(t->getUsers(),
                            [](Operation *u) { return isa<SliceOp>(u); }))
      return rewriter.notifyMatchFailure(op, "not a slice of a transpose");
    ArrayRef<int64_t> p = t.getPerm();
    int64_t r = p.size();
    SmallVector<int64_t> starts(r), sizes(r), steps(r);
    for (int64_t d = 0; d < r; ++d) {
      starts[p[d]] = op.getStarts()[d];
      sizes[p[d]] = op.getSizes()[d];
      steps[p[d]] = op.getSteps()[d];
    }
    Value s = SliceOp::create(rewriter, op.getLoc(), t.getInput(), starts,
                              sizes, steps);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, s, p);
    return success();
  }
};

/// slice(reshape(x)) -> reshape(slice'(x)) when the slice narrows one axis
/// (unit step) whose window is a contiguous range of one axis of x: within
/// its reshape group, the axes before it are 1 and x has one non-unit axis.
struct SliceBeforeReshape final : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto rs = op.getInput().getDefiningOp<ReshapeOp>();
    if (!rs)
      return rewriter.notifyMatchFailure(op, "not a slice of a reshape");
    ArrayRef<int64_t> in = typeOf(rs.getInput()).getShape();
    ArrayRef<int64_t> z = rs.getType().getShape();
    int64_t a = -1;
    for (int64_t d = 0, r = z.size(); d < r; ++d) {
      if (op.getStarts()[d] == 0 && op.getSteps()[d] == 1 &&
          op.getSizes()[d] == z[d])
        continue;
      if (a >= 0 || op.getSteps()[d] != 1)
        return rewriter.notifyMatchFailure(op, "not one window of one axis");
      a = d;
    }
    if (a < 0)
      return rewriter.notifyMatchFailure(op, "takes everything");
    for (const Group &g : reshapeGroups(in, z)) {
      if (a < g.outBegin || a >= g.outEnd)
        continue;
      for (int64_t d = g.outBegin; d < a; ++d)
        if (z[d] != 1)
          return rewriter.notifyMatchFailure(op, "window is strided in x");
      int64_t k = -1;
      for (int64_t d = g.inBegin; d < g.inEnd; ++d)
        if (in[d] != 1) {
          if (k >= 0)
            return rewriter.notifyMatchFailure(op, "group has two x axes");
          k = d;
        }
      if (k < 0)
        return failure(); // unreachable: the window would be empty or all
      int64_t inner = 1;
      for (int64_t d = a + 1; d < g.outEnd; ++d)
        inner *= z[d];
      Value s =
          sliceOfAxis(rewriter, op.getLoc(), rs.getInput(), k,
                      op.getStarts()[a] * inner, op.getSizes()[a] * inner);
      rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), s);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "shapes do not group");
  }
};

/// transpose(reshape(x), p) -> reshape(transpose(x', q)) where x' is x
/// without unit axes: each reshape group's (non-unit) result axes appear in
/// p together and in order, so q moves whole groups. Taken when q has fewer
/// axes than p, or is the identity.
struct TransposeBeforeReshape final : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto rs = op.getInput().getDefiningOp<ReshapeOp>();
    if (!rs)
      return rewriter.notifyMatchFailure(op, "not a transpose of a reshape");
    ArrayRef<int64_t> zs = rs.getType().getShape(), p = op.getPerm();
    // The permutation restricted to z's non-unit axes, renumbered.
    SmallVector<int64_t> rank(zs.size(), -1);
    int64_t nz = 0;
    for (auto [d, s] : llvm::enumerate(zs))
      if (s != 1)
        rank[d] = nz++;
    SmallVector<int64_t> pz;
    for (int64_t d : p)
      if (rank[d] >= 0)
        pz.push_back(rank[d]);
    SmallVector<int64_t> x = withoutUnits(typeOf(rs.getInput()).getShape());
    SmallVector<int64_t> z = withoutUnits(zs);
    SmallVector<Group> groups = reshapeGroups(x, z);
    if (groups.empty() && !x.empty())
      return rewriter.notifyMatchFailure(op, "shapes do not group");
    // Which group each non-unit z axis is in; groups must move whole.
    SmallVector<int64_t> groupOf(z.size());
    for (auto [gi, g] : llvm::enumerate(groups))
      for (int64_t d = g.outBegin; d < g.outEnd; ++d)
        groupOf[d] = gi;
    SmallVector<int64_t> q;
    for (size_t i = 0; i < pz.size();) {
      const Group &g = groups[groupOf[pz[i]]];
      for (int64_t d = g.outBegin; d < g.outEnd; ++d, ++i)
        if (i >= pz.size() || pz[i] != d)
          return rewriter.notifyMatchFailure(op, "splits a reshape group");
      // x axes of the group, in order (unit axes were dropped).
      for (int64_t d = g.inBegin; d < g.inEnd; ++d)
        q.push_back(d);
    }
    bool identity = TransposeOp::isIdentityPerm(q);
    if (!identity && q.size() >= p.size())
      return rewriter.notifyMatchFailure(op, "would not get smaller");
    Location loc = op.getLoc();
    Type e = typeOf(rs.getInput()).getElementType();
    Value v = rs.getInput();
    if (!identity) {
      if (ArrayRef<int64_t>(x) != typeOf(v).getShape())
        v = ReshapeOp::create(rewriter, loc, RankedTensorType::get(x, e), v);
      v = TransposeOp::create(rewriter, loc, v, q);
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), v);
    return success();
  }
};
} // namespace

void GatherOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *ctx) {
  patterns.add<GatherOfConsecutiveIsSlice>(ctx);
}

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *ctx) {
  patterns.add<SliceBeforeTranspose, SliceBeforeReshape>(ctx);
}

void mlir::tcc::populateTransposeLayoutPatterns(RewritePatternSet &patterns,
                                                MLIRContext *ctx) {
  patterns.add<TransposeBeforeReshape>(ctx);
}
