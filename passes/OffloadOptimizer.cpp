//===- OffloadOptimizer.cpp - The optimizer update as its own function ----===//
//
// tcc-offload-optimizer (`tcc compile --offload-optimizer`): splits
// @train_step at the operands of its optimizer updates, so that the runtime
// can run the update elsewhere (the host, with the state in host memory)
// after the device's forward and backward.
//
// Stages:
//  1. The host set H: every optimizer update op, then every op reading a
//     result of an op in H (the closure forward: fp16's where(finite, new,
//     old) selects), then, to a fixpoint, side-effect-free ops whose every
//     use is an op of H or an `update` result, with at least one use in H,
//     and that read only constants, results of H and state the update owns
//     (no other function names it, and its new value comes from H or the
//     op): AdamW's step increment. Inputs, parameters and state the device
//     writes never cross this way, so no backward work moves (a bias
//     gradient reduced from the input alone stays) and device state
//     (rng.step, gradient accumulators) stays where it is.
//  2. @optimizer_step is built from H in block order. Its arguments are the
//     @train_step arguments H reads (attributes copied: tcc.init and all)
//     and one `input` per value of the device part that H reads (the cut).
//     Constants are cloned, not sent.
//  3. @train_step returns each cut value as a result of kind `offload`
//     (named `offload.grad.P` when it is the gradient operand of P's update)
//     and loses H, the `update` results H computed and the `state`
//     arguments nothing else reads.
// Invariants: no op of H has side effects (the collectives of sharded state
// would move to the host: tcc.zero is refused first), and every @train_step
// result that H computes is an `update`. The split is exact: the same ops
// on the same values, @train_step's reads of parameters and state see the
// values before the update, as they did in the one function.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "tcc-offload-optimizer"

namespace mlir::tcc {
#define GEN_PASS_DEF_OFFLOADOPTIMIZERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static bool isOptimizerUpdate(Operation *op) {
  return isa<SgdUpdateOp, SgdMomentumUpdateOp, AdamWUpdateOp, LionUpdateOp,
             AdafactorUpdateOp>(op);
}

static StringRef resultString(func::FuncOp fn, unsigned i, StringRef name) {
  auto a = fn.getResultAttrOfType<StringAttr>(i, name);
  return a ? a.getValue() : StringRef();
}

static StringRef argString(func::FuncOp fn, unsigned i, StringRef name) {
  auto a = fn.getArgAttrOfType<StringAttr>(i, name);
  return a ? a.getValue() : StringRef();
}

namespace {
struct OffloadOptimizerPass final
    : public tcc::impl::OffloadOptimizerPassBase<OffloadOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(split()))
      signalPassFailure();
  }

  LogicalResult split();
};
} // namespace

/// Stage 1: the ops that move (see the file header).
static FailureOr<llvm::SetVector<Operation *>> hostOps(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  Operation *ret = body.getTerminator();
  llvm::DenseSet<Operation *> host;
  for (Operation &op : body.without_terminator()) {
    bool forced = isOptimizerUpdate(&op);
    for (Value v : op.getOperands())
      forced |= v.getDefiningOp() && host.contains(v.getDefiningOp());
    if (!forced)
      continue;
    if (!isMemoryEffectFree(&op))
      return op.emitError("tcc-offload-optimizer: '")
             << op.getName() << "' reads the optimizer update but has side "
             << "effects; it cannot move to the host";
    host.insert(&op);
  }
  if (host.empty())
    return fn.emitError("tcc-offload-optimizer: @train_step has no optimizer "
                        "update to offload");
  // State the update may own: a `state` argument no other function names
  // (accumulate_step's accumulators are written there) whose new value, if
  // @train_step returns one, is computed by H or by `op` itself.
  llvm::StringSet<> elsewhere;
  for (auto other : fn->getParentOfType<ModuleOp>().getOps<func::FuncOp>())
    if (other != fn)
      for (unsigned i = 0, e = other.getNumArguments(); i < e; ++i)
        elsewhere.insert(argString(other, i, "tcc.name"));
  auto ownState = [&](BlockArgument arg, Operation *op) {
    StringRef name = argString(fn, arg.getArgNumber(), "tcc.name");
    if (argString(fn, arg.getArgNumber(), "tcc.kind") != "state" ||
        elsewhere.contains(name))
      return false;
    for (auto [i, v] : llvm::enumerate(ret->getOperands()))
      if (resultString(fn, i, "tcc.kind") == "update" &&
          resultString(fn, i, "tcc.name") == name) {
        Operation *d = v.getDefiningOp();
        if (!d || (d != op && !host.contains(d)))
          return false;
      }
    return true;
  };
  auto isUpdateResult = [&](OpOperand &use) {
    return use.getOwner() == ret &&
           resultString(fn, use.getOperandNumber(), "tcc.kind") == "update";
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (host.contains(&op) || isa<ConstantOp>(op) ||
          !isMemoryEffectFree(&op) || op.getNumResults() == 0)
        continue;
      bool operandsOk = llvm::all_of(op.getOperands(), [&](Value v) {
        if (auto arg = dyn_cast<BlockArgument>(v))
          return ownState(arg, &op);
        Operation *d = v.getDefiningOp();
        return host.contains(d) || isa<ConstantOp>(d);
      });
      bool inHost = false, usesOk = true;
      for (Value r : op.getResults())
        for (OpOperand &use : r.getUses()) {
          bool h = host.contains(use.getOwner());
          inHost |= h;
          usesOk &= h || isUpdateResult(use);
        }
      if (operandsOk && usesOk && inHost) {
        host.insert(&op);
        changed = true;
      }
    }
  }
  llvm::SetVector<Operation *> ordered;
  for (Operation &op : body.without_terminator())
    if (host.contains(&op))
      ordered.insert(&op);
  return ordered;
}

/// The name of cut value `v`: the gradient of the parameter whose update
/// reads it as its gradient operand, else a number.
static std::string cutName(func::FuncOp fn, Value v, unsigned n) {
  for (OpOperand &use : v.getUses()) {
    Operation *u = use.getOwner();
    if (!isOptimizerUpdate(u) || use.getOperandNumber() != 1)
      continue;
    auto p = dyn_cast<BlockArgument>(u->getOperand(0));
    if (p && p.getOwner()->getParentOp() == fn.getOperation() &&
        argString(fn, p.getArgNumber(), "tcc.kind") == "param")
      return ("offload.grad." + argString(fn, p.getArgNumber(), "tcc.name"))
          .str();
  }
  return "offload.value." + std::to_string(n);
}

LogicalResult OffloadOptimizerPass::split() {
  ModuleOp module = getOperation();
  if (module->hasAttr("tcc.zero"))
    return module.emitError(
        "tcc-offload-optimizer: --offload-optimizer does not combine with "
        "--zero-shards: the sharded update gathers its shards over the ranks "
        "inside the step (drop one of the two)");
  auto fn = module.lookupSymbol<func::FuncOp>("train_step");
  if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock())
    return module.emitError("tcc-offload-optimizer: no @train_step");
  if (module.lookupSymbol("optimizer_step"))
    return module.emitError(
        "tcc-offload-optimizer: @optimizer_step exists already");
  auto hostOr = hostOps(fn);
  if (failed(hostOr))
    return failure();
  llvm::SetVector<Operation *> &host = *hostOr;
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *ctx = &getContext();
  OpBuilder b(ctx);

  // The @train_step results H computes must be updates.
  SmallVector<unsigned> movedResults;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Operation *d = v.getDefiningOp();
    if (!d || !host.contains(d))
      continue;
    if (resultString(fn, i, "tcc.kind") != "update")
      return d->emitError("tcc-offload-optimizer: result #")
             << i << " ('" << resultString(fn, i, "tcc.name")
             << "') of @train_step depends on the optimizer update; only "
                "`update` results may";
    movedResults.push_back(i);
  }

  // Stage 2: what H reads from outside itself, in first-use order.
  llvm::MapVector<Value, unsigned> outside; // -> @optimizer_step arg number
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> cut; // device values sent to the host
  unsigned numCut = 0;
  for (Operation *op : host)
    for (Value v : op->getOperands()) {
      Operation *d = v.getDefiningOp();
      if ((d && (host.contains(d) || isa<ConstantOp>(d))) || outside.count(v))
        continue;
      outside[v] = argTypes.size();
      argTypes.push_back(v.getType());
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        argAttrs.push_back(fn.getArgAttrDict(arg.getArgNumber()));
        continue;
      }
      NamedAttrList attrs;
      attrs.set("tcc.kind", b.getStringAttr("input"));
      attrs.set("tcc.name", b.getStringAttr(cutName(fn, v, numCut++)));
      argAttrs.push_back(attrs.getDictionary(ctx));
      cut.push_back(v);
    }
  // Two cut values of one name (a gradient read by two updates is one
  // value, so this is a value read as two parameters' gradients).
  llvm::StringSet<> names;
  for (DictionaryAttr a : argAttrs)
    if (a)
      if (auto kind = a.getAs<StringAttr>("tcc.kind");
          kind && kind.getValue() == "input")
        if (!names.insert(a.getAs<StringAttr>("tcc.name").getValue()).second)
          return fn.emitError("tcc-offload-optimizer: two values cross as '")
                 << a.getAs<StringAttr>("tcc.name").getValue() << "'";

  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i : movedResults) {
    resultTypes.push_back(ret.getOperand(i).getType());
    resultAttrs.push_back(fn.getResultAttrDict(i));
  }
  b.setInsertionPointAfter(fn);
  auto opt = func::FuncOp::create(b, fn.getLoc(), "optimizer_step",
                                  b.getFunctionType(argTypes, resultTypes));
  opt.setAllArgAttrs(argAttrs);
  opt.setAllResultAttrs(resultAttrs);
  Block *entry = opt.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [v, i] : outside)
    map.map(v, entry->getArgument(i));
  for (Operation *op : host) {
    for (Value v : op->getOperands())
      if (auto c = v.getDefiningOp<ConstantOp>(); c && !map.contains(v))
        map.map(v, b.clone(*c)->getResult(0));
    b.clone(*op, map);
  }
  SmallVector<Value> optResults;
  for (unsigned i : movedResults)
    optResults.push_back(map.lookup(ret.getOperand(i)));
  func::ReturnOp::create(b, fn.getLoc(), optResults);

  // Stage 3: @train_step sends the cut and forgets H.
  SmallVector<Value> operands;
  SmallVector<DictionaryAttr> keptAttrs;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (!llvm::is_contained(movedResults, i)) {
      operands.push_back(v);
      keptAttrs.push_back(fn.getResultAttrDict(i));
    }
  for (Value v : cut) {
    operands.push_back(v);
    DictionaryAttr a = opt.getArgAttrDict(outside[v]);
    NamedAttrList attrs;
    attrs.set("tcc.kind", b.getStringAttr("offload"));
    attrs.set("tcc.name", a.get("tcc.name"));
    keptAttrs.push_back(attrs.getDictionary(ctx));
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), operands);
  ret.erase();
  for (Operation *op : llvm::reverse(host))
    op->erase();
  // Constants only H read.
  SmallVector<Operation *> deadConstants;
  for (Operation &op : body.without_terminator())
    if (isa<ConstantOp>(op) && op.use_empty())
      deadConstants.push_back(&op);
  for (Operation *op : deadConstants)
    op->erase();
  SmallVector<Type> newResults;
  for (Value v : operands)
    newResults.push_back(v.getType());
  fn.setType(b.getFunctionType(fn.getArgumentTypes(), newResults));
  fn.setAllResultAttrs(keptAttrs);
  llvm::BitVector unused(fn.getNumArguments());
  for (BlockArgument arg : fn.getArguments())
    if (arg.use_empty() &&
        argString(fn, arg.getArgNumber(), "tcc.kind") == "state")
      unused.set(arg.getArgNumber());
  if (failed(fn.eraseArguments(unused)))
    return failure();
  return success();
}
