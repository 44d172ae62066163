//===- TccPatternsMatmul.cpp - Transposes folded into tcc.matmul ----------===//
//
// torch.onnx.export writes many linear layers (nn.MultiheadAttention's
// projections, nn.TransformerEncoderLayer's feed-forward) as
// MatMul(x, Transpose(W)), and autodiff turns each such transpose into a
// transposed gradient. A transpose is a full read and write of its tensor;
// a GEMM reads either layout at the same speed. Two rewrites move them into
// the transpose flags:
//
// * operand:  tcc.matmul (tcc.transpose %w swapping the last two dims)
//               -> tcc.matmul %w with that operand's flag flipped
// * result:   tcc.transpose (tcc.matmul %a, %b) swapping the last two dims
//               -> tcc.matmul %b, %a with swapped, flipped flags
//             ((A B)^T = B^T A^T; batch dims broadcast symmetrically)
//
// Both compute the same dot products, each over the same K terms. They run
// in the canonicalizer before autodiff, so the backward of a folded linear
// layer is built from flags too.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tcc;

/// Whether `perm` swaps the last two dimensions and keeps the others.
static bool swapsLastTwo(ArrayRef<int64_t> perm) {
  size_t r = perm.size();
  if (r < 2 || perm[r - 1] != (int64_t)r - 2 || perm[r - 2] != (int64_t)r - 1)
    return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != (int64_t)i)
      return false;
  return true;
}

/// The input of `v`'s defining tcc.transpose when it swaps the last two
/// dims, else null.
static Value untransposed(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  return t && swapsLastTwo(t.getPerm()) ? t.getInput() : Value();
}

namespace {
struct FoldOperandTranspose final : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Value lhs = untransposed(op.getLhs());
    Value rhs = untransposed(op.getRhs());
    if (!lhs && !rhs)
      return rewriter.notifyMatchFailure(op, "no operand is a transpose");
    bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
    if (lhs)
      ta = !ta;
    if (rhs)
      tb = !tb;
    rewriter.replaceOpWithNewOp<MatmulOp>(op, op.getType(),
                                          lhs ? lhs : op.getLhs(),
                                          rhs ? rhs : op.getRhs(), ta, tb);
    return success();
  }
};

struct FoldResultTranspose final : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto mm = op.getInput().getDefiningOp<MatmulOp>();
    // With other users the product stays, and the swap would add a GEMM.
    if (!mm || !swapsLastTwo(op.getPerm()) || !mm->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not the transpose of a matmul");
    rewriter.replaceOpWithNewOp<MatmulOp>(op, op.getType(), mm.getRhs(),
                                          mm.getLhs(), !mm.getTransposeRhs(),
                                          !mm.getTransposeLhs());
    return success();
  }
};
/// transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2) (folded away
/// when that is the identity): tcc-fuse-attention leaves a transpose back
/// to the heads' layout after a sequence-major tcc.attention, which meets
/// the graph's own transpose to the tokens' layout here. The inner
/// transpose stays for its other users; no copy is added either way.
struct ComposeTransposes final : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a transpose");
    SmallVector<int64_t> perm =
        TransposeOp::composePerms(inner.getPerm(), op.getPerm());
    if (TransposeOp::isIdentityPerm(perm))
      rewriter.replaceOp(op, inner.getInput());
    else
      rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getInput(), perm);
    return success();
  }
};
} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *ctx) {
  patterns.add<FoldOperandTranspose>(ctx);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *ctx) {
  patterns.add<FoldResultTranspose, ComposeTransposes>(ctx);
  populateTransposeLayoutPatterns(patterns, ctx);
}
