//===- Fuse.cpp - Group element-wise and row ops into tcc.fused regions ---===//
//
// Design. Runs on each function after autodiff, the optimizer and CSE.
//  1. Layer-norm backward over the last axis is expanded into element-wise
//     ops and last-axis reductions (its dx) plus two column reductions
//     (dscale, dbias), so that dx fuses with its neighbours.
//  2. Greedy clustering in block order: each fusible op (FusionModel.h) joins
//     the regions of its producers - all of them if that is legal, else the
//     first one that is - or starts a region. A merge is legal when every
//     member runs over the merged domain (rows x cols, the largest member's)
//     and reads values produced inside in the layout they were produced in,
//     and when it creates no cycle: no path leaves the region through an
//     outside op (or another region, which will become one op) and comes
//     back in.
//  3. Each region becomes one tcc.fused op placed at its last member; ops
//     between its members that depend on it move after it. Splat constants
//     are cloned into the body so the code generator inlines them.
// bf16/f16 values join like f32 ones (element-wise ops and float casts; row
// ops read and write f32), so a mixed-precision chain "cast up, op, cast
// down" is one region.
// Data movement at a region's edges joins it: a slice with zero starts and
// a unit last-axis step is a view of a region input (the loss region reads
// the vocabulary-padded logits through it, no sliced copy), and a zero pad
// of the last axis (slice_grad) is a padded output store (the loss region
// writes the padded logits gradient itself). A region of nothing but data
// movement and conversions is not generated: copy kernels do as well.
// Not handled: sibling fusion of independent consumers of one value, column
// reductions (they stay reduce_sum kernels).
//
//===----------------------------------------------------------------------===//
#include "passes/ActivationAnalysis.h"
#include "passes/FusionModel.h"
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "tcc-fuse"

namespace mlir::tcc {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fusion;

/// layer_norm_grad over the last axis -> element-wise ops and last-axis
/// means (dx: they join a region with their neighbours) and one
/// layer_norm_param_grad for dscale and dbias (column sums over all rows;
/// as reduce_sums they would read `dy * xhat` and `dy` that a region wrote
/// out in f32 for them alone). The op reads dy and x as the 16-bit values a
/// bf16 model stores when they reach it through exact widenings, and joins
/// dx's region (Clusters::add), which then reads them once for both. The
/// formulas of run_layer_norm_grad.
static void expandLayerNormGrad(LayerNormGradOp op) {
  if (!expandsLayerNormGrad(op))
    return;
  int64_t rank = cast<RankedTensorType>(op.getInput().getType()).getRank();
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value dy = op.getGrad(), x = op.getInput();
  Value xhat = MulOp::create(b, loc, SubOp::create(b, loc, x, op.getMean()),
                             op.getRstd());
  Value g = MulOp::create(b, loc, dy, op.getScale());
  SmallVector<int64_t> last{rank - 1};
  Value meanG = ReduceMeanOp::create(b, loc, g, last, /*keepdims=*/true);
  Value meanGX = ReduceMeanOp::create(b, loc, MulOp::create(b, loc, g, xhat),
                                      last, /*keepdims=*/true);
  Value inner = SubOp::create(b, loc, SubOp::create(b, loc, g, meanG),
                              MulOp::create(b, loc, xhat, meanGX));
  Value dx = MulOp::create(b, loc, op.getRstd(), inner);
  auto params = LayerNormParamGradOp::create(
      b, loc,
      TypeRange{op.getScaleGrad().getType(), op.getBiasGrad().getType()},
      CastOp::beforeExactWidening(dy), CastOp::beforeExactWidening(x),
      op.getMean(), op.getRstd(), op.getAxis());
  op.getInputGrad().replaceAllUsesWith(dx);
  op.getScaleGrad().replaceAllUsesWith(params.getScaleGrad());
  op.getBiasGrad().replaceAllUsesWith(params.getBiasGrad());
  op.erase();
}

namespace {
/// Regions being formed over one block.
struct Clusters {
  std::vector<SmallVector<Operation *>> regions; // members in block order
  DenseMap<Operation *, int> regionOf;
  DenseMap<Operation *, unsigned> pos;
  /// The loss op of a training step, if the block has one. A region does
  /// not span it unless it contains it (the loss with its own gradient):
  /// a region runs where its last member is, so its forward part would move
  /// after the loss (keeping activations alive longer), or a clone that
  /// tcc-rematerialize placed after the loss would be computed with the
  /// forward again (keeping what it was meant to free).
  Operation *lossOp = nullptr;
  /// Ops that start a region of their own instead of joining their
  /// producers' (widenAtEachReader's clones).
  llvm::DenseSet<Operation *> alone;
  /// Whether layer norm parameter gradients may join a region.
  bool columnSums = true;

  /// Whether contracting `members` (and every existing region) into single
  /// ops would put a cycle through `members`: some path leaves it and comes
  /// back. Only ops before `lastPos` can be on such a path.
  bool createsCycle(ArrayRef<Operation *> members, unsigned lastPos) const {
    llvm::SmallPtrSet<Operation *, 16> in(members.begin(), members.end());
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<Operation *> work;
    auto reach = [&](Operation *op) {
      auto it = pos.find(op);
      if (it == pos.end() || it->second > lastPos || in.contains(op))
        return;
      if (!seen.insert(op).second)
        return;
      work.push_back(op);
      // A member of another region: the whole region is one op.
      auto r = regionOf.find(op);
      if (r != regionOf.end())
        for (Operation *sib : regions[r->second])
          if (!in.contains(sib) && pos.lookup(sib) <= lastPos &&
              seen.insert(sib).second)
            work.push_back(sib);
    };
    for (Operation *m : members)
      for (Operation *user : m->getUsers())
        reach(user);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      for (Operation *user : op->getUsers()) {
        if (in.contains(user))
          return true;
        reach(user);
      }
    }
    return false;
  }

  /// Tries to put `op` in one region with `joined` (region indices).
  bool tryMerge(Operation *op, ArrayRef<int> joined) {
    SmallVector<Operation *> members;
    for (int r : joined)
      members.append(regions[r].begin(), regions[r].end());
    members.push_back(op);
    llvm::sort(members, [&](Operation *a, Operation *b) {
      return pos.lookup(a) < pos.lookup(b);
    });
    if (lossOp && !llvm::is_contained(members, lossOp) &&
        (pos.lookup(members.front()) < pos.lookup(lossOp)) !=
            (pos.lookup(members.back()) < pos.lookup(lossOp)))
      return false;
    Domain d = regionDomain(members);
    if (!regionIsLegal(members, d, nullptr) ||
        createsCycle(members, pos.lookup(op)))
      return false;
    int keep = joined.front();
    for (int r : joined)
      if (r != keep)
        regions[r].clear();
    regions[keep] = members;
    for (Operation *m : members)
      regionOf[m] = keep;
    return true;
  }

  void add(Operation *op) {
    // Column sums join a region that computes what they sum (a bias
    // gradient: its producer's) or reads it (a layer norm's parameter
    // gradients: the region of its input gradient, which reads the same
    // dy and x): one pass over the rows for both. Alone they stay the
    // library's kernels.
    if (isColumnSum(op)) {
      if (!columnSums)
        return;
      SetVector<int> near;
      for (Value v : op->getOperands().take_front(2)) {
        if (Operation *def = v.getDefiningOp())
          if (auto it = regionOf.find(def); it != regionOf.end())
            near.insert(it->second);
        if (isa<LayerNormParamGradOp>(op))
          for (Operation *user : v.getUsers())
            if (auto it = regionOf.find(user); it != regionOf.end())
              near.insert(it->second);
      }
      for (int r : near)
        if (tryMerge(op, {r}))
          return;
      return;
    }
    SetVector<int> producers;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp()) {
        auto it = regionOf.find(def);
        if (it != regionOf.end() && !alone.contains(op))
          producers.insert(it->second);
      }
    if (producers.size() > 1 && tryMerge(op, producers.getArrayRef()))
      return;
    for (int r : producers)
      if (tryMerge(op, {r}))
        return;
    SmallVector<Operation *> single{op};
    if (!regionIsLegal(single, ownDomain(op), nullptr))
      return;
    regions.push_back({op});
    regionOf[op] = (int)regions.size() - 1;
  }
};
} // namespace

/// Whether a region is worth a generated kernel: anything but pure data
/// movement and conversion (e.g. a weight cast to bf16 for its GEMM, a lone
/// slice or pad), which the copy, slice and cast kernels do as well.
static bool worthGenerating(ArrayRef<Operation *> ops) {
  return llvm::any_of(ops, [](Operation *op) {
    return !isDataMovement(op) && !isa<CastOp>(op);
  });
}

static bool isSplatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return false;
  Type e = dense.getElementType();
  return e.isF32() || e.isBF16() || e.isF16();
}

/// Replaces the members (in block order) by one tcc.fused op.
static void materialize(ArrayRef<Operation *> members) {
  llvm::SmallPtrSet<Operation *, 16> in(members.begin(), members.end());
  Operation *last = members.back();
  SetVector<Value> inputs, constants;
  SmallVector<Value> outputs;
  for (Operation *op : members) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && in.contains(def))
        continue;
      (isSplatConstant(v) ? constants : inputs).insert(v);
    }
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !in.contains(u); }))
        outputs.push_back(r);
  }

  // Ops between the members that read the region's results move after it.
  SetVector<Operation *> moved;
  SmallVector<Operation *> work(members.begin(), members.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Operation *user : op->getUsers())
      if (!in.contains(user) && user->getBlock() == last->getBlock() &&
          user->isBeforeInBlock(last) && moved.insert(user))
        work.push_back(user);
  }

  OpBuilder b(last);
  SmallVector<Type> types;
  for (Value v : outputs)
    types.push_back(v.getType());
  auto fused = FusedOp::create(b, last->getLoc(), types, inputs.getArrayRef());
  Block &body = fused.getBody().front();
  IRMapping map;
  for (auto [v, arg] : llvm::zip(inputs, body.getArguments()))
    map.map(v, arg);
  OpBuilder inner = OpBuilder::atBlockEnd(&body);
  for (Value c : constants)
    map.map(c, inner.clone(*c.getDefiningOp())->getResult(0));
  for (Operation *op : members)
    inner.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  YieldOp::create(inner, last->getLoc(), yielded);
  for (auto [v, r] : llvm::zip(outputs, fused.getResults()))
    v.replaceAllUsesWith(r);

  SmallVector<Operation *> order(moved.begin(), moved.end());
  llvm::sort(order,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  Operation *after = fused;
  for (Operation *op : order) {
    op->moveAfter(after);
    after = op;
  }
  for (Operation *op : llvm::reverse(members))
    op->erase();
  for (Value c : constants)
    if (c.use_empty())
      c.getDefiningOp()->erase();
}

/// A reshape whose result and operand both leave the region would make the
/// region write the same values twice, two buffers live at once. Outside the
/// region it is a copy that the memory plan can do in place when its operand
/// dies there (e.g. a gradient reshaped for its weight's GEMM after its last
/// other use), so it leaves the region.
static void dropEscapingReshapes(SmallVector<Operation *> &members) {
  llvm::SmallPtrSet<Operation *, 16> in(members.begin(), members.end());
  auto escapes = [&](Value v) {
    return llvm::any_of(v.getUsers(),
                        [&](Operation *u) { return !in.contains(u); });
  };
  auto usedInside = [&](Value v) {
    return llvm::any_of(v.getUsers(),
                        [&](Operation *u) { return in.contains(u); });
  };
  llvm::erase_if(members, [&](Operation *op) {
    auto r = dyn_cast<ReshapeOp>(op);
    if (!r || usedInside(r.getResult()) || !escapes(r.getResult()))
      return false;
    Operation *def = r.getInput().getDefiningOp();
    if (!def || !in.contains(def) || !escapes(r.getInput()))
      return false;
    in.erase(op);
    return true;
  });
}

/// Whether `op` is the gradient of the loss `lossOp` itself, which may share
/// its region (one pass over the logits for the loss and their gradient).
static bool isLossGradient(Operation *op, Operation *lossOp) {
  auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(op);
  auto loss = dyn_cast<SoftmaxCrossEntropyOp>(lossOp);
  return grad && loss && grad.getLogits() == loss.getLogits();
}

/// An exact widening of a 16-bit value that the forward computes in a
/// fusible op and the backward reads again is recomputed right before each
/// fusible reader after the loss, so it fuses into that reader's region:
/// what the backward keeps across the loss is the 16-bit value, not its f32
/// image. A layer norm's input in a bf16 transformer is the residual
/// stream: its f32 copy was saved for the backward beside the bf16 one
/// (GPT-2 small: 25 MB per norm instead of 12.6). The clones start regions
/// of their own (`alone`), so they join their reader's region rather than
/// their producer's; other readers keep the original. The loss's own
/// gradient reads the original: it joins the loss's region, which then
/// reads the logits once for both.
static void widenAtEachReader(func::FuncOp fn, Operation *lossOp,
                              llvm::DenseSet<Operation *> &alone) {
  if (!lossOp)
    return;
  SmallVector<CastOp> casts;
  fn.walk([&](CastOp c) {
    Operation *def = c.getInput().getDefiningOp();
    if (c.isExactWidening() && def && classify(def) != OpKind::None &&
        c->getBlock() == lossOp->getBlock() && c->isBeforeInBlock(lossOp))
      casts.push_back(c);
  });
  for (CastOp c : casts) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &u : c->getUses())
      uses.push_back(&u);
    for (OpOperand *u : uses) {
      Operation *reader = u->getOwner();
      if (reader->getBlock() != c->getBlock() ||
          !lossOp->isBeforeInBlock(reader) ||
          classify(reader) == OpKind::None || isLossGradient(reader, lossOp))
        continue;
      OpBuilder b(reader);
      Operation *clone = b.clone(*c);
      alone.insert(clone);
      u->set(clone->getResult(0));
    }
    if (c->use_empty())
      c->erase();
  }
}

namespace {
struct FusePass final : tcc::impl::FusePassBase<FusePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    fn.walk([](LayerNormGradOp op) { expandLayerNormGrad(op); });
    llvm::DenseSet<Operation *> alone;
    if (auto info = analyzeActivations(fn))
      widenAtEachReader(fn, info->lossOp, alone);
    for (Block &block : fn.getBody()) {
      Clusters c;
      c.alone = alone;
      c.columnSums = columnSums;
      unsigned i = 0;
      for (Operation &op : block)
        c.pos[&op] = i++;
      if (auto info = analyzeActivations(fn))
        if (info->lossOp->getBlock() == &block)
          c.lossOp = info->lossOp;
      for (Operation &op : block)
        if (classify(&op) != OpKind::None)
          c.add(&op);
      for (auto &members : c.regions) {
        dropEscapingReshapes(members);
        if (!members.empty() && worthGenerating(members))
          materialize(members);
      }
    }
  }
};
} // namespace
