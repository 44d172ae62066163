//===- CudaKernelsAttentionTiled.cu - Attention in on-chip tiles ----------===//
//
// See CudaAttention.h (AttentionTiles). A block is kWarps = 4 warps; warp
// w owns 16 MT rows of the block's 64 MT-row tile, MT m16 tiles of 16 rows
// (16 MT w + 16 m..). MT, the kernels' template parameter, is 1 unless
// TCC_CUDA_ATTENTION_WARP_ROWS=32 asks for 2 (FlashAttention-2's 32 rows a
// warp) and the head dim's registers allow it (warpTiles). The tiles of
// the other side pass through shared memory 64 rows at a time. As in
// FlashAttention-2 the scores never leave the registers: each product is a
// run of PTX `mma.sync.m16n8k16` tensor-core instructions (16-bit
// operands, f32 accumulators) whose accumulator fragment is where the
// element-wise steps (scale, mask, causal, exponentials, the online
// softmax) happen, and which becomes, packed to 16 bits, the A operand of
// the next product (P V, P^T dO, dS^T Q, dS K) without a round trip through
// shared memory.
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16"; lane = 4 g + t):
//   A 16 x 16 (row-major): a[0] = row g, cols 2t, 2t+1; a[1] = row g + 8;
//     a[2] = row g, cols 2t + 8, 2t + 9; a[3] = row g + 8, cols 2t + 8..
//   B 16 x 8 (k x n): b[0] = rows 2t, 2t + 1 of col g; b[1] = rows + 8
//   C 16 x 8 (f32): c[0], c[1] = row g, cols 2t, 2t + 1; c[2], c[3] = row
//     g + 8
// so a lane owns two rows of each m-tile's score tile (g and g + 8) and a
// row's 64 scores are spread over the four lanes 4g..4g+3 (two shuffles
// reduce it). Fragments come from shared memory by `ldmatrix` (A operands,
// and B operands that are rows of a tile: K for Q K^T, two n-tiles at
// once) and `ldmatrix.trans` (B operands that are columns of a tile: V for
// P V): one instruction a 4-register fragment pair.
//
// What bounds them is instruction issue, not shared-memory bytes (the
// integer/logic pipe is the busiest, the tensor pipes far from it). So the
// element-wise steps are kept to a few instructions a score: scores in
// log2 units (scale log2 e folded into one multiply or fused multiply-add),
// exponentials as one ex2.approx.ftz, fragments packed by one paired
// conversion, the backward's scale applied once to dK and dQ at the store.
//
// At MT = 2 each B fragment feeds twice the mmas, and the forward keeps
// Q's A fragments, dQ Q's and dO's, in registers for the whole walk
// (HeldRows; up to D = 64), at up to 255 registers a thread (2 blocks a
// multiprocessor); it measured slower than MT = 1 both ways.
//
// Tiles move from global to shared memory with cp.async, two deep: a step
// starts the copies of the next step's tiles, then multiplies its own. Or,
// on sm_90 (TCC_CUDA_ATTENTION_COPY=tma, the default), by one TMA tensor
// copy a tile (see "Tensor copies" below). With warpgroup products
// (TCC_CUDA_ATTENTION_MMA=wgmma, the default where they fit: sm_90a, D =
// 64, MT = 1; TileMode kWgmmaTiles) the block's 4 warps are one warpgroup and
// each product is sm_90a's wgmma on the whole 64-row tile (CudaWgmma.cuh;
// wgRows and wgScores), its tiles dense and 128-byte swizzled by the tensor
// copies; wgmma's accumulator fragment is the C fragment above, repeated,
// so the element-wise code is the same.
//
// Shared memory (dynamic): 16-bit tiles, rows D + 8 elements apart (16-byte
// rows for ldmatrix and cp.async; the 16 bytes of padding put the 8 rows
// that a fragment load touches in different banks): the block's own tiles
// of 64 MT rows and two of each of the other side's of 64. D = 64, MT = 1 /
// 2: forward 45 / 54 KiB, dK / dV 55 / 73 KiB, dQ 54 / 72 KiB; D = 128 (MT
// = 1 only): 85, 103 and 102 KiB; the most is dQ's at D = 96 and MT = 2,
// 104 KiB.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/Ptx.h"
#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"
#include "runtime/cuda/CudaTma.cuh"
#include "runtime/cuda/CudaWgmma.cuh"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

namespace tcc::rt::cuda {

namespace {

constexpr int kTile = 64;             // rows of the other side's tiles
constexpr int kWarps = 4;             // a block's warps
constexpr int kThreads = kWarps * 32; // 128
constexpr int kSteps = kTile / 8;     // 8-column accumulator tiles per row
constexpr int kHalf = kTile / 2;      // the backward's score columns at once
constexpr float kNegInf = -INFINITY;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

/// Rows a block owns with MT m16 tiles a warp: 64 or 128.
__host__ __device__ constexpr int blockRows(int mt) { return kWarps * 16 * mt; }

enum TiledKernel { kForward, kKVGrad, kQGrad };

/// How a kernel's tiles arrive and are multiplied: by cp.async and
/// mma.sync; by tensor copies (TCC_CUDA_ATTENTION_COPY=tma) and mma.sync;
/// or by tensor copies in the 128-byte swizzle and warpgroup products
/// (TCC_CUDA_ATTENTION_MMA=wgmma, CudaWgmma.cuh).
enum TileMode { kAsyncTiles, kTmaTiles, kWgmmaTiles };
__host__ __device__ constexpr bool tmaMode(int mode) {
  return mode != kAsyncTiles;
}

/// The largest head dim at which kernel k takes two m16 tiles a warp: the
/// accumulators of both fit the 255 registers a thread has without
/// spilling (ptxas, sm_90a). dK's and dV's two m-tiles are 2 D registers
/// (at D = 80 the kernel spills 196 bytes); the forward spills from D = 96,
/// dQ at D = 128. Larger head dims keep MT = 1.
__host__ __device__ constexpr int widestForTwoTiles(TiledKernel k) {
  return k == kKVGrad ? 64 : k == kForward ? 80 : 96;
}

/// The m16 tiles a warp of kernel k takes at head dim d when `mt` are asked
/// for (2: TCC_CUDA_ATTENTION_WARP_ROWS=32).
__host__ __device__ constexpr int warpTiles(TiledKernel k, int d, int mt) {
  return mt > 1 && d <= widestForTwoTiles(k) ? 2 : 1;
}

/// Blocks per multiprocessor a kernel is built for (its register cap). MT
/// = 1, up to D = 64: 4 forward and for dQ (128 registers each, no
/// spills), 3 for dK / dV (164: both accumulators); larger head dims keep
/// what they need.
/// MT = 2: 2, which caps nothing (a thread has at most 255 registers).
/// With wgmma (D = 64) 4 for each: its products take no operand registers,
/// and dK / dV's kernel fits 128 (ptxas 13.0, sm_90a: 28 bytes spilled,
/// reloaded by 5 loads a half step, with lse and D read where first used).
__host__ __device__ constexpr int blocksFor(TiledKernel k, int d, int mt,
                                            int mode = kAsyncTiles) {
  return mt > 1 ? 2 : d > 64 ? 1 : k == kKVGrad && mode != kWgmmaTiles ? 3 : 4;
}

/// 16-bit tile row stride for head dim d: 8 elements of padding, which
/// keep ldmatrix's rows in different banks; wgmma's tiles are swizzled
/// instead and dense.
__host__ __device__ constexpr int ldTile(int d, int mode = kAsyncTiles) {
  return mode == kWgmmaTiles ? d : d + 8;
}
__host__ __device__ constexpr int tileBytes(int d, int rows = kTile,
                                            int mode = kAsyncTiles) {
  return rows * ldTile(d, mode) * 2;
}
/// wgmma's tiles start 1024-byte aligned (their swizzle is of address bits
/// 7-9): the kernels align their shared memory, which takes this much more.
constexpr int kSwizzleAlign = 1024;
/// Bytes of shared memory. The forward: the block's Q tile and two of K
/// and V (the step's and the next, loaded while the step runs). dK / dV:
/// the block's K and V, two of Q and dO and lse and D of two steps' 64
/// queries. dQ: the block's Q and dO, two of K and V.
__host__ __device__ constexpr int forwardSmem(int d, int mt,
                                              int mode = kAsyncTiles) {
  return tileBytes(d, blockRows(mt), mode) + 4 * tileBytes(d, kTile, mode);
}
__host__ __device__ constexpr int kvGradSmem(int d, int mt,
                                             int mode = kAsyncTiles) {
  return 2 * tileBytes(d, blockRows(mt), mode) + 4 * tileBytes(d, kTile, mode) +
         4 * kTile * 4;
}
__host__ __device__ constexpr int qGradSmem(int d, int mt,
                                            int mode = kAsyncTiles) {
  return 2 * tileBytes(d, blockRows(mt), mode) + 4 * tileBytes(d, kTile, mode);
}

template <int Dt> __device__ __forceinline__ unsigned short toBits(float v) {
  return Dt == kDtBF16 ? toBf16Bits(v) : toF16Bits(v);
}
/// Two values as one 32-bit fragment register (the first in the low half).
/// On the GPU one paired conversion (cvt.rn.bf16x2.f32 / f16x2): the same
/// round-to-nearest-even as two single ones, a third of the instructions.
template <int Dt>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
#ifdef TCC_CUDA_EMULATE
  return static_cast<unsigned>(toBits<Dt>(lo)) |
         static_cast<unsigned>(toBits<Dt>(hi)) << 16;
#else
  if constexpr (Dt == kDtBF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
  }
#endif
}

/// c += A B: one m16n8k16 tensor-core product.
template <int Dt>
__device__ __forceinline__ void mma(float *c, const unsigned *a,
                                    const unsigned *b) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::mma16816(Dt, c, a, b);
#else
  if constexpr (Dt == kDtBF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]));
#endif
}

/// Four 8 x 8 16-bit matrices, transposed: lane l passes the address of
/// row l % 8 of matrix l / 8 (16-byte aligned, shared memory); r[m] of lane
/// 4 g + t holds matrix m's [2t][g] (low half) and [2t + 1][g].
__device__ __forceinline__ void ldmatrixTrans(const unsigned short *row,
                                              unsigned *r) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::ldmatrixX4Trans(row, r);
#else
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(at));
#endif
}

/// Four 8 x 8 16-bit matrices: lane l passes the address of row l % 8 of
/// matrix l / 8 (16-byte aligned, shared memory); r[m] of lane 4 g + t
/// holds matrix m's [g][2t] (low half) and [g][2t + 1]. One instruction
/// for what takes four 32-bit loads: the kernels issue instructions, not
/// shared-memory bytes, at their limit.
__device__ __forceinline__ void ldmatrix(const unsigned short *row,
                                         unsigned *r) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::ldmatrixX4(row, r);
#else
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
#endif
}

/// The A fragment of rows r0.., columns c0.. of a 16-bit tile (ld apart):
/// matrices (rows r0, cols c0), (r0 + 8, c0), (r0, c0 + 8), (r0 + 8, c0 +
/// 8) are a[0..3].
__device__ __forceinline__ void loadA(const unsigned short *tile, int ld,
                                      int r0, int c0, unsigned *a) {
  const int lane = threadIdx.x & 31;
  ldmatrix(tile + (r0 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + c0 +
               (lane >> 4) * 8,
           a);
}

/// The B fragments (k x n = 16 x 8) whose column n is row n0 + n (b0) and
/// row n0 + 8 + n (b1) of a tile, k its columns k0..: K for Q K^T, Q for K
/// Q^T, dO for V dO^T, V for dO V^T. Matrices (rows n0, cols k0), (n0, k0
/// + 8), (n0 + 8, k0), (n0 + 8, k0 + 8).
__device__ __forceinline__ void loadBRows(const unsigned short *tile, int ld,
                                          int n0, int k0, unsigned *b0,
                                          unsigned *b1) {
  const int lane = threadIdx.x & 31;
  unsigned r[4];
  ldmatrix(tile + (n0 + (lane & 7) + (lane >> 4) * 8) * ld + k0 +
               ((lane >> 3) & 1) * 8,
           r);
  b0[0] = r[0];
  b0[1] = r[1];
  b1[0] = r[2];
  b1[1] = r[3];
}

/// The B fragments of rows k0..k0+15 and columns n0..n0+15 of a tile (two
/// 16 x 8 fragments: columns n0.. in b0, n0 + 8.. in b1): V for P V, dO for
/// P^T dO, Q for dS^T Q, K for dS K.
__device__ __forceinline__ void loadBCols(const unsigned short *tile, int ld,
                                          int k0, int n0, unsigned *b0,
                                          unsigned *b1) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  unsigned r[4];
  ldmatrixTrans(tile + (k0 + (m & 1) * 8 + (lane & 7)) * ld + n0 + (m >> 1) * 8,
                r);
  b0[0] = r[0];
  b0[1] = r[1];
  b1[0] = r[2];
  b1[1] = r[3];
}

/// The warp's A operand of a row product, its MT m16 tiles of rows r0..
/// (r0 + 16 m.. for tile m) of a shared tile, loaded at each k-step: K and
/// V in dK / dV, and the forward's Q and dQ's Q and dO with MT = 1.
template <int D, int MT> struct SharedRows {
  const unsigned short *tile = nullptr;
  int r0 = 0;
  __device__ __forceinline__ void init(const unsigned short *at, int row) {
    tile = at;
    r0 = row;
  }
  /// The fragments of columns kk..kk+15.
  __device__ __forceinline__ void at(int kk, unsigned (*fa)[4]) const {
    TCC_UNROLL
    for (int mi = 0; mi < MT; ++mi)
      loadA(tile, ldTile(D), r0 + 16 * mi, kk, fa[mi]);
  }
};

/// The same operand read once into registers (4 MT per 16 columns): a
/// loop invariant then costs no shared-memory loads per step, and the
/// products load only their B fragments. The tile must be in (copied and
/// a barrier passed) when init runs.
template <int D, int MT> struct HeldRows {
  unsigned f[D / 16][MT][4];
  __device__ __forceinline__ void init(const unsigned short *tile, int r0) {
    TCC_UNROLL
    for (int kk = 0; kk < D / 16; ++kk)
      TCC_UNROLL
    for (int mi = 0; mi < MT; ++mi)
      loadA(tile, ldTile(D), r0 + 16 * mi, kk * 16, f[kk][mi]);
  }
  __device__ __forceinline__ void at(int kk, unsigned (*fa)[4]) const {
    TCC_UNROLL
    for (int mi = 0; mi < MT; ++mi)
      TCC_UNROLL
    for (int e = 0; e < 4; ++e)
      fa[mi][e] = f[kk / 16][mi][e];
  }
};

/// acc (MT tiles of 16 x N f32: N / 8 fragments each) = the warp's rows
/// of `a` (SharedRows or HeldRows) times rows 0..N-1 of tile `b`
/// transposed, over D columns: Q K^T, K Q^T, dO V^T, V dO^T. Each B
/// fragment serves all MT m-tiles.
template <int Dt, int D, int MT, int N = kTile, class A>
__device__ __forceinline__ void productRows(const A &a, const unsigned short *b,
                                            float (*acc)[N / 8][4]) {
  constexpr int ld = ldTile(D);
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi)
    TCC_UNROLL
  for (int n = 0; n < N / 8; ++n)
    TCC_UNROLL
  for (int e = 0; e < 4; ++e)
    acc[mi][n][e] = 0.0f;
  TCC_UNROLL
  for (int kk = 0; kk < D; kk += 16) {
    unsigned fa[MT][4];
    a.at(kk, fa);
    TCC_UNROLL
    for (int n = 0; n < N / 8; n += 2) {
      unsigned b0[2], b1[2];
      loadBRows(b, ld, n * 8, kk, b0, b1);
      TCC_UNROLL
      for (int mi = 0; mi < MT; ++mi) {
        mma<Dt>(acc[mi][n], fa[mi], b0);
        mma<Dt>(acc[mi][n + 1], fa[mi], b1);
      }
    }
  }
}

/// acc (MT tiles of 16 x D f32: D / 8 fragments each) += P times rows
/// 0..N-1 of the tile `b`, P the MT tiles of 16 x N score fragments `p`
/// rounded to 16 bits: P V, P^T dO, dS^T Q, dS K. Each pair of B
/// fragments (one ldmatrix) serves all MT m-tiles.
template <int Dt, int D, int MT, int N = kTile>
__device__ __forceinline__ void productScores(const float (*p)[N / 8][4],
                                              const unsigned short *b,
                                              float (*acc)[D / 8][4]) {
  constexpr int ld = ldTile(D);
  TCC_UNROLL
  for (int kk = 0; kk < N / 16; ++kk) {
    unsigned fa[MT][4];
    TCC_UNROLL
    for (int mi = 0; mi < MT; ++mi) {
      const float(*s)[4] = p[mi];
      fa[mi][0] = pack2<Dt>(s[2 * kk][0], s[2 * kk][1]);
      fa[mi][1] = pack2<Dt>(s[2 * kk][2], s[2 * kk][3]);
      fa[mi][2] = pack2<Dt>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      fa[mi][3] = pack2<Dt>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
    TCC_UNROLL
    for (int n = 0; n < D / 8; n += 2) {
      unsigned b0[2], b1[2];
      loadBCols(b, ld, kk * 16, n * 8, b0, b1);
      TCC_UNROLL
      for (int mi = 0; mi < MT; ++mi) {
        mma<Dt>(acc[mi][n], fa[mi], b0);
        mma<Dt>(acc[mi][n + 1], fa[mi], b1);
      }
    }
  }
}

// wgmma's forms of productRows and productScores (MT = 1, D = 64), in
// pieces, so that a kernel can issue independent products together and
// wait once: between wgmmaFence and wgmmaCommit it issues, after
// wgmmaWaitAll it holds (wgmmaHold) what the products wrote and, for a
// register A, the registers they read, which must not change before the
// wait.

/// Issues acc, the warpgroup's 64 x N f32 (the thread's N / 8 fragments,
/// as mma.sync's), = rows 0..63 of tile `a` times rows 0..N-1 of tile `b`
/// transposed, both swizzled and K-major. A k16 step further is 32 bytes:
/// 2 in the start address's 16-byte units, the descriptor's low bits.
template <int Dt, int N>
__device__ __forceinline__ void
wgRowsIssue(const unsigned short *a, const unsigned short *b, float (*acc)[4]) {
  const unsigned long long da = wgmmaDesc(smemAddress(a), 16, kSwizzleAlign),
                           db = wgmmaDesc(smemAddress(b), 16, kSwizzleAlign);
  TCC_UNROLL
  for (int kk = 0; kk < 4; ++kk)
    wgmmaSS<Dt, N>(acc, da + 2 * kk, db + 2 * kk, kk);
}

/// P, the warp's 16 x N score fragments, rounded to 16 bits as wgmma's
/// register A: one m16k16 fragment per 16 columns.
template <int Dt, int N>
__device__ __forceinline__ void packScores(const float (*p)[4],
                                           unsigned (*fa)[4]) {
  TCC_UNROLL
  for (int kk = 0; kk < N / 16; ++kk) {
    fa[kk][0] = pack2<Dt>(p[2 * kk][0], p[2 * kk][1]);
    fa[kk][1] = pack2<Dt>(p[2 * kk][2], p[2 * kk][3]);
    fa[kk][2] = pack2<Dt>(p[2 * kk + 1][0], p[2 * kk + 1][1]);
    fa[kk][3] = pack2<Dt>(p[2 * kk + 1][2], p[2 * kk + 1][3]);
  }
}

/// Issues acc (64 x D f32) += P times rows 0..N-1 of the swizzled tile `b`,
/// MN-major for the product (its rows are K), P packed in `fa`. A k16 step
/// further is 16 rows, 2048 bytes: 128 in the start address's units.
template <int Dt, int D, int N>
__device__ __forceinline__ void wgScoresIssue(const unsigned (*fa)[4],
                                              const unsigned short *b,
                                              float (*acc)[4]) {
  const unsigned long long db = wgmmaDesc(
      smemAddress(b), tileBytes(D, kTile, kWgmmaTiles), kSwizzleAlign);
  TCC_UNROLL
  for (int kk = 0; kk < N / 16; ++kk)
    wgmmaRS<Dt, D>(acc, fa[kk], db + 2 * kSwizzleAlign / 16 * kk);
}

/// Keeps packed registers alive, unchanged, until here (after the wait of
/// the products that read them).
template <int N> __device__ __forceinline__ void holdPacked(unsigned (*fa)[4]) {
#ifndef TCC_CUDA_EMULATE
  TCC_UNROLL
  for (int kk = 0; kk < N / 16; ++kk)
    asm volatile(""
                 : "+r"(fa[kk][0]), "+r"(fa[kk][1]), "+r"(fa[kk][2]),
                   "+r"(fa[kk][3])::"memory");
#else
  (void)fa;
#endif
}

/// productRows by wgmma, waited for.
template <int Dt, int N>
__device__ __forceinline__ void
wgRows(const unsigned short *a, const unsigned short *b, float (*acc)[4]) {
  wgmmaFence();
  wgRowsIssue<Dt, N>(a, b, acc);
  wgmmaCommit();
  wgmmaWaitAll();
  wgmmaHold<N>(acc);
}

/// productScores by wgmma, waited for.
template <int Dt, int D, int N>
__device__ __forceinline__ void
wgScores(const float (*p)[4], const unsigned short *b, float (*acc)[4]) {
  unsigned fa[N / 16][4];
  packScores<Dt, N>(p, fa);
  wgmmaFence();
  wgScoresIssue<Dt, D, N>(fa, b, acc);
  wgmmaCommit();
  wgmmaWaitAll();
  wgmmaHold<D>(acc);
  holdPacked<N>(fa);
}

/// Entry g's place in the operands' layout: attentionRowOffset's g / heads
/// and g % heads, computed once a kernel. 64-bit divisions are long
/// instruction sequences; in every tile copy they were the kernels' most
/// frequent integer work (Nsight Compute: the integer pipe the busiest).
struct EntryAt {
  long long outer, head;
};
__device__ __forceinline__ EntryAt entryAt(const AttentionTiles &t,
                                           long long g) {
  long long outer = g / t.heads;
  return {outer, g - outer * t.heads};
}

/// Element offset of row i of entry e (`rows` rows per entry) in an
/// operand whose rows are `pitch` elements apart: attentionRowOffset.
__device__ __forceinline__ long long rowAt(const AttentionTiles &t, EntryAt e,
                                           long long i, long long rows,
                                           long long pitch) {
  return (e.outer * rows + i) * pitch + e.head * t.d;
}

// Asynchronous copies (cp.async): a step's loads of the next tiles run
// while it multiplies the current ones. In the emulator they copy at once.
__device__ __forceinline__ void cpAsync16(void *dst, const void *src) {
#ifdef TCC_CUDA_EMULATE
  std::memcpy(dst, src, 16);
#else
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(at),
               "l"(src));
#endif
}
__device__ __forceinline__ void cpAsync4(void *dst, const void *src) {
#ifdef TCC_CUDA_EMULATE
  std::memcpy(dst, src, 4);
#else
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(at),
               "l"(src));
#endif
}
/// Closes the group of copies started since the last commit.
__device__ __forceinline__ void cpAsyncCommit() {
#ifndef TCC_CUDA_EMULATE
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
/// Waits until at most N committed groups are still in flight (this
/// thread's; a __syncthreads after it makes every thread's copies visible).
template <int N> __device__ __forceinline__ void cpAsyncWait() {
#ifndef TCC_CUDA_EMULATE
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/// Starts copying rows [r0, r0 + Rows) of entry e (`rows` per entry,
/// `pitch` apart) into a shared tile, 16 bytes per copy; rows past the end
/// are zeros.
///
/// Where the block's threads cover whole rows (kThreads a multiple of the
/// row's D / 8 copies: D = 16, 32, 64, 128), thread x copies column
/// (x mod D/8) of rows x / (D/8) + k kThreads / (D/8): a fixed trip count
/// and one source pointer advanced by a constant, about 4 instructions a
/// copy. The general loop computed each copy's row and 64-bit address
/// afresh, about 20: in the kernels' step loops (the next K and V, or Q
/// and dO) that was over a third of the forward's instructions a step
/// (cuobjdump, sm_90a, D = 64), and the kernels are issue-bound.
template <int D, int Rows = kTile>
__device__ __forceinline__ void
loadTile(const AttentionTiles &t, const void *src, long long pitch, EntryAt e,
         long long r0, long long rows, unsigned short *dst) {
  constexpr int vecs = D / 8, ld = ldTile(D);
  const unsigned short *s = static_cast<const unsigned short *>(src);
  const long long base = rowAt(t, e, r0, rows, pitch), left = rows - r0;
  const int have = left < Rows ? (left > 0 ? static_cast<int>(left) : 0) : Rows;
  if constexpr (kThreads % vecs == 0 && Rows % (kThreads / vecs) == 0) {
    constexpr int step = kThreads / vecs; // rows a pass
    const int r = static_cast<int>(threadIdx.x) / vecs,
              c = (static_cast<int>(threadIdx.x) % vecs) * 8;
    const unsigned short *from = s + (base + r * pitch + c);
    const long long advance = step * pitch;
    unsigned short *to = dst + r * ld + c;
    TCC_UNROLL
    for (int k = 0; k < Rows / step; ++k) {
      if (r + k * step < have)
        cpAsync16(to + k * step * ld, from);
      else
        *reinterpret_cast<uint4 *>(to + k * step * ld) = uint4{0, 0, 0, 0};
      from += advance;
    }
  } else {
    for (int idx = threadIdx.x; idx < Rows * vecs; idx += kThreads) {
      int r = idx / vecs, c = (idx - r * vecs) * 8;
      if (r < have)
        cpAsync16(dst + r * ld + c, s + (base + r * pitch + c));
      else
        *reinterpret_cast<uint4 *>(dst + r * ld + c) = uint4{0, 0, 0, 0};
    }
  }
}

/// Starts copying lse and D of query rows [q0, q0 + 64) of entry g (0 past
/// the end).
__device__ __forceinline__ void loadRowStats(const AttentionTiles &t,
                                             long long g, long long q0,
                                             float *lse, float *dot) {
  for (int r = threadIdx.x; r < kTile; r += kThreads) {
    if (q0 + r < t.tq) {
      cpAsync4(lse + r, t.lse + g * t.tq + q0 + r);
      cpAsync4(dot + r, t.rowDot + g * t.tq + q0 + r);
    } else {
      lse[r] = dot[r] = 0.0f;
    }
  }
}

// Tensor copies (TCC_CUDA_ATTENTION_COPY=tma, CudaTma.cuh; kernels of
// 16-row warps, whose tiles are all kTile rows): thread 0 fills a step's
// tiles with one cp.async.bulk.tensor each, counted on the mbarrier of
// that half of the double buffer; the other threads issue nothing and wait
// on it. Each operand (q, k, v, dO) has a tensor map of [outer][T][heads *
// D] elements, rows `pitch` apart, whose box is a tile: D + 8 columns
// (the padded row, ldTile) by kTile rows. The 8 columns past a head's D
// land in the padding, never read: the next head's first 8, or zeros past
// the row's heads * D; rows past T arrive as zeros. The two barriers
// follow the tiles in shared memory (kBarrierBytes); barrier b's phases
// are the fills of half b in turn, so step s waits on barrier s & 1 for
// the phase of parity (s >> 1) & 1.
constexpr int kBarrierBytes = 16;

/// The kernels' tensor maps (at least 64-byte aligned, as TMA wants them:
/// CUtensorMap itself is, 128 in CUDA 13): q, k, v and dO; a
/// __grid_constant__ kernel parameter, so that their addresses are the
/// parameters' own. NoMaps in the kernels that copy by cp.async.
struct AttentionTileMaps {
  CUtensorMap q, k, v, dout;
};
static_assert(alignof(AttentionTileMaps) >= 64,
              "TMA reads 64-byte aligned maps");
struct NoMaps {};
template <bool Tma>
using MapsOf = std::conditional_t<Tma, AttentionTileMaps, NoMaps>;

/// Where a kernel of `mode` puts its tiles in its dynamic shared memory:
/// at its start, or for wgmma at the first 1024-byte aligned byte (the
/// launch adds kSwizzleAlign bytes).
template <int Mode>
__device__ __forceinline__ unsigned char *tilesAt(unsigned char *smem) {
  if constexpr (Mode == kWgmmaTiles)
    return smem +
           (kSwizzleAlign - smemAddress(smem) % kSwizzleAlign) % kSwizzleAlign;
  else
    return smem;
}

/// Rows [r0, r0 + kTile) of entry e of the operand of `map`, into `to`.
struct TileAt {
  const CUtensorMap *map;
  int col, row, outer;
  unsigned short *to;
};
__device__ __forceinline__ TileAt tileAt(const AttentionTiles &t,
                                         const CUtensorMap &map, EntryAt e,
                                         long long r0, unsigned short *to) {
  return {&map, static_cast<int>(e.head * t.d), static_cast<int>(r0),
          static_cast<int>(e.outer), to};
}

/// Thread 0 announces the bytes of N shared tiles on `bar`, then starts the
/// tensor copies that fill them.
template <int D, int Mode, int N>
__device__ __forceinline__ void startTileCopies(const TileAt (&tiles)[N],
                                                unsigned long long *bar) {
  mbarArriveExpectTx(bar, static_cast<unsigned>(N * tileBytes(D, kTile, Mode)));
  // The reads of earlier steps (generic proxy) before the copies (async
  // proxy) that overwrite them.
  fenceProxyAsync();
  TCC_UNROLL
  for (int i = 0; i < N; ++i)
    tensorCopy3d(tiles[i].to, tiles[i].map, tiles[i].col, tiles[i].row,
                 tiles[i].outer, bar);
}

/// Fills N shared tiles by tensor copies that complete on `bar`.
template <int D, int Mode, int N>
__device__ __forceinline__ void tmaTiles(const TileAt (&tiles)[N],
                                         unsigned long long *bar) {
  if (threadIdx.x == 0)
    startTileCopies<D, Mode>(tiles, bar);
}

/// Thread 0 makes the kernel's two barriers (one arrival a phase: its own)
/// and starts the first tiles on bars[0]; the other threads use the
/// barriers after the next __syncthreads. The inits share the copies'
/// branch so that ptxas keeps them on thread 0's path: as a separate
/// `if`, it turned them into warp-uniform instructions before the branch
/// (sm_90a, the backward kernels), which compute-sanitizer's racecheck
/// charges to every lane of warp 0 and then reports thread 0's arrive as
/// an intra-warp hazard.
template <int D, int Mode, int N>
__device__ __forceinline__ void initBarriersAndTiles(const TileAt (&tiles)[N],
                                                     unsigned long long *bars) {
  if (threadIdx.x == 0) {
    mbarInit(&bars[0], 1);
    mbarInit(&bars[1], 1);
    startTileCopies<D, Mode>(tiles, &bars[0]);
  }
}

/// Whether the scores of queries [i0, i0 + ni) and keys [j0, j0 + nj) need
/// none of scoreOf's tests but the causal one: no mask, all in range. Such
/// tiles take the plain path; those on the causal diagonal (16 of the 136
/// 64-row tiles of a causal T = 1024 sequence) mask a score there with one
/// compare (colMinusRow) instead of scoreOf's tests and multiplies.
__device__ __forceinline__ bool unmaskedScores(const AttentionTiles &t,
                                               long long i0, int ni,
                                               long long j0, int nj) {
  return !t.mask && i0 + ni <= t.tq && j0 + nj <= t.tk;
}

/// Whether every score of such a tile is the plain scaled product: none
/// above the diagonal either. Most tiles are.
__device__ __forceinline__ bool plainScores(const AttentionTiles &t,
                                            long long i0, int ni, long long j0,
                                            int nj) {
  return unmaskedScores(t, i0, ni, j0, nj) && (!t.causal || j0 + nj - 1 <= i0);
}

/// Column minus row of element (n, e) of an m16n8 fragment (a lane's rows
/// r and r + 8 by e >> 1, columns c + 8 n and + 1 by e & 1), given c - r
/// of the lane's first element: compile-time offsets on one lane value.
__device__ __forceinline__ int colMinusRow(int first, int n, int e) {
  return first + 8 * n + (e & 1) - 8 * (e >> 1);
}

/// The score of query i and key j from the raw product s: scale s + mask,
/// -inf for keys past the end, padded queries and causal j > i.
__device__ __forceinline__ float scoreOf(const AttentionTiles &t, long long g,
                                         long long i, long long j, float s) {
  if (i >= t.tq || j >= t.tk || (t.causal && j > i))
    return kNegInf;
  float x = t.scale * s;
  if (t.mask)
    x += t.mask[g * t.mEntry + i * t.mRow + j * t.mCol];
  return x;
}

/// a b + c rounded once: explicit, since this library is built without
/// contraction (--fmad=false).
__device__ __forceinline__ float fmaF(float a, float b, float c) {
#ifdef TCC_CUDA_EMULATE
  return std::fma(a, b, c);
#else
  return __fmaf_rn(a, b, c);
#endif
}

/// 2^x, one MUFU.EX2 (ex2.approx.ftz): exp2f would add the tests and
/// scalings that keep subnormal results, probabilities below 2^-126 that
/// bf16 / f16 operands and f32 sums do not see. The kernels work in log2
/// units: scores times log2(e) (folded into the scale), so an exponential
/// is one fused multiply-add and this (Ptx.h's, as the generated losses').
__device__ __forceinline__ float exp2Fast(float x) { return tcc_ex2_approx(x); }

/// The sum (or max) of a row's value over the four lanes that hold it.
__device__ __forceinline__ float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
__device__ __forceinline__ float quadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/// Writes one m-tile of a warp's accumulators (16 x D), row h of the
/// lane's pair times mul[h], to rows r0.. of entry g of `dst` (dtype
/// `type`, `rows` per entry, `pitch` apart); rows past the end are not
/// written.
template <int D>
__device__ __forceinline__ void
storeAcc(const AttentionTiles &t, const float (*acc)[4], const float *mul,
         EntryAt e, long long r0, long long rows, long long pitch, void *dst,
         int type) {
  const int lane = threadIdx.x & 31, gr = lane >> 2, tc = lane & 3;
  TCC_UNROLL
  for (int h = 0; h < 2; ++h) {
    long long r = r0 + gr + 8 * h;
    if (r >= rows)
      continue;
    long long at = rowAt(t, e, r, rows, pitch);
    TCC_UNROLL
    for (int n = 0; n < D / 8; ++n) {
      int c = n * 8 + 2 * tc;
      stf(dst, type, at + c, acc[n][2 * h] * mul[h]);
      stf(dst, type, at + c + 1, acc[n][2 * h + 1] * mul[h]);
    }
  }
}

/// Column sums (AttentionTiles::colParts; runtime/core/
/// AttentionColumnSums.h): the sums of each of the warp's 16-row units
/// (m-tile mi: rows rw + 16 mi..) of what storeAcc writes of `acc` times
/// mul (the gradients have the operands' dtype Dt), rows past `rows` as 0,
/// into units[(warp MT + mi) D + column] (shared memory). A lane rounds
/// its two columns of rows g and g + 8 by paired conversions and adds the
/// rows, then three xor shuffles add the 8 lanes of a column as a tree.
template <int Dt, int D, int MT>
__device__ __forceinline__ void unitSums(const float (*acc)[D / 8][4],
                                         float mul, long long rw,
                                         long long rows, float *units) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gr = lane >> 2, tc = lane & 3;
  auto widen = [](unsigned bits) {
    unsigned short h = static_cast<unsigned short>(bits & 0xffffu);
    return Dt == kDtBF16 ? bf16Bits(h) : f16Bits(h);
  };
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi) {
    const long long r = rw + 16 * mi + gr;
    const bool in0 = r < rows, in8 = r + 8 < rows;
    TCC_UNROLL
    for (int n = 0; n < D / 8; ++n) {
      const unsigned lo = pack2<Dt>(acc[mi][n][0] * mul, acc[mi][n][1] * mul);
      const unsigned hi = pack2<Dt>(acc[mi][n][2] * mul, acc[mi][n][3] * mul);
      TCC_UNROLL
      for (int u = 0; u < 2; ++u) {
        float v = (in0 ? widen(lo >> (16 * u)) : 0.0f) +
                  (in8 ? widen(hi >> (16 * u)) : 0.0f);
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 8);
        v += __shfl_xor_sync(0xffffffffu, v, 16);
        if (gr == 0)
          units[(warp * MT + mi) * D + n * 8 + 2 * tc + u] = v;
      }
    }
  }
}

/// The block's slices (64 rows each from r0, MT of them) of unitSums'
/// units, each its four units added in order, to t.colParts: columns
/// colBase + head d.. of the projection gradient.
template <int D, int MT>
__device__ __forceinline__ void
sliceSums(const AttentionTiles &t, const float *units, EntryAt e, long long r0,
          long long rows, long long colBase) {
  const long long tiles = (rows + 63) / 64;
  for (int i = threadIdx.x; i < MT * D; i += kThreads) {
    const int s = i / D, c = i - s * D;
    const long long first = r0 + 64LL * s;
    if (first >= rows)
      continue;
    const float *u = units + 4 * s * D + c;
    t.colParts[(e.outer * tiles + first / 64) * t.inputPitch + colBase +
               e.head * t.d + c] = ((u[0] + u[D]) + u[2 * D]) + u[3 * D];
  }
}

/// The step's K and V tiles in the double buffer `kv` (K0, V0, K1, V1)
/// once they are in, after starting the copies of the next step's (keys
/// from k0 + 64) when there is one: by tensor copies on `bars`, or
/// cp.async.
template <int D, int Mode>
__device__ __forceinline__ const unsigned short *
awaitKeyTiles(const AttentionTiles &t, const MapsOf<tmaMode(Mode)> &maps,
              unsigned short *kv, unsigned long long *bars, EntryAt ge,
              long long k0, long long step, long long kEnd) {
  constexpr int tile = kTile * ldTile(D, Mode);
  if constexpr (tmaMode(Mode)) {
    if (k0 + kTile < kEnd) {
      unsigned short *next = kv + ((step + 1) & 1) * 2 * tile;
      const TileAt next2[2] = {tileAt(t, maps.k, ge, k0 + kTile, next),
                               tileAt(t, maps.v, ge, k0 + kTile, next + tile)};
      tmaTiles<D, Mode>(next2, &bars[(step + 1) & 1]);
    }
    // The copies are this thread's to see once it has waited.
    mbarWait(&bars[step & 1], static_cast<unsigned>(step >> 1) & 1);
    return kv + (step & 1) * 2 * tile;
  }
  if (k0 + kTile < kEnd) {
    unsigned short *next = kv + ((step + 1) & 1) * 2 * tile;
    loadTile<D>(t, t.k, t.inputPitch, ge, k0 + kTile, t.tk, next);
    loadTile<D>(t, t.v, t.inputPitch, ge, k0 + kTile, t.tk, next + tile);
    cpAsyncCommit();
    cpAsyncWait<1>();
  } else {
    cpAsyncWait<0>();
  }
  __syncthreads(); // every thread's copies of the step's tiles are in
  return kv + (step & 1) * 2 * tile;
}

template <int N> __device__ __forceinline__ void zero(float (*acc)[4]) {
  TCC_UNROLL
  for (int n = 0; n < N; ++n)
    TCC_UNROLL
  for (int e = 0; e < 4; ++e)
    acc[n][e] = 0.0f;
}

/// Whether a kernel keeps its loop-invariant A operands in registers
/// (HeldRows): at MT = 2 up to D = 64, where they fit beside the
/// accumulators (the forward's Q: 32 registers at D = 64; dQ's Q and dO:
/// 64; at D = 80 the accumulators alone take 252). At MT = 1 they are
/// loaded from shared memory at each step, within the register cap of 4
/// blocks a multiprocessor.
__host__ __device__ constexpr bool holdRows(int d, int mt) {
  return mt > 1 && d <= 64;
}
template <int D, int MT>
using RowsOf =
    std::conditional_t<holdRows(D, MT), HeldRows<D, MT>, SharedRows<D, MT>>;

/// The forward: block (entry g, query tile of 64 MT rows), grid batch *
/// tiles. Shared memory: Q, then K and V twice (the step's and the next),
/// then with Tma the two barriers.
template <int Dt, int D, int MT, int Mode>
__global__ void __launch_bounds__(kThreads, blocksFor(kForward, D, MT, Mode))
    attentionTiledForwardKernel(
        AttentionTiles t, const __grid_constant__ MapsOf<tmaMode(Mode)> maps) {
  constexpr bool Tma = tmaMode(Mode), Wg = Mode == kWgmmaTiles;
  static_assert(!Tma || MT == 1, "tensor copies fill tiles of kTile rows");
  static_assert(!Wg || D == 64, "wgmma's tiles are one 128-byte span wide");
  TCC_DYNAMIC_SMEM(smemBase);
  unsigned char *smem = tilesAt<Mode>(smemBase);
  constexpr int ld = ldTile(D, Mode), tile = kTile * ld, rows = blockRows(MT);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gr = lane >> 2, tc = lane & 3;
  long long tiles = (t.tq + rows - 1) / rows;
  long long g = blockIdx.x / tiles;
  const EntryAt ge = entryAt(t, g);
  // The longest causal tiles first: they finish with the others.
  long long q0 = (tiles - 1 - (blockIdx.x - g * tiles)) * rows;

  unsigned short *qs = reinterpret_cast<unsigned short *>(smem);
  unsigned short *kv = qs + rows * ld; // K0, V0, K1, V1
  unsigned long long *bars =
      reinterpret_cast<unsigned long long *>(smem + forwardSmem(D, MT, Mode));
  long long kEnd = t.causal && q0 + rows < t.tk ? q0 + rows : t.tk;
  if constexpr (Tma) {
    const TileAt first[3] = {tileAt(t, maps.q, ge, q0, qs),
                             tileAt(t, maps.k, ge, 0, kv),
                             tileAt(t, maps.v, ge, 0, kv + tile)};
    initBarriersAndTiles<D, Mode>(first, bars);
    __syncthreads(); // the barriers are made
  } else {
    loadTile<D, rows>(t, t.q, t.inputPitch, ge, q0, t.tq, qs);
    // Q held in registers: its own group, read while K and V arrive.
    if constexpr (holdRows(D, MT))
      cpAsyncCommit();
    loadTile<D>(t, t.k, t.inputPitch, ge, 0, t.tk, kv);
    loadTile<D>(t, t.v, t.inputPitch, ge, 0, t.tk, kv + tile);
    cpAsyncCommit();
  }
  RowsOf<D, MT> qa;
  if constexpr (holdRows(D, MT)) {
    cpAsyncWait<1>();
    __syncthreads(); // every thread's copies of Q are in
  }
  qa.init(qs, warp * 16 * MT);
  float o[MT][D / 8][4];
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi)
    zero<D / 8>(o[mi]);
  // m-tile mi's rows are iw + 16 mi.., the lane's i0 + 16 mi and 8 more:
  // running max m (the four lanes of a row agree) and the lane's part of
  // the row's sum l.
  const long long iw = q0 + warp * 16 * MT, i0 = iw + gr;
  float m[MT][2], l[MT][2];
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi)
    TCC_UNROLL
  for (int h = 0; h < 2; ++h) {
    m[mi][h] = kNegInf;
    l[mi][h] = 0.0f;
  }
  const float scale2 = t.scale * kLog2e;
  for (long long k0 = 0, step = 0; k0 < kEnd; k0 += kTile, ++step) {
    const unsigned short *ks =
        awaitKeyTiles<D, Mode>(t, maps, kv, bars, ge, k0, step, kEnd);
    const unsigned short *vs = ks + tile;
    float s[MT][kSteps][4];
    if constexpr (Wg)
      wgRows<Dt, kTile>(qs, ks, s[0]);
    else
      productRows<Dt, D, MT>(qa, ks, s);
    TCC_UNROLL
    for (int mi = 0; mi < MT; ++mi) {
      // Scores in log2 units (scale2 = scale log2 e), m and base too.
      float mx[2] = {kNegInf, kNegInf};
      // Two loops, not a select per score: the plain one is then a max a
      // score, without the index arithmetic, and its scale goes into the
      // exponential's multiply-add (the row max of raw scores times a
      // positive scale is the max of the scaled ones, rounding included).
      // `mul` is what that multiply-add applies: scale2 to raw scores, 1
      // to ones already scaled.
      float mul = 1.0f;
      if (unmaskedScores(t, iw + 16 * mi, 16, k0, kTile)) {
        const bool plain = plainScores(t, iw + 16 * mi, 16, k0, kTile);
        if (scale2 > 0.0f) {
          mul = scale2;
        } else {
          TCC_UNROLL
          for (int n = 0; n < kSteps; ++n)
            TCC_UNROLL
          for (int e = 0; e < 4; ++e)
            s[mi][n][e] *= scale2;
        }
        // On the diagonal: keys after the query are -inf (scaled already
        // or by mul > 0, still -inf).
        if (!plain) {
          const int first = static_cast<int>(k0 + 2 * tc - (i0 + 16 * mi));
          TCC_UNROLL
          for (int n = 0; n < kSteps; ++n)
            TCC_UNROLL
          for (int e = 0; e < 4; ++e)
            if (colMinusRow(first, n, e) > 0)
              s[mi][n][e] = kNegInf;
        }
        TCC_UNROLL
        for (int n = 0; n < kSteps; ++n)
          TCC_UNROLL
        for (int e = 0; e < 4; ++e)
          mx[e >> 1] = fmaxf(mx[e >> 1], s[mi][n][e]);
      } else {
        TCC_UNROLL
        for (int n = 0; n < kSteps; ++n)
          TCC_UNROLL
        for (int e = 0; e < 4; ++e) {
          float &x = s[mi][n][e];
          x = kLog2e * scoreOf(t, g, i0 + 16 * mi + 8 * (e >> 1),
                               k0 + n * 8 + 2 * tc + (e & 1), x);
          mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
      }
      float base[2], alpha[2], sum[2] = {0.0f, 0.0f};
      TCC_UNROLL
      for (int h = 0; h < 2; ++h) {
        float mNew = fmaxf(m[mi][h], quadMax(mx[h]) * mul);
        // No key so far: exponentials of -inf against 0 are 0, not NaN.
        base[h] = mNew == kNegInf ? 0.0f : mNew;
        alpha[h] = exp2Fast(m[mi][h] - base[h]);
        m[mi][h] = mNew;
      }
      TCC_UNROLL
      for (int n = 0; n < kSteps; ++n)
        TCC_UNROLL
      for (int e = 0; e < 4; ++e) {
        s[mi][n][e] = exp2Fast(fmaF(s[mi][n][e], mul, -base[e >> 1]));
        sum[e >> 1] += s[mi][n][e];
      }
      // The lane's share of the row sum: the quad's are added once, after
      // the last step (alpha is the row's, the same in its four lanes).
      TCC_UNROLL
      for (int h = 0; h < 2; ++h)
        l[mi][h] = l[mi][h] * alpha[h] + sum[h];
      TCC_UNROLL
      for (int n = 0; n < D / 8; ++n)
        TCC_UNROLL
      for (int e = 0; e < 4; ++e)
        o[mi][n][e] *= alpha[e >> 1];
    }
    if constexpr (Wg)
      wgScores<Dt, D, kTile>(s[0], vs, o[0]);
    else
      productScores<Dt, D, MT>(s, vs, o);
    __syncthreads(); // every warp is done with the tiles the next step fills
  }
  // No step: the first copies are still in flight.
  if constexpr (Tma) {
    if (kEnd <= 0)
      mbarWait(&bars[0], 0);
  } else {
    cpAsyncWait<0>();
  }
  // A row without any key (all masked) is NaN, as the softmax's 0 / 0.
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi) {
    float inv[2];
    TCC_UNROLL
    for (int h = 0; h < 2; ++h) {
      l[mi][h] = quadSum(l[mi][h]);
      inv[h] = l[mi][h] > 0.0f ? 1.0f / l[mi][h] : NAN;
      long long i = i0 + 16 * mi + 8 * h;
      if (tc == 0 && i < t.tq)
        t.lse[g * t.tq + i] =
            l[mi][h] > 0.0f ? m[mi][h] * kLn2 + logf(l[mi][h]) : NAN;
    }
    storeAcc<D>(t, o[mi], inv, ge, iw + 16 * mi, t.tq, t.heads * t.d, t.out,
                t.outType);
  }
}

/// D = rowsum(dO O) per row (f32), a warp per row.
__global__ void attentionRowDotKernel(AttentionTiles t) {
  long long rows = t.batch * t.tq;
  long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
  for (long long r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < rows; r += warps) {
    long long g = r / t.tq;
    long long at = rowAt(t, entryAt(t, g), r - g * t.tq, t.tq, t.heads * t.d);
    float sum = 0.0f;
    for (int c = threadIdx.x & 31; c < t.d; c += 32)
      sum += ldf(t.dout, t.dtype, at + c) * ldf(t.o, t.oType, at + c);
    sum = warpSum(sum);
    if ((threadIdx.x & 31) == 0)
      t.rowDot[r] = sum;
  }
}

/// The same with D / 8 lanes a row, each 8 columns of dO and O in one
/// 16-byte load (16-bit O, D a power of two up to 128, 16-byte aligned
/// operands, fewer than 2^31 rows: 32-bit index divisions), the lanes' sums
/// added by a butterfly in a fixed order. A warp per row read 2 bytes a
/// lane and paid two 64-bit divisions a row.
template <int D>
__global__ void __launch_bounds__(256)
    attentionRowDotVecKernel(AttentionTiles t) {
  constexpr int per = D / 8;
  const int lane = threadIdx.x & 31, part = lane % per;
  const long long total = t.batch * t.tq * per;
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
  const unsigned short *dout = static_cast<const unsigned short *>(t.dout);
  const unsigned short *o = static_cast<const unsigned short *>(t.o);
  const unsigned tq = static_cast<unsigned>(t.tq);
  const unsigned heads = static_cast<unsigned>(t.heads);
  // Whole warps go round together (the butterfly needs every lane).
  for (long long w0 =
           (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 32LL;
       w0 < total; w0 += warps * 32) {
    const long long idx = w0 + lane;
    const unsigned r = static_cast<unsigned>(idx / per);
    float sum = 0.0f;
    if (idx < total) {
      unsigned g = r / tq, i = r - g * tq, outer = g / heads;
      long long at = (static_cast<long long>(outer) * tq + i) * (heads * D) +
                     static_cast<long long>(g - outer * heads) * D + part * 8;
      uint4 a = *reinterpret_cast<const uint4 *>(dout + at);
      uint4 b = *reinterpret_cast<const uint4 *>(o + at);
      TCC_UNROLL
      for (int e = 0; e < 8; ++e)
        sum += halfOf(a, e, t.dtype) * halfOf(b, e, t.oType);
    }
    TCC_UNROLL
    for (int off = per / 2; off > 0; off >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (idx < total && part == 0)
      t.rowDot[r] = sum;
  }
}

/// dK and dV: block (entry g, key tile of 64 MT rows); the warp owns 16 MT
/// keys and walks the query tiles (64 rows) that see them. Shared memory:
/// K, V, then twice (the step's and the next) Q, dO and lse and D of the
/// step's 64 queries, then with Tma the two barriers (lse and D still
/// come by cp.async: rows of 64 floats that need not be 16-byte aligned).
template <int Dt, int D, int MT, int Mode>
__global__ void __launch_bounds__(kThreads, blocksFor(kKVGrad, D, MT, Mode))
    attentionTiledKVGradKernel(
        AttentionTiles t, const __grid_constant__ MapsOf<tmaMode(Mode)> maps) {
  constexpr bool Tma = tmaMode(Mode), Wg = Mode == kWgmmaTiles;
  static_assert(!Tma || MT == 1, "tensor copies fill tiles of kTile rows");
  static_assert(!Wg || D == 64, "wgmma's tiles are one 128-byte span wide");
  TCC_DYNAMIC_SMEM(smemBase);
  unsigned char *smem = tilesAt<Mode>(smemBase);
  constexpr int ld = ldTile(D, Mode), tile = kTile * ld, rows = blockRows(MT);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gr = lane >> 2, tc = lane & 3;
  long long tiles = (t.tk + rows - 1) / rows;
  long long g = blockIdx.x / tiles;
  const EntryAt ge = entryAt(t, g);
  long long k0 = (blockIdx.x - g * tiles) * rows;
  unsigned short *ks = reinterpret_cast<unsigned short *>(smem);
  unsigned short *vs = ks + rows * ld, *qdo = vs + rows * ld; // Q0, dO0, ..
  float *stats = reinterpret_cast<float *>(qdo + 4 * tile);   // lse0, D0, ..
  // Causal: queries i >= j only, so from the query tile of the block's
  // first key.
  long long qBegin = t.causal ? k0 / kTile * kTile : 0;
  unsigned long long *bars =
      reinterpret_cast<unsigned long long *>(smem + kvGradSmem(D, MT, Mode));
  if constexpr (Tma) {
    const TileAt first[4] = {tileAt(t, maps.k, ge, k0, ks),
                             tileAt(t, maps.v, ge, k0, vs),
                             tileAt(t, maps.q, ge, qBegin, qdo),
                             tileAt(t, maps.dout, ge, qBegin, qdo + tile)};
    initBarriersAndTiles<D, Mode>(first, bars);
    loadRowStats(t, g, qBegin, stats, stats + kTile);
    cpAsyncCommit();
    cpAsyncWait<0>();
    __syncthreads(); // the barriers, every thread's lse and D
  } else {
    loadTile<D, rows>(t, t.k, t.inputPitch, ge, k0, t.tk, ks);
    loadTile<D, rows>(t, t.v, t.inputPitch, ge, k0, t.tk, vs);
    loadTile<D>(t, t.q, t.inputPitch, ge, qBegin, t.tq, qdo);
    loadTile<D>(t, t.dout, t.heads * t.d, ge, qBegin, t.tq, qdo + tile);
    loadRowStats(t, g, qBegin, stats, stats + kTile);
    cpAsyncCommit();
  }
  float dk[MT][D / 8][4], dv[MT][D / 8][4];
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi) {
    zero<D / 8>(dk[mi]);
    zero<D / 8>(dv[mi]);
  }
  // m-tile mi's keys are jw + 16 mi.., the lane's j0 + 16 mi and 8 more.
  const long long jw = k0 + warp * 16 * MT, j0 = jw + gr;
  SharedRows<D, MT> ka, va;
  ka.init(ks, warp * 16 * MT);
  va.init(vs, warp * 16 * MT);
  const float scale2 = t.scale * kLog2e;
  for (long long q0 = qBegin, step = 0; q0 < t.tq; q0 += kTile, ++step) {
    const int cur = static_cast<int>(step & 1);
    const unsigned short *qs = qdo + cur * 2 * tile, *dos = qs + tile;
    const float *lse = stats + cur * 2 * kTile, *dot = lse + kTile;
    if (q0 + kTile < t.tq) {
      unsigned short *next = qdo + (cur ^ 1) * 2 * tile;
      float *nextStats = stats + (cur ^ 1) * 2 * kTile;
      if constexpr (Tma) {
        const TileAt next2[2] = {
            tileAt(t, maps.q, ge, q0 + kTile, next),
            tileAt(t, maps.dout, ge, q0 + kTile, next + tile)};
        tmaTiles<D, Mode>(next2, &bars[cur ^ 1]);
        loadRowStats(t, g, q0 + kTile, nextStats, nextStats + kTile);
        cpAsyncCommit();
      } else {
        loadTile<D>(t, t.q, t.inputPitch, ge, q0 + kTile, t.tq, next);
        loadTile<D>(t, t.dout, t.heads * t.d, ge, q0 + kTile, t.tq,
                    next + tile);
        loadRowStats(t, g, q0 + kTile, nextStats, nextStats + kTile);
        cpAsyncCommit();
        cpAsyncWait<1>();
      }
    } else if constexpr (!Tma) {
      cpAsyncWait<0>();
    }
    if constexpr (Tma)
      mbarWait(&bars[cur], static_cast<unsigned>(step >> 1) & 1);
    else
      __syncthreads(); // the step's tiles are in
    // Two halves of 32 queries: half the score registers, so that three
    // blocks fit a multiprocessor at MT = 1 and, at MT = 2, both m-tiles'
    // dK and dV fit beside the scores.
    TCC_NO_UNROLL
    for (int half = 0; half < 2; ++half) {
      const int c0 = half * kHalf;
      const unsigned short *qh = qs + c0 * ld, *doh = dos + c0 * ld;
      // The lane's queries' lse (log2 units) and D. With wgmma each is read
      // where it is first used: held across the products they would take
      // 16 of the registers the kernel's 4 blocks a multiprocessor allow.
      float lse2[kHalf / 8][2], dd[kHalf / 8][2];
      auto loadStats = [&](float(*dst)[2], const float *src, float mul) {
        TCC_UNROLL
        for (int n = 0; n < kHalf / 8; ++n)
          TCC_UNROLL
        for (int u = 0; u < 2; ++u)
          dst[n][u] = src[c0 + n * 8 + 2 * tc + u] * mul;
      };
      if constexpr (!Wg) {
        loadStats(lse2, lse, kLog2e);
        loadStats(dd, dot, 1.0f);
      }
      // S^T = K Q^T; P^T = exp(score - lse), 0 where there is no score.
      // wgmma: dP^T = V dO^T (below) at once, one wait for both.
      float p[MT][kHalf / 8][4], dp[MT][kHalf / 8][4];
      if constexpr (Wg) {
        wgmmaFence();
        wgRowsIssue<Dt, kHalf>(ks, qh, p[0]);
        wgRowsIssue<Dt, kHalf>(vs, doh, dp[0]);
        wgmmaCommit();
        wgmmaWaitAll();
        wgmmaHold<kHalf>(p[0]);
        wgmmaHold<kHalf>(dp[0]);
        loadStats(lse2, lse, kLog2e);
      } else {
        productRows<Dt, D, MT, kHalf>(ka, qh, p);
      }
      TCC_UNROLL
      for (int mi = 0; mi < MT; ++mi) {
        if (unmaskedScores(t, q0 + c0, kHalf, jw + 16 * mi, 16)) {
          const bool plain = plainScores(t, q0 + c0, kHalf, jw + 16 * mi, 16);
          // Rows are keys, columns queries: on the diagonal a key after its
          // query (column minus row < 0) has probability 0.
          const int first = static_cast<int>(q0 + c0 + 2 * tc - (j0 + 16 * mi));
          TCC_UNROLL
          for (int n = 0; n < kHalf / 8; ++n)
            TCC_UNROLL
          for (int e = 0; e < 4; ++e) {
            float x = exp2Fast(fmaF(p[mi][n][e], scale2, -lse2[n][e & 1]));
            p[mi][n][e] = plain || colMinusRow(first, n, e) >= 0 ? x : 0.0f;
          }
          continue;
        }
        TCC_UNROLL
        for (int n = 0; n < kHalf / 8; ++n)
          TCC_UNROLL
        for (int e = 0; e < 4; ++e) {
          int col = c0 + n * 8 + 2 * tc + (e & 1);
          float &x = p[mi][n][e];
          float y = scoreOf(t, g, q0 + col, j0 + 16 * mi + 8 * (e >> 1), x);
          x = y == kNegInf ? 0.0f : exp2Fast(fmaF(y, kLog2e, -lse2[n][e & 1]));
        }
      }
      // dV += P^T dO (wgmma: issued, running while dS is computed).
      [[maybe_unused]] unsigned fp[kHalf / 16][4], fs[kHalf / 16][4];
      if constexpr (Wg) {
        packScores<Dt, kHalf>(p[0], fp);
        wgmmaFence();
        wgScoresIssue<Dt, D, kHalf>(fp, doh, dv[0]);
      } else {
        productScores<Dt, D, MT, kHalf>(p, doh, dv);
      }
      // dP^T = V dO^T, then dS^T / scale = P^T (dP^T - D) over P^T (the
      // scale multiplies dK once, at the store).
      if constexpr (!Wg)
        productRows<Dt, D, MT, kHalf>(va, doh, dp);
      else
        loadStats(dd, dot, 1.0f);
      TCC_UNROLL
      for (int mi = 0; mi < MT; ++mi)
        TCC_UNROLL
      for (int n = 0; n < kHalf / 8; ++n)
        TCC_UNROLL
      for (int e = 0; e < 4; ++e)
        p[mi][n][e] = p[mi][n][e] * (dp[mi][n][e] - dd[n][e & 1]);
      // dK += dS^T Q (wgmma: one wait for dV and dK).
      if constexpr (Wg) {
        packScores<Dt, kHalf>(p[0], fs);
        wgmmaFence();
        wgScoresIssue<Dt, D, kHalf>(fs, qh, dk[0]);
        wgmmaCommit();
        wgmmaWaitAll();
        wgmmaHold<D>(dv[0]);
        wgmmaHold<D>(dk[0]);
        holdPacked<kHalf>(fp);
        holdPacked<kHalf>(fs);
      } else {
        productScores<Dt, D, MT, kHalf>(p, qh, dk);
      }
    }
    // Tma: the next step's lse and D (this thread's copies) are in before
    // the __syncthreads that shows them to the others.
    if constexpr (Tma)
      cpAsyncWait<0>();
    __syncthreads(); // every warp is done with the tiles the next step fills
  }
  cpAsyncWait<0>();
  if constexpr (Tma) {
    if (qBegin >= t.tq) // no step: the first copies are still in flight
      mbarWait(&bars[0], 0);
  }
  const float one[2] = {1.0f, 1.0f}, scale[2] = {t.scale, t.scale};
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi) {
    storeAcc<D>(t, dk[mi], scale, ge, jw + 16 * mi, t.tk, t.inputPitch, t.dk,
                t.dkType);
    storeAcc<D>(t, dv[mi], one, ge, jw + 16 * mi, t.tk, t.inputPitch, t.dv,
                t.dvType);
  }
  if (t.colParts) {  // the same for the whole block
    __syncthreads(); // every thread's copies are in: the tiles are free
    float *units = reinterpret_cast<float *>(smem);
    unitSums<Dt, D, MT>(dk, t.scale, jw, t.tk, units);
    unitSums<Dt, D, MT>(dv, 1.0f, jw, t.tk, units + 4 * MT * D);
    __syncthreads();
    sliceSums<D, MT>(t, units, ge, k0, t.tk, t.heads * t.d);
    sliceSums<D, MT>(t, units + 4 * MT * D, ge, k0, t.tk, 2 * t.heads * t.d);
  }
}

/// dQ: block (entry g, query tile of 64 MT rows); the warp owns 16 MT
/// queries and walks the key tiles (64 rows) they see. Shared memory: Q,
/// dO, then twice K and V, then with Tma the two barriers.
template <int Dt, int D, int MT, int Mode>
__global__ void __launch_bounds__(kThreads, blocksFor(kQGrad, D, MT, Mode))
    attentionTiledQGradKernel(
        AttentionTiles t, const __grid_constant__ MapsOf<tmaMode(Mode)> maps) {
  constexpr bool Tma = tmaMode(Mode), Wg = Mode == kWgmmaTiles;
  static_assert(!Tma || MT == 1, "tensor copies fill tiles of kTile rows");
  static_assert(!Wg || D == 64, "wgmma's tiles are one 128-byte span wide");
  TCC_DYNAMIC_SMEM(smemBase);
  unsigned char *smem = tilesAt<Mode>(smemBase);
  constexpr int ld = ldTile(D, Mode), tile = kTile * ld, rows = blockRows(MT);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gr = lane >> 2, tc = lane & 3;
  long long tiles = (t.tq + rows - 1) / rows;
  long long g = blockIdx.x / tiles;
  const EntryAt ge = entryAt(t, g);
  long long q0 = (tiles - 1 - (blockIdx.x - g * tiles)) * rows;
  unsigned short *qs = reinterpret_cast<unsigned short *>(smem);
  unsigned short *dos = qs + rows * ld, *kv = dos + rows * ld; // K0, V0, ..
  long long kEnd = t.causal && q0 + rows < t.tk ? q0 + rows : t.tk;
  unsigned long long *bars =
      reinterpret_cast<unsigned long long *>(smem + qGradSmem(D, MT, Mode));
  if constexpr (Tma) {
    const TileAt first[4] = {
        tileAt(t, maps.q, ge, q0, qs), tileAt(t, maps.dout, ge, q0, dos),
        tileAt(t, maps.k, ge, 0, kv), tileAt(t, maps.v, ge, 0, kv + tile)};
    initBarriersAndTiles<D, Mode>(first, bars);
    __syncthreads(); // the barriers are made
  } else {
    loadTile<D, rows>(t, t.q, t.inputPitch, ge, q0, t.tq, qs);
    loadTile<D, rows>(t, t.dout, t.heads * t.d, ge, q0, t.tq, dos);
    // Q and dO held in registers: their own group, read while K and V
    // arrive.
    if constexpr (holdRows(D, MT))
      cpAsyncCommit();
    loadTile<D>(t, t.k, t.inputPitch, ge, 0, t.tk, kv);
    loadTile<D>(t, t.v, t.inputPitch, ge, 0, t.tk, kv + tile);
    cpAsyncCommit();
  }
  RowsOf<D, MT> qa, doa;
  if constexpr (holdRows(D, MT)) {
    cpAsyncWait<1>();
    __syncthreads(); // every thread's copies of Q and dO are in
  }
  qa.init(qs, warp * 16 * MT);
  doa.init(dos, warp * 16 * MT);
  // m-tile mi's rows are iw + 16 mi.., the lane's i0 + 16 mi and 8 more.
  const long long iw = q0 + warp * 16 * MT, i0 = iw + gr;
  float lse[MT][2], dot[MT][2];
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi)
    TCC_UNROLL
  for (int h = 0; h < 2; ++h) {
    long long i = i0 + 16 * mi + 8 * h;
    bool in = i < t.tq;
    lse[mi][h] = in ? t.lse[g * t.tq + i] * kLog2e : 0.0f; // log2 units
    dot[mi][h] = in ? t.rowDot[g * t.tq + i] : 0.0f;
  }
  float dq[MT][D / 8][4];
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi)
    zero<D / 8>(dq[mi]);
  const float scale2 = t.scale * kLog2e;
  for (long long k0 = 0, step = 0; k0 < kEnd; k0 += kTile, ++step) {
    const unsigned short *ks =
        awaitKeyTiles<D, Mode>(t, maps, kv, bars, ge, k0, step, kEnd);
    const unsigned short *vs = ks + tile;
    // Two halves of 32 keys, as in the dK / dV kernel.
    TCC_NO_UNROLL
    for (int half = 0; half < 2; ++half) {
      const int c0 = half * kHalf;
      const unsigned short *kh = ks + c0 * ld, *vh = vs + c0 * ld;
      float p[MT][kHalf / 8][4], dp[MT][kHalf / 8][4];
      if constexpr (Wg) { // both issued, one wait
        wgmmaFence();
        wgRowsIssue<Dt, kHalf>(qs, kh, p[0]);
        wgRowsIssue<Dt, kHalf>(dos, vh, dp[0]);
        wgmmaCommit();
        wgmmaWaitAll();
        wgmmaHold<kHalf>(p[0]);
        wgmmaHold<kHalf>(dp[0]);
      } else {
        productRows<Dt, D, MT, kHalf>(qa, kh, p);
        productRows<Dt, D, MT, kHalf>(doa, vh, dp);
      }
      TCC_UNROLL
      for (int mi = 0; mi < MT; ++mi) {
        if (unmaskedScores(t, iw + 16 * mi, 16, k0 + c0, kHalf)) {
          const bool plain = plainScores(t, iw + 16 * mi, 16, k0 + c0, kHalf);
          // On the diagonal a key after the query has probability 0.
          const int first = static_cast<int>(k0 + c0 + 2 * tc - (i0 + 16 * mi));
          TCC_UNROLL
          for (int n = 0; n < kHalf / 8; ++n)
            TCC_UNROLL
          for (int e = 0; e < 4; ++e) {
            float x = exp2Fast(fmaF(p[mi][n][e], scale2, -lse[mi][e >> 1]));
            p[mi][n][e] = plain || colMinusRow(first, n, e) <= 0 ? x : 0.0f;
          }
        } else {
          TCC_UNROLL
          for (int n = 0; n < kHalf / 8; ++n)
            TCC_UNROLL
          for (int e = 0; e < 4; ++e) {
            int h = e >> 1;
            float x = scoreOf(t, g, i0 + 16 * mi + 8 * h,
                              k0 + c0 + n * 8 + 2 * tc + (e & 1), p[mi][n][e]);
            p[mi][n][e] =
                x == kNegInf ? 0.0f : exp2Fast(fmaF(x, kLog2e, -lse[mi][h]));
          }
        }
        // dS / scale: the scale multiplies dQ once, at the store.
        TCC_UNROLL
        for (int n = 0; n < kHalf / 8; ++n)
          TCC_UNROLL
        for (int e = 0; e < 4; ++e)
          p[mi][n][e] *= dp[mi][n][e] - dot[mi][e >> 1];
      }
      if constexpr (Wg)
        wgScores<Dt, D, kHalf>(p[0], kh, dq[0]);
      else
        productScores<Dt, D, MT, kHalf>(p, kh, dq);
    }
    __syncthreads(); // every warp is done with the tiles the next step fills
  }
  // No step: the first copies are still in flight.
  if constexpr (Tma) {
    if (kEnd <= 0)
      mbarWait(&bars[0], 0);
  } else {
    cpAsyncWait<0>();
  }
  const float scale[2] = {t.scale, t.scale};
  TCC_UNROLL
  for (int mi = 0; mi < MT; ++mi)
    storeAcc<D>(t, dq[mi], scale, ge, iw + 16 * mi, t.tq, t.inputPitch, t.dq,
                t.dqType);
  if (t.colParts) { // as in the dK / dV kernel
    __syncthreads();
    float *units = reinterpret_cast<float *>(smem);
    unitSums<Dt, D, MT>(dq, t.scale, iw, t.tq, units);
    __syncthreads();
    sliceSums<D, MT>(t, units, ge, q0, t.tq, 0);
  }
}

/// Launches kernel `k` over `blocks` blocks with `smem` bytes of dynamic
/// shared memory. Above the default 48 KiB a kernel must be allowed more,
/// once: as much as the largest kernel needs (attentionTiledSmemBytes).
template <class Maps, void (*Kernel)(AttentionTiles, Maps)>
void launchTiled(long long blocks, int smem, cudaStream_t stream,
                 const AttentionTiles &t, const Maps &maps, const char *what) {
  (void)stream;
  if (blocks <= 0)
    return;
  if (blocks > 0x7fffffffll)
    throw Error(std::string(what) + ": too many tiles for one grid");
  // All of the multiprocessor's on-chip memory as shared memory: four
  // blocks of 55 KiB (D = 64) need more than the carveout the driver would
  // otherwise pick for them.
  static const cudaError_t allowed = [] {
    const void *k = reinterpret_cast<const void *>(Kernel);
    cudaError_t e =
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             attentionTiledSmemBytes());
    return e != cudaSuccess
               ? e
               : cudaFuncSetAttribute(
                     k, cudaFuncAttributePreferredSharedMemoryCarveout,
                     cudaSharedmemCarveoutMaxShared);
  }();
  TCC_CUDA_CHECK(allowed);
  TCC_LAUNCH_SMEM(Kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                  smem, stream)
  (t, maps);
  checkLaunch(what);
}

/// launchTiled of one kernel as a type, so that a launcher can take the
/// kernels of each way as arguments and instantiate only the one it runs.
template <class Maps, void (*Kernel)(AttentionTiles, Maps)> struct Launch {
  static void run(long long blocks, int smem, cudaStream_t stream,
                  const AttentionTiles &t, const Maps &maps, const char *what) {
    launchTiled<Maps, Kernel>(blocks, smem, stream, t, maps, what);
  }
};

/// The mode of the wgmma kernels of head dim d: wgmma's at 64, tensor
/// copies elsewhere (kernels a launch never picks, so that no wgmma kernel
/// of another head dim is built).
constexpr int wgMode(int d) { return d == 64 ? kWgmmaTiles : kTmaTiles; }

/// The kernels of dtype Dt and head dim D with warps of 16 MT rows (each
/// kernel's warpTiles): the forward, or the backward's D = rowsum(dO O)
/// pass, dK / dV and dQ. With `maps` the kernels of 16-row warps take
/// their tiles by tensor copies (tiledAttentionTma), and with `wgmma` too
/// (at D = 64) in the 128-byte swizzle, multiplied by warpgroup products
/// (tiledAttentionWgmma).
template <int Dt, int D, int MT>
void launchTiles(const AttentionTiles &t, bool grad,
                 const AttentionTileMaps *maps, bool wgmma,
                 cudaStream_t stream) {
  constexpr int fwdMT = warpTiles(kForward, D, MT),
                kvMT = warpTiles(kKVGrad, D, MT),
                qMT = warpTiles(kQGrad, D, MT);
  constexpr bool wgD = D == 64; // the head dim wgmma's kernels are built for
  const NoMaps none;
  // The three ways of the kernels of 16-row warps (the MT = 1 kernels are
  // instantiated for this dtype and head dim in any case), else cp.async.
  auto launch = [&](auto async, auto tma, auto wg, int mt, int smemAsync,
                    int smemTma, int smemWg, long long blocks,
                    const char *what) {
    if (mt == 1 && maps && wgmma && wgD)
      decltype(wg)::run(blocks, smemWg + kBarrierBytes + kSwizzleAlign, stream,
                        t, *maps, what);
    else if (mt == 1 && maps)
      decltype(tma)::run(blocks, smemTma + kBarrierBytes, stream, t, *maps,
                         what);
    else
      decltype(async)::run(blocks, smemAsync, stream, t, none, what);
  };
  if (!grad) {
    constexpr int rows = blockRows(fwdMT);
    const long long blocks = t.batch * ((t.tq + rows - 1) / rows);
    launch(Launch<NoMaps,
                  attentionTiledForwardKernel<Dt, D, fwdMT, kAsyncTiles>>{},
           Launch<AttentionTileMaps,
                  attentionTiledForwardKernel<Dt, D, 1, kTmaTiles>>{},
           Launch<AttentionTileMaps,
                  attentionTiledForwardKernel<Dt, D, 1, wgMode(D)>>{},
           fwdMT, forwardSmem(D, fwdMT), forwardSmem(D, 1),
           forwardSmem(D, 1, kWgmmaTiles), blocks, "attention (tiled)");
    return;
  }
  long long rows = t.batch * t.tq, dotBlocks = (rows + 7) / 8;
  constexpr bool pow2 = D == 16 || D == 32 || D == 64 || D == 128;
  if (pow2 && (t.oType == kDtBF16 || t.oType == kDtF16) && aligned16(t.dout) &&
      aligned16(t.o) && rows * t.heads < (1ll << 31)) {
    long long blocks = (rows * (D / 8) + 255) / 256;
    TCC_LAUNCH(
        attentionRowDotVecKernel<D>,
        dim3(static_cast<unsigned>(blocks < (1 << 20) ? blocks : 1 << 20)),
        dim3(256), stream)
    (t);
  } else {
    TCC_LAUNCH(attentionRowDotKernel,
               dim3(static_cast<unsigned>(dotBlocks < (1 << 20) ? dotBlocks
                                                                : 1 << 20)),
               dim3(256), stream)
    (t);
  }
  const char *what = "attention_grad (tiled)";
  checkLaunch(what);
  constexpr int kvRows = blockRows(kvMT), qRows = blockRows(qMT);
  const long long kvBlocks = t.batch * ((t.tk + kvRows - 1) / kvRows),
                  qBlocks = t.batch * ((t.tq + qRows - 1) / qRows);
  launch(Launch<NoMaps, attentionTiledKVGradKernel<Dt, D, kvMT, kAsyncTiles>>{},
         Launch<AttentionTileMaps,
                attentionTiledKVGradKernel<Dt, D, 1, kTmaTiles>>{},
         Launch<AttentionTileMaps,
                attentionTiledKVGradKernel<Dt, D, 1, wgMode(D)>>{},
         kvMT, kvGradSmem(D, kvMT), kvGradSmem(D, 1),
         kvGradSmem(D, 1, kWgmmaTiles), kvBlocks, what);
  launch(Launch<NoMaps, attentionTiledQGradKernel<Dt, D, qMT, kAsyncTiles>>{},
         Launch<AttentionTileMaps,
                attentionTiledQGradKernel<Dt, D, 1, kTmaTiles>>{},
         Launch<AttentionTileMaps,
                attentionTiledQGradKernel<Dt, D, 1, wgMode(D)>>{},
         qMT, qGradSmem(D, qMT), qGradSmem(D, 1), qGradSmem(D, 1, kWgmmaTiles),
         qBlocks, what);
}

/// With warps of 32 rows (`wide`: MT = 2) or 16.
template <int Dt, int D>
void launchTiles(const AttentionTiles &t, bool grad, bool wide,
                 const AttentionTileMaps *maps, bool wgmma,
                 cudaStream_t stream) {
  if (wide)
    launchTiles<Dt, D, 2>(t, grad, maps, wgmma, stream);
  else
    launchTiles<Dt, D, 1>(t, grad, maps, wgmma, stream);
}

template <int Dt>
void launchByHeadDim(const AttentionTiles &t, bool grad, bool wide,
                     const AttentionTileMaps *maps, bool wgmma,
                     cudaStream_t stream) {
  switch (t.d) {
  case 16:
    return launchTiles<Dt, 16>(t, grad, wide, maps, wgmma, stream);
  case 32:
    return launchTiles<Dt, 32>(t, grad, wide, maps, wgmma, stream);
  case 64:
    return launchTiles<Dt, 64>(t, grad, wide, maps, wgmma, stream);
  case 80:
    return launchTiles<Dt, 80>(t, grad, wide, maps, wgmma, stream);
  case 96:
    return launchTiles<Dt, 96>(t, grad, wide, maps, wgmma, stream);
  case 128:
    return launchTiles<Dt, 128>(t, grad, wide, maps, wgmma, stream);
  default:
    throw Error("no tiled CUDA attention kernel for head dim " +
                std::to_string(t.d) + " (it takes 16, 32, 64, 80, 96 or 128)");
  }
}

/// The tensor maps of launch t's operands (the kernels' tiles: D + 8
/// columns by kTile rows, see tmaTiles; for wgmma D columns in the
/// 128-byte swizzle).
void encodeTileMaps(const AttentionTiles &t, bool grad, bool wgmma,
                    AttentionTileMaps &maps) {
  auto map = [&](CUtensorMap &m, const void *base, long long rows,
                 long long pitch) {
    TileMapShape s;
    s.base = base;
    s.cols = static_cast<unsigned long long>(t.heads * t.d);
    s.rows = static_cast<unsigned long long>(rows);
    s.outer = static_cast<unsigned long long>(t.batch / t.heads);
    s.pitch = static_cast<unsigned long long>(pitch);
    s.boxCols =
        static_cast<unsigned>(ldTile(t.d, wgmma ? kWgmmaTiles : kTmaTiles));
    s.boxRows = kTile;
    s.swizzle128 = wgmma;
    encodeTileMap(&m, s);
  };
  map(maps.q, t.q, t.tq, t.inputPitch);
  map(maps.k, t.k, t.tk, t.inputPitch);
  map(maps.v, t.v, t.tk, t.inputPitch);
  if (grad)
    map(maps.dout, t.dout, t.tq, t.heads * t.d);
  else
    maps.dout = maps.q; // unused by the forward
}

void launchTiledAttention(const AttentionTiles &t, bool grad,
                          cudaStream_t stream) {
  // Read before anything else, so a bad TCC_CUDA_ATTENTION_WARP_ROWS or
  // TCC_CUDA_ATTENTION_COPY fails every launch.
  const bool wide = tiledAttentionWarpRows() == 32;
  AttentionTileMaps maps;
  // Warpgroup products take their tiles by tensor copies, whatever
  // TCC_CUDA_ATTENTION_COPY says.
  const bool wgmma = !wide && tiledAttentionWgmma(t, grad);
  const bool tma = wgmma || tiledAttentionTma(t, grad);
  if (tma)
    encodeTileMaps(t, grad, wgmma, maps);
  if (t.dtype == kDtBF16)
    launchByHeadDim<kDtBF16>(t, grad, wide, tma ? &maps : nullptr, wgmma,
                             stream);
  else if (t.dtype == kDtF16)
    launchByHeadDim<kDtF16>(t, grad, wide, tma ? &maps : nullptr, wgmma,
                            stream);
  else
    throw Error("the tiled CUDA attention takes bf16 or f16 operands");
}

/// The most shared memory any kernel of head dim d takes, with either
/// setting of TCC_CUDA_ATTENTION_WARP_ROWS (and the barriers of tensor
/// copies).
constexpr int smemOf(int d) {
  int most = 0;
  for (int mt = 1; mt <= 2; ++mt) {
    int f = forwardSmem(d, warpTiles(kForward, d, mt)),
        kv = kvGradSmem(d, warpTiles(kKVGrad, d, mt)),
        q = qGradSmem(d, warpTiles(kQGrad, d, mt));
    most = std::max({most, f, kv, q});
  }
  if (d == 64) // the wgmma kernels, with their alignment
    most = std::max({most, forwardSmem(d, 1, kWgmmaTiles) + kSwizzleAlign,
                     kvGradSmem(d, 1, kWgmmaTiles) + kSwizzleAlign,
                     qGradSmem(d, 1, kWgmmaTiles) + kSwizzleAlign});
  return most + kBarrierBytes;
}

} // namespace

int attentionTiledSmemBytes() {
  constexpr int most = std::max({smemOf(16), smemOf(32), smemOf(64), smemOf(80),
                                 smemOf(96), smemOf(128)});
  return most;
}

void encodeTileMap(CUtensorMap *map, const TileMapShape &s) {
  const unsigned long long dims[3] = {s.cols, s.rows, s.outer};
  const unsigned long long strides[2] = {s.pitch * 2, s.rows * s.pitch * 2};
  const unsigned box[3] = {s.boxCols, s.boxRows, 1};
#ifdef TCC_CUDA_EMULATE
  tcc_emu::encodeTileMap(map, s.base, dims, strides, box, 2,
                         s.swizzle128 ? 128 : 0);
#else
  using Encode = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t,
                              void *, const cuuint64_t *, const cuuint64_t *,
                              const cuuint32_t *, const cuuint32_t *,
                              CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const Encode encode = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    cudaError_t e = cudaGetDriverEntryPointByVersion(
        "cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    return e == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<Encode>(fn)
               : nullptr;
  }();
  if (!encode)
    throw Error("the CUDA driver has no cuTensorMapEncodeTiled (tensor "
                "copies need CUDA 12 or later); unset "
                "TCC_CUDA_ATTENTION_COPY");
  const cuuint64_t gdim[3] = {dims[0], dims[1], dims[2]};
  const cuuint64_t gstride[2] = {strides[0], strides[1]};
  const cuuint32_t gbox[3] = {box[0], box[1], box[2]}, ones[3] = {1, 1, 1};
  CUresult r = encode(
      map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, const_cast<void *>(s.base), gdim,
      gstride, gbox, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
      s.swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error("cuTensorMapEncodeTiled refused a tiled attention operand "
                "(error " +
                std::to_string(static_cast<int>(r)) + ": " +
                std::to_string(s.cols) + " columns, " + std::to_string(s.rows) +
                " rows " + std::to_string(s.pitch) + " elements apart, " +
                std::to_string(s.outer) + " blocks)");
#endif
}

void attentionTiledForward(const AttentionTiles &t, cudaStream_t stream) {
  launchTiledAttention(t, false, stream);
}

void attentionTiledBackward(const AttentionTiles &t, cudaStream_t stream) {
  launchTiledAttention(t, true, stream);
}

} // namespace tcc::rt::cuda
