//===- Autodiff.cpp - Reverse-mode differentiation of @train_step ---------===//
//
// Design
// ------
// Input: `@train_step` (one block) whose result 0 is a scalar float tensor
// marked `{tcc.kind = "loss"}`; arguments marked `{tcc.kind = "param"}` are
// the differentiation variables.
//
// Stages:
//  1. Activity analysis. A value is *varied* when it depends on a param
//     (forward sweep) and *useful* when the loss depends on it (backward
//     sweep from the loss); it is *active* when both. Only ops with an active
//     result are differentiated, and only active operands receive adjoints,
//     so data inputs, labels and constants never get gradients.
//  2. Backward sweep. The adjoint map (Value -> gradient) is seeded with
//     `tcc.constant dense<1.0>` for the loss. Ops are visited in reverse
//     order; an active op hands its result adjoints (null where a result has
//     none) to GradientOpInterface::buildGradients, and each active operand's
//     adjoint is accumulated with `tcc.add` (fan-out). Every gradient op is
//     inserted just before the return, in construction order, so dominance
//     holds by construction.
//  3. Results. For each param in argument order a result is appended:
//     its adjoint, or a zero `tcc.constant` when the loss does not depend on
//     it, with `{tcc.kind = "grad", tcc.name = <param name>}`.
//  4. Cleanup. A rule builds the gradients of all its operands; those of
//     inactive operands (e.g. d/dx of `x @ W` for data x) are left unused and
//     erased here.
//
// Invariants checked: every gradient has exactly its operand's type; an
// active op without a gradient rule is an error naming it.
//
// Not handled: ops with regions or multiple blocks (tcc has none),
// differentiating w.r.t. anything but `param` arguments, higher-order
// derivatives, recomputation (left to the rematerialization pass).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccInterfaces.h"
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-autodiff"

namespace mlir::tcc {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static StringRef argString(func::FuncOp f, unsigned i, StringRef name) {
  if (auto s = f.getArgAttrOfType<StringAttr>(i, name))
    return s.getValue();
  return {};
}

static StringRef resultString(func::FuncOp f, unsigned i, StringRef name) {
  if (auto s = f.getResultAttrOfType<StringAttr>(i, name))
    return s.getValue();
  return {};
}

/// A constant of `type` whose elements are all `value`.
static Value splatConstant(OpBuilder &b, Location loc, RankedTensorType type,
                           double value) {
  auto attr = DenseElementsAttr::get(
      type, b.getFloatAttr(type.getElementType(), value));
  return ConstantOp::create(b, loc, attr);
}

namespace {

/// The values on a path from a param to the loss.
struct Activity {
  DenseSet<Value> active;

  bool isActive(Value v) const { return active.contains(v); }
  bool isActive(Operation *op) const {
    return llvm::any_of(op->getResults(), [&](Value r) { return isActive(r); });
  }
};

} // namespace

static Activity computeActivity(Block &body, ArrayRef<BlockArgument> params,
                                Value loss) {
  DenseSet<Value> varied(params.begin(), params.end());
  // Only float values carry gradients: a mask or index computed from a
  // parameter (equal, cast to int) is piecewise constant in it.
  auto isFloat = [](Value v) {
    return isa<FloatType>(cast<ShapedType>(v.getType()).getElementType());
  };
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value r : op.getResults())
        if (isFloat(r))
          varied.insert(r);

  DenseSet<Value> useful;
  useful.insert(loss);
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(),
                     [&](Value r) { return useful.contains(r); }))
      useful.insert(op.operand_begin(), op.operand_end());

  Activity a;
  for (Value v : varied)
    if (useful.contains(v))
      a.active.insert(v);
  return a;
}

namespace {
struct AutodiffPass final : public tcc::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || step.isExternal()) {
      module.emitError("tcc-autodiff: no func.func @train_step with a body "
                       "(run tcc-build-loss first)");
      return signalPassFailure();
    }
    if (failed(differentiate(step)))
      return signalPassFailure();
  }

  LogicalResult checkSignature(func::FuncOp step);
  LogicalResult differentiate(func::FuncOp step);
};
} // namespace

LogicalResult AutodiffPass::checkSignature(func::FuncOp step) {
  if (!step.getBody().hasOneBlock())
    return step.emitError("tcc-autodiff: @train_step must have one block");
  if (step.getNumResults() == 0 || resultString(step, 0, "tcc.kind") != "loss")
    return step.emitError(
        "tcc-autodiff: result 0 of @train_step must be the loss "
        "({tcc.kind = \"loss\"})");
  auto lossType = dyn_cast<RankedTensorType>(step.getResultTypes()[0]);
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return step.emitError("tcc-autodiff: the loss must be a scalar float "
                          "tensor, got ")
           << step.getResultTypes()[0];
  for (unsigned i = 0, e = step.getNumResults(); i < e; ++i)
    if (resultString(step, i, "tcc.kind") == "grad")
      return step.emitError("tcc-autodiff: @train_step already has gradient "
                            "results");
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    if (argString(step, i, "tcc.kind") != "param")
      continue;
    auto t = dyn_cast<RankedTensorType>(step.getArgument(i).getType());
    if (!t || !isa<FloatType>(t.getElementType()))
      return step.emitError("tcc-autodiff: param #")
             << i
             << " is not a float tensor: " << step.getArgument(i).getType();
    if (argString(step, i, "tcc.name").empty())
      return step.emitError("tcc-autodiff: param #") << i << " has no tcc.name";
  }
  return success();
}

LogicalResult AutodiffPass::differentiate(func::FuncOp step) {
  if (failed(checkSignature(step)))
    return failure();
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(0);

  SmallVector<BlockArgument> params;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    if (argString(step, i, "tcc.kind") == "param")
      params.push_back(step.getArgument(i));
  Activity activity = computeActivity(body, params, loss);

  OpBuilder b(ret);
  DenseMap<Value, Value> adjoint;
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = adjoint.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, g.getLoc(), it->second, g);
  };

  Value seed = splatConstant(b, loss.getLoc(),
                             cast<RankedTensorType>(loss.getType()), 1.0);
  Operation *firstGradOp = seed.getDefiningOp();
  if (activity.isActive(loss))
    adjoint[loss] = seed;

  // Backward sweep over the forward ops (all of them precede `firstGradOp`).
  for (Operation *op = firstGradOp->getPrevNode(); op; op = op->getPrevNode()) {
    if (!activity.isActive(op))
      continue;
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(adjoint.lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError("tcc-autodiff: '")
             << op->getName()
             << "' lies between a param and the loss but has no gradient rule "
                "(GradientOpInterface)";
    SmallVector<Value> grads = rule.buildGradients(b, resultGrads);
    // A rule that cannot differentiate this use reports why and returns
    // no gradients.
    if (grads.empty() && op->getNumOperands() != 0)
      return failure();
    if (grads.size() != op->getNumOperands())
      return op->emitError("tcc-autodiff: the gradient rule of '")
             << op->getName() << "' returned " << grads.size()
             << " gradients for " << op->getNumOperands() << " operands";
    for (auto [idx, operand, g] : llvm::enumerate(op->getOperands(), grads)) {
      if (!activity.isActive(operand))
        continue;
      if (!g) {
        InFlightDiagnostic diag =
            op->emitError("tcc-autodiff: the gradient rule of '")
            << op->getName() << "' gives no gradient for operand #" << idx
            << ", which depends on a param";
        if (isa<AttentionOp>(op) && idx == 3)
          diag.attachNote() << "tcc.attention has no gradient for its mask: "
                               "a mask computed from a parameter must stay "
                               "unfused (tcc-fuse-attention leaves such "
                               "graphs alone), or freeze it (--freeze)";
        return diag;
      }
      if (g.getType() != operand.getType())
        return op->emitError("tcc-autodiff: the gradient rule of '")
               << op->getName() << "' built a gradient of type " << g.getType()
               << " for operand #" << idx << " of type " << operand.getType();
      accumulate(operand, g);
    }
  }

  // One gradient result per param, in argument order.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<DictionaryAttr> resultAttrs;
  step.getAllResultAttrs(resultAttrs);
  for (BlockArgument p : params) {
    Value g = adjoint.lookup(p);
    if (!g)
      g = splatConstant(b, p.getLoc(), cast<RankedTensorType>(p.getType()),
                        0.0);
    results.push_back(g);
    NamedAttrList attrs;
    attrs.set("tcc.kind", b.getStringAttr("grad"));
    attrs.set("tcc.name", step.getArgAttr(p.getArgNumber(), "tcc.name"));
    resultAttrs.push_back(attrs.getDictionary(&getContext()));
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  step.setFunctionType(FunctionType::get(&getContext(), step.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  step.setAllResultAttrs(resultAttrs);

  // Erase gradients built for inactive operands (last first: whole chains).
  Operation *newRet = body.getTerminator();
  for (Operation *op = newRet->getPrevNode(); op;) {
    Operation *prev = op == firstGradOp ? nullptr : op->getPrevNode();
    if (isOpTriviallyDead(op))
      op->erase();
    op = prev;
  }
  LLVM_DEBUG(llvm::dbgs() << "differentiated @train_step w.r.t. "
                          << params.size() << " params\n");
  return success();
}
