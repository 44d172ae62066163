//===- KernelsBatchNorm.cpp - Batch normalization with batch statistics ---===//
//
// x is [N, C, S...]: per channel c the statistics run over N and the trailing
// axes, in double as PyTorch's CPU kernels keep them. One pass gives both:
// the sums of t = x - K and t * t, K the channel's first element, so that
// the variance s2/M - (s1/M)^2 does not cancel a large mean (t is small
// where x clusters around K); the mean is K + s1/M. The output is
// x * alpha + beta with per-channel alpha and beta.
//
// A channel's rows of S >= 16 elements add into eight lanes, summed in a
// fixed order at the end (AVX-512 where the CPU has it, else the same lanes
// in plain C++: GCC does not vectorize them). Smaller S (late CNN layers,
// many channels) add each (c, s) position over N in memory order and fold a
// channel's S partial sums after; these and the elementwise passes are plain
// loops GCC vectorizes, built for AVX-512 as well as the baseline
// (IsaClone.h; not target_clones, whose IFUNC resolvers run before a
// sanitizer's runtime is up). No multiply-add contraction (the file's
// flags), so every variant rounds alike. Large tensors share their channels
// over the ThreadPool: a channel's sums run in the same order wherever they
// run, so the results do not depend on the thread count.
//
//   batch_norm_train       in [x, scale, bias] out [y, mean, var], f [eps]
//   batch_norm_train_grad  in [dy, x, scale, mean, var]
//                          out [dx, dscale, dbias], f [eps]
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/IsaClone.h"
#include "runtime/cpu/KernelsInternal.h"

// GCC 12 takes the intrinsics' undefined pass-through operands for
// uninitialized variables once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tcc::rt::kernels {

namespace {
/// The [N, C, S] view of an [N, C, ...] tensor.
struct NCS {
  int64_t n, c, s;
  int64_t perChannel() const { return n * s; }
  /// Channels of fewer elements per row sum position by position.
  bool byPosition() const { return s < 16; }
};

constexpr int kLanes = 8;
} // namespace

/// Runs fn(c0, c1) over ranges of channels that cover [0, d.c), on the
/// ThreadPool when the tensor is large enough to be worth waking it.
static void forChannels(const NCS &d,
                        const std::function<void(int64_t, int64_t)> &fn) {
  ThreadPool &pool = ThreadPool::global();
  int64_t chunks = std::min<int64_t>(d.c, pool.size() * 2);
  if (d.n * d.c * d.s < (1 << 15) || chunks < 2)
    return fn(0, d.c);
  pool.parallelFor(
      chunks, [&](int64_t k) { fn(d.c * k / chunks, d.c * (k + 1) / chunks); });
}

static NCS ncs(const std::vector<int64_t> &shape) {
  NCS d{shape[0], shape[1], 1};
  for (size_t i = 2; i < shape.size(); ++i)
    d.s *= shape[i];
  return d;
}

/// The lanes' total, in one order.
static double laneSum(const double *l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

//===----------------------------------------------------------------------===//
// Sums of one channel (S >= 16): rows of s elements, `stride` apart
//===----------------------------------------------------------------------===//

/// sum(a - k) and sum((a - k)^2) over the rows.
static void shiftedSumsPlain(const float *a, int64_t n, int64_t stride,
                             int64_t s, double k, double *s1, double *s2) {
  // Eight lanes over a row's whole groups of eight; its last s % 8
  // elements add into t1, t2.
  double l1[kLanes] = {}, l2[kLanes] = {}, t1 = 0.0, t2 = 0.0;
  const int64_t whole = s / kLanes * kLanes;
  for (int64_t b = 0; b < n; ++b) {
    const float *row = a + b * stride;
    for (int64_t i = 0; i < whole; i += kLanes)
#pragma GCC unroll 8
      for (int l = 0; l < kLanes; ++l) {
        double t = static_cast<double>(row[i + l]) - k;
        l1[l] += t;
        l2[l] += t * t;
      }
    for (int64_t i = whole; i < s; ++i) {
      double t = static_cast<double>(row[i]) - k;
      t1 += t;
      t2 += t * t;
    }
  }
  *s1 = laneSum(l1) + t1;
  *s2 = laneSum(l2) + t2;
}

/// sum(g) and sum(g * (a - mu)) over the rows.
static void gradSumsPlain(const float *g, const float *a, int64_t n,
                          int64_t stride, int64_t s, double mu, double *s1,
                          double *s2) {
  double l1[kLanes] = {}, l2[kLanes] = {}, t1 = 0.0, t2 = 0.0;
  const int64_t whole = s / kLanes * kLanes;
  for (int64_t b = 0; b < n; ++b) {
    const float *gr = g + b * stride, *row = a + b * stride;
    for (int64_t i = 0; i < whole; i += kLanes)
#pragma GCC unroll 8
      for (int l = 0; l < kLanes; ++l) {
        double gi = gr[i + l];
        l1[l] += gi;
        l2[l] += gi * (static_cast<double>(row[i + l]) - mu);
      }
    for (int64_t i = whole; i < s; ++i) {
      double gi = gr[i];
      t1 += gi;
      t2 += gi * (static_cast<double>(row[i]) - mu);
    }
  }
  *s1 = laneSum(l1) + t1;
  *s2 = laneSum(l2) + t2;
}

/// The same lanes with AVX-512 (GCC does not vectorize the plain loops):
/// lane l of the vector is l1[l], and no multiply-add, so the sums are the
/// plain version's bits.
TCC_AVX512_TARGET static void shiftedSumsAvx512(const float *a, int64_t n,
                                                int64_t stride, int64_t s,
                                                double k, double *s1,
                                                double *s2) {
  __m512d l1 = _mm512_setzero_pd(), l2 = _mm512_setzero_pd();
  const __m512d vk = _mm512_set1_pd(k);
  double t1 = 0.0, t2 = 0.0;
  const int64_t whole = s / kLanes * kLanes;
  for (int64_t b = 0; b < n; ++b) {
    const float *row = a + b * stride;
    for (int64_t i = 0; i < whole; i += kLanes) {
      __m512d t = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(row + i)), vk);
      l1 = _mm512_add_pd(l1, t);
      l2 = _mm512_add_pd(l2, _mm512_mul_pd(t, t));
    }
    for (int64_t i = whole; i < s; ++i) {
      double t = static_cast<double>(row[i]) - k;
      t1 += t;
      t2 += t * t;
    }
  }
  alignas(64) double v1[kLanes], v2[kLanes];
  _mm512_store_pd(v1, l1);
  _mm512_store_pd(v2, l2);
  *s1 = laneSum(v1) + t1;
  *s2 = laneSum(v2) + t2;
}

TCC_AVX512_TARGET static void gradSumsAvx512(const float *g, const float *a,
                                             int64_t n, int64_t stride,
                                             int64_t s, double mu, double *s1,
                                             double *s2) {
  __m512d l1 = _mm512_setzero_pd(), l2 = _mm512_setzero_pd();
  const __m512d vmu = _mm512_set1_pd(mu);
  double t1 = 0.0, t2 = 0.0;
  const int64_t whole = s / kLanes * kLanes;
  for (int64_t b = 0; b < n; ++b) {
    const float *gr = g + b * stride, *row = a + b * stride;
    for (int64_t i = 0; i < whole; i += kLanes) {
      __m512d gi = _mm512_cvtps_pd(_mm256_loadu_ps(gr + i));
      __m512d xi = _mm512_cvtps_pd(_mm256_loadu_ps(row + i));
      l1 = _mm512_add_pd(l1, gi);
      l2 = _mm512_add_pd(l2, _mm512_mul_pd(gi, _mm512_sub_pd(xi, vmu)));
    }
    for (int64_t i = whole; i < s; ++i) {
      double gi = gr[i];
      t1 += gi;
      t2 += gi * (static_cast<double>(row[i]) - mu);
    }
  }
  alignas(64) double v1[kLanes], v2[kLanes];
  _mm512_store_pd(v1, l1);
  _mm512_store_pd(v2, l2);
  *s1 = laneSum(v1) + t1;
  *s2 = laneSum(v2) + t2;
}

static void shiftedSums(const float *a, int64_t n, int64_t stride, int64_t s,
                        double k, double *s1, double *s2) {
  if (avx512Cpu())
    return shiftedSumsAvx512(a, n, stride, s, k, s1, s2);
  shiftedSumsPlain(a, n, stride, s, k, s1, s2);
}

static void gradSums(const float *g, const float *a, int64_t n, int64_t stride,
                     int64_t s, double mu, double *s1, double *s2) {
  if (avx512Cpu())
    return gradSumsAvx512(g, a, n, stride, s, mu, s1, s2);
  gradSumsPlain(g, a, n, stride, s, mu, s1, s2);
}

//===----------------------------------------------------------------------===//
// Sums by position (S < 16): acc[j] over the rows, j < len
//===----------------------------------------------------------------------===//

TCC_CLONE_BODY void shiftedSumsAtBody(const float *a, const double *k,
                                      int64_t len, double *s1, double *s2) {
  for (int64_t j = 0; j < len; ++j) {
    double t = static_cast<double>(a[j]) - k[j];
    s1[j] += t;
    s2[j] += t * t;
  }
}
TCC_AVX512_TARGET static void shiftedSumsAtAvx512(const float *a,
                                                  const double *k, int64_t len,
                                                  double *s1, double *s2) {
  shiftedSumsAtBody(a, k, len, s1, s2);
}
static void shiftedSumsAt(const float *a, const double *k, int64_t len,
                          double *s1, double *s2) {
  if (avx512Cpu())
    return shiftedSumsAtAvx512(a, k, len, s1, s2);
  shiftedSumsAtBody(a, k, len, s1, s2);
}

TCC_CLONE_BODY void gradSumsAtBody(const float *g, const float *a,
                                   const double *mu, int64_t len, double *s1,
                                   double *s2) {
  for (int64_t j = 0; j < len; ++j) {
    double gi = g[j];
    s1[j] += gi;
    s2[j] += gi * (static_cast<double>(a[j]) - mu[j]);
  }
}
TCC_AVX512_TARGET static void gradSumsAtAvx512(const float *g, const float *a,
                                               const double *mu, int64_t len,
                                               double *s1, double *s2) {
  gradSumsAtBody(g, a, mu, len, s1, s2);
}
static void gradSumsAt(const float *g, const float *a, const double *mu,
                       int64_t len, double *s1, double *s2) {
  if (avx512Cpu())
    return gradSumsAtAvx512(g, a, mu, len, s1, s2);
  gradSumsAtBody(g, a, mu, len, s1, s2);
}

/// Per-channel sums of channels [c0, c1) by position: sum1(row, c, s) is
/// called with the [c0, c1) part of each of the N rows and its position
/// sums, which are then folded per channel in position order.
template <class F>
static void sumsByPosition(const NCS &d, int64_t c0, int64_t c1, double *out1,
                           double *out2, F &&sum1) {
  int64_t len = (c1 - c0) * d.s, at = c0 * d.s, row = d.c * d.s;
  std::vector<double> p1(len, 0.0), p2(len, 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    sum1(b * row + at, len, p1.data(), p2.data());
  for (int64_t c = c0; c < c1; ++c) {
    double a1 = 0.0, a2 = 0.0;
    for (int64_t i = 0; i < d.s; ++i) {
      a1 += p1[(c - c0) * d.s + i];
      a2 += p2[(c - c0) * d.s + i];
    }
    out1[c] = a1;
    out2[c] = a2;
  }
}

//===----------------------------------------------------------------------===//
// Elementwise passes: y = a * alpha + beta; dx = (g - gm - (a - mu) k) co
//===----------------------------------------------------------------------===//

TCC_CLONE_BODY void affineBody(const float *a, int64_t len, const float *alpha,
                               const float *beta, int64_t s, float *y) {
  // alpha and beta per position (s == 1) or one per row of s elements.
  if (s == 1) {
    for (int64_t j = 0; j < len; ++j)
      y[j] = a[j] * alpha[j] + beta[j];
    return;
  }
  for (int64_t r = 0; r * s < len; ++r) {
    const float al = alpha[r], be = beta[r];
    for (int64_t i = 0; i < s; ++i)
      y[r * s + i] = a[r * s + i] * al + be;
  }
}
TCC_AVX512_TARGET static void affineAvx512(const float *a, int64_t len,
                                           const float *alpha,
                                           const float *beta, int64_t s,
                                           float *y) {
  affineBody(a, len, alpha, beta, s, y);
}
static void affine(const float *a, int64_t len, const float *alpha,
                   const float *beta, int64_t s, float *y) {
  if (avx512Cpu())
    return affineAvx512(a, len, alpha, beta, s, y);
  affineBody(a, len, alpha, beta, s, y);
}

namespace {
/// The backward's coefficients as floats, per channel (or per position).
struct GradCoef {
  std::vector<float> mu, gm, k, co;
  explicit GradCoef(int64_t n) : mu(n), gm(n), k(n), co(n) {}
};
} // namespace

/// Rows of s elements sharing coefficient r; s == 1: one per element.
TCC_CLONE_BODY void gradInputBody(const float *g, const float *a, int64_t len,
                                  int64_t s, const float *mu, const float *gm,
                                  const float *k, const float *co, float *dx) {
  if (s == 1) {
    for (int64_t j = 0; j < len; ++j)
      dx[j] = (g[j] - gm[j] - (a[j] - mu[j]) * k[j]) * co[j];
    return;
  }
  for (int64_t r = 0; r * s < len; ++r) {
    const float mr = mu[r], gr = gm[r], kr = k[r], cr = co[r];
    for (int64_t i = 0; i < s; ++i) {
      int64_t j = r * s + i;
      dx[j] = (g[j] - gr - (a[j] - mr) * kr) * cr;
    }
  }
}
TCC_AVX512_TARGET static void gradInputAvx512(const float *g, const float *a,
                                              int64_t len, int64_t s,
                                              const float *mu, const float *gm,
                                              const float *k, const float *co,
                                              float *dx) {
  gradInputBody(g, a, len, s, mu, gm, k, co, dx);
}
static void gradInput(const float *g, const float *a, int64_t len, int64_t s,
                      const float *mu, const float *gm, const float *k,
                      const float *co, float *dx) {
  if (avx512Cpu())
    return gradInputAvx512(g, a, len, s, mu, gm, k, co, dx);
  gradInputBody(g, a, len, s, mu, gm, k, co, dx);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

void run_batch_norm_train(const KernelArgs &a) {
  const TensorView &X = a.in[0];
  NCS d = ncs(*X.shape);
  const float *x = X.f32(), *scale = a.in[1].f32(), *bias = a.in[2].f32();
  float *y = a.out[0].f32(), *meanOut = a.out[1].f32(),
        *varOut = a.out[2].f32();
  double eps = abi::attrs<KernelId::BatchNormTrain>(a.instr).eps;
  const int64_t row = d.c * d.s;
  const double m = static_cast<double>(d.perChannel());
  std::vector<double> shift(d.c), s1(d.c), s2(d.c);
  for (int64_t c = 0; c < d.c; ++c)
    shift[c] = d.perChannel() > 0 ? x[c * d.s] : 0.0;
  // By position: the shift of every position, and alpha/beta expanded to
  // positions for the output pass (one multiply-add per element).
  std::vector<double> shiftAt;
  if (d.byPosition()) {
    shiftAt.resize(row);
    for (int64_t j = 0; j < row; ++j)
      shiftAt[j] = shift[j / d.s];
  }
  std::vector<float> alpha(d.byPosition() ? row : d.c),
      beta(d.byPosition() ? row : d.c);
  forChannels(d, [&](int64_t c0, int64_t c1) {
    if (d.byPosition())
      sumsByPosition(d, c0, c1, s1.data(), s2.data(),
                     [&](int64_t off, int64_t len, double *p1, double *p2) {
                       shiftedSumsAt(x + off, shiftAt.data() + c0 * d.s, len,
                                     p1, p2);
                     });
    else
      for (int64_t c = c0; c < c1; ++c)
        shiftedSums(x + c * d.s, d.n, row, d.s, shift[c], &s1[c], &s2[c]);
    for (int64_t c = c0; c < c1; ++c) {
      double dm = s1[c] / m;
      double mean = shift[c] + dm;
      double var = std::max(s2[c] / m - dm * dm, 0.0);
      double istd = 1.0 / std::sqrt(var + eps);
      float al = static_cast<float>(istd * scale[c]);
      float be = static_cast<float>(bias[c] - mean * istd * scale[c]);
      s1[c] = mean;
      s2[c] = var;
      if (!d.byPosition()) {
        alpha[c] = al;
        beta[c] = be;
        continue;
      }
      std::fill_n(alpha.data() + c * d.s, d.s, al);
      std::fill_n(beta.data() + c * d.s, d.s, be);
    }
    int64_t at = c0 * d.s, len = (c1 - c0) * d.s;
    for (int64_t b = 0; b < d.n; ++b)
      if (d.byPosition())
        affine(x + b * row + at, len, alpha.data() + at, beta.data() + at, 1,
               y + b * row + at);
      else
        affine(x + b * row + at, len, alpha.data() + c0, beta.data() + c0, d.s,
               y + b * row + at);
  });
  // Written last: y may not alias them, but mean/var outputs are small.
  for (int64_t c = 0; c < d.c; ++c) {
    meanOut[c] = static_cast<float>(s1[c]);
    varOut[c] = static_cast<float>(s2[c]);
  }
}

void run_batch_norm_train_grad(const KernelArgs &a) {
  const TensorView &X = a.in[1];
  NCS d = ncs(*X.shape);
  const float *dy = a.in[0].f32(), *x = X.f32(), *scale = a.in[2].f32(),
              *mean = a.in[3].f32(), *var = a.in[4].f32();
  float *dx = a.out[0].f32(), *dscale = a.out[1].f32(), *dbias = a.out[2].f32();
  double eps = abi::attrs<KernelId::BatchNormTrainGrad>(a.instr).eps;
  const int64_t row = d.c * d.s;
  const double m = static_cast<double>(d.perChannel());
  std::vector<double> meanAt;
  if (d.byPosition()) {
    meanAt.resize(row);
    for (int64_t j = 0; j < row; ++j)
      meanAt[j] = mean[j / d.s];
  }
  // sum(dy) and sum(dy * (x - mean)) per channel, then
  // dx = (dy - sum(dy)/M - (x - mean) * k) * istd * scale, with
  // k = sum(dy (x - mean)) * istd^2 / M (PyTorch's formulation).
  std::vector<double> sumDy(d.c), sumDyXmu(d.c);
  GradCoef cf(d.byPosition() ? row : d.c);
  forChannels(d, [&](int64_t c0, int64_t c1) {
    if (d.byPosition())
      sumsByPosition(d, c0, c1, sumDy.data(), sumDyXmu.data(),
                     [&](int64_t off, int64_t len, double *p1, double *p2) {
                       gradSumsAt(dy + off, x + off, meanAt.data() + c0 * d.s,
                                  len, p1, p2);
                     });
    else
      for (int64_t c = c0; c < c1; ++c)
        gradSums(dy + c * d.s, x + c * d.s, d.n, row, d.s, mean[c], &sumDy[c],
                 &sumDyXmu[c]);
    int64_t per = d.byPosition() ? d.s : 1;
    for (int64_t c = c0; c < c1; ++c) {
      double istd = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
      int64_t at = c * per;
      std::fill_n(cf.mu.data() + at, per, mean[c]);
      std::fill_n(cf.gm.data() + at, per, static_cast<float>(sumDy[c] / m));
      std::fill_n(cf.k.data() + at, per,
                  static_cast<float>(sumDyXmu[c] * istd * istd / m));
      std::fill_n(cf.co.data() + at, per, static_cast<float>(istd * scale[c]));
    }
    int64_t at = c0 * d.s, len = (c1 - c0) * d.s, from = c0 * per;
    for (int64_t b = 0; b < d.n; ++b)
      gradInput(dy + b * row + at, x + b * row + at, len,
                d.byPosition() ? 1 : d.s, cf.mu.data() + from,
                cf.gm.data() + from, cf.k.data() + from, cf.co.data() + from,
                dx + b * row + at);
  });
  for (int64_t c = 0; c < d.c; ++c) {
    double istd = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    dscale[c] = static_cast<float>(sumDyXmu[c] * istd);
    dbias[c] = static_cast<float>(sumDy[c]);
  }
}

} // namespace tcc::rt::kernels
