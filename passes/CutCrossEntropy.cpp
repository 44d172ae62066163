//===- CutCrossEntropy.cpp - LM head + cross-entropy -> one op ------------===//
//
// tcc-cut-cross-entropy ("cut cross-entropy", Wijmans et al. 2024) replaces
// a language model's head and its loss,
//
//   logits = matmul(hidden, W) [+ bias]       W [D, V], or [V, D] read
//                                              transposed (transpose_rhs, or
//                                              a tcc.transpose of it)
//   loss   = softmax_cross_entropy(logits, labels)
//
// with tcc.linear_cross_entropy, whose kernels stream the vocabulary in
// blocks and whose gradient (tcc.linear_cross_entropy_grad) recomputes each
// block of logits from the saved row log-sum-exp. The unfused step stores
// the logits [N, V] for the backward and their gradient [N, V] beside them;
// the fused one stores one float per row and a [N, block] slice while a
// kernel runs. ignore_index and label_smoothing carry over unchanged.
//
// It runs after tcc-build-loss (which appends the loss) and before
// tcc-autodiff (the gradient rule is the point). Left alone, with the reason
// recorded for `tcc compile --report`:
//   * logits, the matmul result or the bias sum with another user (a
//     returned output, a second loss): they would still be computed;
//   * a transposed hidden (transpose_lhs), a weight of rank != 2, a bias
//     that is not [V], element types other than f32;
//   * fewer than `min-classes` classes (tcc compile: 256): a classifier's
//     logits are small, and the fused backward recomputes them with a GEMM.
// The outcome is the module attribute `tcc.cut_cross_entropy`, a sentence
// the compiler copies into the artifact's metadata and its report.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Debug.h"

#include <string>

#define DEBUG_TYPE "tcc-cut-cross-entropy"

namespace mlir::tcc {
#define GEN_PASS_DEF_CUTCROSSENTROPYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// A matched head: the operands of tcc.linear_cross_entropy.
struct Head {
  Value hidden, weight, bias;
  bool transposeWeight = false;
  MatmulOp matmul;
};
} // namespace

/// Matches the head under `ce`'s logits; on failure `why` says what stops it.
static FailureOr<Head> matchHead(SoftmaxCrossEntropyOp ce, std::string &why) {
  Value logits = ce.getLogits();
  if (!logits.hasOneUse()) {
    why = "the logits have another user (an output or a second loss)";
    return failure();
  }
  if (!typeOf(logits).getElementType().isF32()) {
    why = "the logits are not f32";
    return failure();
  }
  Head h;
  Value mmResult = logits;
  if (auto add = logits.getDefiningOp<AddOp>()) {
    for (auto [m, b] : {std::pair{add.getLhs(), add.getRhs()},
                        std::pair{add.getRhs(), add.getLhs()}}) {
      if (m.getDefiningOp<MatmulOp>() && m.getType() == logits.getType()) {
        mmResult = m;
        h.bias = b;
        break;
      }
    }
    if (!h.bias) {
      why = "the logits are a sum that is not matmul + bias";
      return failure();
    }
    if (!mmResult.hasOneUse()) {
      why = "the head's matmul result has another user";
      return failure();
    }
  }
  h.matmul = mmResult.getDefiningOp<MatmulOp>();
  if (!h.matmul) {
    why = "the logits are not computed by a matmul";
    return failure();
  }
  RankedTensorType rt = typeOf(h.matmul.getRhs());
  if (h.matmul.getTransposeLhs() || rt.getRank() != 2 ||
      typeOf(h.matmul.getLhs()).getRank() < 2) {
    why = "the head matmul is not hidden[..., D] x W (rank-2 weight, "
          "hidden not transposed)";
    return failure();
  }
  int64_t v = typeOf(logits).getShape().back();
  if (h.bias && typeOf(h.bias).getShape() != ArrayRef<int64_t>{v}) {
    why = "the bias is not a vector over the vocabulary";
    return failure();
  }
  h.hidden = h.matmul.getLhs();
  h.weight = h.matmul.getRhs();
  h.transposeWeight = h.matmul.getTransposeRhs();
  // W^T written as a transpose of a [V, D] weight (torch's Linear exported
  // as MatMul): read the weight itself, transposed.
  if (auto t = h.weight.getDefiningOp<TransposeOp>())
    if (!h.transposeWeight && t.getPerm() == ArrayRef<int64_t>{1, 0}) {
      h.weight = t.getInput();
      h.transposeWeight = true;
    }
  for (Value x : {h.hidden, h.weight, h.bias})
    if (x && !typeOf(x).getElementType().isF32()) {
      why = "the head's operands are not f32";
      return failure();
    }
  return h;
}

namespace {
struct CutCrossEntropyPass final
    : public tcc::impl::CutCrossEntropyPassBase<CutCrossEntropyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string outcome;
    int fused = 0;
    SmallVector<SoftmaxCrossEntropyOp> losses;
    module.walk([&](SoftmaxCrossEntropyOp ce) { losses.push_back(ce); });
    for (SoftmaxCrossEntropyOp ce : losses) {
      std::string why;
      FailureOr<Head> h = matchHead(ce, why);
      int64_t classes = typeOf(ce.getLogits()).getShape().back();
      if (succeeded(h) && classes < static_cast<int64_t>(minClasses)) {
        why = std::to_string(classes) + " classes, fewer than min-classes " +
              std::to_string(static_cast<int64_t>(minClasses)) +
              " (small logits cost little to store)";
        h = failure();
      }
      if (failed(h)) {
        LLVM_DEBUG(llvm::dbgs() << "not fused: " << why << "\n");
        outcome = "not applied: " + why;
        continue;
      }
      OpBuilder b(ce);
      auto fusedOp = LinearCrossEntropyOp::create(
          b, ce.getLoc(), h->hidden, h->weight, ce.getLabels(), h->bias,
          b.getBoolAttr(h->transposeWeight), ce.getIgnoreIndexAttr(),
          ce.getLabelSmoothingAttr(), b.getI64IntegerAttr(block));
      ce.getResult().replaceAllUsesWith(fusedOp.getLoss());
      Operation *logitsDef = ce.getLogits().getDefiningOp();
      ce.erase();
      // The bias add (if any), the matmul and a transpose nothing else reads.
      SmallVector<Operation *> dead{logitsDef};
      if (logitsDef != h->matmul.getOperation())
        dead.push_back(h->matmul);
      Operation *t = h->matmul.getRhs().getDefiningOp<TransposeOp>();
      for (Operation *op : dead)
        op->erase();
      if (t && t->use_empty())
        t->erase();
      ++fused;
      ++numFused;
    }
    if (fused)
      outcome = "fused " + std::to_string(fused) +
                " head matmul + cross-entropy (vocabulary blocks of " +
                std::to_string(static_cast<int64_t>(block)) +
                "; the logits are not stored)";
    else if (outcome.empty())
      outcome = "not applied: no softmax_cross_entropy loss";
    module->setAttr("tcc.cut_cross_entropy",
                    StringAttr::get(&getContext(), outcome));
  }
};
} // namespace
