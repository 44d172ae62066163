//===- Lora.cpp - Low-rank adapters on weight products --------------------===//
//
// LoRA fine-tuning (Hu et al. 2021, as Hugging Face PEFT computes it): a
// weight product y = x op(W) becomes y = x op(W) + s (x A^T) B^T with
// s = alpha / r, A [r, in] and B [out, r] new parameters, and W frozen.
//
// Stages, on @forward before tcc-build-loss (so @train_step, its clone, gets
// the same adapters):
//   1. Targets: each `param` argument whose name matches a pattern and whose
//      every reader is a tcc.matmul taking it, rank 2, as the right operand,
//      directly or through a 2-D transpose (one layout for all of them). A
//      weight also read by another op (a tied embedding's gather) is refused:
//      merging the adapter into W would change that read too. A convolution
//      weight is refused by name: the adapters are for matrix products only. A
//      pattern that matches no weight product is an error, as is a rank above
//      min(in, out).
//   2. Rewrite: A and B are inserted after W as `param` arguments; each
//      product gains the two skinny GEMMs, the scale (when not 1) and the
//      add. A starts uniform in +-1/sqrt(in) (PEFT's kaiming_uniform_ with
//      a = sqrt(5)) from the runtime's counter-based generator, seeded by
//      `seed` and the tensor's name; B starts at zero.
//   3. Freeze: every other `param` becomes `frozen` (the code generator
//      stores it as a named constant): autodiff differentiates and the
//      optimizer updates only `param`s, so the bases get neither gradients
//      nor optimizer state.
// The module records `tcc.lora` for the artifact's metadata and the export.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

#define DEBUG_TYPE "tcc-lora"

namespace mlir::tcc {
#define GEN_PASS_DEF_LORAPASS
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

/// A weight to adapt: the argument, its products and its layout.
struct Target {
  BlockArgument weight;
  std::string name;
  SmallVector<MatmulOp> products;
  bool outIn = false; // stored [out, in] (transpose_rhs: Linear, Gemm transB)
  int64_t in = 0, out = 0;
};

/// What reads a parameter.
enum class Use { Product, NotProduct, Conv, Tied, Mixed };

struct LoraPass final : public tcc::impl::LoraPassBase<LoraPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  void rewrite(func::FuncOp fn, Target &t, double scale);
};
} // namespace

/// Whether `arg` is a weight product's weight (then `t` is filled in), and
/// if not, why it cannot be adapted. `other` is the op that is not a product.
static Use classify(func::FuncOp fn, BlockArgument arg, Target &t,
                    Operation *&other) {
  t.weight = arg;
  t.name = argString(fn, arg.getArgNumber(), "tcc.name").str();
  other = nullptr;
  std::optional<bool> layout;
  bool mixed = false;
  // A product reads W itself or, before the canonicalizer folds it into
  // the flag (--emit=train), its 2-D transpose (MatMul(x, Transpose(W))).
  auto addProduct = [&](OpOperand &use, bool flipped) {
    auto mm = dyn_cast<MatmulOp>(use.getOwner());
    if (!mm || use.getOperandNumber() != 1)
      return false;
    bool l = mm.getTransposeRhs() != flipped;
    if (layout && *layout != l)
      mixed = true;
    layout = l;
    t.products.push_back(mm);
    return true;
  };
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (isa<Conv2dOp>(user))
      return Use::Conv;
    if (addProduct(use, false))
      continue;
    auto tr = dyn_cast<TransposeOp>(user);
    if (tr && tr.getPerm() == ArrayRef<int64_t>{1, 0} &&
        !tr.getResult().use_empty() &&
        llvm::all_of(tr.getResult().getUses(), [](OpOperand &u) {
          auto mm = dyn_cast<MatmulOp>(u.getOwner());
          return mm && u.getOperandNumber() == 1;
        })) {
      for (OpOperand &u : tr.getResult().getUses())
        addProduct(u, true);
      continue;
    }
    other = user;
  }
  auto type = cast<RankedTensorType>(arg.getType());
  if (t.products.empty() || type.getRank() != 2)
    return Use::NotProduct; // a bias, a norm scale, a batched operand
  if (other)
    return Use::Tied;
  if (mixed)
    return Use::Mixed;
  t.outIn = *layout;
  t.out = type.getDimSize(t.outIn ? 0 : 1);
  t.in = type.getDimSize(t.outIn ? 1 : 0);
  return Use::Product;
}

static Value scalarConstant(OpBuilder &b, Location loc, Type elem, double v) {
  auto type = RankedTensorType::get({}, elem);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elem, v)));
}

void LoraPass::rewrite(func::FuncOp fn, Target &t, double scale) {
  MLIRContext *ctx = &getContext();
  Builder b(ctx);
  Type elem = cast<RankedTensorType>(t.weight.getType()).getElementType();
  auto aType = RankedTensorType::get({rank, t.in}, elem);
  auto bType = RankedTensorType::get({t.out, rank}, elem);
  // PEFT: kaiming_uniform_(A, a=sqrt(5)), fan_in = in, gives a bound of
  // gain * sqrt(3 / in) with gain = sqrt(2 / (1 + 5)): 1 / sqrt(in).
  double bound = 1.0 / std::sqrt((double)t.in);
  NamedAttrList aAttrs, bAttrs;
  aAttrs.set("tcc.kind", b.getStringAttr("param"));
  aAttrs.set("tcc.name", b.getStringAttr(t.name + ".lora_A"));
  aAttrs.set("tcc.init_uniform", b.getDenseF64ArrayAttr({-bound, bound}));
  aAttrs.set("tcc.init_seed", b.getI64IntegerAttr(seed));
  bAttrs.set("tcc.kind", b.getStringAttr("param"));
  bAttrs.set("tcc.name", b.getStringAttr(t.name + ".lora_B"));
  bAttrs.set("tcc.init",
             DenseElementsAttr::get(bType, b.getFloatAttr(elem, 0.0)));
  unsigned at = t.weight.getArgNumber() + 1;
  Location loc = t.weight.getLoc();
  if (failed(fn.insertArgument(at, aType, aAttrs.getDictionary(ctx), loc)) ||
      failed(fn.insertArgument(at + 1, bType, bAttrs.getDictionary(ctx), loc)))
    return signalPassFailure();
  Value a = fn.getArgument(at), bArg = fn.getArgument(at + 1);
  for (MatmulOp mm : t.products) {
    OpBuilder ob(mm->getContext());
    ob.setInsertionPointAfter(mm);
    Location l = mm.getLoc();
    // x A^T: A is [r, in] as PEFT stores it, whatever W's layout.
    Value h = MatmulOp::create(ob, l, mm.getLhs(), a, mm.getTransposeLhs(),
                               /*transpose_rhs=*/true);
    Value d = MatmulOp::create(ob, l, h, bArg, false, /*transpose_rhs=*/true);
    if (scale != 1.0)
      d = MulOp::create(ob, l, d, scalarConstant(ob, l, elem, scale));
    Value y = AddOp::create(ob, l, mm.getResult(), d);
    mm.getResult().replaceAllUsesExcept(y, y.getDefiningOp());
  }
}

void LoraPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock()) {
    emitError(module.getLoc(), "tcc-lora: no func.func @forward with a body");
    return signalPassFailure();
  }
  if (module.lookupSymbol<func::FuncOp>("train_step")) {
    emitError(module.getLoc(),
              "tcc-lora: @train_step already exists; the adapters "
              "are added to @forward before tcc-build-loss");
    return signalPassFailure();
  }
  if (module->hasAttr("tcc.lora")) {
    emitError(module.getLoc(),
              "tcc-lora: the module already has adapters (tcc.lora)");
    return signalPassFailure();
  }
  if (rank <= 0) {
    emitError(module.getLoc(),
              "tcc-lora: the LoRA rank must be at least 1, got ")
        << (int64_t)rank;
    return signalPassFailure();
  }
  if (targets.empty()) {
    emitError(module.getLoc(),
              "tcc-lora: no LoRA target patterns (which weights to "
              "adapt, e.g. 'fc*' or '*')");
    return signalPassFailure();
  }
  SmallVector<std::pair<std::string, llvm::GlobPattern>> patterns;
  for (const std::string &p : targets) {
    llvm::Expected<llvm::GlobPattern> g = llvm::GlobPattern::create(p);
    if (!g) {
      emitError(module.getLoc(), "tcc-lora: LoRA target '")
          << p << "' is not a valid pattern: " << llvm::toString(g.takeError());
      return signalPassFailure();
    }
    patterns.push_back({p, std::move(*g)});
  }

  // 1. Targets, in argument order.
  SmallVector<Target> found;
  SmallVector<bool> used(patterns.size(), false);
  SmallVector<std::string> products; // every weight product, for the error
  for (BlockArgument arg : fn.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (argString(fn, i, "tcc.kind") != "param")
      continue;
    StringRef name = argString(fn, i, "tcc.name");
    int first = -1;
    for (auto [k, p] : llvm::enumerate(patterns))
      if (p.second.match(name) && first < 0)
        first = (int)k;
    Target t;
    Operation *other;
    Use use = classify(fn, arg, t, other);
    if (use == Use::NotProduct)
      continue;
    if (use == Use::Product)
      products.push_back(t.name);
    if (first < 0)
      continue;
    const std::string &pat = patterns[first].first;
    if (use == Use::Conv) {
      emitError(arg.getLoc())
          << "tcc-lora: LoRA target '" << pat << "' matches '" << t.name
          << "', the weight of a convolution (tcc.conv2d); adapters are "
             "added to matrix products (MatMul, Gemm, Linear) only";
      return signalPassFailure();
    }
    if (use == Use::Tied) {
      emitError(arg.getLoc())
          << "tcc-lora: LoRA target '" << pat << "' matches '" << t.name
          << "', the weight of a matrix product that is also read by '"
          << other->getName()
          << "' (a tied weight): merging an adapter into it would change "
             "that read too";
      return signalPassFailure();
    }
    if (use == Use::Mixed) {
      emitError(arg.getLoc())
          << "tcc-lora: LoRA target '" << pat << "' matches '" << t.name
          << "', which matrix products read both as stored and transposed";
      return signalPassFailure();
    }
    if (first < 0)
      continue;
    for (auto [k, p] : llvm::enumerate(patterns))
      used[k] = used[k] || p.second.match(name);
    if (rank > std::min(t.in, t.out)) {
      emitError(arg.getLoc())
          << "tcc-lora: LoRA rank " << (int64_t)rank
          << " exceeds min(in, out) = " << std::min(t.in, t.out) << " of '"
          << t.name << "' (in " << t.in << ", out " << t.out << ")";
      return signalPassFailure();
    }
    found.push_back(std::move(t));
  }
  for (auto [k, p] : llvm::enumerate(patterns)) {
    if (used[k])
      continue;
    std::string list;
    for (const std::string &n : products)
      list += (list.empty() ? "" : ", ") + n;
    emitError(module.getLoc(), "tcc-lora: LoRA target '")
        << p.first
        << "' matches no weight product (the weights the model reads as a "
           "MatMul, Gemm or Linear weight: "
        << (list.empty() ? std::string("none") : list) << ")";
    return signalPassFailure();
  }

  // The adapters' names must be free (the code generator maps by name).
  llvm::StringSet<> taken;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    taken.insert(argString(fn, i, "tcc.name"));
  for (const Target &t : found)
    for (const char *suffix : {".lora_A", ".lora_B"})
      if (taken.contains(t.name + suffix)) {
        emitError(t.weight.getLoc())
            << "tcc-lora: the model already has an input or initializer "
               "named '"
            << t.name << suffix << "', the name of an adapter of '" << t.name
            << "'";
        return signalPassFailure();
      }

  // 2. Adapters (from the last argument back, so earlier numbers hold).
  double a = alpha > 0 ? (double)alpha : (double)rank;
  double scale = a / (double)rank;
  for (Target &t : llvm::reverse(found))
    rewrite(fn, t, scale);

  // 3. Everything else stops training.
  llvm::StringSet<> adapters;
  for (const Target &t : found) {
    adapters.insert(t.name + ".lora_A");
    adapters.insert(t.name + ".lora_B");
  }
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (argString(fn, i, "tcc.kind") == "param" &&
        !adapters.contains(argString(fn, i, "tcc.name")))
      fn.setArgAttr(i, "tcc.kind", StringAttr::get(&getContext(), "frozen"));

  Builder b(&getContext());
  SmallVector<NamedAttribute> weights;
  for (const Target &t : found)
    weights.push_back(
        b.getNamedAttr(t.name, b.getStringAttr(t.outIn ? "out,in" : "in,out")));
  SmallVector<Attribute> pats;
  for (const auto &p : patterns)
    pats.push_back(b.getStringAttr(p.first));
  module->setAttr(
      "tcc.lora",
      b.getDictionaryAttr(
          {b.getNamedAttr("rank", b.getI64IntegerAttr(rank)),
           b.getNamedAttr("alpha", b.getF64FloatAttr(a)),
           b.getNamedAttr("targets", b.getArrayAttr(pats)),
           b.getNamedAttr("weights", b.getDictionaryAttr(weights))}));
}
