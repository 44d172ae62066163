//===- KernelCasesAttention.h - Attention cases ---------------------------===//
//
// attention and attention_grad: packed and sequence-major, masks of every
// broadcast, causal, fused QKV with its column sums, and the CUDA tiled
// kernels' every way of copying and multiplying tiles.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESATTENTION_H
#define TCC_TESTS_UNIT_KERNELCASESATTENTION_H

#include "KernelCases.h"

#include "runtime/core/AttentionColumnSums.h"

#include <cmath>
#include <cstring>
#include <random>

namespace tcc::rt::test {

/// attention -> attention_grad of q [batch.., tq, d], k [.., tk, d], v
/// [.., tk, dv] in type t (an f32 mask of shape `mask` unless empty, with
/// some -inf, never on key 0: no row is all -inf); appends out, lse, dq, dk, dv
/// to `outs`. heads > 0: sequence-major, q [batch.., tq, heads, d] and so on,
/// lse [batch.., heads, tq]. fusedQkv (heads > 0, tq = tk, d = dv): q, k
/// and v are one random [batch.., tq, 3 * heads, d] projection and the
/// gradient is one tensor of that shape; with columnSums, followed by its
/// column sums (f32 [3 * heads * d]).
inline void attentionPair(OneProgram &p, DType t, std::vector<int64_t> batch,
                          int64_t tq, int64_t tk, int64_t d, int64_t dv,
                          std::vector<int64_t> mask, bool causal,
                          std::vector<int32_t> &outs, int64_t heads = 0,
                          bool fusedQkv = false, bool columnSums = false) {
  auto sh = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> s = batch;
    if (heads > 0)
      s.insert(s.end(), {rows, heads, cols});
    else
      s.insert(s.end(), {rows, cols});
    return s;
  };
  std::vector<int32_t> in;
  if (fusedQkv) {
    std::vector<int64_t> s = batch;
    s.insert(s.end(), {tq, 3 * heads, d});
    in.assign(3, p.random(t, s, -1, 1));
  } else {
    in = {p.random(t, sh(tq, d), -1, 1), p.random(t, sh(tk, d), -1, 1),
          p.random(t, sh(tk, dv))};
  }
  int32_t dout = p.random(t, sh(tq, dv));
  int32_t m = -1;
  if (!mask.empty()) {
    int64_t n = 1;
    for (int64_t x : mask)
      n *= x;
    std::vector<float> v(static_cast<size_t>(n));
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < n; ++i)
      v[i] = mask.back() > 1 && i % 3 == 1 && i % mask.back() != 0
                 ? -INFINITY // never key 0, which every causal row sees
                 : u(rng);
    m = p.floats(DType::F32, mask, v);
  }
  std::vector<int64_t> lseShape = batch;
  if (heads > 0)
    lseShape.push_back(heads);
  lseShape.push_back(tq);
  int32_t out = p.out(t, sh(tq, dv)), lse = p.out(DType::F32, lseShape);
  // fused_qkv: one gradient, the projection's.
  std::vector<int32_t> grads =
      fusedQkv ? std::vector<int32_t>{p.out(t, p.info(in[0]).shape)}
               : std::vector<int32_t>{p.out(t, sh(tq, d)), p.out(t, sh(tk, d)),
                                      p.out(t, sh(tk, dv))};
  if (columnSums)
    grads.push_back(p.out(DType::F32, {3 * heads * d}));
  double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<int32_t> fin = in, gin = in;
  gin.insert(gin.end(), {out, lse, dout});
  if (m >= 0) {
    fin.push_back(m);
    gin.push_back(m);
  }
  std::vector<int64_t> attrs = {causal ? 1 : 0, heads > 0 ? 1 : 0,
                                fusedQkv ? 1 : 0};
  p.instr("attention", fin, {out, lse}, attrs, {scale});
  p.instr("attention_grad", gin, grads, attrs, {scale});
  outs.insert(outs.end(), {out, lse});
  outs.insert(outs.end(), grads.begin(), grads.end());
}

/// Expects the f32 column sums `sums` of a fused-QKV attention_grad to be
/// bit for bit runtime/core/AttentionColumnSums.h's sums of the bf16
/// gradient `g` ([outer.., T, 3H, D]) the same run wrote (`got`).
inline void
expectColumnSumsInOrder(const OneProgram &p,
                        const std::vector<std::vector<uint8_t>> &got, int32_t g,
                        int32_t sums) {
  const TensorInfo &gi = p.info(g);
  ASSERT_EQ(gi.dtype, DType::BF16);
  const int64_t tlen = gi.shape[gi.shape.size() - 3];
  const int64_t cols = gi.shape[gi.shape.size() - 2] * gi.shape.back();
  const int64_t outer = gi.numElements() / cols / tlen;
  const int64_t tiles = attentionSumTiles(tlen), slices = outer * tiles;
  const auto *bits = reinterpret_cast<const uint16_t *>(got[g].data());
  std::vector<float> parts(static_cast<size_t>(slices * cols));
  for (int64_t s = 0; s < slices; ++s) {
    int64_t b = s / tiles, i0 = (s % tiles) * kAttentionSumRows;
    int64_t n = std::min(kAttentionSumRows, tlen - i0);
    for (int64_t c = 0; c < cols; ++c)
      parts[s * cols + c] = attentionSliceSum(
          [&](int64_t r) {
            return bf16ToF32(bits[(b * tlen + i0 + r) * cols + c]);
          },
          n);
  }
  for (int64_t c = 0; c < cols; ++c) {
    float want = attentionSlicesTotal(
        [&](int64_t s) { return parts[s * cols + c]; }, slices);
    float have;
    std::memcpy(&have, got[sums].data() + c * sizeof(float), sizeof(float));
    EXPECT_EQ(std::memcmp(&have, &want, sizeof(float)), 0)
        << "tensor " << p.info(sums).name << " column " << c << ": " << have
        << " against " << want;
  }
}

/// attention and attention_grad (CudaAttention.h; in the emulator with a
/// host GEMM): no mask, causal with a shared mask, a rank-2 mask with
/// Tq < Tk, and rows of 300 keys (block rows) with a per-entry mask that
/// broadcasts over rows. 16-bit dS differs from the CPU's by the rounding
/// of the P it is computed from (the GPU keeps only the rounded P).
/// Sequence-major: nn.MultiheadAttention's [T, N * H, D] (no outer dims)
/// with a per-entry mask, and [B, T, H, D] causal with Tq < Tk.
inline void attentionCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("attention_") + dtypeName(t)};
    if (t == DType::F32)
      c.rtol = c.atol = 1e-4; // f32 GEMMs and sums in another order
    OneProgram &p = c.prog;
    attentionPair(p, t, {2, 3}, 5, 7, 8, 6, {}, false, c.outs);
    attentionPair(p, t, {2, 3}, 7, 7, 8, 8, {1, 1, 7, 7}, true, c.outs);
    attentionPair(p, t, {4}, 5, 7, 4, 4, {5, 7}, true, c.outs);
    attentionPair(p, t, {2, 3}, 4, 300, 8, 8, {2, 3, 1, 300}, false, c.outs);
    cases.push_back(std::move(c));
  }
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("attention_seq_major_") + dtypeName(t)};
    if (t == DType::F32)
      c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    attentionPair(p, t, {}, 5, 7, 8, 6, {6, 5, 7}, false, c.outs, 6);
    attentionPair(p, t, {2}, 5, 9, 8, 4, {}, true, c.outs, 3);
    attentionPair(p, t, {2}, 4, 300, 8, 8, {2, 3, 1, 300}, false, c.outs, 3);
    attentionPair(p, t, {2}, 9, 9, 8, 8, {2, 3, 9, 9}, true, c.outs, 3, true);
    attentionPair(p, t, {3}, 70, 70, 8, 8, {}, true, c.outs, 2, true, true);
    if (t != DType::F32)
      c.sumsOf16Bit.push_back(c.outs.back());
    cases.push_back(std::move(c));
  }
  // The CPU's AVX-512 tiles (KernelsAttentionTile.h): head dims 16 to 80
  // (one or two 64-column panels), lengths off the 8-row tiles and the
  // 16 lanes, causal and not, both layouts, and GPT's fused QKV.
  {
    KernelCase c{"attention_head_dims_f32"};
    c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    DType f = DType::F32;
    attentionPair(p, f, {2}, 67, 67, 16, 16, {}, true, c.outs, 2);
    attentionPair(p, f, {3}, 33, 45, 32, 32, {3, 1, 45}, false, c.outs);
    attentionPair(p, f, {2}, 67, 67, 64, 64, {}, true, c.outs);
    attentionPair(p, f, {1}, 50, 50, 80, 80, {1, 2, 1, 50}, false, c.outs, 2);
    attentionPair(p, f, {2}, 65, 65, 32, 32, {}, true, c.outs, 4, true, true);
    cases.push_back(std::move(c));
  }
  // The tiled kernels (16-bit, D 16, 32, 64, 80, 96 or 128): the tails of
  // 64-row tiles, whole tiles, causal tiles above and below the diagonal with
  // Tq < Tk and Tq > Tk, masks of each broadcast, both layouts; D 48 takes the
  // chunk loop. Each with warps of 16 rows (64-row blocks) and of 32 (128-row
  // blocks where the head dim has them: TCC_CUDA_ATTENTION_WARP_ROWS). And
  // with tensor copies (TCC_CUDA_ATTENTION_COPY=tma; the kernels of 16-row
  // warps, so with 32 rows those of the head dims that keep 16), and with
  // warpgroup products (TCC_CUDA_ATTENTION_MMA=wgmma: head dim 64, 16-row
  // warps; the rest as before), in both 16-bit types.
  for (int way : {0, 1, 2}) // cp.async, tensor copies, wgmma
    for (int rows : {16, 32})
      for (DType t : {DType::BF16, DType::F16}) {
        if ((way == 1 && t == DType::F16) || (way == 2 && rows == 32))
          continue; // the copies do not depend on the dtype
        KernelCase c{std::string("attention_tiled_") + dtypeName(t) +
                     (rows == 32 ? "_warp_rows_32" : "") +
                     (way == 1   ? "_tma"
                      : way == 2 ? "_wgmma"
                                 : "")};
        c.attentionWarpRows = rows;
        c.attentionCopies =
            way == 1 ? AttentionCopies::Tma : AttentionCopies::Async;
        c.attentionProducts =
            way == 2 ? AttentionProducts::Wgmma : AttentionProducts::Sync;
        OneProgram &p = c.prog;
        attentionPair(p, t, {2}, 70, 130, 32, 32, {}, true, c.outs);
        attentionPair(p, t, {3}, 130, 70, 16, 16, {3, 130, 70}, true, c.outs);
        attentionPair(p, t, {}, 65, 65, 64, 64, {1, 65}, false, c.outs, 2);
        attentionPair(p, t, {2}, 40, 20, 48, 48, {2, 3, 40, 1}, true, c.outs,
                      3);
        attentionPair(p, t, {1}, 20, 40, 128, 128, {20, 40}, false, c.outs);
        attentionPair(p, t, {2}, 70, 70, 80, 80, {}, true, c.outs);
        attentionPair(p, t, {}, 33, 90, 96, 96, {2, 1, 90}, false, c.outs, 2);
        // q, k and v inside one fused QKV projection (GPT-2's layout),
        // with and without the projection's column sums.
        attentionPair(p, t, {2}, 70, 70, 64, 64, {}, true, c.outs, 3, true,
                      true);
        c.sumsOf16Bit.push_back(c.outs.back());
        attentionPair(p, t, {}, 65, 65, 32, 32, {1, 65}, false, c.outs, 2,
                      true);
        attentionPair(p, t, {}, 130, 130, 16, 16, {}, true, c.outs, 2, true,
                      true);
        c.sumsOf16Bit.push_back(c.outs.back());
        // Whole tiles without a mask, below the diagonal or not causal: the
        // kernels' plain-score path (no per-score tests).
        attentionPair(p, t, {1}, 192, 192, 16, 16, {}, true, c.outs);
        attentionPair(p, t, {2}, 64, 128, 16, 16, {}, false, c.outs);
        // The tails of 128-row tiles: causal with a second block that ends
        // inside the last key step (200), Tq > Tk and Tq < Tk across 128-row
        // tiles, whole 128-row tiles on the plain path (256), the head dims
        // whose kernels take 32 rows a warp for some kernels only (80, 96),
        // and T < 128 with a mask per entry.
        attentionPair(p, t, {}, 200, 200, 64, 64, {}, true, c.outs, 2);
        attentionPair(p, t, {1}, 260, 150, 80, 80, {}, true, c.outs);
        attentionPair(p, t, {1}, 150, 260, 16, 16, {}, true, c.outs);
        attentionPair(p, t, {1}, 256, 256, 32, 32, {}, true, c.outs);
        attentionPair(p, t, {}, 130, 130, 96, 96, {1, 130}, false, c.outs, 2);
        attentionPair(p, t, {2}, 100, 90, 32, 32, {2, 100, 90}, false, c.outs);
        cases.push_back(std::move(c));
      }
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESATTENTION_H
