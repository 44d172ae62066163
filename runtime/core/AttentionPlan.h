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
#include "runtime/core/AttentionColumnSums.h"
#include "runtime/core/abi/KernelAbi.h"

#include <cstdint>
#include <vector>

// attentionRowOffset is also the CUDA kernels' (a device function there).
#ifdef __CUDACC__
#define TCC_HOST_DEVICE __host__ __device__
#else
#define TCC_HOST_DEVICE
#endif

namespace tcc::rt {

/// Scratch the chunks aim to stay within (at least one batch entry is
/// always processed at a time, whatever it needs).
constexpr int64_t kAttentionScratchBudget = 256ll << 20;

/// The sizes of one attention instr.
///
/// Layouts (AttentionAttrs::seqMajor, tcc.attention's `seq_major`): packed,
/// q [B..., Tq, D], or sequence-major, q [B..., Tq, H, D] (what
/// nn.MultiheadAttention's [T, N·H, D] and a [B, T, H, D] head split are
/// before their transposes). Either way the batch entries are e = (o, h),
/// o over B... and h over H (H = 1 when packed), numbered e = o * H + h;
/// k, v, out, dout and the gradients share the layout, lse is always
/// [entries, Tq] and the mask indexes entries the same way. Row i of entry
/// e of an operand with `cols` columns and `rows` rows per entry starts at
/// attentionRowOffset(e, i, heads, rows, cols); rows are `heads * cols`
/// elements apart.
///
/// Fused QKV (tcc.attention's `fused_qkv`, AttentionAttrs::fusedQkv;
/// sequence-major only): q, k and v are one tensor [B..., T, 3H, D], the
/// QKV projection, whose heads [0, H), [H, 2H) and [2H, 3H) are q's, k's
/// and v's, and attention_grad writes dq, dk and dv into one tensor of that
/// layout. Their rows are then 3 * H * D elements apart and k and v (dk, dv)
/// start H * D and 2 * H * D elements in (inputPitch, inputOffset); out and
/// dout keep H * D.
struct AttentionDims {
  int64_t batch = 0, tq = 0, tk = 0, d = 0, dv = 0;
  /// H: entries per outer index (1 when not sequence-major).
  int64_t heads = 1;
  bool fusedQkv = false;

  /// Elements from one row to the next of q, k or v (`cols` per row: d or
  /// dv).
  int64_t inputPitch(int64_t cols) const {
    return (fusedQkv ? 3 : 1) * heads * cols;
  }
  /// Where q (0), k (1) or v (2) starts in its tensor, in elements.
  int64_t inputOffset(int part) const {
    return fusedQkv ? part * heads * d : 0;
  }
  /// Row pitch and element offset of entry `e` of an operand with `rows`
  /// rows and `cols` columns per entry: `part` 0, 1, 2 for q, k, v and
  /// their gradients (the thirds of one tensor when fused QKV), -1 for out
  /// and dout.
  int64_t pitch(int64_t cols, int part) const {
    return part >= 0 ? inputPitch(cols) : heads * cols;
  }
  inline int64_t entryOffset(int64_t e, int64_t rows, int64_t cols,
                             int part) const;
};

/// The sizes and how the batch is chunked on the GPU.
struct AttentionPlan : AttentionDims {
  AttentionPlan(const AttentionDims &dims = {}) : AttentionDims(dims) {}
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

/// Element offset of row `i` of entry `e` in an operand of `rows` rows and
/// `cols` columns per entry, in the layout of `heads` (see AttentionDims),
/// rows `pitch` elements apart (heads * cols unless fused QKV).
TCC_HOST_DEVICE inline int64_t attentionRowOffset(int64_t e, int64_t i,
                                                  int64_t heads, int64_t rows,
                                                  int64_t cols, int64_t pitch) {
  return ((e / heads) * rows + i) * pitch + (e % heads) * cols;
}
TCC_HOST_DEVICE inline int64_t attentionRowOffset(int64_t e, int64_t i,
                                                  int64_t heads, int64_t rows,
                                                  int64_t cols) {
  return attentionRowOffset(e, i, heads, rows, cols, heads * cols);
}

inline int64_t AttentionDims::entryOffset(int64_t e, int64_t rows, int64_t cols,
                                          int part) const {
  return attentionRowOffset(e, 0, heads, rows, cols, pitch(cols, part)) +
         (part >= 0 ? inputOffset(part) : 0);
}

/// The sizes of q, k and v of one rank >= 3 (>= 3 also when `seqMajor`:
/// B... may be empty), shapes as the kernels' checks accept them. With
/// `fusedQkv`, q, k and v are the projection [B..., T, 3H, D] each.
AttentionDims attentionDims(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v, bool seqMajor,
                            bool fusedQkv = false);
/// The same in the layout an attention / attention_grad instr's attributes
/// give.
AttentionDims attentionDims(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v,
                            const abi::AttentionAttrs &a);

/// The plan for q, k, v (see attentionDims) of dtype `t`: as many entries
/// per chunk as kAttentionScratchBudget holds (at least one), spread evenly
/// over the chunks; sequence-major chunks are then rounded down to whole
/// groups of `heads` entries when one group fits. `chunkCap` > 0 caps the chunk
/// (tests use it to run several chunks on small shapes).
AttentionPlan planAttention(const std::vector<int64_t> &q,
                            const std::vector<int64_t> &k,
                            const std::vector<int64_t> &v, DType t,
                            bool seqMajor, int64_t chunkCap = 0);
/// The same from the sizes.
AttentionPlan planAttention(const AttentionDims &dims, DType t,
                            int64_t chunkCap = 0);

/// Whether the GPU's tiled attention kernels (runtime/cuda/CudaAttention.h:
/// the scores stay on the chip, no chunk scratch) take these sizes and
/// dtype: 16-bit operands, D = Dv of 16, 32, 64, 80, 96 or 128 (a kernel
/// each: GPT-2, BERT and ViT use 64, Phi-2 80, Phi-3 96, Llama 128), rows
/// and keys. Otherwise the chunk loop of planAttention runs.
inline bool attentionTilesFit(const AttentionDims &dims, DType t) {
  bool headDim = dims.d == 16 || dims.d == 32 || dims.d == 64 || dims.d == 80 ||
                 dims.d == 96 || dims.d == 128;
  return (t == DType::BF16 || t == DType::F16) && dims.d == dims.dv &&
         headDim && dims.tq >= 1 && dims.tk >= 1 && dims.batch >= 1;
}

/// The scratch of the tiled kernels: D = rowsum(dO O) of the backward, one
/// f32 per row of every entry (256-byte multiple).
inline int64_t attentionTilesScratch(const AttentionDims &dims) {
  return (dims.batch * dims.tq * 4 + 255) / 256 * 256;
}

/// Whether the instr writes column sums (a fused-QKV attention_grad's
/// second output).
inline bool attentionWritesColumnSums(const Instr &in) {
  return abi::is(in, abi::KernelId::AttentionGrad) && in.outputs.size() == 2;
}

/// attention_grad's column sums (fused QKV; AttentionColumnSums.h): the
/// slices' f32 sums [attentionSumSlices, attentionSumCols], in the GPU's
/// scratch after what the backward takes itself (from a 256-byte
/// boundary), attentionSumsBytes long.
inline int64_t attentionSumSlices(const AttentionDims &d) {
  return d.heads > 0 ? d.batch / d.heads * attentionSumTiles(d.tq) : 0;
}
inline int64_t attentionSumCols(const AttentionDims &d) {
  return 3 * d.heads * d.d;
}
inline int64_t attentionSumsBytes(const AttentionDims &d) {
  return (attentionSumSlices(d) * attentionSumCols(d) * 4 + 255) / 256 * 256;
}
/// Where they start after `scratch` bytes of the backward's own.
inline int64_t attentionSumsOffset(int64_t scratch) {
  return (scratch + 255) / 256 * 256;
}

/// The scratch the GPU's attention takes by default: the tiled kernels' when
/// they fit, else the chunk plan's (what the compiler's memory report
/// predicts; TCC_CUDA_ATTENTION=chunked or an older GPU takes the latter),
/// and a backward's column sums when it writes them.
int64_t attentionScratchBytes(const AttentionDims &dims, DType t,
                              bool columnSums = false);
int64_t attentionScratchBytes(const std::vector<int64_t> &q,
                              const std::vector<int64_t> &k,
                              const std::vector<int64_t> &v, DType t,
                              bool seqMajor);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ATTENTIONPLAN_H
