//===- TccGradientsAttention.cpp - Gradient rule of tcc.attention ---------===//
//
// The backward recomputes the probabilities from the saved log-sum-exp
// (tcc.attention_grad), so the forward saves query, key, value, its output
// and lse: O(T) per row instead of the O(T^2) probabilities.
//
// Neither the mask nor lse gets a gradient. tcc-fuse-attention only fuses
// masks that do not depend on a parameter and lse has no user in the graphs
// it builds; an IR that needs either gets an error here or from tcc-autodiff
// (which reports an active operand without a gradient).
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

using namespace mlir;
using namespace mlir::tcc;

SmallVector<Value> AttentionOp::buildGradients(OpBuilder &b, ValueRange grads) {
  if (grads[1]) {
    // The contract of GradientOpInterface has no failure value: a rule that
    // cannot differentiate reports the error and returns no gradients.
    emitError("tcc.attention: the loss depends on the log-sum-exp result, "
              "which has no gradient rule (only the attention output is "
              "differentiable)");
    return {};
  }
  if (getFusedQkv()) {
    emitError("tcc.attention: fused_qkv attention has no gradient rule (it is "
              "formed after autodiff, by tcc-pack-attention)");
    return {};
  }
  if (!grads[0])
    return SmallVector<Value>(getNumOperands(), Value());
  auto g = AttentionGradOp::create(
      b, getLoc(), getQuery(), getKey(), getValue(), getResult(), getLse(),
      grads[0], getMask(), getScaleAttr(), getCausalAttr(), getSeqMajorAttr());
  SmallVector<Value> out(g.getGrads());
  if (getMask())
    out.push_back(Value()); // no mask gradient (see the file comment)
  return out;
}
