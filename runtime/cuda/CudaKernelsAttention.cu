//===- CudaKernelsAttention.cu - Attention's row passes -------------------===//
//
// The element-wise and row-reduction steps of CudaAttention.cpp's chunk
// loop, between its GEMMs. A row is one query position of one batch entry
// of the chunk (Tk scores). Threads per row: the smallest power of two in
// [32, 1024] with at most kPer scores per thread; a row of 32 threads is a
// warp (8 rows per block, warp reductions only), a wider one a block (block
// reductions). Lanes read consecutive scores (coalesced), and up to
// kPer * 1024 = 8192 scores per row stay in registers between the max, sum
// and write passes; longer rows are read again from the scratch. The
// reductions run in a fixed order, so results are reproducible bit for bit.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

/// Scores per thread kept in registers.
static constexpr int kPer = 8;
/// Rows per block when a row is one warp.
static constexpr int kWarpRows = 8;

/// Max / sum over the threads of one row: its warp (blockDim.x == 32,
/// uniform over the block) or the whole block (blockDim.y == 1).
__device__ __forceinline__ float rowMax(float v, float *shared) {
  return blockDim.x == 32 ? warpMax(v) : blockMax(v, shared);
}
__device__ __forceinline__ float rowSum(float v, float *shared) {
  return blockDim.x == 32 ? warpSum(v) : blockSum(v, shared);
}

namespace {
/// One row's scores: s[j] = scale S[j] + mask[j], -inf where causal and
/// j > i.
struct RowScores {
  const float *s, *mask;
  long long mCol, jEnd;
  float scale;
  __device__ __forceinline__ float operator()(long long j) const {
    float x = scale * s[j];
    if (mask)
      x += mask[j * mCol];
    return j < jEnd ? x : -INFINITY;
  }
};
} // namespace

__device__ __forceinline__ RowScores rowScores(const AttentionRows &r,
                                               const float *s, long long e,
                                               long long i) {
  RowScores rs;
  rs.s = s + e * r.entryStride + i * r.tk;
  rs.mask =
      r.mask ? r.mask + (r.firstEntry + e) * r.mEntry + i * r.mRow : nullptr;
  rs.mCol = r.mCol;
  rs.jEnd = r.causal && i + 1 < r.tk ? i + 1 : r.tk;
  rs.scale = r.scale;
  return rs;
}

/// The forward row pass (see attentionRows). kCached: tk <= kPer *
/// blockDim.x, the row's scores stay in registers.
template <bool kCached>
__global__ void __launch_bounds__(1024)
    attentionRowsKernel(AttentionRows r, const float *s, void *p, int tp,
                        float *lse, bool fromLse) {
  __shared__ float shared[32];
  long long step = static_cast<long long>(gridDim.x) * blockDim.y;
  for (long long row =
           static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y;
       row < r.rows; row += step) {
    long long e = row / r.tq, i = row - e * r.tq;
    RowScores score = rowScores(r, s, e, i);
    long long out = e * r.entryStride + i * r.tk;
    float v[kPer];
    if constexpr (kCached) {
      TCC_UNROLL
      for (int k = 0; k < kPer; ++k) {
        long long j = threadIdx.x + static_cast<long long>(k) * blockDim.x;
        v[k] = j < r.tk ? score(j) : -INFINITY;
      }
    }
    float l;
    if (fromLse) {
      l = lse[r.firstRow + row];
    } else {
      float mx = -INFINITY;
      if constexpr (kCached) {
        TCC_UNROLL
        for (int k = 0; k < kPer; ++k)
          mx = fmaxf(mx, v[k]);
      } else {
        for (long long j = threadIdx.x; j < r.tk; j += blockDim.x)
          mx = fmaxf(mx, score(j));
      }
      mx = rowMax(mx, shared);
      // A row of only -inf has mx = -inf and gives NaN, as softmax does.
      float sum = 0.0f;
      if constexpr (kCached) {
        TCC_UNROLL
        for (int k = 0; k < kPer; ++k)
          if (threadIdx.x + static_cast<long long>(k) * blockDim.x < r.tk)
            sum += expf(v[k] - mx);
      } else {
        for (long long j = threadIdx.x; j < r.tk; j += blockDim.x)
          sum += expf(score(j) - mx);
      }
      sum = rowSum(sum, shared);
      l = mx + logf(sum);
      if (threadIdx.x == 0)
        lse[r.firstRow + row] = l;
    }
    if constexpr (kCached) {
      TCC_UNROLL
      for (int k = 0; k < kPer; ++k) {
        long long j = threadIdx.x + static_cast<long long>(k) * blockDim.x;
        if (j < r.tk)
          stf(p, tp, out + j, expf(v[k] - l));
      }
    } else {
      for (long long j = threadIdx.x; j < r.tk; j += blockDim.x)
        stf(p, tp, out + j, expf(score(j) - l));
    }
  }
}

/// The backward row pass (see attentionGradRows).
__global__ void __launch_bounds__(1024)
    attentionGradRowsKernel(AttentionRows r, const float *dp, void *p, int tp,
                            const void *dout, const void *out, int to,
                            long long dv) {
  __shared__ float shared[32];
  long long step = static_cast<long long>(gridDim.x) * blockDim.y;
  for (long long row =
           static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y;
       row < r.rows; row += step) {
    long long e = row / r.tq, i = row - e * r.tq;
    // Row i of entry firstEntry + e of dO and O.
    long long o = attentionRowOffset(r.firstEntry + e, i, r.heads, r.tq, dv);
    float d = 0.0f;
    for (long long c = threadIdx.x; c < dv; c += blockDim.x)
      d += ldf(dout, to, o + c) * ldf(out, to, o + c);
    d = rowSum(d, shared);
    long long base = e * r.entryStride + i * r.tk;
    for (long long j = threadIdx.x; j < r.tk; j += blockDim.x) {
      float pj = ldf(p, tp, base + j);
      stf(p, tp, base + j, pj * (dp[base + j] - d) * r.scale);
    }
  }
}

namespace {
/// Grid and block of a row pass over `rows` rows of `tk` scores.
struct RowLaunch {
  dim3 grid, block;
  bool cached;
};
} // namespace

static RowLaunch rowLaunch(long long rows, long long tk) {
  unsigned threads = 32;
  while (threads < 1024 && threads * static_cast<long long>(kPer) < tk)
    threads *= 2;
  unsigned perBlock = threads == 32 ? kWarpRows : 1;
  long long blocks = (rows + perBlock - 1) / perBlock;
  RowLaunch l;
  l.block = dim3(threads, perBlock);
  l.grid = dim3(static_cast<unsigned>(blocks < (1 << 20) ? blocks : 1 << 20));
  l.cached = tk <= threads * static_cast<long long>(kPer);
  return l;
}

void attentionRows(const AttentionRows &r, const float *s, void *p, int tp,
                   float *lse, bool fromLse, cudaStream_t stream) {
  (void)stream; // not used when emulated
  if (r.rows == 0)
    return;
  RowLaunch l = rowLaunch(r.rows, r.tk);
  if (l.cached)
    TCC_LAUNCH(attentionRowsKernel<true>, l.grid, l.block, stream)
  (r, s, p, tp, lse, fromLse);
  else TCC_LAUNCH(attentionRowsKernel<false>, l.grid, l.block,
                  stream)(r, s, p, tp, lse, fromLse);
  checkLaunch(abi::name(fromLse ? abi::KernelId::AttentionGrad
                                : abi::KernelId::Attention));
}

void attentionGradRows(const AttentionRows &r, const float *dp, void *p, int tp,
                       const void *dout, const void *out, int to, long long dv,
                       cudaStream_t stream) {
  (void)stream;
  if (r.rows == 0)
    return;
  RowLaunch l = rowLaunch(r.rows, r.tk);
  TCC_LAUNCH(attentionGradRowsKernel, l.grid, l.block, stream)
  (r, dp, p, tp, dout, out, to, dv);
  checkLaunch(abi::name(abi::KernelId::AttentionGrad));
}

//===----------------------------------------------------------------------===//
// Column sums (runtime/core/AttentionColumnSums.h's order)
//===----------------------------------------------------------------------===//

/// Slice blockIdx.y (and gridDim.y on) of g's columns blockIdx.x * 256 +
/// threadIdx.x: its four 16-row units, each rows g and g + 8 paired, the
/// pairs as a tree, as a tiled kernel's warps add their fragments.
__global__ void __launch_bounds__(256)
    attentionSliceSumsKernel(const void *g, int tg, long long tq,
                             long long tiles, long long slices, long long cols,
                             float *parts) {
  const long long c = blockIdx.x * 256LL + threadIdx.x;
  if (c >= cols)
    return;
  for (long long s = blockIdx.y; s < slices; s += gridDim.y) {
    const long long b = s / tiles, i0 = (s - b * tiles) * 64;
    const long long n = tq - i0 < 64 ? tq - i0 : 64;
    const long long base = (b * tq + i0) * cols + c;
    float unit[4];
    for (int u = 0; u < 4; ++u) {
      float v[8];
      for (int r8 = 0; r8 < 8; ++r8) {
        const int r = 16 * u + r8;
        float lo = r < n ? ldf(g, tg, base + r * cols) : 0.0f;
        float hi = r + 8 < n ? ldf(g, tg, base + (r + 8) * cols) : 0.0f;
        v[r8] = lo + hi;
      }
      unit[u] =
          ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    }
    parts[s * cols + c] = ((unit[0] + unit[1]) + unit[2]) + unit[3];
  }
}

/// Column blockIdx.x * 32 + threadIdx.x's total of the slices (sliceSum).
/// Block (32, 8).
__global__ void __launch_bounds__(256)
    attentionColumnTotalsKernel(const float *parts, long long slices,
                                long long cols, float *out) {
  __shared__ float lanes[8][33];
  float v = sliceSum(parts, slices, cols, cols, lanes);
  long long j = blockIdx.x * 32LL + threadIdx.x;
  if (threadIdx.y == 0 && j < cols)
    out[j] = v;
}

/// Launch failures of the column sums name them after the kernel they serve.
static std::string columnSumsLabel() {
  return std::string(abi::name(abi::KernelId::AttentionGrad)) +
         " (column sums)";
}

void attentionSliceSums(const void *g, int tg, long long outer, long long tq,
                        long long cols, float *parts, cudaStream_t stream) {
  (void)stream;
  const long long tiles = attentionSumTiles(tq), slices = outer * tiles;
  if (slices == 0 || cols == 0)
    return;
  dim3 grid(static_cast<unsigned>((cols + 255) / 256),
            static_cast<unsigned>(slices < 65535 ? slices : 65535));
  TCC_LAUNCH(attentionSliceSumsKernel, grid, dim3(256), stream)
  (g, tg, tq, tiles, slices, cols, parts);
  checkLaunch(columnSumsLabel().c_str());
}

void attentionColumnTotals(const float *parts, long long slices, long long cols,
                           float *out, cudaStream_t stream) {
  (void)stream;
  if (cols == 0)
    return;
  TCC_LAUNCH(attentionColumnTotalsKernel,
             dim3(static_cast<unsigned>((cols + 31) / 32)), dim3(32, 8), stream)
  (parts, slices, cols, out);
  checkLaunch(columnSumsLabel().c_str());
}

} // namespace tcc::rt::cuda
