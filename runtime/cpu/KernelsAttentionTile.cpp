//===- KernelsAttentionTile.cpp - Small products of CPU attention ---------===//
//
// C = A B on register tiles of MR rows by NV vectors of 16 floats: each
// step of the sum loads NV vectors of a row of B, broadcasts MR elements of
// A and does MR * NV multiply-adds into MR * NV accumulators (at most 16 of
// the 32 registers). Columns come in panels of up to 64 (the keys of a
// block, or a head dim of 16 to 64 in one panel); the panel's last vector
// is masked, so any n works without padding. A is read by broadcasts
// through two strides, so a transposed A (P^T dO, dS^T Q) costs nothing
// extra. Sums longer than 64 steps go in chunks of 64 (C is added to after
// the first), so a panel of B is read from L1. The functions carry the target
// attribute rather than the file an -mavx512f flag: inline functions of the
// headers it includes must stay plain x86-64 wherever the linker picks their
// copy from.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsAttentionTile.h"

#include <immintrin.h>

// GCC 12 takes the intrinsics' undefined pass-through operands for
// uninitialized variables once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tcc::rt::kernels {

#define TCC_AVX512 __attribute__((target("avx512f,fma")))

bool attentionTilesOn() {
  static const bool cpu = __builtin_cpu_supports("avx512f");
  if (!cpu)
    return false;
  const char *env = std::getenv("TCC_CPU_ATTENTION");
  return !env || std::strcmp(env, "blas") != 0;
}

namespace {
/// One MR x (16 NV) tile of C; the last vector's columns are `tail`.
template <int MR, int NV>
TCC_AVX512 void tile(int64_t k, const float *a, int64_t ars, int64_t acs,
                     const float *b, int64_t ldb, bool accumulate, float *c,
                     int64_t ldc, __mmask16 tail) {
  // Fully unrolled, so that GCC keeps acc in registers.
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float *bp = b + p * ldb, *ap = a + p * acs;
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV - 1; ++v)
      bv[v] = _mm512_loadu_ps(bp + 16 * v);
    bv[NV - 1] = _mm512_maskz_loadu_ps(tail, bp + 16 * (NV - 1));
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      __m512 av = _mm512_set1_ps(ap[r * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float *cp = c + r * ldc + 16 * v;
      __mmask16 m = v == NV - 1 ? tail : (__mmask16)0xFFFF;
      __m512 x = acc[r][v];
      if (accumulate)
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cp));
      _mm512_mask_storeu_ps(cp, m, x);
    }
}

using TileFn = void (*)(int64_t, const float *, int64_t, int64_t, const float *,
                        int64_t, bool, float *, int64_t, __mmask16);

/// Rows per tile for NV vectors: 16 accumulators at most.
constexpr int rowsFor(int nv) { return nv <= 2 ? 8 : 4; }

template <int NV, int... R>
constexpr void fill(TileFn *t, std::integer_sequence<int, R...>) {
  ((t[R] = &tile<R + 1, NV>), ...);
}

/// Tiles by [NV - 1][rows - 1].
struct Tiles {
  TileFn fn[4][8] = {};
  constexpr Tiles() {
    fill<1>(fn[0], std::make_integer_sequence<int, rowsFor(1)>());
    fill<2>(fn[1], std::make_integer_sequence<int, rowsFor(2)>());
    fill<3>(fn[2], std::make_integer_sequence<int, rowsFor(3)>());
    fill<4>(fn[3], std::make_integer_sequence<int, rowsFor(4)>());
  }
};
constexpr Tiles kTiles;
} // namespace

/// Steps of the sum per pass over C: a 64 x 64 panel of B (16 KiB) stays
/// in L1 while every tile of rows reads it.
constexpr int64_t kSumChunk = 64;

void attentionGemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars,
                   int64_t acs, const float *b, int64_t ldb, bool accumulate,
                   float *c, int64_t ldc) {
  if (k == 0 && !accumulate) { // an empty sum is zero
    for (int64_t i = 0; i < m; ++i)
      std::memset(c + i * ldc, 0, sizeof(float) * n);
    return;
  }
  for (int64_t p0 = 0; p0 < k; p0 += kSumChunk) {
    int64_t kc = k - p0 < kSumChunk ? k - p0 : kSumChunk;
    const float *ap = a + p0 * acs, *bp = b + p0 * ldb;
    bool acc = accumulate || p0 > 0;
    for (int64_t j0 = 0; j0 < n; j0 += 64) {
      int64_t cols = n - j0 < 64 ? n - j0 : 64;
      int nv = (int)((cols + 15) / 16);
      int rest = (int)(cols - 16 * (nv - 1));
      __mmask16 tail = (__mmask16)(rest == 16 ? 0xFFFF : (1u << rest) - 1);
      int mr = rowsFor(nv);
      for (int64_t i0 = 0; i0 < m; i0 += mr) {
        int rows = m - i0 < mr ? (int)(m - i0) : mr;
        kTiles.fn[nv - 1][rows - 1](kc, ap + i0 * ars, ars, acs, bp + j0, ldb,
                                    acc, c + i0 * ldc + j0, ldc, tail);
      }
    }
  }
}

namespace {
/// e^x on 16 lanes: FastExp.h's tcc_exp_exact (0 below -87.34, +inf above
/// 88.72, NaN stays NaN), with 2^n applied by scalef.
TCC_AVX512 inline __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.33654f), hi = _mm512_set1_ps(88.72283f);
  // max/min return their second operand for a NaN x: n stays in range.
  __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r),
                    _mm512_set1_ps(1.0f));
  __m512 y = _mm512_scalef_ps(p, n);
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y,
                           _mm512_setzero_ps());
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y,
                           _mm512_set1_ps(__builtin_inff()));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}

/// Lanes [0, n - j) of 16 from j on.
inline __mmask16 lanes(int64_t n, int64_t j) {
  return n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
}
} // namespace

namespace {
/// Lanes [0, limit - j) of 16 from j on, none when limit <= j.
inline __mmask16 lanesBelow(int64_t limit, int64_t j) {
  return limit <= j ? (__mmask16)0 : lanes(limit, j);
}

/// The scores of x[j, j + 16) (lanes m).
TCC_AVX512 inline __m512 scores16(const float *x, int64_t j, __mmask16 m,
                                  const AttentionScores &s) {
  __m512 v =
      _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_set1_ps(s.scale));
  if (s.mask)
    v = _mm512_add_ps(v, s.maskPerKey ? _mm512_maskz_loadu_ps(m, s.mask + j)
                                      : _mm512_set1_ps(s.mask[0]));
  return _mm512_mask_blend_ps(lanesBelow(s.visible, j),
                              _mm512_set1_ps(-__builtin_inff()), v);
}
} // namespace

TCC_AVX512 float attentionSoftmaxRow(float *x, int64_t n,
                                     const AttentionScores &s) {
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = lanes(n, j);
    __m512 v = scores16(x, j, m, s);
    _mm512_mask_storeu_ps(x + j, m, v);
    mx = _mm512_mask_max_ps(mx, m, mx, v);
  }
  const float top = _mm512_reduce_max_ps(mx);
  const __m512 t = _mm512_set1_ps(top);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = lanes(n, j);
    __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), t));
    _mm512_mask_storeu_ps(x + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  const float total = _mm512_reduce_add_ps(sum);
  // P = exp(s - max) / sum; the backward's exp(s - lse) is the same up to
  // rounding.
  const __m512 inv = _mm512_set1_ps(1.0f / total);
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = lanes(n, j);
    _mm512_mask_storeu_ps(x + j, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), inv));
  }
  return top + std::log(total); // NaN for a fully masked row
}

TCC_AVX512 void attentionGradRow(float *p, float *ds, int64_t n,
                                 const AttentionScores &s, float lse,
                                 float dot) {
  const __m512 l = _mm512_set1_ps(lse), d = _mm512_set1_ps(dot),
               sc = _mm512_set1_ps(s.scale);
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = lanes(n, j);
    __m512 e = exp16(_mm512_sub_ps(scores16(p, j, m, s), l));
    _mm512_mask_storeu_ps(p + j, m, e);
    __m512 g = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, ds + j), d);
    _mm512_mask_storeu_ps(ds + j, m, _mm512_mul_ps(_mm512_mul_ps(e, g), sc));
  }
}

TCC_AVX512 float attentionDot(const float *a, const float *b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = lanes(n, j);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + j),
                          _mm512_maskz_loadu_ps(m, b + j), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

namespace {
/// Transposes the 16 x 16 block x in registers: x[i] holds row i before,
/// column i after. Pairs of rows, then of pairs (as doubles), then the
/// 128-bit lanes in two rounds.
TCC_AVX512 inline void transpose16(__m512 x[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(x[2 * i], x[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(x[2 * i], x[2 * i + 1]);
  }
  // u[4i + c] holds columns c, c + 4, c + 8, c + 12 (one per lane) of rows
  // 4i .. 4i + 3.
  __m512 u[16];
  for (int i = 0; i < 4; ++i)
    for (int h = 0; h < 2; ++h) {
      __m512d a = _mm512_castps_pd(t[4 * i + h]),
              b = _mm512_castps_pd(t[4 * i + h + 2]);
      u[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      u[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  for (int c = 0; c < 4; ++c) {
    __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    __m512 w0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
    __m512 v1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    __m512 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
    x[c] = _mm512_shuffle_f32x4(v0, v1, 0x88);
    x[c + 8] = _mm512_shuffle_f32x4(v0, v1, 0xdd);
    x[c + 4] = _mm512_shuffle_f32x4(w0, w1, 0x88);
    x[c + 12] = _mm512_shuffle_f32x4(w0, w1, 0xdd);
  }
}
} // namespace

TCC_AVX512 void attentionTranspose(int64_t rows, int64_t cols, const float *src,
                                   int64_t lds, float *dst) {
  // 16 x 16 blocks in registers; rows and columns past the end are masked.
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    __mmask16 rm = lanes(rows, r0);
    int nr = rows - r0 < 16 ? (int)(rows - r0) : 16;
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      __mmask16 cm = lanes(cols, c0);
      int nc = cols - c0 < 16 ? (int)(cols - c0) : 16;
      __m512 x[16];
      for (int i = 0; i < 16; ++i)
        x[i] = i < nr ? _mm512_maskz_loadu_ps(cm, src + (r0 + i) * lds + c0)
                      : _mm512_setzero_ps();
      transpose16(x);
      for (int i = 0; i < nc; ++i)
        _mm512_mask_storeu_ps(dst + (c0 + i) * rows + r0, rm, x[i]);
    }
  }
}

} // namespace tcc::rt::kernels
