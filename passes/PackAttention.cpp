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

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// Where a head-split operand comes from: third `part` of `projection`.
struct Third {
  Value projection;
  int64_t part = -1;
};
} // namespace

/// `v` ([B..., T, H, D]) as reshape(slice(X)) where the slice keeps every
/// axis of X ([B..., T, 3 * H * D]) whole except the last, of which it takes
/// the columns [part * H * D, (part + 1) * H * D) with unit step.
static std::optional<Third> thirdOf(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto slice = reshape.getInput().getDefiningOp<SliceOp>();
  if (!slice)
    return std::nullopt;
  ArrayRef<int64_t> vs = typeOf(v).getShape();
  ArrayRef<int64_t> xs = typeOf(slice.getInput()).getShape();
  ArrayRef<int64_t> ss = typeOf(slice.getResult()).getShape();
  size_t r = xs.size();
  if (vs.size() != r + 1 || r < 2)
    return std::nullopt;
  int64_t e = vs[r - 1] * vs[r];
  if (xs.back() != 3 * e || ss.back() != e)
    return std::nullopt;
  for (size_t i = 0; i + 1 < r; ++i)
    if (xs[i] != vs[i] || ss[i] != xs[i] || slice.getStarts()[i] != 0 ||
        slice.getSteps()[i] != 1)
      return std::nullopt;
  int64_t start = slice.getStarts()[r - 1];
  if (slice.getSteps()[r - 1] != 1 || start % e != 0)
    return std::nullopt;
  return Third{slice.getInput(), start / e};
}

/// The projection that q, k and v are the three thirds of, in order.
static Value projectionOf(Value q, Value k, Value v) {
  auto tq = thirdOf(q), tk = thirdOf(k), tv = thirdOf(v);
  if (!tq || !tk || !tv || tq->part != 0 || tk->part != 1 || tv->part != 2 ||
      tk->projection != tq->projection || tv->projection != tq->projection)
    return {};
  return tq->projection;
}

/// The concat that merges the three gradients of `g` back into the
/// projection's gradient (of `projType`), each through a reshape with no
/// other user, or null.
static ConcatOp mergedGradients(AttentionGradOp g, RankedTensorType projType) {
  ConcatOp concat;
  SmallVector<Value> grads(g.getGrads());
  for (auto [i, dx] : llvm::enumerate(grads)) {
    auto r = dyn_cast_or_null<ReshapeOp>(dx.hasOneUse() ? *dx.getUsers().begin()
                                                        : nullptr);
    if (!r || !r->hasOneUse())
      return {};
    auto c = dyn_cast<ConcatOp>(*r->getUsers().begin());
    if (!c || (concat && c != concat) || c.getInputs().size() != 3 ||
        c.getInputs()[i] != r.getResult())
      return {};
    concat = c;
  }
  if (!concat || concat.getType() != projType ||
      static_cast<int64_t>(concat.getAxis()) != projType.getRank() - 1)
    return {};
  return concat;
}

/// Erases `op` when it has no users left, then its operands' producers that
/// are slices or reshapes left without users.
static void eraseIfDead(Operation *op) {
  if (!op || !op->use_empty() || !isa<SliceOp, ReshapeOp>(op))
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
    b.setInsertionPoint(g);
    auto ng = AttentionGradOp::create(b, g.getLoc(), qkv, qkv, qkv, g.getOut(),
                                      g.getLse(), g.getGrad(), g.getMask(),
                                      g.getScaleAttr(), g.getCausalAttr(),
                                      g.getSeqMajorAttr(), b.getBoolAttr(true));
    LLVM_DEBUG(llvm::dbgs() << "fused qkv gradient: " << ng << "\n");
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
