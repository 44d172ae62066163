//===- AllReduceGradients.cpp - Gradients averaged over the ranks ---------===//
//
// tcc-all-reduce-gradients: DistributedDataParallel inside @train_step.
// After tcc-autodiff (and tcc-accumulate-gradients), before
// tcc-clip-gradients and tcc-apply-optimizer:
//
//   %r0, %r1 = tcc.all_reduce %g0, %g1 {bucket = 0}   right after %g1's def
//   ...                                                rest of the backward
//   return ..., %r0, %r1
//
// Buckets follow the order in which the backward defines the gradients (the
// last layer's first), up to bucket-bytes each, as DDP's do: the first
// buckets are on the wire while later layers' gradients are computed. Where
// they end up in the schedule is tcc-plan-memory's business (it issues each
// all_reduce as early as it can and lets nothing read a result before the
// last one has been issued); the code generator waits for a bucket just
// before its first reader.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"
#include "passes/MemoryModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>

#define DEBUG_TYPE "tcc-all-reduce-gradients"

namespace mlir::tcc {
#define GEN_PASS_DEF_ALLREDUCEGRADIENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

StringRef resultName(func::FuncOp fn, unsigned i) {
  auto a = fn.getResultAttrOfType<StringAttr>(i, "tcc.name");
  return a ? a.getValue() : StringRef("?");
}

/// The value a gradient is reduced as: `x` when the gradient is `x * c` for a
/// scalar constant c and x is an op result read by nothing else (the mean
/// tcc-accumulate-gradients returns), else the gradient itself.
Value reducedOperand(Value g) {
  auto m = g.getDefiningOp<MulOp>();
  if (!m || !m.getRhs().getDefiningOp<ConstantOp>() ||
      cast<RankedTensorType>(m.getRhs().getType()).getRank() != 0 ||
      m.getLhs().getType() != g.getType() ||
      !m.getLhs().getDefiningOp() || !m.getLhs().hasOneUse() ||
      !g.hasOneUse())
    return g;
  return m.getLhs();
}

struct AllReduceGradientsPass final
    : public tcc::impl::AllReduceGradientsPassBase<AllReduceGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketBytes <= 0) {
      module.emitError("tcc-all-reduce-gradients: bucket-bytes must be "
                       "positive, got ")
          << int64_t(bucketBytes);
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("train_step");
    if (!fn)
      return;
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // The values to reduce, each with the return operands it feeds.
    struct Grad {
      Value x;
      Operation *def;
    };
    SmallVector<Grad> grads;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto kind = fn.getResultAttrOfType<StringAttr>(i, "tcc.kind");
      if (!kind || kind.getValue() != "grad")
        continue;
      Value x = reducedOperand(v);
      if (!x.getDefiningOp() || !isa<RankedTensorType>(x.getType()) ||
          !cast<RankedTensorType>(x.getType()).getElementType().isF32()) {
        fn.emitError("tcc-all-reduce-gradients: gradient result #")
            << i << " ('"
            << resultName(fn, i) << "') is not an f32 value computed in the step";
        return signalPassFailure();
      }
      if (llvm::any_of(grads, [&](const Grad &g) { return g.x == x; }))
        continue;
      grads.push_back({x, x.getDefiningOp()});
    }
    if (grads.empty())
      return;
    // Backward order: the order of the gradients' definitions.
    llvm::stable_sort(grads, [](const Grad &a, const Grad &b) {
      return a.def->isBeforeInBlock(b.def);
    });

    OpBuilder b(module.getContext());
    int64_t bucket = 0;
    size_t first = 0;
    int64_t bytes = 0;
    auto close = [&](size_t end) {
      SmallVector<Value> operands;
      for (size_t k = first; k < end; ++k)
        operands.push_back(grads[k].x);
      // After the bucket's last definition (the sort makes it grads[end-1]).
      b.setInsertionPointAfter(grads[end - 1].def);
      auto ar = AllReduceOp::create(b, grads[end - 1].def->getLoc(), operands,
                                    bucket++);
      for (auto [x, r] : llvm::zip(operands, ar.getResults()))
        x.replaceAllUsesExcept(r, ar);
      first = end;
      bytes = 0;
    };
    for (size_t k = 0; k < grads.size(); ++k) {
      bytes += storageBytes(grads[k].x.getType());
      if (bytes >= bucketBytes)
        close(k + 1);
    }
    if (first < grads.size())
      close(grads.size());

    // A multiply kept after its reduction (x * c) may stand before the
    // bucket's all_reduce now: move it right after.
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar)
        continue;
      for (Value r : ar.getResults())
        for (Operation *user : r.getUsers())
          if (user->isBeforeInBlock(ar))
            user->moveAfter(ar);
    }
  }
};

} // namespace
