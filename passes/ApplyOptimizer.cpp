//===- ApplyOptimizer.cpp - gradients -> optimizer updates ----------------===//
//
// Turns the `grad` results of `@train_step` into optimizer updates:
//
//   sgd (momentum 0)  p' = tcc.sgd_update p, g, lr
//   sgd (momentum>0)  p', buf' = tcc.sgd_momentum_update p, g, buf, lr
//                     (nesterov: the Nesterov form); state:
//                     <p>.momentum_buffer
//   adam, adamw       t1 = tcc.add step, 1.0          (once)
//                     p', m', v' = tcc.adamw_update p, g, m, v, t1, lr
//                     (adam: `l2_decay`, the decay added to the gradient);
//                     state: <p>.exp_avg, <p>.exp_avg_sq (per param, in
//                     param order), then the shared scalar `<name>.step`
//   lion              p', m' = tcc.lion_update p, g, m, lr
//                     state: <p>.exp_avg
//   adafactor         t1 = tcc.add step, 1.0          (once)
//                     p', r', c' = tcc.adafactor_update p, g, t1, lr
//                                  moments(r, c)     (rank >= 2)
//                     p', v' = ... moments(v)          (rank < 2)
//                     state: <p>.row_var, <p>.col_var (factored second
//                     moment) or <p>.variance, then `adafactor.step`
//
// The learning rate is a runtime value: the last state argument,
// `optimizer.lr` (f32 scalar, `tcc.init` = lr), which every update op reads
// and no op writes, so the train loop can set it between steps (schedules)
// without recompiling. Other state tensors start at zero. Parameters named
// by a `no-decay` pattern (globs, or `1d`: rank below 2) get weight decay 0.
//
// State tensors are appended as arguments `{tcc.kind = "state", tcc.name}`.
// The results become: the non-grad results (the loss) in their order, then
// the new value of each param (grad order), then the new value of each
// state argument the step changes (argument order), all `{tcc.kind =
// "update", tcc.name = <what they replace>}`. The config is recorded as the
// module attribute `tcc.optimizer`.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/GlobPattern.h"

#include <cfloat>

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

enum class Kind { Sgd, Adam, AdamW, Lion, Adafactor };

// torch.optim.Adafactor's other defaults, which tcc does not expose.
constexpr double kAdafactorBeta2Decay = -0.8, kAdafactorEps2 = 1e-3,
                 kAdafactorD = 1.0;

/// The resolved optimizer configuration.
struct Config {
  Kind kind = Kind::AdamW;
  std::string name;
  double lr, momentum, weightDecay, beta1, beta2, eps;
  bool nesterov;
  bool adamFamily() const { return kind == Kind::Adam || kind == Kind::AdamW; }
  bool hasBetas() const { return adamFamily() || kind == Kind::Lion; }
  bool hasEps() const { return adamFamily() || kind == Kind::Adafactor; }
  bool counted() const { return adamFamily() || kind == Kind::Adafactor; }
};

/// A state argument to append.
struct StateArg {
  std::string name;
  Type type;
  Location loc;
  /// Its initial value, when not zero.
  DenseElementsAttr init = {};
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
  auto fail = [&]() { return module.emitError("tcc-apply-optimizer: "); };
  Config c;
  std::optional<Kind> kind = llvm::StringSwitch<std::optional<Kind>>(optimizer)
                                 .Case("sgd", Kind::Sgd)
                                 .Case("adam", Kind::Adam)
                                 .Case("adamw", Kind::AdamW)
                                 .Case("lion", Kind::Lion)
                                 .Case("adafactor", Kind::Adafactor)
                                 .Default(std::nullopt);
  if (!kind)
    return fail() << "unknown optimizer '" << optimizer
                  << "' (valid: sgd, adam, adamw, lion, adafactor)";
  c.kind = *kind;
  c.name = optimizer;
  // torch.optim's defaults (Lion: the paper's, as lion-pytorch has them).
  double defaultLr = c.kind == Kind::Sgd || c.kind == Kind::Adafactor ? 1e-2
                     : c.kind == Kind::Lion                           ? 1e-4
                                                                      : 1e-3;
  c.lr = lr < 0 ? defaultLr : double(lr);
  c.weightDecay = weightDecay < 0 ? (c.kind == Kind::AdamW ? 0.01 : 0.0)
                                  : double(weightDecay);
  c.momentum = momentum;
  c.nesterov = nesterov;
  c.beta1 = beta1 < 0 ? 0.9 : double(beta1);
  c.beta2 = beta2 < 0 ? (c.kind == Kind::Lion ? 0.99 : 0.999) : double(beta2);
  // Adafactor's eps1 defaults to the f32 machine epsilon (torch: None, the
  // dtype's eps).
  c.eps = eps >= 0                    ? double(eps)
          : c.kind == Kind::Adafactor ? double(FLT_EPSILON)
                                      : 1e-8;
  if (!(c.lr > 0))
    return fail() << "the learning rate must be positive, got " << c.lr;
  if (c.momentum < 0)
    return fail() << "momentum must not be negative, got " << c.momentum;
  if (c.kind != Kind::Sgd && (c.momentum != 0 || c.nesterov))
    return fail() << "momentum and nesterov are sgd options; " << c.name
                  << " uses beta1/beta2";
  if (c.nesterov && c.momentum == 0)
    return fail() << "nesterov needs a momentum above 0";
  if (!c.hasBetas() && (beta1 >= 0 || beta2 >= 0))
    return fail() << "beta1/beta2 are options of adam, adamw and lion, not "
                  << c.name;
  if (!c.hasEps() && eps >= 0)
    return fail() << "eps is an option of adam, adamw and adafactor, not "
                  << c.name;
  if (c.hasBetas() &&
      (c.beta1 < 0 || c.beta1 >= 1 || c.beta2 < 0 || c.beta2 >= 1))
    return fail() << c.name << " needs beta1, beta2 in [0, 1), got " << c.beta1
                  << ", " << c.beta2;
  if (c.hasEps() && !(c.eps > 0))
    return fail() << c.name << " needs eps > 0, got " << c.eps;
  if (!(c.weightDecay >= 0))
    return fail() << "weight decay must not be negative, got " << c.weightDecay;
  return c;
}

DictionaryAttr ApplyOptimizerPass::configAttr(const Config &c) {
  Builder b(&getContext());
  NamedAttrList attrs;
  attrs.set("name", b.getStringAttr(c.name));
  attrs.set("lr", b.getF64FloatAttr(c.lr));
  attrs.set("weight_decay", b.getF64FloatAttr(c.weightDecay));
  if (c.hasBetas()) {
    attrs.set("beta1", b.getF64FloatAttr(c.beta1));
    attrs.set("beta2", b.getF64FloatAttr(c.beta2));
  }
  if (c.hasEps())
    attrs.set("eps", b.getF64FloatAttr(c.eps));
  if (c.kind == Kind::Adafactor) {
    attrs.set("beta2_decay", b.getF64FloatAttr(kAdafactorBeta2Decay));
    attrs.set("eps2", b.getF64FloatAttr(kAdafactorEps2));
    attrs.set("d", b.getF64FloatAttr(kAdafactorD));
  }
  if (c.kind == Kind::Sgd) {
    attrs.set("momentum", b.getF64FloatAttr(c.momentum));
    if (c.nesterov)
      attrs.set("nesterov", b.getStringAttr("true"));
  }
  if (!noDecay.empty())
    attrs.set("no_decay", b.getStringAttr(llvm::join(noDecay, ",")));
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
  auto nameOf = [&](BlockArgument p) {
    return attrString(step.getArgAttrDict(p.getArgNumber()), "tcc.name");
  };

  // Parameter groups: the trained params each no-decay pattern names. A
  // pattern that names none is a mistake (a typo, or a frozen parameter).
  llvm::DenseSet<Value> noDecayParams;
  for (const std::string &pattern : noDecay) {
    bool matched = false;
    if (pattern == "1d") {
      for (auto [p, g] : paramGrads)
        if (cast<RankedTensorType>(p.getType()).getRank() < 2) {
          noDecayParams.insert(p);
          matched = true;
        }
    } else {
      auto glob = llvm::GlobPattern::create(pattern);
      if (!glob) {
        module.emitError("tcc-apply-optimizer: no-decay pattern '")
            << pattern
            << "' is not a valid glob: " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      for (auto [p, g] : paramGrads)
        if (glob->match(nameOf(p))) {
          noDecayParams.insert(p);
          matched = true;
        }
    }
    if (!matched) {
      module.emitError("tcc-apply-optimizer: no-decay pattern '")
          << pattern << "' matches no trained parameter";
      return signalPassFailure();
    }
  }
  auto decayOf = [&](BlockArgument p) {
    return noDecayParams.contains(p) ? 0.0 : c.weightDecay;
  };

  // State arguments, appended in one go.
  auto f32 = Float32Type::get(ctx);
  auto scalarType = RankedTensorType::get({}, f32);
  SmallVector<StateArg> states;
  for (auto [p, g] : paramGrads) {
    std::string name = nameOf(p).str();
    if (c.adamFamily()) {
      states.push_back({name + ".exp_avg", p.getType(), p.getLoc()});
      states.push_back({name + ".exp_avg_sq", p.getType(), p.getLoc()});
    } else if (c.kind == Kind::Lion) {
      states.push_back({name + ".exp_avg", p.getType(), p.getLoc()});
    } else if (c.kind == Kind::Adafactor) {
      auto t = cast<RankedTensorType>(p.getType());
      if (t.getRank() >= 2) {
        SmallVector<int64_t> row(t.getShape()), col(t.getShape());
        row.back() = 1;
        col[col.size() - 2] = 1;
        states.push_back({name + ".row_var", t.clone(row), p.getLoc()});
        states.push_back({name + ".col_var", t.clone(col), p.getLoc()});
      } else {
        states.push_back({name + ".variance", t, p.getLoc()});
      }
    } else if (c.momentum > 0) {
      states.push_back({name + ".momentum_buffer", p.getType(), p.getLoc()});
    }
  }
  if (c.counted())
    states.push_back({c.name + ".step", scalarType, step.getLoc()});
  unsigned lrState = states.size();
  float lr32 = static_cast<float>(c.lr);
  states.push_back({"optimizer.lr", scalarType, step.getLoc(),
                    DenseElementsAttr::get(scalarType, ArrayRef<float>(lr32))});
  unsigned firstState = step.getNumArguments();
  SmallVector<unsigned> indices(states.size(), firstState);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> locs;
  for (const StateArg &s : states) {
    types.push_back(s.type);
    DictionaryAttr attrs = kindAndName(ctx, "state", s.name);
    if (s.init) {
      NamedAttrList withInit(attrs);
      withInit.set("tcc.init", s.init);
      attrs = withInit.getDictionary(ctx);
    }
    argAttrs.push_back(attrs);
    locs.push_back(s.loc);
  }
  if (failed(step.insertArguments(indices, types, argAttrs, locs))) {
    step.emitError("tcc-apply-optimizer: cannot add the state arguments");
    return signalPassFailure();
  }
  auto stateArg = [&](unsigned i) { return step.getArgument(firstState + i); };
  Value lrValue = stateArg(lrState);

  // The updates, before the return. newStates[i] stays null for a state
  // no op writes (the learning rate).
  OpBuilder b(ret);
  Location loc = ret.getLoc();
  SmallVector<Value> newParams, newStates(states.size());
  SmallVector<DictionaryAttr> paramAttrs;
  Value t1;
  if (c.counted()) {
    unsigned stepState = lrState - 1;
    Value stepArg = stateArg(stepState);
    Value one = ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalarType, b.getF32FloatAttr(1.0f)));
    t1 = AddOp::create(b, loc, stepArg, one);
    newStates[stepState] = t1;
  }
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  unsigned s = 0;
  for (auto [p, g] : paramGrads) {
    Value newParam;
    double wd = decayOf(p);
    if (c.adamFamily()) {
      auto op = AdamWUpdateOp::create(
          b, loc, p, g, stateArg(s), stateArg(s + 1), t1, lrValue, c.beta1,
          c.beta2, c.eps, wd, /*l2Decay=*/c.kind == Kind::Adam);
      newParam = op.getNewParam();
      newStates[s++] = op.getNewExpAvg();
      newStates[s++] = op.getNewExpAvgSq();
    } else if (c.kind == Kind::Adafactor) {
      unsigned n = cast<RankedTensorType>(p.getType()).getRank() >= 2 ? 2 : 1;
      SmallVector<Value> moments;
      for (unsigned k = 0; k < n; ++k)
        moments.push_back(stateArg(s + k));
      auto op = AdafactorUpdateOp::create(b, loc, p, g, t1, lrValue, moments,
                                          kAdafactorBeta2Decay, c.eps,
                                          kAdafactorEps2, kAdafactorD, wd);
      newParam = op.getNewParam();
      for (Value m : op.getNewMoments())
        newStates[s++] = m;
    } else if (c.kind == Kind::Lion) {
      auto op = LionUpdateOp::create(b, loc, p, g, stateArg(s), lrValue,
                                     f64(c.beta1), f64(c.beta2), f64(wd));
      newParam = op.getNewParam();
      newStates[s++] = op.getNewExpAvg();
    } else if (c.momentum > 0) {
      auto op = SgdMomentumUpdateOp::create(
          b, loc, p, g, stateArg(s), lrValue, f64(c.momentum), f64(wd),
          c.nesterov ? b.getUnitAttr() : UnitAttr());
      newParam = op.getNewParam();
      newStates[s++] = op.getNewMomentumBuffer();
    } else {
      newParam = SgdUpdateOp::create(b, loc, p, g, lrValue, f64(wd));
    }
    newParams.push_back(newParam);
    paramAttrs.push_back(kindAndName(ctx, "update", nameOf(p)));
  }

  SmallVector<Value> results(keptResults);
  SmallVector<DictionaryAttr> resultAttrs(keptAttrs);
  llvm::append_range(results, newParams);
  llvm::append_range(resultAttrs, paramAttrs);
  for (auto [state, value] : llvm::zip_equal(states, newStates)) {
    if (!value)
      continue;
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
                          << paramGrads.size() << " params ("
                          << noDecayParams.size() << " without decay)\n");
}
