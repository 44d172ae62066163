//===- AttentionPlan.cpp - How the GPU attention chunks its batch ---------===//
#include "runtime/core/AttentionPlan.h"

#include <algorithm>

namespace tcc::rt {

static int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

AttentionPlan planAttention(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v, DType t,
                            int64_t chunkCap) {
  AttentionPlan p;
  size_t r = q.size();
  p.tq = q[r - 2];
  p.d = q[r - 1];
  p.tk = k[r - 2];
  p.dv = v[r - 1];
  p.batch = 1;
  for (size_t i = 0; i + 2 < r; ++i)
    p.batch *= q[i];
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
  p.pOffset = p.chunk * p.entryStride * static_cast<int64_t>(sizeof(float));
  p.scratchBytes =
      p.pOffset + p.chunk * p.entryStride * static_cast<int64_t>(dtypeSize(t));
  return p;
}

} // namespace tcc::rt
