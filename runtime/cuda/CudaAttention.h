//===- CudaAttention.h - Memory-efficient attention on the GPU --*- C++ -*-===//
//
// The `attention` and `attention_grad` kernels of runtime/core/abi/Kernels.h
// without a [B, Tq, Tk] tensor: the B batch entries (q's leading dims,
// flattened, and its heads when sequence-major) are processed in chunks of
// `chunk` entries, and only one chunk's scores live in the kernel scratch
// (CudaArgs::scratch):
//
//   S  f32 [chunk, Tq, Tk]   Q K^T (forward and backward), then dP = dO V^T
//   P  q's dtype [chunk, Tq, Tk]   exp(scale S + mask - lse), then dS
//
// Forward per chunk: S = Q K^T (cuBLASLt, f32 out), the row pass
// (attentionRows: scale, mask, causal, max, sum, lse, P), O = P V.
// Backward per chunk: S = Q K^T, P from the saved lse, dV = P^T dO,
// dP = dO V^T (f32, over S), the dS row pass (D = rowsum(dO O) in f32,
// dS = P (dP - D) scale, over P), dQ = dS K, dK = dS^T Q. Every batch entry
// belongs to one chunk and nothing accumulates across chunks: results are
// deterministic and do not depend on the chunk size.
//
// Layouts (AttentionAttrs::seqMajor; runtime/core/AttentionPlan.h): the
// GEMMs read and write q, k, v, out, dout and the gradients where they are.
// Packed ([B..., T, D]), a chunk is one strided-batched call per GEMM.
// Sequence-major ([B..., T, H, D]), the chunk splits into runs of entries
// that share their outer index: one call per run, batch stride D between
// heads and leading dim H * D between rows (as Megatron-LM's attention
// calls strided-batched GEMMs on [s, b * np, hn]), so no transposes. S and
// P stay packed per entry in the scratch.
//
// cuBLASLt has no alpha here (CudaGemm::Problem): `scale` is applied in the
// row passes. 16-bit P and dS are rounded once, as 16-bit GEMM operands (as
// on the CPU). dS is computed from the stored P, which for 16-bit types is
// the rounded one (the CPU uses the f32 P): S and dP share one f32 buffer,
// so the scratch is 6 bytes a score for bf16 instead of 10, and dS then
// differs from the CPU's by at most about one 16-bit rounding.
//
// The GEMMs go through an AttentionGemm: CudaGemm::gemm on the GPU
// (attentionGemm, CudaGemm.cpp); the emulator tests pass a host GEMM, so
// the chunk loop and the row kernels run without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAATTENTION_H
#define TCC_RUNTIME_CUDA_CUDAATTENTION_H

#include "runtime/core/AttentionPlan.h"
#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/CudaKernels.h"

#include <functional>

namespace tcc::rt::cuda {

// The chunk plan (runtime/core/AttentionPlan.h, shared with the compiler's
// memory report).
using rt::AttentionPlan;
using rt::attentionTilesFit;
using rt::attentionTilesScratch;
using rt::kAttentionScratchBudget;
using rt::planAttention;

/// One strided-batched row-major GEMM of the chunk loop (CudaGemm::gemm's
/// contract: m, n, k >= 1; 16-bit A and B may give an f32 C).
using AttentionGemm = std::function<void(
    const CudaGemm::Problem &, const void *a, const void *b, void *c)>;

/// CudaGemm::gemm on a.gemm (defined in CudaGemm.cpp; the emulator tests
/// define a host GEMM instead).
AttentionGemm attentionGemm(const CudaArgs &a);

/// The chunk loops (operands as checkInstr accepts them, device pointers;
/// a.scratch holds plan.scratchBytes).
void runAttention(const CudaArgs &a, const AttentionPlan &plan,
                  const AttentionGemm &gemm);
void runAttentionGrad(const CudaArgs &a, const AttentionPlan &plan,
                      const AttentionGemm &gemm);

// --- The row kernels (CudaKernelsAttention.cu) ----------------------------

/// Where one chunk's rows are and how the mask broadcasts over them.
struct AttentionRows {
  long long rows = 0; // chunk entries * Tq
  long long tq = 0, tk = 0;
  long long entryStride = 0; // of S and P in the scratch (elements)
  long long firstRow = 0;    // the chunk's first row in lse: b0 * Tq
  long long firstEntry = 0;  // b0
  /// Entries per outer index of dO and O (AttentionPlan::heads): row i of
  /// entry e at attentionRowOffset(e, i, heads, tq, dv).
  long long heads = 1;
  /// mask[e * mEntry + i * mRow + j * mCol] (f32), or none.
  const float *mask = nullptr;
  long long mEntry = 0, mRow = 0, mCol = 0;
  bool causal = false;
  float scale = 1.0f;
};

/// Forward row pass: s = scale S + mask (-inf where causal and j > i);
/// lse = max + log(sum exp(s - max)) into lse[firstRow + r]; P =
/// exp(s - lse) in dtype `tp`. With `fromLse` the saved lse is read instead
/// (the backward's recomputation).
void attentionRows(const AttentionRows &r, const float *s, void *p, int tp,
                   float *lse, bool fromLse, cudaStream_t stream);

/// Backward row pass: D = sum_d dO O (the rows of dO and O in the layout
/// of r.heads, Dv elements of dtype `to`), dS = P (dP - D) scale written
/// over P (dtype `tp`).
void attentionGradRows(const AttentionRows &r, const float *dp, void *p, int tp,
                       const void *dout, const void *out, int to, long long dv,
                       cudaStream_t stream);

// --- Column sums (CudaKernelsAttention.cu) ---------------------------------
//
// A fused-QKV attention_grad with a second output writes the projection
// gradient's column sums in runtime/core/AttentionColumnSums.h's order: each
// slice's sums into `parts` [slices, cols] f32 (the scratch, after what the
// backward itself takes: attentionSumsOffset), then each column's total.
// The tiled kernels add their slices as they store their tiles
// (AttentionTiles::colParts); after the chunk loop attentionSliceSums reads
// the gradient for them.

/// The slices' sums of g (rows [outer * tq, cols] of dtype tg) into parts.
void attentionSliceSums(const void *g, int tg, long long outer, long long tq,
                        long long cols, float *parts, cudaStream_t stream);

/// Each column's total of the slices' sums, into out (f32 [cols]).
void attentionColumnTotals(const float *parts, long long slices, long long cols,
                           float *out, cudaStream_t stream);

// --- Tiled attention (CudaKernelsAttentionTiled.cu) ------------------------
//
// For 16-bit q, k, v with D = Dv of 16, 32, 64, 80, 96 or 128, on a GPU of
// compute capability 8.0 or later: the scores never leave the chip. A block
// of 4 warps takes 64 rows of one batch entry (16 per warp; 128 and 32 with
// TCC_CUDA_ATTENTION_WARP_ROWS=32, up to D = 64, 80 or 96 by kernel) and
// walks the other side in tiles of 64 through shared memory; the products
// are PTX mma.sync tensor-core instructions (m16n8k16, f32 accumulation)
// whose score fragments stay in registers (FlashAttention-2's scheme).
//  - forward, per query tile: S = Q K^T, the online softmax (running max and
//    sum per row, O rescaled as the max grows), O += P V; O = O / sum and
//    lse = max + log(sum) at the end;
//  - backward, in two kernels so no result is accumulated with atomics (a
//    run is reproducible bit for bit): per key tile dV = sum P^T dO and
//    dK = sum dS^T Q; per query tile dQ = sum dS K; both recompute P from
//    the saved lse, and D = rowsum(dO O) is computed once into the scratch.
// Causal attention visits only the tiles on or below the diagonal. Rows and
// keys past Tq / Tk are zeros in shared memory and never written back.
// Tiles come from global memory by TMA tensor copies on sm_90 (TileCopies;
// TCC_CUDA_ATTENTION_COPY=async or older GPUs: cp.async); products are
// sm_90a's warpgroup products on swizzled tiles at head dim 64
// (TileProducts; TCC_CUDA_ATTENTION_MMA=sync or elsewhere: mma.sync a
// warp).

/// One tiled attention or attention_grad launch (device pointers; the
/// layout is AttentionDims's: heads > 1 is sequence-major).
struct AttentionTiles {
  const void *q = nullptr, *k = nullptr, *v = nullptr; // 16-bit, of `dtype`
  const void *o = nullptr, *dout = nullptr; // backward: O (any float), dO
  void *out = nullptr;                      // forward: O (dtype `outType`)
  float *lse = nullptr;                     // [batch, tq]
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  int dqType = 0, dkType = 0, dvType = 0, outType = 0, oType = 0;
  float *rowDot = nullptr; // backward: D, [batch, tq] f32 (the scratch)
  /// Backward, fused QKV: the slices' column sums of dq, dk and dv as
  /// stored ([slices, inputPitch] f32, slice outer * tiles + row / 64:
  /// runtime/core/AttentionColumnSums.h), or none.
  float *colParts = nullptr;
  int dtype = 0;           // kDtBF16 or kDtF16
  long long batch = 0, tq = 0, tk = 0, heads = 1;
  /// Elements from one row of q, k, v or their gradients to the next
  /// (heads * d, or 3 * heads * d when they are the thirds of one
  /// projection: fused_qkv; out and dout: heads * d).
  long long inputPitch = 0;
  int d = 0;
  /// mask[e * mEntry + i * mRow + j * mCol] (f32), or none.
  const float *mask = nullptr;
  long long mEntry = 0, mRow = 0, mCol = 0;
  bool causal = false;
  float scale = 1.0f;
};

/// TCC_CUDA_ATTENTION's value: unset, empty or 'tiled' (the tiled kernels
/// where they fit: true) or 'chunked' (always the chunk loop, to compare
/// the two on a GPU: false); anything else throws Error naming it.
bool tiledAttentionAllowed(const char *value);

/// TCC_CUDA_ATTENTION_WARP_ROWS's value: the rows each warp of the tiled
/// kernels owns. Unset, empty or '16' (one m16 tile a warp, 64-row blocks:
/// 16) or '32' (two, 128-row blocks, FlashAttention-2's shape, for the
/// kernels whose registers hold them at the head dim: 32); anything else
/// throws Error naming it.
int attentionWarpRows(const char *value);

/// The rows a warp of the tiled kernels owns (16 or 32): the value of
/// setTiledAttentionWarpRows if one is set, else TCC_CUDA_ATTENTION_WARP_ROWS
/// (read once).
int tiledAttentionWarpRows();

/// Makes the tiled launches that follow use warps of `rows` rows (16 or
/// 32, as TCC_CUDA_ATTENTION_WARP_ROWS would; tests run both), or, with 0,
/// the environment's again; other values throw Error.
void setTiledAttentionWarpRows(int rows);

/// How the tiled kernels copy their tiles from global to shared memory.
enum class TileCopies {
  Environment, ///< as TCC_CUDA_ATTENTION_COPY says (setTiledAttentionCopies)
  Async,       ///< cp.async by every thread, 16 bytes a copy
  /// Tensor copies (TMA, CudaTma.cuh): one instruction a tile, issued by
  /// one thread and counted on an mbarrier; GPUs of compute capability 9.0
  /// and later, kernels of 16-row warps, 16-byte aligned rows
  /// (attentionTmaFits); elsewhere Async. The default, the faster of the
  /// two on GPT-2 small (benchmarks/results/design-measurements.md).
  Tma,
};

/// TCC_CUDA_ATTENTION_COPY's value: unset, empty or 'tma' (Tma) or
/// 'async' (Async); anything else throws Error naming it.
TileCopies attentionTileCopies(const char *value);

/// setTiledAttentionCopies's choice if one is set, else
/// TCC_CUDA_ATTENTION_COPY's (read once).
TileCopies tiledAttentionCopies();

/// Makes the tiled launches that follow copy as `copies` says (tests run
/// both), or, with Environment, as the environment says again.
void setTiledAttentionCopies(TileCopies copies);

/// Whether launch `t` (the backward's with `grad`) may take its tiles by
/// tensor copies on a GPU of compute capability `major`: 9 or more, every
/// row of q, k, v (and dO) 16-byte aligned (aligned operands, pitches of
/// whole 16-byte units; D is a multiple of 8), and coordinates that fit
/// the copies' 32-bit ones.
bool attentionTmaFits(const AttentionTiles &t, bool grad, int major);

/// Whether launch `t` takes its tiles by tensor copies: Tma is chosen and
/// this GPU and the operands allow them.
bool tiledAttentionTma(const AttentionTiles &t, bool grad);

/// How the tiled kernels multiply their tiles.
enum class TileProducts {
  Environment, ///< as TCC_CUDA_ATTENTION_MMA says (setTiledAttentionProducts)
  Sync,        ///< mma.sync a warp, operands by ldmatrix
  /// Warpgroup products (wgmma, CudaWgmma.cuh) on tiles that tensor copies
  /// put in shared memory in the 128-byte swizzle: sm_90a (a runtime built
  /// for it, on a GPU of compute capability 9.0), head dim 64 and what
  /// tensor copies need (attentionWgmmaFits); elsewhere Sync. The default,
  /// the faster of the two on GPT-2 small both ways
  /// (benchmarks/results/design-measurements.md).
  Wgmma,
};

/// TCC_CUDA_ATTENTION_MMA's value: unset, empty or 'wgmma' (Wgmma) or
/// 'sync' (Sync); anything else throws Error naming it.
TileProducts attentionTileProducts(const char *value);

/// setTiledAttentionProducts's choice if one is set, else
/// TCC_CUDA_ATTENTION_MMA's (read once).
TileProducts tiledAttentionProducts();

/// Makes the tiled launches that follow multiply as `products` says (tests
/// run both), or, with Environment, as the environment says again.
void setTiledAttentionProducts(TileProducts products);

/// Whether launch `t` may take warpgroup products on a GPU of compute
/// capability `major` (and minor 0, which sm_90a code requires): the
/// runtime's kernels built for sm_90a, major 9, head dim 64 (a tile row is
/// one 128-byte swizzle span) and attentionTmaFits.
bool attentionWgmmaFits(const AttentionTiles &t, bool grad, int major,
                        int minor);

/// Whether launch `t` takes warpgroup products (and with them tensor
/// copies): Wgmma is chosen and this GPU and the operands allow them.
bool tiledAttentionWgmma(const AttentionTiles &t, bool grad);

/// Dynamic shared memory the largest tiled kernel takes, over head dims
/// and both warp shapes (dQ at D = 96 with 32 rows a warp: 104 KiB; the
/// GPU must allow a block that much).
int attentionTiledSmemBytes();

void attentionTiledForward(const AttentionTiles &t, cudaStream_t stream);
void attentionTiledBackward(const AttentionTiles &t, cudaStream_t stream);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAATTENTION_H
