//===- ApplyOptimizer.cpp - gradients -> optimizer updates ----------------===//
//
// Turns the `grad` results of `@train_step` into optimizer updates:
//
//   sgd (momentum 0)  p' = tcc.sgd_update p, g
//   sgd (momentum>0)  p', buf' = tcc.sgd_momentum_update p, g, buf
//                     state: <p>.momentum_buffer
//   adamw             t1 = tcc.add step, 1.0          (once)
//                     p', m', v' = tcc.adamw_update p, g, m, v, t1
//                     state: <p>.exp_avg, <p>.exp_avg_sq (per param, in param
//                     order), then the shared scalar `adamw.step`
//
// State tensors are appended as arguments `{tcc.kind = "state", tcc.name}`
// (the runtime zero-initializes them). The results become: the non-grad
// results (the loss) in their order, then the new value of each param (grad
// order), then the new value of each state argument (argument order), all
// `{tcc.kind = "update", tcc.name = <what they replace>}`. The config is
// recorded as the module attribute `tcc.optimizer`.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-apply-optimizer"

namespace mlir::tcc {
#define GEN_PASS_DEF_APPLYOPTIMIZERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static StringRef attrString(DictionaryAttr dict, StringRef name) {
  if (!dict)
    return {};
  if (auto s = dict.getAs<StringAttr>(name))
    return s.getValue();
  return {};
}

static DictionaryAttr kindAndName(MLIRContext *ctx, StringRef kind,
                                  StringRef name) {
  Builder b(ctx);
  NamedAttrList attrs;
  attrs.set("tcc.kind", b.getStringAttr(kind));
  attrs.set("tcc.name", b.getStringAttr(name));
  return attrs.getDictionary(ctx);
}

namespace {

/// The resolved optimizer configuration.
struct Config {
  bool adamw = true;
  double lr, momentum, weightDecay, beta1, beta2, eps;
};

/// A state argument to append.
struct StateArg {
  std::string name;
  Type type;
  Location loc;
};

struct ApplyOptimizerPass final
    : public tcc::impl::ApplyOptimizerPassBase<ApplyOptimizerPass> {
  using Base::Base;

  void runOnOperation() override;
  FailureOr<Config> resolveConfig();
  DictionaryAttr configAttr(const Config &c);
};
} // namespace

FailureOr<Config> ApplyOptimizerPass::resolveConfig() {
  ModuleOp module = getOperation();
  Config c;
  if (optimizer != "sgd" && optimizer != "adamw")
    return module.emitError("tcc-apply-optimizer: unknown optimizer '")
           << optimizer << "' (valid: sgd, adamw)";
  c.adamw = optimizer == "adamw";
  c.lr = lr < 0 ? (c.adamw ? 1e-3 : 1e-2) : double(lr);
  c.weightDecay =
      weightDecay < 0 ? (c.adamw ? 0.01 : 0.0) : double(weightDecay);
  c.momentum = momentum;
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.eps = eps;
  if (!(c.lr > 0))
    return module.emitError("tcc-apply-optimizer: the learning rate must be "
                            "positive, got ")
           << c.lr;
  if (c.momentum < 0)
    return module.emitError("tcc-apply-optimizer: momentum must not be "
                            "negative, got ")
           << c.momentum;
  if (c.adamw && c.momentum != 0)
    return module.emitError("tcc-apply-optimizer: momentum is an sgd option; "
                            "adamw uses beta1/beta2");
  if (c.adamw && (c.beta1 < 0 || c.beta1 >= 1 || c.beta2 < 0 || c.beta2 >= 1 ||
                  !(c.eps > 0)))
    return module.emitError("tcc-apply-optimizer: adamw needs beta1, beta2 in "
                            "[0, 1) and eps > 0");
  return c;
}

DictionaryAttr ApplyOptimizerPass::configAttr(const Config &c) {
  Builder b(&getContext());
  NamedAttrList attrs;
  attrs.set("name", b.getStringAttr(c.adamw ? "adamw" : "sgd"));
  attrs.set("lr", b.getF64FloatAttr(c.lr));
  attrs.set("weight_decay", b.getF64FloatAttr(c.weightDecay));
  if (c.adamw) {
    attrs.set("beta1", b.getF64FloatAttr(c.beta1));
    attrs.set("beta2", b.getF64FloatAttr(c.beta2));
    attrs.set("eps", b.getF64FloatAttr(c.eps));
  } else {
    attrs.set("momentum", b.getF64FloatAttr(c.momentum));
  }
  return attrs.getDictionary(&getContext());
}

void ApplyOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  FailureOr<Config> config = resolveConfig();
  if (failed(config))
    return signalPassFailure();
  const Config &c = *config;

  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || step.isExternal() || !step.getBody().hasOneBlock()) {
    module.emitError("tcc-apply-optimizer: no func.func @train_step with a "
                     "body (run tcc-build-loss and tcc-autodiff first)");
    return signalPassFailure();
  }
  if (module->hasAttr("tcc.optimizer")) {
    module.emitError("tcc-apply-optimizer: an optimizer was already applied");
    return signalPassFailure();
  }

  // Params by name; grad results by position.
  llvm::StringMap<BlockArgument> params;
  for (BlockArgument a : step.getArguments())
    if (attrString(step.getArgAttrDict(a.getArgNumber()), "tcc.kind") ==
        "param")
      params[attrString(step.getArgAttrDict(a.getArgNumber()), "tcc.name")] = a;
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  SmallVector<Value> keptResults;
  SmallVector<DictionaryAttr> keptAttrs;
  SmallVector<std::pair<BlockArgument, Value>> paramGrads;
  for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
    DictionaryAttr attrs = step.getResultAttrDict(i);
    if (attrString(attrs, "tcc.kind") != "grad") {
      keptResults.push_back(ret.getOperand(i));
      keptAttrs.push_back(attrs ? attrs : DictionaryAttr::get(ctx));
      continue;
    }
    StringRef name = attrString(attrs, "tcc.name");
    auto it = params.find(name);
    if (it == params.end()) {
      step.emitError("tcc-apply-optimizer: gradient result #")
          << i << " names '" << name << "', which is not a param";
      return signalPassFailure();
    }
    paramGrads.emplace_back(it->second, ret.getOperand(i));
  }
  if (paramGrads.empty()) {
    step.emitError("tcc-apply-optimizer: @train_step has no gradient results "
                   "(run tcc-autodiff first)");
    return signalPassFailure();
  }

  // State arguments, appended in one go.
  auto nameOf = [&](BlockArgument p) {
    return attrString(step.getArgAttrDict(p.getArgNumber()), "tcc.name");
  };
  SmallVector<StateArg> states;
  for (auto [p, g] : paramGrads) {
    std::string name = nameOf(p).str();
    if (c.adamw) {
      states.push_back({name + ".exp_avg", p.getType(), p.getLoc()});
      states.push_back({name + ".exp_avg_sq", p.getType(), p.getLoc()});
    } else if (c.momentum > 0) {
      states.push_back({name + ".momentum_buffer", p.getType(), p.getLoc()});
    }
  }
  if (c.adamw) {
    auto f32 = Float32Type::get(ctx);
    states.push_back(
        {"adamw.step", RankedTensorType::get({}, f32), step.getLoc()});
  }
  unsigned firstState = step.getNumArguments();
  SmallVector<unsigned> indices(states.size(), firstState);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> locs;
  for (const StateArg &s : states) {
    types.push_back(s.type);
    argAttrs.push_back(kindAndName(ctx, "state", s.name));
    locs.push_back(s.loc);
  }
  if (!states.empty() &&
      failed(step.insertArguments(indices, types, argAttrs, locs))) {
    step.emitError("tcc-apply-optimizer: cannot add the state arguments");
    return signalPassFailure();
  }
  auto stateArg = [&](unsigned i) { return step.getArgument(firstState + i); };

  // The updates, before the return.
  OpBuilder b(ret);
  Location loc = ret.getLoc();
  SmallVector<Value> newParams, newStates(states.size());
  SmallVector<DictionaryAttr> paramAttrs;
  Value t1;
  if (c.adamw) {
    Value stepArg = stateArg(states.size() - 1);
    auto type = cast<RankedTensorType>(stepArg.getType());
    Value one = ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(1.0f)));
    t1 = AddOp::create(b, loc, stepArg, one);
    newStates.back() = t1;
  }
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  unsigned s = 0;
  for (auto [p, g] : paramGrads) {
    Value newParam;
    if (c.adamw) {
      auto op =
          AdamWUpdateOp::create(b, loc, p, g, stateArg(s), stateArg(s + 1), t1,
                                c.lr, c.beta1, c.beta2, c.eps, c.weightDecay);
      newParam = op.getNewParam();
      newStates[s++] = op.getNewExpAvg();
      newStates[s++] = op.getNewExpAvgSq();
    } else if (c.momentum > 0) {
      auto op =
          SgdMomentumUpdateOp::create(b, loc, p, g, stateArg(s), f64(c.lr),
                                      f64(c.momentum), f64(c.weightDecay));
      newParam = op.getNewParam();
      newStates[s++] = op.getNewMomentumBuffer();
    } else {
      newParam =
          SgdUpdateOp::create(b, loc, p, g, f64(c.lr), f64(c.weightDecay));
    }
    newParams.push_back(newParam);
    paramAttrs.push_back(kindAndName(ctx, "update", nameOf(p)));
  }

  SmallVector<Value> results(keptResults);
  SmallVector<DictionaryAttr> resultAttrs(keptAttrs);
  llvm::append_range(results, newParams);
  llvm::append_range(resultAttrs, paramAttrs);
  for (auto [state, value] : llvm::zip_equal(states, newStates)) {
    results.push_back(value);
    resultAttrs.push_back(kindAndName(ctx, "update", state.name));
  }
  func::ReturnOp::create(b, loc, results);
  ret.erase();
  step.setFunctionType(FunctionType::get(ctx, step.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  step.setAllResultAttrs(resultAttrs);
  module->setAttr("tcc.optimizer", configAttr(c));
  LLVM_DEBUG(llvm::dbgs() << "applied " << optimizer << " to "
                          << paramGrads.size() << " params\n");
}
