//===- ShadowWeights.cpp - AdamW writes the GEMMs' 16-bit weights ---------===//
//
// After tcc-mixed-precision (bf16), every weight a GEMM reads is cast from
// its f32 master copy at the start of each step: one kernel per weight that
// reads 4 and writes 2 bytes per element, and a 16-bit copy that lives in
// the arena until the weight's last backward GEMM. The AdamW update already
// holds each new f32 value in a register, so writing its 16-bit rounding
// there costs 2 bytes per element and no kernel: the step's casts then read
// a persistent state (the "shadow") instead. The values are exactly those of
// the casts (both round the same f32 to nearest-even), so training does not
// change at all; the runtime starts the shadow as the cast of the weight's
// initial value (`tcc.shadow_of`), and checkpoints carry it as any state.
//
// Rewritten: @train_step returns the update's new parameter as the
// parameter's new value, directly or through fp16 loss scaling's
// where(finite, new, old) (the copy then gets the same where, so a skipped
// step keeps both; an update that skips itself, `unscale .. if finite`,
// keeps its copy too), and a cast reads the parameter argument itself (not a
// view of it). With gradient accumulation the GEMMs are in
// @accumulate_step (run for the micro-batches, @train_step then only
// updates): its casts read the same shadow, which no micro-batch changes.
// @forward keeps its casts, so evaluation depends on the master weights
// alone.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-shadow-weights"

namespace mlir::tcc {
#define GEN_PASS_DEF_SHADOWWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

StringRef argString(func::FuncOp fn, unsigned i, StringRef attr) {
  if (auto s = fn.getArgAttrOfType<StringAttr>(i, attr))
    return s.getValue();
  return {};
}

/// The parameter argument of `fn` named `name`, or null.
BlockArgument paramNamed(func::FuncOp fn, StringRef name) {
  for (BlockArgument a : fn.getArguments())
    if (argString(fn, a.getArgNumber(), "tcc.kind") == "param" &&
        argString(fn, a.getArgNumber(), "tcc.name") == name)
      return a;
  return {};
}

/// The 16-bit casts of `v`, and their one result type (null when there is
/// none, or when they disagree).
Type lowCastType(Value v, SmallVectorImpl<CastOp> &casts) {
  Type low;
  for (Operation *user : v.getUsers()) {
    auto c = dyn_cast<CastOp>(user);
    if (!c)
      continue;
    auto t = cast<RankedTensorType>(c.getType());
    if (!isa<BFloat16Type, Float16Type>(t.getElementType()))
      continue;
    if (low && low != t)
      return {};
    low = t;
    casts.push_back(c);
  }
  return low;
}

struct Shadow {
  AdamWUpdateOp update;
  std::string param, name;
  Type low;
  Value keep; // fp16: the step's `finite`, which keeps the old copy if false
  SmallVector<CastOp> stepCasts, accumCasts; // what reads the copy instead
};

struct ShadowWeightsPass final
    : public tcc::impl::ShadowWeightsPassBase<ShadowWeightsPass> {
  void runOnOperation() override;
};
} // namespace

/// Appends state argument `s` to `fn` and points `fn`'s casts of the
/// parameter at it. Returns the argument.
static BlockArgument addShadowArg(func::FuncOp fn, const Shadow &s,
                                  ArrayRef<CastOp> casts) {
  MLIRContext *ctx = fn.getContext();
  Builder b(ctx);
  NamedAttrList attrs;
  attrs.set("tcc.kind", b.getStringAttr("state"));
  attrs.set("tcc.name", b.getStringAttr(s.name));
  attrs.set("tcc.shadow_of", b.getStringAttr(s.param));
  unsigned i = fn.getNumArguments();
  if (failed(
          fn.insertArgument(i, s.low, attrs.getDictionary(ctx), fn.getLoc())))
    return {};
  BlockArgument arg = fn.getArgument(i);
  for (CastOp c : casts) {
    c.getResult().replaceAllUsesWith(arg);
    c.erase();
  }
  return arg;
}

void ShadowWeightsPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || step.isExternal() || !step.getBody().hasOneBlock())
    return; // nothing to rewrite; tcc-apply-optimizer reports a missing step
  auto accum = module.lookupSymbol<func::FuncOp>("accumulate_step");
  if (accum && (accum.isExternal() || !accum.getBody().hasOneBlock()))
    accum = {};
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());

  llvm::StringMap<bool> taken; // every argument name of the step
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    taken[argString(step, i, "tcc.name")] = true;

  SmallVector<Shadow> shadows;
  step.walk([&](AdamWUpdateOp op) {
    auto p = dyn_cast<BlockArgument>(op.getParam());
    if (op.getNewParamLow() || !p || p.getOwner() != &step.getBody().front() ||
        argString(step, p.getArgNumber(), "tcc.kind") != "param")
      return;
    StringRef name = argString(step, p.getArgNumber(), "tcc.name");
    // The update must be what the step returns as the parameter's value,
    // directly or through fp16 loss scaling's where(finite, new, old).
    auto updatesParam = [&](OpOperand &use) {
      auto attrs = step.getResultAttrDict(use.getOperandNumber());
      auto kind = attrs ? attrs.getAs<StringAttr>("tcc.kind") : nullptr;
      auto rname = attrs ? attrs.getAs<StringAttr>("tcc.name") : nullptr;
      return use.getOwner() == ret && kind && kind.getValue() == "update" &&
             rname && rname.getValue() == name;
    };
    bool returned = false;
    Value keep;
    for (OpOperand &use : op.getNewParam().getUses()) {
      if (updatesParam(use))
        returned = true;
      auto where = dyn_cast<WhereOp>(use.getOwner());
      if (!where || use.getOperandNumber() != 1 || where->getOperand(2) != p)
        continue;
      for (OpOperand &wuse : where->getUses())
        if (updatesParam(wuse)) {
          returned = true;
          keep = where->getOperand(0);
        }
    }
    if (!returned)
      return;
    // The casts of both functions (with gradient accumulation the forward
    // and backward run in @accumulate_step, @train_step only updates).
    SmallVector<CastOp> casts, aCasts;
    Type low = lowCastType(p, casts), alow;
    if (accum)
      if (BlockArgument ap = paramNamed(accum, name))
        alow = lowCastType(ap, aCasts);
    bool ambiguous = (!low && !casts.empty()) || (!alow && !aCasts.empty());
    if (ambiguous || (low && alow && low != alow) || (!low && !alow))
      return;
    if (!low)
      low = alow;
    auto elem = cast<RankedTensorType>(low).getElementType();
    std::string shadowName =
        (name + (isa<BFloat16Type>(elem) ? ".bf16" : ".f16")).str();
    if (taken.count(shadowName))
      return;
    taken[shadowName] = true;
    shadows.push_back({op, name.str(), shadowName, low, keep, std::move(casts),
                       std::move(aCasts)});
  });

  SmallVector<Value> newValues;
  for (const Shadow &s : shadows) {
    // @train_step always takes the state: it writes it.
    BlockArgument old = addShadowArg(step, s, s.stepCasts);
    if (!old ||
        (!s.accumCasts.empty() && !addShadowArg(accum, s, s.accumCasts))) {
      step.emitError("tcc-shadow-weights: cannot add the state argument '")
          << s.name << "'";
      return signalPassFailure();
    }
    AdamWUpdateOp op = s.update;
    OpBuilder b(op);
    auto lowered = AdamWUpdateOp::create(
        b, op.getLoc(), op.getParam(), op.getGrad(), op.getExpAvg(),
        op.getExpAvgSq(), op.getStep(), op.getLr(),
        op.getBeta1().convertToDouble(), op.getBeta2().convertToDouble(),
        op.getEps().convertToDouble(), op.getWeightDecay().convertToDouble(),
        op.getL2Decay(), s.low, op.getInvScale(), op.getFinite());
    op.getNewParam().replaceAllUsesWith(lowered.getNewParam());
    op.getNewExpAvg().replaceAllUsesWith(lowered.getNewExpAvg());
    op.getNewExpAvgSq().replaceAllUsesWith(lowered.getNewExpAvgSq());
    op.erase();
    Value v = lowered.getNewParamLow();
    if (s.keep) { // a skipped step keeps the copy with the weight
      b.setInsertionPoint(ret);
      v = WhereOp::create(b, v.getLoc(), v.getType(), s.keep, v, old);
    }
    newValues.push_back(v);
  }

  // The new values of the shadows, after the step's other results.
  MLIRContext *ctx = &getContext();
  Builder b(ctx);
  for (auto [s, v] : llvm::zip_equal(shadows, newValues)) {
    NamedAttrList attrs;
    attrs.set("tcc.kind", b.getStringAttr("update"));
    attrs.set("tcc.name", b.getStringAttr(s.name));
    unsigned i = step.getNumResults();
    if (failed(step.insertResult(i, v.getType(), attrs.getDictionary(ctx)))) {
      step.emitError("tcc-shadow-weights: cannot add the result '")
          << s.name << "'";
      return signalPassFailure();
    }
    ret.getOperandsMutable().append(v);
  }
  LLVM_DEBUG(llvm::dbgs() << "shadowed " << shadows.size() << " weights\n");
}
