//===- GemmEpilogue.cpp - Fold bias, activation and bias gradient into GEMMs
//===//
//
// Rewrites tcc.matmul and the work around it into tcc.matmul_epilogue
// (dialects/tcc/TccOpsGemm.td), which cuBLASLt runs as one GEMM with an
// epilogue and the CPU as one OpenBLAS call with the epilogue fused around
// it. Runs after autodiff, the optimizer, padding, mixed precision and
// rematerialization, before tcc-fuse (which would otherwise take the bias
// add into an element-wise region).
//
// Stages, per function (each rewrite is exact: it computes the same values
// as the ops it replaces, up to the rounding of the intermediate results
// that the fused op no longer stores):
//   1. ReLU's backward reads the ReLU's output: relu_grad(dy, z) becomes
//      relu_grad(dy, relu(z)) when relu(z) exists. Exact, since
//      relu(z) > 0 iff z > 0 (NaN: neither). The pre-activation z is then
//      no longer saved for the backward, which frees its memory and lets
//      stage 3 fuse the ReLU.
//   2. dgelu: gelu_grad(matmul(dy, w), z) with the tanh approximation
//      becomes matmul_epilogue "dgelu_tanh" with preact z, and
//      "dgelu_tanh_bgrad" when the gradient is also summed over its rows
//      (the bias gradient of the layer before: reduce_sum over all leading
//      axes of it, or of its exact f32 widening).
//   3. Forward: matmul [-> slice] [-> add of a [N] bias, either operand
//      order] [-> relu | gelu tanh] becomes one op when each intermediate
//      has no other user; a GELU's pre-activation may have other users
//      (its backward), which then read the op's second result (cuBLASLt's
//      GELU_AUX). A slice (the ones tcc-pad-shapes adds) commutes with the
//      element-wise epilogue, so the op computes on the padded shape and its
//      results are sliced; where the slice drops columns (a padded
//      vocabulary), the bias is zero-padded to match (tcc.slice_grad), so
//      the loss reads the sliced GEMM output instead of a biased copy.
//   4. Bias gradients: reduce_sum(dy) over all leading axes (of dy or its
//      exact f32 widening), where dy (up to reshapes and transposes that
//      keep the last axis, and up to a zero pad of the last axis whose
//      columns the op sums too and a slice drops) is
//      the operand a 2-D matmul sums over K - the non-transposed rhs
//      (bgrad_rhs) or the transposed lhs (bgrad_lhs), i.e. a weight
//      gradient - becomes that matmul's second result. The op keeps the
//      matmul's result type: f32 for 16-bit operands where
//      tcc-mixed-precision made the weight gradient's GEMM write f32.
//
// Shapes follow the op's restrictions: a forward GEMM has a 2-D rhs and a
// non-transposed lhs whose leading dimensions flatten into rows; anything
// else is left alone. Not handled: DRELU (cuBLASLt's needs its bit-mask
// aux, which is not relu's output), erf GELU (cuBLASLt has only tanh), and
// a bias add whose bias is not a [N] vector.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionPacking.h"
#include "passes/FusionModel.h"
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tcc-gemm-epilogue"

namespace mlir::tcc {
#define GEN_PASS_DEF_GEMMEPILOGUEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static bool isGemmType(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }

/// A matmul the forward and dgelu epilogues take: rows of a non-transposed
/// lhs times a 2-D rhs, the result in the operands' type (an f32 result
/// from 16-bit operands is a weight gradient; only the bias-gradient forms
/// take it).
static bool isRowGemm(MatmulOp mm) {
  Type elem = typeOf(mm.getResult()).getElementType();
  return !mm.getTransposeLhs() && typeOf(mm.getRhs()).getRank() == 2 &&
         typeOf(mm.getLhs()).getRank() >= 2 && isGemmType(elem) &&
         typeOf(mm.getLhs()).getElementType() == elem;
}

/// The single user of `v`, or null.
static Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

static bool isTanhGelu(Operation *op) {
  auto g = dyn_cast_or_null<GeluOp>(op);
  return g && g.getApproximate() == "tanh";
}

/// `v` without reshapes that keep the last dimension.
static Value stripReshapes(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>()) {
    auto from = typeOf(r.getInput()), to = typeOf(v);
    if (from.getRank() == 0 || to.getRank() == 0 ||
        from.getShape().back() != to.getShape().back())
      break;
    v = r.getInput();
  }
  return v;
}

/// Whether `r` is a bias gradient: a sum over every axis but the last,
/// without keepdims, of an f32 or GEMM-typed tensor.
static bool isBiasGradSum(ReduceSumOp r) {
  return r.sumsAllButLastAxis() &&
         isGemmType(typeOf(r.getResult()).getElementType());
}

/// Whether tcc-fuse will sum `r` as a column sum in the region of the op
/// that computes what it sums (through exact widenings and reshapes): a
/// GPT-2 residual gradient, whose region then writes the attention
/// projection's or fc2's bias gradient instead of a GEMM's column sum
/// reading it again.
/// (Not a loss's gradient, whose sum stays the GEMM's: isColumnSum.)
static bool summedInRegion(ReduceSumOp r) {
  Value dy = stripReshapes(CastOp::beforeExactWidening(r.getInput()));
  Operation *def = dy.getDefiningOp();
  // tcc-fuse expands a last-axis f32 layer_norm_grad into fusible ops.
  return fusion::isColumnSum(r) && def &&
         (fusion::expandsLayerNormGrad(def) ||
          fusion::classify(def) != fusion::OpKind::None);
}

/// Erases `op` and then every op that fed only it, as far as they are
/// ours to erase (pure tcc ops left without users).
static void eraseWithDeadOperands(Operation *op) {
  SmallVector<Operation *> work{op};
  while (!work.empty()) {
    Operation *o = work.pop_back_val();
    if (!o->use_empty())
      continue;
    SmallVector<Value> operands(o->getOperands());
    o->erase();
    for (Value v : operands)
      if (Operation *def = v.getDefiningOp())
        if (isa<ReshapeOp, CastOp>(def) && def->use_empty())
          work.push_back(def);
  }
}

/// Moves the ops that use `v` and precede `at`, and the ops that use
/// those and precede `at`, to right after `at`, in their order. They are
/// the consumers of a bias gradient (its optimizer update), which
/// tcc-plan-memory orders anyway; moving them rather than moving `at`'s
/// operands up leaves the forward values the weight gradient reads where
/// they were (moving those changed what the fuser kept across the loss).
/// False, with nothing moved, when there are more than a few or `at` reads
/// one of them.
static bool sinkUsersAfter(Value v, Operation *at) {
  SetVector<Operation *> sink;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *u : x.getUsers()) {
      // `at` itself reading them: they cannot follow it.
      if (u == at || u->getBlock() != at->getBlock())
        return false;
      if (!u->isBeforeInBlock(at) || !sink.insert(u))
        continue;
      if (sink.size() > 8)
        return false;
      for (Value res : u->getResults())
        work.push_back(res);
    }
  }
  SmallVector<Operation *> ordered(sink.begin(), sink.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  Operation *pos = at;
  for (Operation *op : ordered) {
    op->moveAfter(pos);
    pos = op;
  }
  return true;
}

namespace {
struct GemmEpiloguePass final
    : public tcc::impl::GemmEpiloguePassBase<GemmEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    reluBackwardReadsOutput(fn);
    SmallVector<GeluGradOp> dgelus;
    fn.walk([&](GeluGradOp g) { dgelus.push_back(g); });
    for (GeluGradOp g : dgelus)
      fuseDgelu(g);
    SmallVector<MatmulOp> matmuls;
    fn.walk([&](MatmulOp mm) { matmuls.push_back(mm); });
    for (MatmulOp mm : matmuls)
      fuseForward(mm);
    SmallVector<ReduceSumOp> sums;
    fn.walk([&](ReduceSumOp r) {
      if (isBiasGradSum(r) && !(columnSums && (summedInRegion(r) ||
                                               packing::sumsPackedGradient(r))))
        sums.push_back(r);
    });
    for (ReduceSumOp r : sums)
      fuseBiasGrad(r);
  }

private:
  void reluBackwardReadsOutput(func::FuncOp fn);
  void fuseDgelu(GeluGradOp g);
  void fuseForward(MatmulOp mm);
  void fuseBiasGrad(ReduceSumOp r);
};
} // namespace

void GemmEpiloguePass::reluBackwardReadsOutput(func::FuncOp fn) {
  fn.walk([&](ReluGradOp g) {
    Value z = g.getInput();
    for (Operation *user : z.getUsers()) {
      auto relu = dyn_cast<ReluOp>(user);
      if (!relu || relu->getBlock() != g->getBlock() ||
          !relu->isBeforeInBlock(g) || relu.getType() != z.getType())
        continue;
      g.getInputMutable().assign(relu.getResult());
      LLVM_DEBUG(llvm::dbgs()
                 << "relu_grad reads the relu output: " << g << "\n");
      return;
    }
  });
}

/// The reduce_sum over all leading axes of `v`, seen through reshapes that
/// keep the last dimension and exact f32 widenings (its bias gradient), or
/// null.
static ReduceSumOp biasGradOf(Value v) {
  SmallVector<Value> work{v};
  for (size_t i = 0; i < work.size() && i < 8; ++i)
    for (Operation *user : work[i].getUsers()) {
      if (auto r = dyn_cast<ReduceSumOp>(user))
        if (isBiasGradSum(r))
          return r;
      if (isa<ReshapeOp, CastOp>(user) &&
          stripReshapes(CastOp::beforeExactWidening(user->getResult(0))) ==
              work[i])
        work.push_back(user->getResult(0));
    }
  return {};
}

void GemmEpiloguePass::fuseDgelu(GeluGradOp g) {
  if (g.getApproximate() != "tanh")
    return;
  auto mm = g.getGrad().getDefiningOp<MatmulOp>();
  if (!mm || !isRowGemm(mm) || !g.getGrad().hasOneUse() ||
      mm->getBlock() != g->getBlock())
    return;
  // The sum reads the gradient, so it and its users follow the op.
  ReduceSumOp sum = biasGradOf(g.getResult());
  OpBuilder b(g);
  auto op = MatmulEpilogueOp::create(
      b, g.getLoc(), g.getType(), sum ? sum.getType() : Type(), mm.getLhs(),
      mm.getRhs(), Value(), g.getInput(),
      sum ? "dgelu_tanh_bgrad" : "dgelu_tanh", false, mm.getTransposeRhs());
  LLVM_DEBUG(llvm::dbgs() << "dgelu: " << op << "\n");
  g.getResult().replaceAllUsesWith(op.getResult());
  g->erase();
  mm->erase();
  if (sum) {
    sum.getResult().replaceAllUsesWith(op.getAux());
    eraseWithDeadOperands(sum);
  }
}

void GemmEpiloguePass::fuseForward(MatmulOp mm) {
  if (!isRowGemm(mm))
    return;
  Value cur = mm.getResult();
  Type elem = typeOf(cur).getElementType();
  // A slice of the product commutes with the element-wise epilogue: the op
  // computes on the whole product and its results are sliced. When the
  // slice drops columns (tcc-pad-shapes' padded vocabulary), the bias is
  // placed at the columns the slice keeps, zeros elsewhere.
  SliceOp slice = dyn_cast_or_null<SliceOp>(soleUser(cur));
  if (slice)
    cur = slice.getResult();
  int64_t n = typeOf(cur).getShape().back();
  Operation *last = nullptr; // the op whose result the epilogue's D replaces
  Value bias;
  SmallVector<Operation *> chain{mm};
  if (slice)
    chain.push_back(slice);
  if (auto add = dyn_cast_or_null<AddOp>(soleUser(cur))) {
    Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
    if (add.getLhs() != add.getRhs() &&
        typeOf(other) == RankedTensorType::get({n}, elem) &&
        add.getType() == cur.getType()) {
      bias = other;
      last = add;
      cur = add.getResult();
      chain.push_back(add);
    }
  }
  // The activation: the only user, or (GELU) one of several, whose other
  // users then read the saved pre-activation.
  Operation *act = nullptr;
  bool aux = false;
  if (Operation *u = soleUser(cur); u && (isa<ReluOp>(u) || isTanhGelu(u))) {
    act = u;
  } else if (!cur.use_empty()) {
    for (Operation *u : cur.getUsers())
      if (isTanhGelu(u) && (!act || u->isBeforeInBlock(act)))
        act = u;
    aux = act != nullptr;
  }
  if (act && act->getResult(0).getType() != cur.getType())
    act = nullptr, aux = false;
  if (act) {
    last = act;
    chain.push_back(act);
  }
  if (!last)
    return;
  std::string name = bias ? "bias" : "";
  if (act) {
    name += name.empty() ? "" : "_";
    name += isa<ReluOp>(act) ? "relu" : aux ? "gelu_tanh_aux" : "gelu_tanh";
  }
  // At the last op of the chain every operand (the bias too) is available.
  // The pre-activation's other users read `aux`: when one of them precedes
  // the activation, the op goes before it (still after the operands, which
  // precede the pre-activation's definition).
  Operation *at = last;
  if (aux)
    for (Operation *u : cur.getUsers())
      if (u->getBlock() != at->getBlock())
        return;
      else if (u->isBeforeInBlock(at))
        at = u;
  OpBuilder b(at);
  auto full = typeOf(mm.getResult());
  int64_t fullCols = full.getShape().back();
  if (bias && fullCols != n) {
    int64_t last = full.getRank() - 1;
    bias =
        SliceGradOp::create(b, bias.getLoc(), bias, ArrayRef<int64_t>{fullCols},
                            ArrayRef<int64_t>{slice.getStarts()[last]},
                            ArrayRef<int64_t>{slice.getSteps()[last]});
  }
  auto op = MatmulEpilogueOp::create(
      b, last->getLoc(), full, aux ? Type(full) : Type(), mm.getLhs(),
      mm.getRhs(), bias, Value(), name, false, mm.getTransposeRhs());
  LLVM_DEBUG(llvm::dbgs() << "forward: " << op << "\n");
  auto sliced = [&](Value v) -> Value {
    if (!slice)
      return v;
    return SliceOp::create(b, slice.getLoc(), slice.getType(), v,
                           slice.getStarts(), slice.getSizes(),
                           slice.getSteps());
  };
  Value d = sliced(op.getResult());
  if (aux)
    cur.replaceAllUsesExcept(sliced(op.getAux()), act);
  last->getResult(0).replaceAllUsesWith(d);
  for (Operation *o : llvm::reverse(chain))
    o->erase();
}

void GemmEpiloguePass::fuseBiasGrad(ReduceSumOp r) {
  Value dy = stripReshapes(CastOp::beforeExactWidening(r.getInput()));
  auto rt = typeOf(r.getResult());
  // dy, its zero pads of the last axis (whose padded columns sum to zero:
  // the op sums them too and the result is sliced back) and the reshapes of
  // either with the same last dimension, as a 2-D GEMM reads them.
  SmallVector<Value> views{dy};
  for (Operation *u : dy.getUsers())
    if (auto p = dyn_cast<SliceGradOp>(u); p && p.padsLastAxisOnly())
      views.push_back(p.getResult());
  // Transposes that keep the last axis last only reorder the rows: the
  // sum over every leading axis is the same (a sequence-major attention's
  // output projection reads its gradient so).
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *u : views[i].getUsers()) {
      Value out;
      if (auto re = dyn_cast<ReshapeOp>(u)) {
        if (typeOf(re.getResult()).getRank() >= 1 &&
            stripReshapes(re.getResult()) == views[i])
          out = re.getResult();
      } else if (auto t = dyn_cast<TransposeOp>(u)) {
        if (t.getPerm().back() == typeOf(t.getInput()).getRank() - 1)
          out = t.getResult();
      }
      if (out && !llvm::is_contained(views, out))
        views.push_back(out);
    }
  for (Value v : views) {
    auto vt = typeOf(v);
    if (vt.getRank() != 2 || (rt.getElementType() != vt.getElementType() &&
                              !rt.getElementType().isF32()))
      continue;
    int64_t cols = vt.getShape().back();
    bool padded = cols != rt.getShape().back();
    for (Operation *u : v.getUsers()) {
      auto mm = dyn_cast<MatmulOp>(u);
      if (!mm || mm->getBlock() != r->getBlock() ||
          !isGemmType(typeOf(mm.getResult()).getElementType()) ||
          typeOf(mm.getLhs()).getRank() != 2 ||
          typeOf(mm.getRhs()).getRank() != 2)
        continue;
      const char *name = nullptr;
      if (mm.getRhs() == v && !mm.getTransposeRhs() && mm.getLhs() != v)
        name = "bgrad_rhs";
      else if (mm.getLhs() == v && mm.getTransposeLhs() && mm.getRhs() != v)
        name = "bgrad_lhs";
      if (!name)
        continue;
      // The op replaces the matmul; the sum's users that come earlier (its
      // optimizer update) follow it.
      OpBuilder b(mm);
      auto op = MatmulEpilogueOp::create(
          b, mm.getLoc(), mm.getType(), rt.clone({cols}), mm.getLhs(),
          mm.getRhs(), Value(), Value(), name, mm.getTransposeLhs(),
          mm.getTransposeRhs());
      LLVM_DEBUG(llvm::dbgs() << "bias gradient: " << op << "\n");
      if (!sinkUsersAfter(r.getResult(), op)) {
        op->erase();
        continue;
      }
      Value sum = op.getAux();
      if (padded) {
        b.setInsertionPointAfter(op);
        int64_t n = rt.getShape().back();
        sum = SliceOp::create(b, op.getLoc(), rt, sum, ArrayRef<int64_t>{0},
                              ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1})
                  .getResult();
      }
      mm.getResult().replaceAllUsesWith(op.getResult());
      r.getResult().replaceAllUsesWith(sum);
      mm->erase();
      eraseWithDeadOperands(r);
      return;
    }
  }
}
