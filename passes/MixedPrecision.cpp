//===- MixedPrecision.cpp - bf16/fp16 compute, fp32 master weights --------===//
//
// tcc-mixed-precision rewrites @train_step, @accumulate_step and @forward so
// that GEMMs and the element-wise work around them compute and store in bf16
// or f16, while parameters, reductions, normalizations, losses and the
// optimizer stay f32 (the "O1/autocast" recipe of PyTorch and Apex).
//
// Stage 1, precision (bf16 and fp16). Ops are visited in order (the block is
// topologically sorted) and each gets one of three policies:
//   * low     GEMMs (matmul, conv2d and its gradients): every float operand
//             is cast to the low type, the results are low.
//   * follow  element-wise and data-movement ops (add ... div, neg, relu,
//             gelu, dropout, tanh, sigmoid and their gradients, reshape,
//             transpose, broadcast_to, slice, concat, where, pooling): low
//             when some float operand already is (the other float operands
//             are cast down: a bias, a residual, a constant), else untouched.
//             So activations stay low from the first GEMM until an f32 op.
//   * f32     everything else: reductions, softmax, layer/batch norm,
//             exp/log/sqrt/pow/erf, losses, optimizer updates, gathers
//             (embedding tables are parameters). Low operands are cast up.
// Function arguments and results keep their types: parameters are f32
// master weights (cast down where a GEMM reads them), parameter gradients
// are cast up before the optimizer, and @forward's outputs stay f32. Casts
// are made once per value, right after its definition; casts of constants
// are folded into low constants. Last, with bf16, a weight gradient whose
// low GEMM feeds only its cast to f32 for the optimizer becomes a GEMM with
// an f32 result (16-bit operands, f32 accumulator written as is): one
// rounding and one cast kernel fewer (gemmsWriteF32Gradients). It is done
// here, as policy, because it is not exact; tcc-gemm-epilogue, which runs
// later and folds bias gradients into these GEMMs, keeps their f32 result.
// Also policy: a bias gradient sums the 16-bit gradient its weight GEMM
// reads, as autocast's does, where the gradient is f32 (biasGradsFromLow).
//
// Stage 2, dynamic loss scaling (fp16 only; bf16 has f32's range). State
// `loss_scale` (f32 scalar, `tcc.init` 65536), `loss_scale.good_steps` and
// `loss_scale.skipped` (f32 counters, zero) are added. The backward's seed
// (the incoming gradient of the loss op) is multiplied by the scale, so every
// gradient is scaled; before the optimizer each parameter gradient is
// multiplied by 1/scale (in f32), and `finite` = (sum of all scaled gradient
// elements) * 0 == 0, which is false exactly when some element is Inf or NaN
// (the sum of finite values read from f16 cannot overflow f32). Every
// optimizer result (parameters and the state the update ops read: moments,
// momentum buffers, the AdamW step) becomes `where(finite, new, old)`, so a
// step with an overflow leaves them untouched - except an AdamW update that
// only the return reads, which takes `unscale 1/scale if finite` and does
// both itself (its kernel multiplies the gradient and, on a skipped step,
// writes nothing); other updates (dropout's
// `rng.step`, batch-norm running statistics) advance as in PyTorch with its
// GradScaler. The scale halves on such a step and doubles after
// `growth-interval` finite steps in a row (torch.cuda.amp.GradScaler's
// defaults: 65536, 0.5, 2, 2000). `loss_scale.skipped` counts the skipped
// steps for `tcc train`. With gradient accumulation the seed is scaled in
// @accumulate_step and the check and update happen in @train_step.
// With gradient clipping (tcc-clip-gradients' tcc.global_norm, of the
// scaled gradients here) the norm is multiplied by 1/scale before the
// coefficient and the grad_norm metric read it, the coefficient joins the
// unscaling factor (no multiply of its own), and `finite` is the norm's
// finiteness (no sum of every gradient); the clipping multiply stays f32.
// Under ZeRO (tcc-shard-optimizer-state ran: the module has `tcc.zero`) the
// updates read this rank's shards: the unscaling multiplies the shard, and
// `finite` is that of tcc.sharded_global_norm (clipping's, or one of the
// shards made for the check), whose sum covers every rank's shards, so all
// ranks skip the same steps and their loss scales stay equal.
//
// Not handled: a loss that is not tcc.softmax_cross_entropy or tcc.mse_loss
// (the only ones tcc-build-loss makes) is an error for fp16.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-mixed-precision"

namespace mlir::tcc {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

enum class Policy { Low, Follow, F32 };

Policy policyOf(Operation *op) {
  if (isa<MatmulOp, Conv2dOp, Conv2dGradInputOp, Conv2dGradWeightOp>(op))
    return Policy::Low;
  if (isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, ReluGradOp, GeluOp,
          GeluGradOp, DropoutOp, TanhOp, TanhGradOp, SigmoidOp, SigmoidGradOp,
          ReshapeOp, TransposeOp, BroadcastToOp, SliceOp, SliceGradOp, ConcatOp,
          WhereOp, MaxPool2dOp, MaxPool2dGradOp, AvgPool2dOp, AvgPool2dGradOp,
          UnaryFnOp, UnaryFnGradOp>(op))
    return Policy::Follow;
  // Exact in any float type: the result is one of the operands (or, for
  // mod, a remainder, which is exact in its operands' format).
  if (isa<MaximumOp, MinimumOp, ModOp>(op))
    return Policy::Follow;
  return Policy::F32;
}

FloatType floatElement(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r ? dyn_cast<FloatType>(r.getElementType()) : FloatType();
}

RankedTensorType withElement(Type t, Type e) {
  return cast<RankedTensorType>(t).clone(e);
}

/// Whether scalar `v` is computed from a tcc.global_norm (tcc-clip-gradients'
/// coefficient, a few scalar ops from the norm).
bool fromGlobalNorm(Value v) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    Operation *def = x.getDefiningOp();
    if (!def || !seen.insert(x).second)
      continue;
    if (isa<GlobalNormOp, ShardedGlobalNormOp>(def))
      return true;
    if (cast<RankedTensorType>(x.getType()).getRank() == 0)
      llvm::append_range(work, def->getOperands());
  }
  return false;
}

/// Whether `op` is tcc-clip-gradients' `g * coefficient`: it stays f32 (a
/// 16-bit coefficient would be off by up to 2^-8, and PyTorch scales the
/// f32 gradients of f32 master weights).
bool isClipScaling(Operation *op) {
  auto m = dyn_cast<MulOp>(op);
  return m && cast<RankedTensorType>(m.getRhs().getType()).getRank() == 0 &&
         cast<RankedTensorType>(m.getLhs().getType()).getRank() > 0 &&
         fromGlobalNorm(m.getRhs());
}

/// Casts values between f32 and the low type, once per value.
class Caster {
public:
  explicit Caster(FloatType low) : low(low) {}

  Value toLow(Value v) { return convert(v, low, lowOf); }
  Value toF32(Value v) {
    return convert(v, Float32Type::get(v.getContext()), f32Of);
  }

private:
  FloatType low;
  llvm::DenseMap<Value, Value> lowOf, f32Of;

  Value convert(Value v, FloatType to, llvm::DenseMap<Value, Value> &cache) {
    if (floatElement(v.getType()) == to)
      return v;
    if (Value c = cache.lookup(v))
      return c;
    OpBuilder b(v.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    auto type = withElement(v.getType(), to);
    Value c;
    auto dense = v.getDefiningOp<ConstantOp>()
                     ? dyn_cast<DenseFPElementsAttr>(
                           v.getDefiningOp<ConstantOp>().getValue())
                     : DenseFPElementsAttr();
    if (dense) {
      // Rounded at compile time, to nearest-even as the runtime does.
      const llvm::fltSemantics &sem = to.getFloatSemantics();
      auto attr = dense.mapValues(to, [&](const APFloat &x) {
        APFloat y = x;
        bool lost;
        y.convert(sem, APFloat::rmNearestTiesToEven, &lost);
        return y.bitcastToAPInt();
      });
      c = ConstantOp::create(b, v.getLoc(), attr);
    } else {
      c = CastOp::create(b, v.getLoc(), type, v);
    }
    cache[v] = c;
    return c;
  }
};

/// Fused attention: q, k, v (and the backward's out and dout) in the low
/// type, like a GEMM's operands; the mask and the log-sum-exp stay f32
/// (the ops' contract, TccOpsAttention.td); the results follow q except
/// the forward's lse.
void lowerAttention(Operation *op, Caster &caster, FloatType low) {
  unsigned f32Operands = isa<AttentionOp>(op) ? 0b1000 : 0b1010000;
  for (OpOperand &use : op->getOpOperands())
    use.set((f32Operands >> use.getOperandNumber()) & 1
                ? caster.toF32(use.get())
                : caster.toLow(use.get()));
  for (OpResult r : op->getResults())
    if (!(isa<AttentionOp>(op) && r.getResultNumber() == 1))
      r.setType(withElement(r.getType(), low));
}

/// Whether `g` (f32) reaches a GEMM in the low type: some cast of it to
/// `low`, directly or after data movement (a zero pad of tcc-pad-shapes, a
/// reshape, a transpose) before or after the cast.
bool readLowByGemm(Value g, FloatType low) {
  SmallVector<std::pair<Value, bool>> work{{g, false}};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    auto [v, isLow] = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *u : v.getUsers()) {
      if (isLow && policyOf(u) == Policy::Low)
        return true;
      if (auto c = dyn_cast<CastOp>(u); c && !isLow) {
        if (floatElement(c.getType()) == low)
          work.push_back({c.getResult(), true});
      } else if (isa<ReshapeOp, SliceGradOp, TransposeOp>(u)) {
        work.push_back({u->getResult(0), isLow});
      }
    }
  }
  return false;
}

/// The values the backward computes: everything that depends on the loss
/// gradient, the chain rule's first step (tcc-autodiff differentiates only
/// the loss).
llvm::DenseSet<Value> backwardValues(Block &body) {
  llvm::DenseSet<Value> backward;
  for (Operation &op : body) {
    if (!isa<SoftmaxCrossEntropyGradOp, MseLossGradOp>(op) &&
        llvm::none_of(op.getOperands(),
                      [&](Value v) { return backward.contains(v); }))
      continue;
    for (Value r : op.getResults())
      backward.insert(r);
  }
  return backward;
}

/// Bias gradients sum the 16-bit gradient their weight's GEMM reads, as
/// autocast's do: a reduce_sum over every axis but the last of an f32
/// backward value that a GEMM reads in the low type sums its low values.
/// Two kinds of gradient are f32 here although a GEMM reads them in 16 bits:
/// the loss gradient (the loss casts the logits up) and the gradient of a
/// residual stream (the add of the residual passes on the f32 gradient that
/// the layer norm's backward adds to). In PyTorch the gradient of a 16-bit
/// GEMM output is 16-bit, so its bias gradient reads rounded values; here
/// the sum then reads exactly what the weight-gradient GEMM reads, and
/// tcc-gemm-epilogue can take it into that GEMM (cuBLASLt's BGRAD), so the
/// f32 gradient is not read a second time: [tokens, vocab] f32 for a
/// language model's head (1.6 GB for GPT-2 small at 8 x 1024 tokens), and
/// [tokens, d] f32 twice per transformer layer (24 sums, 0.6 GB). Forward
/// reductions (of an input, an activation) keep their f32 operand.
void biasGradsFromLow(Block &body, Caster &caster, FloatType low) {
  llvm::DenseSet<Value> backward = backwardValues(body);
  for (Operation &op : body) {
    auto r = dyn_cast<ReduceSumOp>(op);
    if (!r || !backward.contains(r.getInput()) || !r.sumsAllButLastAxis() ||
        !floatElement(r.getInput().getType()).isF32() ||
        !readLowByGemm(r.getInput(), low))
      continue;
    r.getInputMutable().assign(caster.toF32(caster.toLow(r.getInput())));
  }
}

bool isOptimizerUpdate(Operation *op) {
  return isa<SgdUpdateOp, SgdMomentumUpdateOp, AdamWUpdateOp, LionUpdateOp,
             AdafactorUpdateOp>(op);
}

/// Whether `u` reads a parameter gradient as the optimizer's input (operand
/// 1 of every update op, the parameter being operand 0) or returns it (a
/// program output, stored in f32 whatever computes it).
bool readsGradientInF32(Operation *u, Value grad) {
  if (isa<func::ReturnOp, GlobalNormOp, ShardedGlobalNormOp>(u))
    return true;
  // Averaged over data-parallel ranks first (tcc-all-reduce-gradients): the
  // bucket's result for this gradient is what the optimizer reads.
  if (auto ar = dyn_cast<AllReduceOp>(u)) {
    for (auto [x, r] : llvm::zip(ar.getInputs(), ar.getResults()))
      if (x == grad && !llvm::all_of(r.getUsers(), [&](Operation *y) {
            return readsGradientInF32(y, r);
          }))
        return false;
    return true;
  }
  // This rank's shard of the average (tcc-shard-optimizer-state).
  if (auto rs = dyn_cast<ReduceScatterOp>(u)) {
    for (auto [x, r] : llvm::zip(rs.getInputs(), rs.getResults()))
      if (x == grad && !llvm::all_of(r.getUsers(), [&](Operation *y) {
            return readsGradientInF32(y, r);
          }))
        return false;
    return true;
  }
  // The clipped gradient, read by the optimizer (tcc-clip-gradients).
  if (isClipScaling(u) && u->getOperand(0) == grad)
    return llvm::all_of(u->getUsers(), [&](Operation *x) {
      return readsGradientInF32(x, u->getResult(0));
    });
  return isOptimizerUpdate(u) && u->getOperand(1) == grad &&
         u->getOperand(0) != grad;
}

/// Weight gradients straight from their GEMM in f32 (stage 1's last step,
/// on the final casts; bf16 only). cast_f32(matmul_low(a, b)) becomes
/// matmul(a, b) with an f32 result when the cast is the matmul's only user
/// and only optimizer updates (as their gradient) or the return read the
/// cast.
/// cuBLASLt and the CPU kernel accumulate in f32 anyway, so the gradient is
/// no longer rounded to 16 bits on the way (not exact: one rounding fewer,
/// hence a precision-policy choice here and not a canonicalization), and
/// the cast kernel and the 16-bit copy's store and load go away. Casts read
/// by other f32 ops are left alone on purpose: the loss of an unpadded
/// head, a reduction or a normalization takes the cast into its fused
/// region, so only the 16-bit product is stored, half the bytes of an f32
/// one. tcc-gemm-epilogue keeps the f32 result when it folds a bias
/// gradient into the GEMM (matmul_epilogue's bgrad_lhs / bgrad_rhs take
/// 16-bit operands with an f32 result). Not for fp16: there a weight
/// gradient that overflows f16 must reach the optimizer as Inf, so that
/// the loss scaler skips the step and halves the scale as PyTorch's
/// GradScaler does with autocast's f16 gradients (an f32 product would not
/// overflow, and tcc would apply steps PyTorch skips).
void gemmsWriteF32Gradients(Block &body, FloatType low) {
  if (!low.isBF16())
    return;
  SmallVector<CastOp> casts;
  for (Operation &op : body)
    if (auto c = dyn_cast<CastOp>(op))
      casts.push_back(c);
  for (CastOp c : casts) {
    // A padded weight's gradient reaches its cast through the slice that
    // drops tcc-pad-shapes' rows: the slice moves f32 then.
    auto slice = c.getInput().getDefiningOp<SliceOp>();
    if (slice && !slice.getResult().hasOneUse())
      slice = nullptr;
    auto mm =
        (slice ? slice.getInput() : c.getInput()).getDefiningOp<MatmulOp>();
    if (!mm || !mm.getResult().hasOneUse() ||
        floatElement(mm.getType()) != low ||
        floatElement(mm.getLhs().getType()) != low ||
        !floatElement(c.getType()) || !floatElement(c.getType()).isF32() ||
        !llvm::all_of(c->getUsers(), [&](Operation *u) {
          return readsGradientInF32(u, c.getResult());
        }))
      continue;
    Type f32 = floatElement(c.getType());
    mm.getResult().setType(withElement(mm.getType(), f32));
    if (slice)
      slice.getResult().setType(c.getType());
    c.getResult().replaceAllUsesWith(c.getInput());
    c->erase();
  }
}

StringRef attrString(func::FuncOp fn, bool result, unsigned i, StringRef name) {
  DictionaryAttr d = result ? fn.getResultAttrDict(i) : fn.getArgAttrDict(i);
  if (!d)
    return {};
  if (auto s = d.getAs<StringAttr>(name))
    return s.getValue();
  return {};
}

/// Whether `op` adds into a gradient accumulator (`<p>.grad_acc`, the f32
/// state tcc-accumulate-gradients sums the micro-batches' gradients in):
/// that sum stays f32, as the master weights do, or every micro-step would
/// round the running sum to 16 bits.
bool addsToAccumulator(func::FuncOp fn, Operation *op) {
  if (!isa<AddOp>(op))
    return false;
  return llvm::any_of(op->getOperands(), [&](Value v) {
    auto a = dyn_cast<BlockArgument>(v);
    return a && a.getOwner()->getParentOp() == fn &&
           attrString(fn, false, a.getArgNumber(), "tcc.name")
               .ends_with(".grad_acc");
  });
}

/// Stage 1 on one function.
void lowerPrecision(func::FuncOp fn, FloatType low) {
  Caster caster(low);
  Block &body = fn.getBody().front();
  // Casts are inserted after definitions that were already visited, so the
  // walk only meets the original ops.
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (isa<AttentionOp, AttentionGradOp>(op)) {
      lowerAttention(&op, caster, low);
      continue;
    }
    Policy p = policyOf(&op);
    if (p == Policy::Follow) {
      bool anyLow = llvm::any_of(op.getOperands(), [&](Value v) {
        return floatElement(v.getType()) == low;
      });
      p = anyLow && !addsToAccumulator(fn, &op) && !isClipScaling(&op)
              ? Policy::Low
              : Policy::F32;
    }
    for (OpOperand &use : op.getOpOperands()) {
      FloatType e = floatElement(use.get().getType());
      if (!e)
        continue;
      use.set(p == Policy::Low ? caster.toLow(use.get())
                               : caster.toF32(use.get()));
    }
    if (p == Policy::Low)
      for (OpResult r : op.getResults())
        if (floatElement(r.getType()))
          r.setType(withElement(r.getType(), low));
  }
  biasGradsFromLow(body, caster, low);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (OpOperand &use : ret->getOpOperands())
    if (use.get().getType() != fn.getResultTypes()[use.getOperandNumber()])
      use.set(caster.toF32(use.get()));
  gemmsWriteF32Gradients(body, low);
}

/// Appends a scalar f32 state argument named `name` (starting at `init`
/// when non-zero) unless `fn` has one; returns it.
Value stateArg(func::FuncOp fn, StringRef name, double init) {
  for (BlockArgument a : fn.getArguments())
    if (attrString(fn, false, a.getArgNumber(), "tcc.name") == name)
      return a;
  MLIRContext *ctx = fn.getContext();
  Builder b(ctx);
  auto type = RankedTensorType::get({}, b.getF32Type());
  NamedAttrList attrs;
  attrs.set("tcc.kind", b.getStringAttr("state"));
  attrs.set("tcc.name", b.getStringAttr(name));
  if (init != 0)
    attrs.set("tcc.init",
              DenseElementsAttr::get(type, static_cast<float>(init)));
  unsigned i = fn.getNumArguments();
  if (failed(fn.insertArgument(i, type, attrs.getDictionary(ctx), fn.getLoc())))
    return {};
  return fn.getArgument(i);
}

Value scalar(OpBuilder &b, Location loc, float v) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, v));
}

/// The op that computes the gradient of the loss op `loss` (whose incoming
/// gradient operand is the backward's seed), or null.
Operation *lossGradient(Operation *loss) {
  if (auto ce = dyn_cast_or_null<SoftmaxCrossEntropyOp>(loss)) {
    for (Operation *user : ce.getLogits().getUsers())
      if (auto g = dyn_cast<SoftmaxCrossEntropyGradOp>(user))
        if (g.getLabels() == ce.getLabels())
          return g;
  } else if (auto lce = dyn_cast_or_null<LinearCrossEntropyOp>(loss)) {
    for (Operation *user : lce.getLse().getUsers())
      if (isa<LinearCrossEntropyGradOp>(user))
        return user;
  } else if (auto mse = dyn_cast_or_null<MseLossOp>(loss)) {
    for (Operation *user : mse.getPrediction().getUsers())
      if (auto g = dyn_cast<MseLossGradOp>(user))
        if (g.getTarget() == mse.getTarget())
          return g;
  }
  return nullptr;
}

/// Stage 2a: multiplies the backward's seed in `fn` by the loss scale.
/// Returns failure (after an error) if `fn` has a loss but no gradient of it.
LogicalResult scaleSeed(func::FuncOp fn, double initScale) {
  std::optional<unsigned> lossIdx;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (attrString(fn, true, i, "tcc.kind") == "loss")
      lossIdx = i;
  if (!lossIdx)
    return success();
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  Operation *lossOp = ret.getOperand(*lossIdx).getDefiningOp();
  Operation *grad = lossGradient(lossOp);
  if (!grad)
    return fn.emitError("tcc-mixed-precision: fp16 loss scaling needs the "
                        "gradient of a tcc.softmax_cross_entropy, "
                        "tcc.linear_cross_entropy or tcc.mse_loss loss in @")
           << fn.getSymName();
  Value scale = stateArg(fn, "loss_scale", initScale);
  if (!scale)
    return fn.emitError("tcc-mixed-precision: cannot add the loss scale");
  OpBuilder b(grad);
  Value seed = grad->getOperand(0);
  grad->setOperand(0, MulOp::create(b, grad->getLoc(), seed, scale));
  return success();
}

/// Stage 2b: unscales the gradients the optimizer reads, skips the update of
/// a step with a non-finite gradient and adjusts the scale.
LogicalResult unscaleAndSkip(func::FuncOp fn, double initScale,
                             int64_t growthInterval) {
  Block &body = fn.getBody().front();
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (isOptimizerUpdate(&op))
      updates.push_back(&op);
  if (updates.empty())
    return success();
  Location loc = fn.getLoc();
  Value scale = stateArg(fn, "loss_scale", initScale);
  Value good = stateArg(fn, "loss_scale.good_steps", 0);
  Value skipped = stateArg(fn, "loss_scale.skipped", 0);
  if (!scale || !good || !skipped)
    return fn.emitError("tcc-mixed-precision: cannot add the loss scale");

  // The state the optimizer reads besides the gradients (operand 1 of every
  // update op): these, and the parameters, keep their values on a skip.
  llvm::SetVector<Value> kept;
  llvm::DenseSet<Value> seen;
  SmallVector<Value> work;
  for (Operation *u : updates)
    for (OpOperand &o : u->getOpOperands())
      if (o.getOperandNumber() != 1)
        work.push_back(o.get());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (isa<BlockArgument>(v)) {
      kept.insert(v);
      continue;
    }
    for (Value o : v.getDefiningOp()->getOperands())
      work.push_back(o);
  }

  // AdamW unscales its gradient and skips the step itself (`unscale inv if
  // finite`, as PyTorch's fused AdamW takes grad_scale and found_inf) when
  // only the return reads its results: no separate multiply of each
  // gradient, and no where(finite, new, old) pass over each parameter,
  // moment and 16-bit copy. It then runs after `finite`, i.e. after every
  // gradient, which holds the gradients to the end of the backward instead
  // of the new parameters and moments that the where would wait for.
  Operation *ret0 = body.getTerminator();
  auto inKernel = [&](Operation *u) {
    return isa<AdamWUpdateOp>(u) &&
           llvm::all_of(u->getUsers(), [&](Operation *x) { return x == ret0; });
  };
  // tcc-clip-gradients' norm (of the gradients as scaled here): the norm
  // the coefficient and the grad_norm metric read is unscaled, the
  // coefficient joins the unscaling factor (inv * c: one multiply of each
  // gradient, none in AdamW's kernel), and a step is finite exactly when
  // the norm is, so no gradient is read again for the check.
  // Under ZeRO (tcc-shard-optimizer-state) the norm is of the shards every
  // rank holds: tcc.sharded_global_norm, as global as the other.
  Operation *normOp = nullptr;
  for (Operation &op : body)
    if (isa<GlobalNormOp, ShardedGlobalNormOp>(op))
      normOp = &op;
  // Without clipping, a sharded step checks its shards with that op too:
  // a rank's own shards would let the ranks disagree on a skip (and their
  // parameters drift apart), so the check adds the squares of every rank's
  // shards, in f64, which holds the square of any finite f32 and any sum
  // of them: the norm is finite exactly when every element is (unless it
  // passes f32's 3e38, where the unsharded sum would overflow first), and
  // all ranks read the same bits.
  int64_t zeroShards = 0;
  if (auto zero =
          fn->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
              "tcc.zero"))
    if (auto n = zero.getAs<IntegerAttr>("shards"))
      zeroShards = n.getInt();
  OpBuilder b(updates.front());
  if (normOp && normOp->isBeforeInBlock(updates.front()))
    b.setInsertionPoint(normOp);
  Value one = scalar(b, loc, 1.0f), zero = scalar(b, loc, 0.0f);
  Value inv = DivOp::create(b, loc, one, scale);
  if (normOp) {
    b.setInsertionPointAfter(normOp);
    Value unscaled = MulOp::create(b, loc, normOp->getResult(0), inv);
    normOp->getResult(0).replaceAllUsesExcept(unscaled,
                                              unscaled.getDefiningOp());
  }
  Value sum, invClip;
  SmallVector<Value> shardGrads;
  llvm::DenseMap<Operation *, Value> factorOf;
  for (Operation *u : updates) {
    Value g = u->getOperand(1), factor = inv;
    Operation *clip = g.getDefiningOp();
    if (clip && isClipScaling(clip)) {
      Value coef = clip->getOperand(1);
      if (!invClip) {
        b.setInsertionPointAfterValue(coef);
        invClip = MulOp::create(b, loc, inv, coef);
      }
      g = clip->getOperand(0);
      factor = invClip;
    }
    if (!normOp && zeroShards > 0) {
      shardGrads.push_back(g);
    } else if (!normOp) {
      auto rank = cast<RankedTensorType>(g.getType()).getRank();
      SmallVector<int64_t> axes(rank);
      for (int64_t i = 0; i < rank; ++i)
        axes[i] = i;
      // Every gradient dominates the return: the sums go there.
      b.setInsertionPoint(ret0);
      Value s = ReduceSumOp::create(b, loc, g, axes, /*keepdims=*/false);
      sum = sum ? AddOp::create(b, loc, sum, s) : s;
    }
    if (inKernel(u)) {
      u->setOperand(1, g);
      factorOf[u] = factor;
    } else {
      b.setInsertionPoint(u);
      u->setOperand(1, MulOp::create(b, loc, g, factor));
    }
    if (clip && clip->use_empty())
      clip->erase();
  }
  // Everything after the last update op, before the return.
  b.setInsertionPoint(ret0);
  if (!shardGrads.empty())
    sum = ShardedGlobalNormOp::create(b, loc, scale.getType(), shardGrads,
                                      b.getI64IntegerAttr(zeroShards));
  Value finite = CompareOp::create(
      b, loc, "eq",
      MulOp::create(b, loc, normOp ? normOp->getResult(0) : sum, zero), zero);
  llvm::SmallPtrSet<Operation *, 16> skipping;
  for (Operation *u : updates)
    if (Value factor = factorOf.lookup(u)) {
      skipping.insert(u);
      u->moveBefore(ret0);
      auto adam = cast<AdamWUpdateOp>(u);
      adam.getInvScaleMutable().assign(factor);
      adam.getFiniteMutable().assign(finite);
    }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::StringMap<Value> argByName;
  for (BlockArgument a : fn.getArguments())
    argByName[attrString(fn, false, a.getArgNumber(), "tcc.name")] = a;
  for (OpOperand &use : ret->getOpOperands()) {
    unsigned i = use.getOperandNumber();
    if (attrString(fn, true, i, "tcc.kind") != "update")
      continue;
    Value old = argByName.lookup(attrString(fn, true, i, "tcc.name"));
    if (!old || !kept.contains(old))
      continue;
    if (Operation *def = use.get().getDefiningOp(); def && skipping.count(def))
      continue; // the update keeps the old values itself
    use.set(WhereOp::create(b, loc, old.getType(), finite, use.get(), old));
  }

  auto f32 = [&](float v) { return scalar(b, loc, v); };
  Value good1 = AddOp::create(b, loc, good, one);
  Value grow = CompareOp::create(b, loc, "eq", good1,
                                 f32(static_cast<float>(growthInterval)));
  Type t = scale.getType();
  Value grown = WhereOp::create(b, loc, t, grow,
                                MulOp::create(b, loc, scale, f32(2.0f)), scale);
  Value newScale = WhereOp::create(b, loc, t, finite, grown,
                                   MulOp::create(b, loc, scale, f32(0.5f)));
  Value newGood = WhereOp::create(
      b, loc, t, finite, WhereOp::create(b, loc, t, grow, zero, good1), zero);
  Value newSkipped = WhereOp::create(b, loc, t, finite, skipped,
                                     AddOp::create(b, loc, skipped, one));

  // Append the three updates.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    resultAttrs.push_back(fn.getResultAttrDict(i));
  MLIRContext *ctx = fn.getContext();
  for (auto [v, name] : {std::pair<Value, StringRef>{newScale, "loss_scale"},
                         {newGood, "loss_scale.good_steps"},
                         {newSkipped, "loss_scale.skipped"}}) {
    results.push_back(v);
    NamedAttrList attrs;
    attrs.set("tcc.kind", StringAttr::get(ctx, "update"));
    attrs.set("tcc.name", StringAttr::get(ctx, name));
    resultAttrs.push_back(attrs.getDictionary(ctx));
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(), types));
  fn.setAllResultAttrs(resultAttrs);
  return success();
}

struct MixedPrecisionPass final
    : tcc::impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    FloatType low;
    if (precision == "fp32")
      return;
    if (precision == "bf16")
      low = BFloat16Type::get(ctx);
    else if (precision == "fp16")
      low = Float16Type::get(ctx);
    else {
      module.emitError("tcc-mixed-precision: precision must be fp32, bf16 or "
                       "fp16, got '")
          << precision << "'";
      return signalPassFailure();
    }
    if (lossScaleInit <= 0 || growthInterval < 1) {
      module.emitError("tcc-mixed-precision: loss-scale-init must be > 0 and "
                       "growth-interval >= 1");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> fns;
    for (StringRef name : {"forward", "accumulate_step", "train_step"})
      if (auto fn = module.lookupSymbol<func::FuncOp>(name))
        if (!fn.isExternal() && fn.getBody().hasOneBlock())
          fns.push_back(fn);
    for (func::FuncOp fn : fns)
      lowerPrecision(fn, low);
    if (precision != "fp16")
      return;
    for (func::FuncOp fn : fns) {
      if (fn.getSymName() == "forward")
        continue;
      if (failed(scaleSeed(fn, lossScaleInit)) ||
          failed(unscaleAndSkip(fn, lossScaleInit, growthInterval)))
        return signalPassFailure();
    }
  }
};

} // namespace
