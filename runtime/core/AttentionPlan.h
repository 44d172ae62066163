//===- AttentionPlan.h - How the GPU attention chunks its batch -*- C++ -*-===//
//
// The CUDA `attention` / `attention_grad` kernels (runtime/cuda/
// CudaAttention.h) keep one chunk of batch entries' scores in a kernel
// scratch. The plan depends on the shapes only. It lives here, without any
// CUDA header, so that the compiler's memory report (compiler/codegen/
// MemoryReport.cpp) predicts the same scratch the runtime allocates.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ATTENTIONPLAN_H
#define TCC_RUNTIME_CORE_ATTENTIONPLAN_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <vector>

namespace tcc::rt {

/// Scratch the chunks aim to stay within (at least one batch entry is
/// always processed at a time, whatever it needs).
constexpr int64_t kAttentionScratchBudget = 256ll << 20;

/// The sizes of one attention instr and how its batch is chunked.
struct AttentionPlan {
  int64_t batch = 0, tq = 0, tk = 0, d = 0, dv = 0;
  /// Batch entries per chunk (>= 1 when batch > 0; the last may be
  /// smaller).
  int64_t chunk = 0;
  /// Elements from one entry's [Tq, Tk] scores to the next in the scratch:
  /// Tq * Tk rounded up to 128 elements, so every entry starts 256-byte
  /// aligned for cuBLASLt.
  int64_t entryStride = 0;
  /// Byte offset of P in the scratch (S, f32, starts at 0), and the total.
  int64_t pOffset = 0, scratchBytes = 0;
};

/// The plan for q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv] of dtype
/// `t` (rank >= 3, one rank): as many entries per chunk as
/// kAttentionScratchBudget holds (at least one), spread evenly over the
/// chunks. `chunkCap` > 0 caps the chunk (tests use it to run several
/// chunks on small shapes).
AttentionPlan planAttention(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v, DType t,
                            int64_t chunkCap = 0);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ATTENTIONPLAN_H
