//===- KernelsAttention.cpp - Fused attention and its gradient ------------===//
//
// `attention` and `attention_grad` (tcc.attention / tcc.attention_grad):
// softmax(scale * Q K^T + mask, causal) V without materializing the
// probabilities P for the backward, which recomputes them from the saved
// row log-sum-exp. Batch entries (the flattened leading dims) are split
// across the ThreadPool; each worker computes one entry at a time in its
// own scratch, in blocks of query rows:
//
//   forward   S = Q_blk K^T (sgemm), row pass (scale, mask, causal, max,
//             P = exp(s - max) / sum, lse), O_blk = P V (sgemm).
//   backward  S = Q_blk K^T and dP = dO_blk V^T (sgemm), row pass (P from
//             lse, dS = P * (dP - rowsum(dO * O)) * scale), dV += P^T dO_blk,
//             dQ_blk = dS K, dK += dS^T Q_blk (sgemm).
//
// A block holds at most kBlockFloats scores, so the scratch stays in cache
// and bounded for long sequences; dK and dV are summed over an entry's
// blocks in a fixed order, never across entries (each entry belongs to one
// worker), so the results do not depend on the thread count. With `causal`
// a block of rows [i0, i1) only needs keys j < i1: the GEMMs skip the
// columns above the diagonal (causal rows come in at least 4 blocks).
// The row passes use a vectorized exp (FastExp.h, within 2 ulp): with
// libm's scalar expf they took as long as the GEMMs.
//
// Where the CPU has AVX-512F the products and row passes run on
// KernelsAttentionTile.h's register tiles instead of sgemm (whose call and
// packing cost more than these small products; TCC_CPU_ATTENTION=blas
// keeps sgemm, for benchmarks): K^T and V^T are transposed once per entry,
// P^T and dS^T are read through strides. With the tiles and fewer than two
// entries a thread, the forward's row blocks are pool items of their own.
//
// While workers run, OpenBLAS is held to one thread (each GEMM of one entry
// is small; the batch is the parallelism, and two levels of threads would
// oversubscribe the cores); with one entry or one thread the entries run on
// the calling thread with OpenBLAS's threads.
//
// Sequence-major operands (seq_major, [B..., T, H, D]: the layout before
// the head transposes) are read and written in place: an f32 entry is a
// strided matrix (leading dim H*D) that BLAS takes as it is; 16-bit rows
// are widened into the scratch row by row anyway. With fused_qkv, q, k and
// v are the thirds of one [B..., T, 3H, D] projection: leading dim 3*H*D,
// k and v H*D and 2*H*D elements in (AttentionDims::inputPitch); the
// backward writes the three gradients into one tensor of that layout.
//
// bf16/f16 are handled here, not by KernelsHalf.cpp's adapter: operands are
// widened to f32 per entry, the GEMMs accumulate in f32, P is rounded to the
// 16-bit type before it is a GEMM operand (P V, P^T dO) and so is dS (dS K,
// dS^T Q), as a 16-bit GEMM operand would be on a GPU; dS itself is computed
// from the unrounded P. Outputs are rounded once. lse and mask are f32.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/AttentionPlan.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/core/prelude/FastExp.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/cpu/KernelsAttentionTile.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

//===----------------------------------------------------------------------===//
// Shared run-time pieces
//===----------------------------------------------------------------------===//

namespace {
/// One call's geometry, read from checked operands.
struct AttnGeom : AttentionDims {
  float scale = 1.0f;
  bool causal = false;
  DType dtype = DType::F32;
  const float *mask = nullptr;
  int64_t mB = 0, mR = 0, mC = 0; // mask element strides: entry, row, col
  int64_t rowsPerBlock = 1;
  /// The products run on KernelsAttentionTile.h's tiles, not sgemm.
  bool tiles = false;
};

enum Slot {
  SlotS,
  SlotDP,
  SlotQ,
  SlotK,
  SlotV,
  SlotO,
  SlotDO,
  SlotDQ,
  SlotDK,
  SlotDV,
  SlotRow,
  SlotKT,
  SlotVT,
  NumSlots
};

/// Per-thread f32 scratch, one buffer per slot, reallocated at exactly the
/// size asked for when it must grow and kept for the next call; counted in
/// kernelScratchBytes() like the convolution's.
struct AttnScratch {
  std::vector<float> v[NumSlots];
  ~AttnScratch() {
    for (auto &b : v)
      noteKernelScratch(-(int64_t)(b.capacity() * sizeof(float)));
  }
  float *get(Slot s, int64_t n) {
    std::vector<float> &b = v[s];
    if ((int64_t)b.size() < n) {
      noteKernelScratch(-(int64_t)(b.capacity() * sizeof(float)));
      std::vector<float>().swap(b);
      b.resize(n);
      noteKernelScratch((int64_t)(b.capacity() * sizeof(float)));
    }
    return b.data();
  }
};
} // namespace

static AttnScratch &scratch() {
  thread_local AttnScratch s;
  return s;
}

/// Scores per block of query rows: 256 KiB of f32, a block of at least 32
/// rows unless the keys are so many that this would pass 64 MiB.
static constexpr int64_t kBlockFloats = 1 << 16;
static constexpr int64_t kMinBlockRows = 32;
static constexpr int64_t kMaxBlockFloats = 1 << 24;

static AttnGeom geometry(const KernelArgs &a, size_t nIn) {
  // attention and attention_grad share AttentionAttrs.
  const abi::AttentionAttrs at = abi::attrsOf<abi::AttentionAttrs>(a.instr);
  AttnGeom g{attentionDims(*a.in[0].shape, *a.in[1].shape, *a.in[2].shape, at)};
  g.scale = static_cast<float>(at.scale);
  g.causal = at.causal;
  g.dtype = a.in[0].dtype;
  g.tiles = attentionTilesOn();
  if (a.in.size() > nIn) {
    const TensorView &M = a.in[nIn];
    size_t mr = M.rank();
    int64_t rows = M.dim(mr - 2), cols = M.dim(mr - 1);
    g.mask = M.f32();
    g.mC = cols == 1 ? 0 : 1;
    g.mR = rows == 1 ? 0 : cols;
    g.mB = M.numel == rows * cols ? 0 : rows * cols;
  }
  int64_t tk = std::max<int64_t>(g.tk, 1);
  int64_t rows = std::max(kBlockFloats / tk, kMinBlockRows);
  rows = std::min(rows, std::max<int64_t>(kMaxBlockFloats / tk, 1));
  // Causal: at least 4 blocks (of 16 rows or more), so that the GEMMs skip
  // about 3/8 of the keys (benchmarks/results/design-measurements.md).
  if (g.causal)
    rows = std::min(rows, std::max<int64_t>(16, (g.tq + 3) / 4));
  g.rowsPerBlock = std::max<int64_t>(std::min(rows, g.tq), 1);
  return g;
}

/// C[m, n] = beta * C + op(A) op(B), row-major, any size (BLAS rejects a
/// zero leading dimension; an empty sum is zero).
static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  const float *a, int64_t lda, const float *b, int64_t ldb,
                  float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    if (beta == 0.0f)
      for (int64_t i = 0; i < m; ++i)
        std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
              (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/// C = beta C + op(A) B, beta 0 or 1: sgemm, or the tile kernels (which
/// read a transposed A through its strides).
static void product(const AttnGeom &g, bool ta, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *b, int64_t ldb,
                    float beta, float *c, int64_t ldc) {
  if (!g.tiles)
    return sgemm(ta, false, m, n, k, a, lda, b, ldb, beta, c, ldc);
  attentionGemm(m, n, k, a, ta ? 1 : lda, ta ? lda : 1, b, ldb, beta != 0.0f, c,
                ldc);
}

/// An entry's rows as f32: `ld` elements from one row to the next.
struct Rows {
  float *p;
  int64_t ld;
  const float *row(int64_t i) const { return p + i * ld; }
};

/// The keys (or values) `k`, `rows` x `cols`, as the B of products with
/// their transpose (S = Q K^T, dP = dO V^T): for the tiles a transposed
/// copy in `slot`, made once per entry; sgemm transposes as it packs.
struct KeysT {
  Rows k;
  const float *t = nullptr; // [cols, rows] when tiles
  int64_t rows = 0;
};

static KeysT keysT(const AttnGeom &g, const Rows &k, int64_t rows, int64_t cols,
                   Slot slot);

/// C[m, n] = A K[0:n]^T (C's rows n apart).
static void productBt(const AttnGeom &g, int64_t m, int64_t n, int64_t kd,
                      const float *a, int64_t lda, const KeysT &k, float *c) {
  if (!g.tiles)
    return sgemm(false, true, m, n, kd, a, lda, k.k.p, k.k.ld, 0.0f, c, n);
  attentionGemm(m, n, kd, a, lda, 1, k.t, k.rows, false, c, n);
}

/// Entry `b` of operand `t` (`rows` x `cols` per entry, in g's layout) as
/// f32: the tensor itself, strided, or its rows widened into the slot.
/// `part` 0, 1, 2: q, k or v (fused_qkv: a third of one tensor); -1: out or
/// dout.
static Rows entryF32(const AttnGeom &g, const TensorView &t, int64_t b,
                     int64_t rows, int64_t cols, Slot slot, int part) {
  int64_t at = g.entryOffset(b, rows, cols, part), ld = g.pitch(cols, part);
  if (t.dtype == DType::F32)
    return {t.f32() + at, ld};
  float *dst = scratch().get(slot, rows * cols);
  const uint16_t *src = static_cast<const uint16_t *>(t.data) + at;
  if (ld == cols)
    widenToF32(src, t.dtype, dst, rows * cols);
  else
    for (int64_t i = 0; i < rows; ++i)
      widenToF32(src + i * ld, t.dtype, dst + i * cols, cols);
  return {dst, cols};
}

/// Where entry `b` of output `t` (gradient `part`, or -1: out) is
/// computed: in place for f32, else in the slot (stored by storeEntry).
static Rows outF32(const AttnGeom &g, const TensorView &t, int64_t b,
                   int64_t rows, int64_t cols, Slot slot, int part) {
  if (t.dtype == DType::F32)
    return {t.f32() + g.entryOffset(b, rows, cols, part), g.pitch(cols, part)};
  return {scratch().get(slot, rows * cols), cols};
}

/// Stores rows [r0, r1) of entry `b` of output `t` from `v` (16-bit types;
/// f32 ones were computed in place).
static void storeRows(const AttnGeom &g, const TensorView &t, int64_t b,
                      int64_t rows, int64_t cols, const Rows &v, int part,
                      int64_t r0, int64_t r1) {
  if (t.dtype == DType::F32)
    return;
  int64_t ld = g.pitch(cols, part);
  uint16_t *dst =
      static_cast<uint16_t *>(t.data) + g.entryOffset(b, rows, cols, part);
  if (ld == cols)
    narrowFromF32(v.row(r0), t.dtype, dst + r0 * cols, (r1 - r0) * cols);
  else
    for (int64_t i = r0; i < r1; ++i)
      narrowFromF32(v.row(i), t.dtype, dst + i * ld, cols);
}

static void storeEntry(const AttnGeom &g, const TensorView &t, int64_t b,
                       int64_t rows, int64_t cols, const Rows &v, int part) {
  storeRows(g, t, b, rows, cols, v, part, 0, rows);
}

static KeysT keysT(const AttnGeom &g, const Rows &k, int64_t rows, int64_t cols,
                   Slot slot) {
  KeysT r{k, nullptr, rows};
  if (g.tiles) {
    float *t = scratch().get(slot, rows * cols);
    attentionTranspose(rows, cols, k.p, k.ld, t);
    r.t = t;
  }
  return r;
}

/// Zeroes `rows` rows of `cols` elements.
static void zeroRows(const Rows &r, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    std::fill_n(r.p + i * r.ld, cols, 0.0f);
}

/// Rounds f32 values to the 16-bit type t (a 16-bit GEMM operand).
static void roundTo(DType t, float *x, int64_t n) {
  if (t == DType::BF16)
    for (int64_t i = 0; i < n; ++i)
      x[i] = bf16ToF32(f32ToBf16(x[i]));
  else if (t == DType::F16)
    for (int64_t i = 0; i < n; ++i)
      x[i] = f16ToF32(f32ToF16(x[i]));
}

/// Row i of entry b, columns [0, n): s = scale * S + mask, -inf above the
/// diagonal when causal.
static void scoresRow(const AttnGeom &g, int64_t b, int64_t i, float *s,
                      int64_t n) {
  float scale = g.scale;
  const float *m = g.mask ? g.mask + b * g.mB + i * g.mR : nullptr;
  if (!m) {
    for (int64_t j = 0; j < n; ++j)
      s[j] *= scale;
  } else if (g.mC) {
    for (int64_t j = 0; j < n; ++j)
      s[j] = s[j] * scale + m[j];
  } else {
    float mv = m[0];
    for (int64_t j = 0; j < n; ++j)
      s[j] = s[j] * scale + mv;
  }
  if (g.causal)
    for (int64_t j = i + 1; j < n; ++j)
      s[j] = -INFINITY;
}

/// Row i of entry b's scores for the tiles' row passes (scoresRow's).
static AttentionScores scoresOf(const AttnGeom &g, int64_t b, int64_t i,
                                int64_t n) {
  AttentionScores s;
  s.scale = g.scale;
  if (g.mask) {
    s.mask = g.mask + b * g.mB + i * g.mR;
    s.maskPerKey = g.mC != 0;
  }
  s.visible = g.causal ? std::min(n, i + 1) : n;
  return s;
}

/// Lane-wise reductions of a row (8 lanes, combined in a fixed order), so
/// GCC vectorizes them without reassociating float sums by itself.
static constexpr int kLanes = 8;

static float rowMax(const float *x, int64_t n) {
  float lane[kLanes];
  std::fill_n(lane, kLanes, -INFINITY);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] = lane[l] < x[j + l] ? x[j + l] : lane[l];
  for (; j < n; ++j)
    lane[0] = lane[0] < x[j] ? x[j] : lane[0];
  float mx = lane[0];
  for (int l = 1; l < kLanes; ++l)
    mx = mx < lane[l] ? lane[l] : mx;
  return mx;
}

static float rowSum(const float *x, int64_t n) {
  float lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += x[j + l];
  for (; j < n; ++j)
    lane[0] += x[j];
  float sum = lane[0];
  for (int l = 1; l < kLanes; ++l)
    sum += lane[l];
  return sum;
}

/// The key columns rows [i0, i1) can see: all, or j < i1 when causal.
static int64_t visibleKeys(const AttnGeom &g, int64_t i1) {
  return g.causal ? std::min(g.tk, i1) : g.tk;
}

/// Runs item(i) for i < items (batch entries, or pieces of them): on the
/// ThreadPool with OpenBLAS held to one thread, or on the calling thread.
template <class F>
static void forEachItem(const AttnGeom &g, int64_t items, F &&item) {
  ThreadPool &pool = ThreadPool::global();
  // Work below this (multiply-adds) is not worth waking the pool.
  constexpr int64_t kMinParallelWork = 1 << 18;
  double work = (double)g.batch * g.tq * g.tk * (g.d + g.dv);
  if (items < 2 || pool.size() < 2 || work < kMinParallelWork) {
    for (int64_t i = 0; i < items; ++i)
      item(i);
    return;
  }
  struct BlasThreads {
    int saved = openblas_get_num_threads();
    BlasThreads() {
      if (saved != 1)
        openblas_set_num_threads(1);
    }
    ~BlasThreads() {
      if (saved != 1)
        openblas_set_num_threads(saved);
    }
  } single;
  pool.parallelFor(items, [&](int64_t i) { item(i); });
}

//===----------------------------------------------------------------------===//
// attention: in [q, k, v (, mask)] out [out, lse]
//===----------------------------------------------------------------------===//

/// Row blocks [blk0, blk1) of entry b of the forward.
static void forwardBlocks(const KernelArgs &a, const AttnGeom &g, int64_t b,
                          int64_t blk0, int64_t blk1) {
  Rows q = entryF32(g, a.in[0], b, g.tq, g.d, SlotQ, 0);
  Rows k = entryF32(g, a.in[1], b, g.tk, g.d, SlotK, 1);
  Rows v = entryF32(g, a.in[2], b, g.tk, g.dv, SlotV, 2);
  Rows o = outF32(g, a.out[0], b, g.tq, g.dv, SlotO, -1);
  float *lse = a.out[1].f32() + b * g.tq;
  KeysT kt = keysT(g, k, g.tk, g.d, SlotKT);
  float *s = scratch().get(SlotS, g.rowsPerBlock * g.tk);
  const int64_t first = blk0 * g.rowsPerBlock,
                last = std::min(g.tq, blk1 * g.rowsPerBlock);
  for (int64_t i0 = first; i0 < last; i0 += g.rowsPerBlock) {
    int64_t i1 = std::min(g.tq, i0 + g.rowsPerBlock), rows = i1 - i0;
    int64_t n = visibleKeys(g, i1);
    productBt(g, rows, n, g.d, q.row(i0), q.ld, kt, s);
    for (int64_t i = i0; i < i1; ++i) {
      float *row = s + (i - i0) * n;
      if (g.tiles) {
        lse[i] = attentionSoftmaxRow(row, n, scoresOf(g, b, i, n));
        continue;
      }
      scoresRow(g, b, i, row, n);
      float mx = rowMax(row, n);
      for (int64_t j = 0; j < n; ++j)
        row[j] = fastExp(row[j] - mx);
      float sum = rowSum(row, n);
      lse[i] = mx + std::log(sum); // NaN for a fully masked row
      // P = exp(s - max) / sum; the backward's exp(s - lse) is the same
      // up to rounding.
      float inv = 1.0f / sum;
      for (int64_t j = 0; j < n; ++j)
        row[j] *= inv;
    }
    roundTo(g.dtype, s, rows * n);
    product(g, false, rows, g.dv, n, s, n, v.p, v.ld, 0.0f, o.p + i0 * o.ld,
            o.ld);
  }
  storeRows(g, a.out[0], b, g.tq, g.dv, o, -1, first, last);
}

void run_attention(const KernelArgs &a) {
  AttnGeom g = geometry(a, 3);
  int64_t blocks = (g.tq + g.rowsPerBlock - 1) / g.rowsPerBlock;
  // The rows of an entry do not depend on one another: with the tiles
  // (no OpenBLAS threads to fall back on) and fewer than two entries a
  // thread, each row block is an item, so one long sequence still takes
  // every thread (each item transposes K for itself).
  int64_t split = g.tiles && g.batch < 2 * ThreadPool::global().size()
                      ? std::max<int64_t>(blocks, 1)
                      : 1;
  forEachItem(g, g.batch * split, [&](int64_t it) {
    int64_t b = it / split;
    if (split == 1)
      forwardBlocks(a, g, b, 0, blocks);
    else
      forwardBlocks(a, g, b, it % split, it % split + 1);
  });
}

//===----------------------------------------------------------------------===//
// attention_grad: in [q, k, v, out, lse, dout (, mask)] out [dq, dk, dv]
//===----------------------------------------------------------------------===//

/// One entry of the backward.
static void backwardEntry(const KernelArgs &a, const AttnGeom &g, int64_t b) {
  Rows q = entryF32(g, a.in[0], b, g.tq, g.d, SlotQ, 0);
  Rows k = entryF32(g, a.in[1], b, g.tk, g.d, SlotK, 1);
  Rows v = entryF32(g, a.in[2], b, g.tk, g.dv, SlotV, 2);
  Rows o = entryF32(g, a.in[3], b, g.tq, g.dv, SlotO, -1);
  const float *lse = a.in[4].f32() + b * g.tq;
  Rows dout = entryF32(g, a.in[5], b, g.tq, g.dv, SlotDO, -1);
  // fused_qkv: the thirds of one gradient.
  const TensorView &DQ = a.out[0], &DK = a.out[g.fusedQkv ? 0 : 1],
                   &DV = a.out[g.fusedQkv ? 0 : 2];
  Rows dq = outF32(g, DQ, b, g.tq, g.d, SlotDQ, 0);
  Rows dk = outF32(g, DK, b, g.tk, g.d, SlotDK, 1);
  Rows dv = outF32(g, DV, b, g.tk, g.dv, SlotDV, 2);
  zeroRows(dk, g.tk, g.d);
  zeroRows(dv, g.tk, g.dv);
  // rowDot[i] = sum_d dout[i, d] out[i, d] (the softmax gradient's row sum).
  float *rowDot = scratch().get(SlotRow, g.tq);
  for (int64_t i = 0; i < g.tq; ++i) {
    const float *dr = dout.row(i), *orow = o.row(i);
    if (g.tiles) {
      rowDot[i] = attentionDot(dr, orow, g.dv);
      continue;
    }
    float acc = 0.0f;
    for (int64_t d = 0; d < g.dv; ++d)
      acc += dr[d] * orow[d];
    rowDot[i] = acc;
  }
  KeysT kt = keysT(g, k, g.tk, g.d, SlotKT);
  KeysT vt = keysT(g, v, g.tk, g.dv, SlotVT);
  float *p = scratch().get(SlotS, g.rowsPerBlock * g.tk);
  float *ds = scratch().get(SlotDP, g.rowsPerBlock * g.tk);
  for (int64_t i0 = 0; i0 < g.tq; i0 += g.rowsPerBlock) {
    int64_t i1 = std::min(g.tq, i0 + g.rowsPerBlock), rows = i1 - i0;
    int64_t n = visibleKeys(g, i1);
    const float *qb = q.row(i0), *dob = dout.row(i0);
    productBt(g, rows, n, g.d, qb, q.ld, kt, p);
    productBt(g, rows, n, g.dv, dob, dout.ld, vt, ds);
    for (int64_t i = i0; i < i1; ++i) {
      float *pr = p + (i - i0) * n, *dr = ds + (i - i0) * n;
      float l = lse[i], dot = rowDot[i];
      if (g.tiles) {
        attentionGradRow(pr, dr, n, scoresOf(g, b, i, n), l, dot);
        continue;
      }
      scoresRow(g, b, i, pr, n);
      for (int64_t j = 0; j < n; ++j) {
        float pj = fastExp(pr[j] - l);
        pr[j] = pj;
        dr[j] = pj * (dr[j] - dot) * g.scale;
      }
    }
    roundTo(g.dtype, p, rows * n);
    roundTo(g.dtype, ds, rows * n);
    product(g, true, n, g.dv, rows, p, n, dob, dout.ld, 1.0f, dv.p, dv.ld);
    product(g, false, rows, g.d, n, ds, n, k.p, k.ld, 0.0f, dq.p + i0 * dq.ld,
            dq.ld);
    product(g, true, n, g.d, rows, ds, n, qb, q.ld, 1.0f, dk.p, dk.ld);
  }
  storeEntry(g, DQ, b, g.tq, g.d, dq, 0);
  storeEntry(g, DK, b, g.tk, g.d, dk, 1);
  storeEntry(g, DV, b, g.tk, g.dv, dv, 2);
}

/// attention_grad's column sums of the projection gradient G into `sums`:
/// G's values as stored, summed in reduce_sum's order (ColumnSums), so a
/// step that sums the bias gradient here has the bits of one that sums it
/// by a reduce_sum of G (--fuse-column-sums=false). (The CUDA kernels add
/// in runtime/core/AttentionColumnSums.h's order instead, their tiles'.)
static void columnSums(const TensorView &G, const TensorView &sums) {
  const int64_t cols = sums.numel, rows = cols ? G.numel / cols : 0;
  ColumnSums cs(rows, cols);
  cs.forEachSlice(rows * cols, [&](int64_t r0, int64_t r1) {
    // The slice's rows as f32 (16-bit ones widened).
    const float *x = G.dtype == DType::F32 ? G.f32() + r0 * cols : nullptr;
    thread_local std::vector<float> wide;
    if (!x) {
      wide.resize(static_cast<size_t>((r1 - r0) * cols));
      widenToF32(static_cast<const char *>(G.data) +
                     r0 * cols * dtypeSize(G.dtype),
                 G.dtype, wide.data(), (r1 - r0) * cols);
      x = wide.data();
    }
    for (int64_t r = r0; r < r1; ++r)
      cs.addRow(r, x + (r - r0) * cols, 0, cols);
  });
  cs.finish(0, sums.f32());
}

void run_attention_grad(const KernelArgs &a) {
  AttnGeom g = geometry(a, 6);
  // An entry's dK and dV sum over all its row blocks, so the backward's
  // threads take whole entries: with fewer entries than threads, sgemm's
  // own threads do more than one thread's tiles.
  if (g.batch < ThreadPool::global().size())
    g.tiles = false;
  forEachItem(g, g.batch, [&](int64_t b) { backwardEntry(a, g, b); });
  if (a.out.size() == 2)
    columnSums(a.out[0], a.out[1]);
}

} // namespace tcc::rt::kernels
