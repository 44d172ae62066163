//===- SinkTransposes.cpp - Move layout changes until they cancel ---------===//
//
// tcc-sink-transposes removes the transposes torch.onnx.export writes
// around nn.MultiheadAttention with batch_first = True: the block's input
// [B, T, E] is transposed to [T, B, E], projected, split into heads as
// [T, B*H, D] (which tcc-fuse-attention already reads sequence-major), and
// the output projection's result is transposed back to [B, T, E]. Each is a
// full copy of the activations, forward and backward. The pass runs on
// @forward before autodiff, so the backward never has them either.
//
// Three rewrites, applied greedily:
//
//  1. Sink a transpose that keeps the last axis through ops that work on
//     rows of that axis: a GEMM with a 2-D right operand, an element-wise
//     op with an operand that only varies along the last axis (a bias), a
//     slice of the last axis, a reshape that splits or merges only the
//     trailing (unpermuted) axes. op(transpose(x)) = transpose(op(x)); a
//     transpose meeting its inverse cancels (ComposeTransposes).
//  2. A sequence-major attention over MHA's head split,
//     reshape(transpose(z [B, T, E], [1, 0, 2]) -> [T, B*H, D]) for each of
//     q, k and v, reads reshape(z -> [B, T, H, D]) instead (rank 4, entries
//     (b, h) numbered as before, so lse and masks do not change); its result
//     goes back to [T, B*H, Dv] through a transpose that rewrite 1 sinks.
//  3. Sink a reshape that only regroups the leading axes ([T, B, E] ->
//     [T*B, E]: MHA's output projection on 2-D rows) through the same row
//     ops, so the transpose above it can sink too; reshape(reshape(x)) to
//     x's shape folds away.
//
// Profitability: 1 and 3 fire only when every path from the moved value
// ends in a cancellation (a transpose back, a reshape back) or in an
// attention operand that rewrite 2 takes; otherwise a transpose could grow
// (sunk below a GEMM that widens the rows) or multiply without going away.
// Not handled: transposes that move the last axis, ops with other
// broadcasting, mask operands with batch dimensions (rewrite 2 then leaves
// the attention alone).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#include <algorithm>

#define DEBUG_TYPE "tcc-sink-transposes"

namespace mlir::tcc {
#define GEN_PASS_DEF_SINKTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static RankedTensorType withShape(Value like, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, typeOf(like).getElementType());
}

/// The shape `s` (of a value in the transposed layout, y = transpose(x, p))
/// in x's layout: x dim p[i] is y dim i.
static SmallVector<int64_t> unpermute(ArrayRef<int64_t> s,
                                      ArrayRef<int64_t> p) {
  SmallVector<int64_t> out(s.size());
  for (auto [i, pi] : llvm::enumerate(p))
    out[pi] = s[i];
  return out;
}

/// Whether `other` varies only along the last axis of `v`'s rank-r result
/// (a scalar, a bias [E], or [1, ..., 1, E]).
static bool onlyLastAxis(Value other, int64_t r) {
  ArrayRef<int64_t> s = typeOf(other).getShape();
  if ((int64_t)s.size() > r)
    return false;
  return llvm::all_of(s.drop_back(s.empty() ? 0 : 1),
                      [](int64_t d) { return d == 1; });
}

static bool isElementwiseBinary(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp>(op);
}

namespace {
/// How a row-local user of a moved value `v` (rank r, last axis kept) is
/// redone on the value before the move: which operand `v` is.
enum class RowUse { None, Gemm, Binary, LastSlice, SplitLast, MergeLast };
} // namespace

/// The kind of row-local use `user` makes of `v` (for rewrites 1 and 3).
/// `mergeOk`: a reshape merging the last two axes counts (only for a
/// transpose that keeps both). `srcRank`: the rank of the value before the
/// move, which an element-wise op's other operand must not exceed (it would
/// broadcast the redone op to more axes).
static RowUse rowUse(Operation *user, Value v, bool mergeOk, int64_t srcRank) {
  int64_t r = typeOf(v).getRank();
  if (auto mm = dyn_cast<MatmulOp>(user))
    return mm.getLhs() == v && mm.getRhs() != v && !mm.getTransposeLhs() &&
                   typeOf(mm.getRhs()).getRank() == 2
               ? RowUse::Gemm
               : RowUse::None;
  if (isElementwiseBinary(user)) {
    Value a = user->getOperand(0), b = user->getOperand(1);
    if (a == b || user->getResult(0).getType() != v.getType())
      return RowUse::None;
    return onlyLastAxis(a == v ? b : a, std::min(r, srcRank)) ? RowUse::Binary
                                                              : RowUse::None;
  }
  if (auto s = dyn_cast<SliceOp>(user)) {
    ArrayRef<int64_t> shape = typeOf(v).getShape();
    for (int64_t d = 0; d + 1 < r; ++d)
      if (s.getStarts()[d] != 0 || s.getSteps()[d] != 1 ||
          s.getSizes()[d] != shape[d])
        return RowUse::None;
    return RowUse::LastSlice;
  }
  if (auto rs = dyn_cast<ReshapeOp>(user)) {
    ArrayRef<int64_t> in = typeOf(v).getShape(), out = rs.getType().getShape();
    if ((int64_t)out.size() == r + 1 && out.take_front(r - 1) == in.drop_back())
      return RowUse::SplitLast;
    if (mergeOk && r >= 2 && (int64_t)out.size() == r - 1 &&
        out.drop_back() == in.drop_back(2))
      return RowUse::MergeLast;
  }
  return RowUse::None;
}

/// The permutation a transpose by `perm` of a rank-r value has once it is
/// moved below `use`: one more trailing axis, kept, after a split of the
/// last axis; one fewer after a merge of the last two.
static SmallVector<int64_t> permAfter(ArrayRef<int64_t> perm, RowUse use,
                                      int64_t r) {
  SmallVector<int64_t> next(perm);
  if (use == RowUse::SplitLast)
    next.push_back(r);
  else if (use == RowUse::MergeLast)
    next.pop_back();
  return next;
}

/// Whether `rs` has the shapes of MHA's head split: [T, B, E] ->
/// [T, B*H, D] with E = H*D.
static bool headSplitShapes(ReshapeOp rs) {
  ArrayRef<int64_t> in = typeOf(rs.getInput()).getShape(),
                    out = rs.getType().getShape();
  return in.size() == 3 && out.size() == 3 && in[0] == out[0] && in[1] > 0 &&
         out[1] % in[1] == 0 && out[1] / in[1] * out[2] == in[2];
}

/// Whether `rs` is MHA's head split as rewrite 2 takes it once its input
/// is transpose(z, [1, 0, 2]): used only as q, k or v of sequence-major
/// attentions whose three operands are head splits and whose mask (if
/// any) has no batch dimensions. (Otherwise the transposes sunk to it
/// would stay, on each of q, k and v.)
static bool isHeadSplit(ReshapeOp rs) {
  if (!headSplitShapes(rs) || rs->use_empty())
    return false;
  return llvm::all_of(rs->getUsers(), [&](Operation *u) {
    auto a = dyn_cast<AttentionOp>(u);
    if (!a || !a.getSeqMajor() || rs.getResult() == a.getMask() ||
        (a.getMask() && typeOf(a.getMask()).getRank() != 2))
      return false;
    return llvm::all_of(ValueRange{a.getQuery(), a.getKey(), a.getValue()},
                        [](Value x) {
                          auto r = x.getDefiningOp<ReshapeOp>();
                          return r && headSplitShapes(r);
                        });
  });
}

/// Ops sinksAway visits at most for one candidate.
static constexpr int kWalkBudget = 64;

/// Whether moving `v`'s layout change below its users ends, on every path,
/// in its cancellation. For a transpose by `perm` (non-empty): a transpose
/// by the inverse, or an MHA head split that rewrite 2 absorbs. For a
/// reshape of the leading axes (empty `perm`): a reshape back to
/// `leading`. `budget` bounds the walk (a projection chain is a few ops; a
/// graph whose paths fan out and join again is not worth exploring).
static bool sinksAway(Value v, ArrayRef<int64_t> perm,
                      ArrayRef<int64_t> leading, int &budget) {
  if (--budget < 0 || v.use_empty())
    return false;
  int64_t r = typeOf(v).getRank();
  bool isTranspose = !perm.empty();
  for (Operation *user : v.getUsers()) {
    auto rs = dyn_cast<ReshapeOp>(user);
    if (isTranspose) {
      if (auto t = dyn_cast<TransposeOp>(user)) {
        if (TransposeOp::isIdentityPerm(
                TransposeOp::composePerms(perm, t.getPerm())))
          continue;
        return false;
      }
      if (rs && perm == ArrayRef<int64_t>{1, 0, 2} && isHeadSplit(rs))
        continue;
    } else if (rs && rs.getType().getRank() >= 1 &&
               rs.getType().getShape().drop_back() == leading) {
      continue; // back to the leading axes it came from
    }
    bool mergeOk = isTranspose && r >= 2 && perm[r - 2] == r - 2;
    RowUse use =
        rowUse(user, v, mergeOk, isTranspose ? r : (int64_t)leading.size() + 1);
    if (use == RowUse::None || (!isTranspose && (use == RowUse::SplitLast ||
                                                 use == RowUse::MergeLast)))
      return false;
    if (!sinksAway(user->getResult(0), permAfter(perm, use, r), leading,
                   budget))
      return false;
  }
  return true;
}

/// Redoes the row-local `user` of `moved` on `src` (the value before the
/// move), giving a result of `shape` in src's layout; returns it.
static Value redoOnSource(PatternRewriter &rewriter, Operation *user,
                          Value moved, Value src, ArrayRef<int64_t> shape,
                          RowUse use) {
  rewriter.setInsertionPoint(user);
  Operation *n = rewriter.clone(*user);
  for (OpOperand &o : n->getOpOperands())
    if (o.get() == moved)
      o.set(src);
  n->getResult(0).setType(withShape(user->getResult(0), shape));
  if (use == RowUse::LastSlice) {
    // Leading axes are whole (starts 0, steps 1); src may have another
    // number of them (a regrouping reshape moved).
    auto s = cast<SliceOp>(n);
    ArrayRef<int64_t> in = typeOf(src).getShape();
    SmallVector<int64_t> starts(in.size(), 0), steps(in.size(), 1);
    SmallVector<int64_t> sizes(in);
    starts.back() = s.getStarts().back();
    sizes.back() = s.getSizes().back();
    steps.back() = s.getSteps().back();
    s.setStarts(starts);
    s.setSizes(sizes);
    s.setSteps(steps);
  }
  return n->getResult(0);
}

namespace {
/// Rewrite 1: op(transpose(x, p)) -> transpose(op(x), p') for every user.
struct SinkTranspose final : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp t,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> p = t.getPerm();
    int64_t r = p.size();
    if (r < 2 || p.back() != r - 1 || TransposeOp::isIdentityPerm(p))
      return rewriter.notifyMatchFailure(t, "moves the last axis");
    int budget = kWalkBudget;
    if (!sinksAway(t.getResult(), p, {}, budget))
      return rewriter.notifyMatchFailure(t, "would not cancel");
    bool mergeOk = p[r - 2] == r - 2;
    SmallVector<Operation *> users(t->getUsers());
    bool changed = false;
    for (Operation *user : users) {
      RowUse use = rowUse(user, t.getResult(), mergeOk, r);
      if (use == RowUse::None)
        continue; // a cancelling transpose or a head split: stays
      SmallVector<int64_t> next = permAfter(p, use, r);
      Value y = redoOnSource(
          rewriter, user, t.getResult(), t.getInput(),
          unpermute(typeOf(user->getResult(0)).getShape(), next), use);
      rewriter.replaceOp(
          user,
          TransposeOp::create(rewriter, user->getLoc(), y, next).getResult());
      changed = true;
    }
    return success(changed);
  }
};

/// Rewrite 3: op(reshape(x)) -> reshape(op(x)) for a reshape that only
/// regroups the leading axes, for every user.
struct SinkLeadingReshape final : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp rs,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> in = typeOf(rs.getInput()).getShape(),
                      out = rs.getType().getShape();
    if (in.size() < 2 || out.size() < 2 || in.back() != out.back() ||
        in.size() == out.size())
      return rewriter.notifyMatchFailure(rs, "not a regrouping of rows");
    int budget = kWalkBudget;
    if (!sinksAway(rs.getResult(), {}, in.drop_back(), budget))
      return rewriter.notifyMatchFailure(rs, "would not cancel");
    SmallVector<Operation *> users(rs->getUsers());
    bool changed = false;
    for (Operation *user : users) {
      RowUse use = rowUse(user, rs.getResult(), false, in.size());
      if (use != RowUse::Gemm && use != RowUse::Binary &&
          use != RowUse::LastSlice)
        continue; // the reshape back: it folds
      ArrayRef<int64_t> u = typeOf(user->getResult(0)).getShape();
      SmallVector<int64_t> shape(in.drop_back());
      shape.push_back(u.back());
      Value y = redoOnSource(rewriter, user, rs.getResult(), rs.getInput(),
                             shape, use);
      rewriter.replaceOp(user,
                         ReshapeOp::create(rewriter, user->getLoc(),
                                           user->getResult(0).getType(), y)
                             .getResult());
      changed = true;
    }
    return success(changed);
  }
};

/// Rewrite 2: a rank-3 sequence-major attention whose q, k and v are MHA
/// head splits of transposed [B, T, E] values reads them as [B, T, H, D].
struct AttentionOnTokens final : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp a,
                                PatternRewriter &rewriter) const override {
    if (!a.getSeqMajor() || typeOf(a.getQuery()).getRank() != 3)
      return rewriter.notifyMatchFailure(a, "not [T, N, D] sequence-major");
    int64_t b = -1;
    SmallVector<Value> tokens; // z [B, T, E] of q, k, v
    for (Value x : {a.getQuery(), a.getKey(), a.getValue()}) {
      auto rs = x.getDefiningOp<ReshapeOp>();
      auto t = rs ? rs.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
      if (!t || t.getPerm() != ArrayRef<int64_t>{1, 0, 2} || !isHeadSplit(rs))
        return rewriter.notifyMatchFailure(a, "an operand is no head split");
      int64_t xb = typeOf(t.getInput()).getDimSize(0);
      if (b >= 0 && xb != b)
        return rewriter.notifyMatchFailure(a, "batch sizes differ");
      b = xb;
      tokens.push_back(t.getInput());
    }
    // (isHeadSplit also checked the mask: entries stay (b, h) in order,
    // so a mask without batch dims stays as it is.)
    Location loc = a.getLoc();
    SmallVector<Value> split;
    SmallVector<Value> qkv{a.getQuery(), a.getKey(), a.getValue()};
    for (auto [x, z] : llvm::zip(qkv, tokens)) {
      ArrayRef<int64_t> zs = typeOf(z).getShape(), xs = typeOf(x).getShape();
      SmallVector<int64_t> shape{zs[0], zs[1], xs[1] / zs[0], xs[2]};
      split.push_back(ReshapeOp::create(rewriter, loc, withShape(z, shape), z));
    }
    auto n = AttentionOp::create(rewriter, loc, split[0], split[1], split[2],
                                 a.getMask(), a.getScaleAttr(),
                                 a.getCausalAttr(), rewriter.getBoolAttr(true));
    // The old result [T, B*H, Dv] and lse [B*H, T] from the new ones.
    ArrayRef<int64_t> o = typeOf(n.getResult()).getShape(); // [B, T, H, Dv]
    Value rows = ReshapeOp::create(
        rewriter, loc, withShape(n.getResult(), {o[0], o[1], o[2] * o[3]}),
        n.getResult());
    Value t =
        TransposeOp::create(rewriter, loc, rows, ArrayRef<int64_t>{1, 0, 2});
    Value out = ReshapeOp::create(rewriter, loc, a.getResult().getType(), t);
    Value lse =
        ReshapeOp::create(rewriter, loc, a.getLse().getType(), n.getLse());
    rewriter.replaceOp(a, {out, lse});
    return success();
  }
};

struct SinkTransposesPass final
    : tcc::impl::SinkTransposesPassBase<SinkTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<SinkTranspose, SinkLeadingReshape, AttentionOnTokens>(ctx);
    TransposeOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
