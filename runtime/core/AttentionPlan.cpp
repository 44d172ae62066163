//===- AttentionPlan.cpp - How the GPU attention chunks its batch ---------===//
#include "runtime/core/AttentionPlan.h"

#include <algorithm>

namespace tcc::rt {

static int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

AttentionDims attentionDims(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v, bool seqMajor,
                            bool fusedQkv) {
  AttentionDims p;
  size_t r = q.size();
  // [B..., T, D]; sequence-major [B..., T, H, D]; fused QKV [B..., T, 3H, D].
  size_t rowDim = seqMajor ? r - 3 : r - 2;
  p.fusedQkv = fusedQkv;
  p.heads = seqMajor ? q[r - 2] / (fusedQkv ? 3 : 1) : 1;
  p.tq = q[rowDim];
  p.d = q[r - 1];
  p.tk = k[rowDim];
  p.dv = v[r - 1];
  p.batch = p.heads;
  for (size_t i = 0; i < rowDim; ++i)
    p.batch *= q[i];
  return p;
}

AttentionDims attentionDims(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v,
                            const abi::AttentionAttrs &a) {
  return attentionDims(q, k, v, a.seqMajor, a.fusedQkv);
}

AttentionPlan planAttention(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v, DType t,
                            bool seqMajor, int64_t chunkCap) {
  return planAttention(attentionDims(q, k, v, seqMajor), t, chunkCap);
}

AttentionPlan planAttention(const AttentionDims &dims, DType t,
                            int64_t chunkCap) {
  AttentionPlan p = dims;
  // 128 elements: 256 bytes of a 16-bit P, 512 of S.
  p.entryStride = roundUp(p.tq * p.tk, 128);
  int64_t perEntry =
      p.entryStride * static_cast<int64_t>(sizeof(float) + dtypeSize(t));
  if (p.batch == 0 || perEntry == 0) { // no scores: nothing in the scratch
    p.chunk = p.batch;
    return p;
  }
  int64_t most = std::max<int64_t>(1, kAttentionScratchBudget / perEntry);
  if (chunkCap > 0)
    most = std::min(most, chunkCap);
  most = std::min(most, p.batch);
  // As few chunks as the budget allows, of (nearly) equal size: no small
  // last chunk that would cost its own cuBLASLt plan for little work.
  int64_t chunks = (p.batch + most - 1) / most;
  p.chunk = (p.batch + chunks - 1) / chunks;
  // Sequence-major entries sharing an outer index are one strided-batched
  // GEMM on the GPU: chunks of whole groups of heads keep every such call
  // full and alike (one cuBLASLt plan whatever the chunk), so when a group
  // fits, round down to groups rather than up (less scratch).
  if (p.heads > 1 && p.chunk >= p.heads)
    p.chunk = p.chunk / p.heads * p.heads;
  p.pOffset = p.chunk * p.entryStride * static_cast<int64_t>(sizeof(float));
  p.scratchBytes =
      p.pOffset + p.chunk * p.entryStride * static_cast<int64_t>(dtypeSize(t));
  return p;
}

int64_t attentionScratchBytes(const AttentionDims &dims, DType t,
                              bool columnSums) {
  int64_t own = attentionTilesFit(dims, t)
                    ? attentionTilesScratch(dims)
                    : planAttention(dims, t).scratchBytes;
  return columnSums ? attentionSumsOffset(own) + attentionSumsBytes(dims) : own;
}

int64_t attentionScratchBytes(const std::vector<int64_t> &q,
                              const std::vector<int64_t> &k,
                              const std::vector<int64_t> &v, DType t,
                              bool seqMajor) {
  return attentionScratchBytes(attentionDims(q, k, v, seqMajor), t);
}

} // namespace tcc::rt
