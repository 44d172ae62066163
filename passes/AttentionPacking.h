//===- AttentionPacking.h - Which attention ops tcc-pack-attention packs --===//
//
// The matching that tcc-pack-attention does, shared with tcc-gemm-epilogue
// (which runs first and must leave alone the bias gradient that the packed
// attention_grad will sum): q, k and v as the thirds of one QKV projection,
// the concatenation that merges their gradients back, and the bias
// gradient's reduce_sum of that merged gradient.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_ATTENTIONPACKING_H
#define TCC_PASSES_ATTENTIONPACKING_H

#include "dialects/tcc/TccOps.h"

namespace mlir::tcc::packing {

/// The projection X ([B..., T, 3E]) whose three thirds q, k and v are, in
/// order, each as reshape(slice(X)) to [B..., T, H, D]; null otherwise.
Value projectionOf(Value q, Value k, Value v);

/// The concat that merges the three gradients of `g` back into the
/// projection's gradient (of `projType`), each through a reshape with no
/// other user, or null.
ConcatOp mergedGradients(AttentionGradOp g, RankedTensorType projType);

/// The bias gradient of `grad` (a projection's gradient [B..., T, 3E]):
/// a reduce_sum over every axis but the last, f32 [3E], of `grad` through
/// reshapes that keep the last axis and an exact widening; null if none.
ReduceSumOp columnSumOf(Value grad);

/// Whether tcc-pack-attention will make `r` the column sums of a fused-QKV
/// attention_grad (when asked to): it is columnSumOf of the concatenation
/// that merges a packable attention_grad's three gradients.
bool sumsPackedGradient(ReduceSumOp r);

} // namespace mlir::tcc::packing

#endif // TCC_PASSES_ATTENTIONPACKING_H
