//===- PackAttention.cpp - Attention reads q, k, v inside the projection --===//
//
// A transformer's fused QKV projection writes [B..., T, 3E]; the model
// slices it into q, k and v (E = H * D columns each) and splits their heads
// ([B..., T, H, D], which sequence-major tcc.attention reads as it is).
// Each slice is a copy of a third of the projection, and the backward
// concatenates the three gradients again: GPT-2 small at batch 8 copies
// 36 x 12.6 MB forward and 12 x 37.7 MB backward per step, none of which
// the attention needs.
//
// After autodiff (that form has no gradient rule) every sequence-major
// tcc.attention whose q, k and v are head splits (reshapes) of the slices
// [0, E), [E, 2E) and [2E, 3E) of the last axis of one [B..., T, 3E] value X
// becomes `fused_qkv`: it reads reshape(X) : [B..., T, 3H, D] thrice and the
// kernels address each third in place (runtime/core/AttentionPlan.h). A
// tcc.attention_grad of the same q, k and v whose three gradients are only
// merged again - concat(reshape(dq), reshape(dk), reshape(dv)) along the
// last axis, the projection's gradient [B..., T, 3E] - becomes fused_qkv
// too: it writes that gradient as its one result, and the concatenation is
// a reshape of it. Another use of dq, dk or dv leaves the gradient as it
// is (it keeps the slices it reads). Once no op reads them, the slices are
// erased.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionPacking.h"
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-pack-attention"

namespace mlir::tcc {
#define GEN_PASS_DEF_PACKATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;
using packing::mergedGradients;
using packing::projectionOf;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Erases `op` when it has no users left, then its operands' producers that
/// are slices, reshapes or casts left without users.
static void eraseIfDead(Operation *op) {
  if (!op || !op->use_empty() || !isa<SliceOp, ReshapeOp, CastOp>(op))
    return;
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  for (Value v : operands)
    eraseIfDead(v.getDefiningOp());
}

namespace {
struct PackAttentionPass final
    : public tcc::impl::PackAttentionPassBase<PackAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp a) {
      if (a.getSeqMajor() && !a.getFusedQkv())
        ops.push_back(a);
    });
    for (AttentionOp a : ops)
      pack(a);
  }

private:
  void pack(AttentionOp a);
};
} // namespace

void PackAttentionPass::pack(AttentionOp a) {
  Value q = a.getQuery(), k = a.getKey(), v = a.getValue();
  Value x = projectionOf(q, k, v);
  if (!x)
    return;
  // The head split of the whole projection, right after it (or at the
  // block's start for an argument), where every reader of q, k, v sees it.
  ArrayRef<int64_t> qs = typeOf(q).getShape();
  SmallVector<int64_t> shape(qs);
  shape[shape.size() - 2] *= 3;
  OpBuilder b(a->getContext());
  if (Operation *def = x.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
  Value qkv = ReshapeOp::create(
      b, a.getLoc(), RankedTensorType::get(shape, typeOf(q).getElementType()),
      x);
  // The backward ops of the same q, k and v (autodiff passed them on).
  SmallVector<AttentionGradOp> grads;
  for (Operation *u : q.getUsers())
    if (auto g = dyn_cast<AttentionGradOp>(u))
      if (g.getQuery() == q && g.getKey() == k && g.getValue() == v &&
          g.getSeqMajor() && !g.getFusedQkv())
        grads.push_back(g);
  b.setInsertionPoint(a);
  auto na = AttentionOp::create(b, a.getLoc(), qkv, qkv, qkv, a.getMask(),
                                a.getScaleAttr(), a.getCausalAttr(),
                                a.getSeqMajorAttr(), b.getBoolAttr(true));
  LLVM_DEBUG(llvm::dbgs() << "fused qkv: " << na << "\n");
  a->replaceAllUsesWith(na->getResults());
  a->erase();
  auto projType = typeOf(x);
  for (AttentionGradOp g : grads) {
    ConcatOp concat = mergedGradients(g, projType);
    if (!concat)
      continue;
    // The projection's bias gradient, summed by the op (column_sums).
    ReduceSumOp sum =
        columnSums ? packing::columnSumOf(concat.getResult()) : ReduceSumOp();
    b.setInsertionPoint(g);
    auto ng = AttentionGradOp::create(
        b, g.getLoc(), qkv, qkv, qkv, g.getOut(), g.getLse(), g.getGrad(),
        g.getMask(), g.getScaleAttr(), g.getCausalAttr(), g.getSeqMajorAttr(),
        b.getBoolAttr(true), b.getBoolAttr(static_cast<bool>(sum)));
    LLVM_DEBUG(llvm::dbgs() << "fused qkv gradient: " << ng << "\n");
    if (sum) {
      sum.getResult().replaceAllUsesWith(ng.getGrads()[1]);
      Operation *from = sum.getInput().getDefiningOp();
      sum->erase();
      eraseIfDead(from);
    }
    b.setInsertionPoint(concat);
    Value dx =
        ReshapeOp::create(b, concat.getLoc(), projType, ng.getGrads()[0]);
    concat.getResult().replaceAllUsesWith(dx);
    SmallVector<Operation *> dead{concat};
    for (Value v : concat.getInputs())
      dead.push_back(v.getDefiningOp());
    dead.push_back(g);
    for (Operation *op : dead)
      op->erase();
  }
  for (Value t : {q, k, v})
    eraseIfDead(t.getDefiningOp());
}
