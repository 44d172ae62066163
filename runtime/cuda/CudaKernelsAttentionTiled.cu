//===- CudaKernelsAttentionTiled.cu - Attention in on-chip tiles ----------===//
//
// See CudaAttention.h (AttentionTiles). A block is kWarps warps; warp w
// owns rows 16w..16w+15 of the block's 64-row tile. The tiles of the other
// side pass through shared memory 64 rows at a time. Products are WMMA
// 16x16x16 tiles read from shared memory; the element-wise steps (scale,
// mask, causal, exponentials, the online softmax) run on a warp's f32
// score tile in shared memory, where lane l owns row l / 2 and the columns
// of parity l % 2 (the pair meets with one shuffle per reduction).
//
// Shared memory (dynamic; for D = 64: forward 61 KiB, backward 62.5 KiB;
// D = 128: 101 and 110.5 KiB): 16-bit tiles with rows D + 8 elements apart
// (WMMA wants multiples of 8; the 16 bytes of padding spread a column's
// rows over the banks), f32 tiles with rows padded by 4. Every WMMA pointer
// is 32-byte aligned.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <string>

#ifndef TCC_CUDA_EMULATE
#include <mma.h>
#endif

namespace tcc::rt::cuda {

namespace wmma = nvcuda::wmma;

namespace {

constexpr int kTile = 64;             // rows of a block, keys of a step
constexpr int kWarps = kTile / 16;    // 4 warps of 16 rows
constexpr int kThreads = kWarps * 32; // 128
constexpr int kLdScore = kTile + 4;   // f32 score tile row stride
constexpr int kLdHalf = kTile + 8;    // 16-bit P / dS tile row stride
constexpr int kPerLane = kTile / 2;   // scores per lane and step
constexpr float kNegInf = -INFINITY;

/// The WMMA element type of a dtype code.
#ifdef TCC_CUDA_EMULATE
template <int Dt> struct MmaType { using T = tcc_emu::Half16<Dt>; };
#else
template <int Dt> struct MmaType;
template <> struct MmaType<kDtBF16> { using T = __nv_bfloat16; };
template <> struct MmaType<kDtF16> { using T = __half; };
#endif

template <int Dt> __device__ __forceinline__ unsigned short toBits(float v) {
  return Dt == kDtBF16 ? toBf16Bits(v) : toF16Bits(v);
}

template <int Dt, class Use, class Layout>
using Frag = wmma::fragment<Use, 16, 16, 16, typename MmaType<Dt>::T, Layout>;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// 16-bit tile row stride for head dim d.
__host__ __device__ constexpr int ldTile(int d) { return d + 8; }
/// f32 tile row stride: a 16 x 64 score tile or a 16 x d result.
__host__ __device__ constexpr int ldF32(int d) {
  return d + 4 > kLdScore ? d + 4 : kLdScore;
}

/// Bytes of shared memory: the forward's Q, K, V tiles and per warp a score
/// tile (P goes over it) and an f32 O tile (the running max and sum of a
/// row stay in its lanes' registers); the backward's four 16-bit tiles, lse
/// and D per row, and per warp an f32 tile and a 16-bit P / dS tile.
__host__ __device__ constexpr int tileBytes(int d) {
  return kTile * ldTile(d) * 2;
}
__host__ __device__ constexpr int warpF32Bytes(int d) {
  return 16 * ldF32(d) * 4;
}
__host__ __device__ constexpr int forwardSmem(int d) {
  return 3 * tileBytes(d) + kWarps * (16 * kLdScore * 4) +
         kWarps * warpF32Bytes(d);
}
__host__ __device__ constexpr int backwardSmem(int d) {
  return 4 * tileBytes(d) + 2 * kTile * 4 +
         kWarps * (warpF32Bytes(d) + 16 * kLdHalf * 2);
}

/// Element offset of row i of entry g (`rows` rows per entry) in an
/// operand whose rows are `pitch` elements apart.
__device__ __forceinline__ long long rowAt(const AttentionTiles &t, long long g,
                                           long long i, long long rows,
                                           long long pitch) {
  return attentionRowOffset(g, i, t.heads, rows, t.d, pitch);
}
/// The same in out and dout (never in the projection).
__device__ __forceinline__ long long rowAt(const AttentionTiles &t, long long g,
                                           long long i, long long rows) {
  return rowAt(t, g, i, rows, t.heads * t.d);
}

/// Copies rows [r0, r0 + 64) of entry g (`rows` per entry, `pitch` apart)
/// into a shared tile, 16 bytes per thread and step; rows past the end are
/// zeros.
template <int D>
__device__ __forceinline__ void
loadTile(const AttentionTiles &t, const void *src, long long pitch, long long g,
         long long r0, long long rows, unsigned short *dst) {
  constexpr int vecs = D / 8, ld = ldTile(D);
  const unsigned short *s = static_cast<const unsigned short *>(src);
  for (int idx = threadIdx.x; idx < kTile * vecs; idx += kThreads) {
    int r = idx / vecs, c = (idx - r * vecs) * 8;
    uint4 val = {0, 0, 0, 0};
    if (r0 + r < rows)
      val = *reinterpret_cast<const uint4 *>(
          s + rowAt(t, g, r0 + r, rows, pitch) + c);
    *reinterpret_cast<uint4 *>(dst + r * ld + c) = val;
  }
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

/// C (16 x 64, f32, ld kLdScore) = A (16 x d rows, 16-bit, ld lda) times
/// B^T, B the 64 x d rows of a 16-bit tile (ld ldb): Q K^T, K Q^T, dO V^T.
template <int Dt, int D>
__device__ __forceinline__ void productT(const unsigned short *a, int lda,
                                         const unsigned short *b, int ldb,
                                         float *c) {
  using T = typename MmaType<Dt>::T;
  TCC_UNROLL
  for (int n = 0; n < kTile / 16; ++n) {
    Acc acc;
    wmma::fill_fragment(acc, 0.0f);
    TCC_UNROLL
    for (int kk = 0; kk < D; kk += 16) {
      Frag<Dt, wmma::matrix_a, wmma::row_major> fa;
      Frag<Dt, wmma::matrix_b, wmma::col_major> fb;
      wmma::load_matrix_sync(fa, reinterpret_cast<const T *>(a + kk), lda);
      wmma::load_matrix_sync(
          fb, reinterpret_cast<const T *>(b + n * 16 * ldb + kk), ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + n * 16, acc, kLdScore, wmma::mem_row_major);
  }
}

/// acc[n] += A (16 x 64, 16-bit, ld kLdHalf) times B (64 x d rows of a
/// 16-bit tile, ld ldb), for the d / 16 column blocks n: P V, P^T dO,
/// dS^T Q, dS K.
template <int Dt, int D>
__device__ __forceinline__ void productAcc(const unsigned short *a,
                                           const unsigned short *b, int ldb,
                                           Acc *acc) {
  using T = typename MmaType<Dt>::T;
  TCC_UNROLL
  for (int kk = 0; kk < kTile; kk += 16) {
    Frag<Dt, wmma::matrix_a, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, reinterpret_cast<const T *>(a + kk), kLdHalf);
    TCC_UNROLL
    for (int n = 0; n < D / 16; ++n) {
      Frag<Dt, wmma::matrix_b, wmma::row_major> fb;
      wmma::load_matrix_sync(
          fb, reinterpret_cast<const T *>(b + kk * ldb + n * 16), ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

/// Writes a warp's 16 gradient rows (f32 accumulators, through its f32
/// tile) to rows r0.. of entry g of `dst` (dtype `type`, `rows` per entry,
/// in q's layout: inputPitch apart).
template <int D>
__device__ __forceinline__ void
storeRows(const AttentionTiles &t, Acc *acc, float *tile, long long g,
          long long r0, long long rows, void *dst, int type) {
  constexpr int ld = ldF32(D);
  __syncwarp();
  TCC_UNROLL
  for (int n = 0; n < D / 16; ++n)
    wmma::store_matrix_sync(tile + n * 16, acc[n], ld, wmma::mem_row_major);
  __syncwarp();
  const int lane = threadIdx.x & 31;
  for (int idx = lane; idx < 16 * D; idx += 32) {
    int r = idx / D, c = idx - r * D;
    if (r0 + r < rows)
      stf(dst, type, rowAt(t, g, r0 + r, rows, t.inputPitch) + c,
          tile[r * ld + c]);
  }
}

/// The forward: block (entry g, query tile), grid batch * tiles.
template <int Dt, int D>
__global__ void __launch_bounds__(kThreads)
    attentionTiledForwardKernel(AttentionTiles t) {
  TCC_DYNAMIC_SMEM(smem);
  constexpr int d = D, ld = ldTile(D), ldO = ldF32(D);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = lane >> 1, parity = lane & 1;
  long long tiles = (t.tq + kTile - 1) / kTile;
  long long g = blockIdx.x / tiles;
  // The longest causal tiles first: they finish with the others.
  long long q0 = (tiles - 1 - (blockIdx.x - g * tiles)) * kTile;

  unsigned short *qs = reinterpret_cast<unsigned short *>(smem);
  unsigned short *ks = qs + kTile * ld, *vs = ks + kTile * ld;
  float *score =
      reinterpret_cast<float *>(vs + kTile * ld) + warp * 16 * kLdScore;
  float *otile = reinterpret_cast<float *>(vs + kTile * ld) +
                 kWarps * 16 * kLdScore + warp * 16 * ldO;
  unsigned short *ptile = reinterpret_cast<unsigned short *>(score);

  loadTile<D>(t, t.q, t.inputPitch, g, q0, t.tq, qs);
  for (int idx = lane; idx < 16 * ldO; idx += 32)
    otile[idx] = 0.0f;
  // Row `row` of the warp: running max m and sum l (the pair agrees).
  long long i = q0 + warp * 16 + row;
  float m = kNegInf, l = 0.0f;
  long long kEnd = t.causal && q0 + kTile < t.tk ? q0 + kTile : t.tk;
  for (long long k0 = 0; k0 < kEnd; k0 += kTile) {
    __syncthreads(); // the previous step's K and V are no longer read
    loadTile<D>(t, t.k, t.inputPitch, g, k0, t.tk, ks);
    loadTile<D>(t, t.v, t.inputPitch, g, k0, t.tk, vs);
    __syncthreads();
    productT<Dt, D>(qs + warp * 16 * ld, ld, ks, ld, score);
    __syncwarp();
    float s[kPerLane], mx = kNegInf;
    for (int c = 0; c < kPerLane; ++c) {
      int col = 2 * c + parity;
      s[c] = scoreOf(t, g, i, k0 + col, score[row * kLdScore + col]);
      mx = fmaxf(mx, s[c]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    float mNew = fmaxf(m, mx);
    // No key so far: exponentials of -inf against 0 are 0, not NaN.
    float base = mNew == kNegInf ? 0.0f : mNew;
    float alpha = expf(m - base), sum = 0.0f;
    __syncwarp(); // every lane has read its scores; P goes over them
    for (int c = 0; c < kPerLane; ++c) {
      float p = expf(s[c] - base);
      sum += p;
      ptile[row * kLdHalf + 2 * c + parity] = toBits<Dt>(p);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * alpha + sum;
    m = mNew;
    for (int c = parity; c < d; c += 2)
      otile[row * ldO + c] *= alpha;
    __syncwarp();
    Acc acc[D / 16];
    TCC_UNROLL
    for (int n = 0; n < D / 16; ++n)
      wmma::load_matrix_sync(acc[n], otile + n * 16, ldO, wmma::mem_row_major);
    productAcc<Dt, D>(ptile, vs, ld, acc);
    TCC_UNROLL
    for (int n = 0; n < D / 16; ++n)
      wmma::store_matrix_sync(otile + n * 16, acc[n], ldO, wmma::mem_row_major);
    __syncwarp();
  }
  // A row without any key (all masked) is NaN, as the softmax's 0 / 0.
  float inv = l > 0.0f ? 1.0f / l : NAN;
  if (i < t.tq) {
    long long at = rowAt(t, g, i, t.tq);
    for (int c = parity; c < d; c += 2)
      stf(t.out, t.outType, at + c, otile[row * ldO + c] * inv);
    if (parity == 0)
      t.lse[g * t.tq + i] = l > 0.0f ? m + logf(l) : NAN;
  }
}

/// D = rowsum(dO O) per row (f32), a warp per row.
__global__ void attentionRowDotKernel(AttentionTiles t) {
  long long rows = t.batch * t.tq;
  long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
  for (long long r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < rows; r += warps) {
    long long g = r / t.tq, at = rowAt(t, g, r - g * t.tq, t.tq);
    float sum = 0.0f;
    for (int c = threadIdx.x & 31; c < t.d; c += 32)
      sum += ldf(t.dout, t.dtype, at + c) * ldf(t.o, t.oType, at + c);
    sum = warpSum(sum);
    if ((threadIdx.x & 31) == 0)
      t.rowDot[r] = sum;
  }
}

/// The shared memory of the backward kernels: the block's own 64 rows
/// (two tiles, `own`), the other side's current 64 (`step`), lse and D of
/// the query rows in the block, and the warp's f32 and 16-bit tiles.
struct BackwardSmem {
  unsigned short *own0, *own1, *step0, *step1;
  float *lse, *dot, *f32;
  unsigned short *half;
  __device__ BackwardSmem(unsigned char *smem, int d, int warp) {
    int ld = ldTile(d);
    own0 = reinterpret_cast<unsigned short *>(smem);
    own1 = own0 + kTile * ld;
    step0 = own1 + kTile * ld;
    step1 = step0 + kTile * ld;
    lse = reinterpret_cast<float *>(step1 + kTile * ld);
    dot = lse + kTile;
    f32 = dot + kTile + warp * 16 * ldF32(d);
    half = reinterpret_cast<unsigned short *>(dot + kTile +
                                              kWarps * 16 * ldF32(d)) +
           warp * 16 * kLdHalf;
  }
};

/// lse and D of query rows [q0, q0 + 64) of entry g into shared memory.
__device__ __forceinline__ void loadRowStats(const AttentionTiles &t,
                                             long long g, long long q0,
                                             float *lse, float *dot) {
  for (int r = threadIdx.x; r < kTile; r += kThreads) {
    bool in = q0 + r < t.tq;
    lse[r] = in ? t.lse[g * t.tq + q0 + r] : 0.0f;
    dot[r] = in ? t.rowDot[g * t.tq + q0 + r] : 0.0f;
  }
}

/// dK and dV: block (entry g, key tile); the warp owns 16 keys and walks
/// the query tiles that see them.
template <int Dt, int D>
__global__ void __launch_bounds__(kThreads)
    attentionTiledKVGradKernel(AttentionTiles t) {
  TCC_DYNAMIC_SMEM(smem);
  constexpr int d = D, ld = ldTile(D);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = lane >> 1, parity = lane & 1;
  long long tiles = (t.tk + kTile - 1) / kTile;
  long long g = blockIdx.x / tiles;
  long long k0 = (blockIdx.x - g * tiles) * kTile;
  BackwardSmem sm(smem, d, warp);
  unsigned short *ks = sm.own0, *vs = sm.own1, *qs = sm.step0, *dos = sm.step1;
  loadTile<D>(t, t.k, t.inputPitch, g, k0, t.tk, ks);
  loadTile<D>(t, t.v, t.inputPitch, g, k0, t.tk, vs);
  Acc dk[D / 16], dv[D / 16];
  TCC_UNROLL
  for (int n = 0; n < D / 16; ++n) {
    wmma::fill_fragment(dk[n], 0.0f);
    wmma::fill_fragment(dv[n], 0.0f);
  }
  long long j = k0 + warp * 16 + row; // the lane's key
  // Causal: queries i >= j only, so from the tile of the block's first key.
  long long qBegin = t.causal ? k0 / kTile * kTile : 0;
  for (long long q0 = qBegin; q0 < t.tq; q0 += kTile) {
    __syncthreads(); // the previous step's Q, dO and row stats are read
    loadTile<D>(t, t.q, t.inputPitch, g, q0, t.tq, qs);
    loadTile<D>(t, t.dout, t.heads * t.d, g, q0, t.tq, dos);
    loadRowStats(t, g, q0, sm.lse, sm.dot);
    __syncthreads();
    // S^T = K Q^T; P^T = exp(score - lse), 0 where there is no score.
    productT<Dt, D>(ks + warp * 16 * ld, ld, qs, ld, sm.f32);
    __syncwarp();
    float p[kPerLane];
    for (int c = 0; c < kPerLane; ++c) {
      int col = 2 * c + parity;
      float x = scoreOf(t, g, q0 + col, j, sm.f32[row * kLdScore + col]);
      p[c] = x == kNegInf ? 0.0f : expf(x - sm.lse[col]);
      sm.half[row * kLdHalf + col] = toBits<Dt>(p[c]);
    }
    __syncwarp();
    // dV += P^T dO.
    productAcc<Dt, D>(sm.half, dos, ld, dv);
    // dP^T = V dO^T, then dS^T = P^T (dP^T - D) scale over P^T.
    productT<Dt, D>(vs + warp * 16 * ld, ld, dos, ld, sm.f32);
    __syncwarp();
    for (int c = 0; c < kPerLane; ++c) {
      int col = 2 * c + parity;
      float ds = p[c] * (sm.f32[row * kLdScore + col] - sm.dot[col]) * t.scale;
      sm.half[row * kLdHalf + col] = toBits<Dt>(ds);
    }
    __syncwarp();
    // dK += dS^T Q.
    productAcc<Dt, D>(sm.half, qs, ld, dk);
  }
  storeRows<D>(t, dk, sm.f32, g, k0 + warp * 16, t.tk, t.dk, t.dkType);
  storeRows<D>(t, dv, sm.f32, g, k0 + warp * 16, t.tk, t.dv, t.dvType);
}

/// dQ: block (entry g, query tile); the warp owns 16 queries and walks the
/// key tiles they see.
template <int Dt, int D>
__global__ void __launch_bounds__(kThreads)
    attentionTiledQGradKernel(AttentionTiles t) {
  TCC_DYNAMIC_SMEM(smem);
  constexpr int d = D, ld = ldTile(D);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = lane >> 1, parity = lane & 1;
  long long tiles = (t.tq + kTile - 1) / kTile;
  long long g = blockIdx.x / tiles;
  long long q0 = (tiles - 1 - (blockIdx.x - g * tiles)) * kTile;
  BackwardSmem sm(smem, d, warp);
  unsigned short *qs = sm.own0, *dos = sm.own1, *ks = sm.step0, *vs = sm.step1;
  loadTile<D>(t, t.q, t.inputPitch, g, q0, t.tq, qs);
  loadTile<D>(t, t.dout, t.heads * t.d, g, q0, t.tq, dos);
  loadRowStats(t, g, q0, sm.lse, sm.dot);
  Acc dq[D / 16];
  TCC_UNROLL
  for (int n = 0; n < D / 16; ++n)
    wmma::fill_fragment(dq[n], 0.0f);
  const int r = warp * 16 + row; // the lane's row in the block
  long long i = q0 + r;
  long long kEnd = t.causal && q0 + kTile < t.tk ? q0 + kTile : t.tk;
  for (long long k0 = 0; k0 < kEnd; k0 += kTile) {
    __syncthreads();
    loadTile<D>(t, t.k, t.inputPitch, g, k0, t.tk, ks);
    loadTile<D>(t, t.v, t.inputPitch, g, k0, t.tk, vs);
    __syncthreads();
    productT<Dt, D>(qs + warp * 16 * ld, ld, ks, ld, sm.f32);
    __syncwarp();
    float p[kPerLane];
    for (int c = 0; c < kPerLane; ++c) {
      int col = 2 * c + parity;
      float x = scoreOf(t, g, i, k0 + col, sm.f32[row * kLdScore + col]);
      p[c] = x == kNegInf ? 0.0f : expf(x - sm.lse[r]);
    }
    __syncwarp(); // the scores are read; dP goes over them
    productT<Dt, D>(dos + warp * 16 * ld, ld, vs, ld, sm.f32);
    __syncwarp();
    for (int c = 0; c < kPerLane; ++c) {
      int col = 2 * c + parity;
      float ds = p[c] * (sm.f32[row * kLdScore + col] - sm.dot[r]) * t.scale;
      sm.half[row * kLdHalf + col] = toBits<Dt>(ds);
    }
    __syncwarp();
    productAcc<Dt, D>(sm.half, ks, ld, dq);
  }
  storeRows<D>(t, dq, sm.f32, g, q0 + warp * 16, t.tq, t.dq, t.dqType);
}

/// Launches kernel `k` over `blocks` blocks with `smem` bytes of dynamic
/// shared memory. Above the default 48 KiB a kernel must be allowed more,
/// once: as much as the largest head dim (128) needs.
template <void (*Kernel)(AttentionTiles)>
void launchTiled(long long blocks, int smem, cudaStream_t stream,
                 const AttentionTiles &t, const char *what) {
  (void)stream;
  if (blocks <= 0)
    return;
  if (blocks > 0x7fffffffll)
    throw Error(std::string(what) + ": too many tiles for one grid");
  static const cudaError_t allowed = cudaFuncSetAttribute(
      reinterpret_cast<const void *>(Kernel),
      cudaFuncAttributeMaxDynamicSharedMemorySize, attentionTiledSmemBytes());
  TCC_CUDA_CHECK(allowed);
  TCC_LAUNCH_SMEM(Kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                  smem, stream)
  (t);
  checkLaunch(what);
}

/// The kernels of dtype Dt and head dim D: the forward, or the backward's
/// D = rowsum(dO O) pass, dK / dV and dQ.
template <int Dt, int D>
void launchTiles(const AttentionTiles &t, bool grad, cudaStream_t stream) {
  long long qBlocks = t.batch * ((t.tq + kTile - 1) / kTile);
  if (!grad) {
    launchTiled<attentionTiledForwardKernel<Dt, D>>(
        qBlocks, forwardSmem(D), stream, t, "attention (tiled)");
    return;
  }
  long long rows = t.batch * t.tq, dotBlocks = (rows + 7) / 8;
  TCC_LAUNCH(
      attentionRowDotKernel,
      dim3(static_cast<unsigned>(dotBlocks < (1 << 20) ? dotBlocks : 1 << 20)),
      dim3(256), stream)
  (t);
  checkLaunch("attention_grad (tiled)");
  long long kvBlocks = t.batch * ((t.tk + kTile - 1) / kTile);
  launchTiled<attentionTiledKVGradKernel<Dt, D>>(
      kvBlocks, backwardSmem(D), stream, t, "attention_grad (tiled)");
  launchTiled<attentionTiledQGradKernel<Dt, D>>(
      qBlocks, backwardSmem(D), stream, t, "attention_grad (tiled)");
}

template <int Dt>
void launchByHeadDim(const AttentionTiles &t, bool grad, cudaStream_t stream) {
  switch (t.d) {
  case 16:
    return launchTiles<Dt, 16>(t, grad, stream);
  case 32:
    return launchTiles<Dt, 32>(t, grad, stream);
  case 64:
    return launchTiles<Dt, 64>(t, grad, stream);
  case 80:
    return launchTiles<Dt, 80>(t, grad, stream);
  case 96:
    return launchTiles<Dt, 96>(t, grad, stream);
  case 128:
    return launchTiles<Dt, 128>(t, grad, stream);
  default:
    throw Error("no tiled CUDA attention kernel for head dim " +
                std::to_string(t.d) + " (it takes 16, 32, 64, 80, 96 or 128)");
  }
}

void launchTiledAttention(const AttentionTiles &t, bool grad,
                          cudaStream_t stream) {
  if (t.dtype == kDtBF16)
    launchByHeadDim<kDtBF16>(t, grad, stream);
  else if (t.dtype == kDtF16)
    launchByHeadDim<kDtF16>(t, grad, stream);
  else
    throw Error("the tiled CUDA attention takes bf16 or f16 operands");
}

} // namespace

int attentionTiledSmemBytes() {
  return forwardSmem(128) > backwardSmem(128) ? forwardSmem(128)
                                              : backwardSmem(128);
}

void attentionTiledForward(const AttentionTiles &t, cudaStream_t stream) {
  launchTiledAttention(t, false, stream);
}

void attentionTiledBackward(const AttentionTiles &t, cudaStream_t stream) {
  launchTiledAttention(t, true, stream);
}

} // namespace tcc::rt::cuda
