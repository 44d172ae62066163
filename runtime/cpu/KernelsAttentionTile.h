//===- KernelsAttentionTile.h - Small products of CPU attention -*- C++ -*-===//
//
// The CPU attention's products are small (one batch entry's rows against
// its keys, head dims of 16 to 128): OpenBLAS's sgemm spends more time in
// its call, packing and thread checks than in the multiply-adds there.
// These are register-tiled AVX-512 products for them, used when the CPU
// has AVX-512F (KernelsAttention.cpp falls back to sgemm otherwise, or with
// TCC_CPU_ATTENTION=blas, kept to benchmark one against the other).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_KERNELSATTENTIONTILE_H
#define TCC_RUNTIME_CPU_KERNELSATTENTIONTILE_H

#include <cstdint>

namespace tcc::rt::kernels {

/// Whether attention runs its products here: the CPU has AVX-512F and
/// TCC_CPU_ATTENTION is not `blas` (read on every call, so a benchmark can
/// switch between calls).
bool attentionTilesOn();

/// C[m, n] = (accumulate ? C : 0) + A B, where A(i, p) = a[i * ars + p *
/// acs] (a row-major A, or with ars = 1 a transposed one), B is row-major
/// [k, n] with rows ldb apart and C row-major with rows ldc apart. Only
/// valid where attentionTilesOn().
void attentionGemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars,
                   int64_t acs, const float *b, int64_t ldb, bool accumulate,
                   float *c, int64_t ldc);

/// How a row of products x becomes scores: scale * x + mask, -inf from
/// key `visible` on (causal rows).
struct AttentionScores {
  float scale = 1.0f;
  const float *mask = nullptr; // the row's mask, or none
  bool maskPerKey = false;     // mask[j], else mask[0] for every key
  int64_t visible = 0;
};

/// The forward's row pass on x[0, n): the scores, then their softmax in
/// place; returns the row's log-sum-exp (NaN when every score is -inf).
/// The exp is FastExp.h's (Cephes' reduction and polynomial) on 16 lanes
/// with multiply-adds.
float attentionSoftmaxRow(float *x, int64_t n, const AttentionScores &s);

/// The backward's row pass: with the scores s[j] of p[j], p[j] = e^(s[j] -
/// lse), then ds[j] = p[j] * (ds[j] - dot) * scale, for j < n.
void attentionGradRow(float *p, float *ds, int64_t n, const AttentionScores &s,
                      float lse, float dot);

/// sum_j a[j] b[j] for j < n, on 16 lanes.
float attentionDot(const float *a, const float *b, int64_t n);

/// dst[c, r] = src[r * lds + c] for r < rows, c < cols (dst row-major,
/// `rows` elements a row).
void attentionTranspose(int64_t rows, int64_t cols, const float *src,
                        int64_t lds, float *dst);

} // namespace tcc::rt::kernels

#endif // TCC_RUNTIME_CPU_KERNELSATTENTIONTILE_H
