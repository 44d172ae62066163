//===- KernelsBatchNorm.cpp - Batch normalization with batch statistics ---===//
//
// x is [N, C, S...]: per channel c the statistics run over N and the trailing
// axes. As PyTorch's CPU kernels, sums are kept in double (mean, then the
// centred sum of squares: two passes, so a large mean does not cancel the
// variance), and the output is x * alpha + beta with per-channel alpha and
// beta. Loops follow memory order with per-channel accumulators, which
// matters when S is small (late CNN layers) and channels are many. Large
// tensors share their channels over the ThreadPool: each channel's sums
// still run in the same order, so the results do not depend on the thread
// count.
//
//   batch_norm_train       in [x, scale, bias] out [y, mean, var], f [eps]
//   batch_norm_train_grad  in [dy, x, scale, mean, var]
//                          out [dx, dscale, dbias], f [eps]
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tcc::rt::kernels {

namespace {
/// The [N, C, S] view of an [N, C, ...] tensor.
struct NCS {
  int64_t n, c, s;
  int64_t perChannel() const { return n * s; }
};
} // namespace

/// Runs fn(c0, c1) over ranges of channels that cover [0, d.c), on the
/// ThreadPool when the tensor is large enough to be worth waking it.
static void forChannels(const NCS &d,
                        const std::function<void(int64_t, int64_t)> &fn) {
  ThreadPool &pool = ThreadPool::global();
  int64_t chunks = std::min<int64_t>(d.c, pool.size() * 2);
  if (d.n * d.c * d.s < (1 << 15) || chunks < 2)
    return fn(0, d.c);
  pool.parallelFor(chunks, [&](int64_t k) {
    fn(d.c * k / chunks, d.c * (k + 1) / chunks);
  });
}

static NCS ncs(const std::vector<int64_t> &shape) {
  NCS d{shape[0], shape[1], 1};
  for (size_t i = 2; i < shape.size(); ++i)
    d.s *= shape[i];
  return d;
}

/// Per-channel mean and population variance of x, in double.
static void channelStats(const float *x, const NCS &d,
                         std::vector<double> &mean, std::vector<double> &var) {
  mean.assign(d.c, 0.0);
  var.assign(d.c, 0.0);
  double m = static_cast<double>(d.perChannel());
  forChannels(d, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t c = c0; c < c1; ++c) {
        const float *row = x + (n * d.c + c) * d.s;
        double sum = 0.0;
        for (int64_t i = 0; i < d.s; ++i)
          sum += row[i];
        mean[c] += sum;
      }
    for (int64_t c = c0; c < c1; ++c)
      mean[c] /= m;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t c = c0; c < c1; ++c) {
        const float *row = x + (n * d.c + c) * d.s;
        double mu = mean[c], sum = 0.0;
        for (int64_t i = 0; i < d.s; ++i) {
          double t = row[i] - mu;
          sum += t * t;
        }
        var[c] += sum;
      }
    for (int64_t c = c0; c < c1; ++c)
      var[c] /= m;
  });
}

void run_batch_norm_train(const KernelArgs &a) {
  const TensorView &X = a.in[0];
  NCS d = ncs(*X.shape);
  const float *x = X.f32(), *scale = a.in[1].f32(), *bias = a.in[2].f32();
  float *y = a.out[0].f32(), *meanOut = a.out[1].f32(),
        *varOut = a.out[2].f32();
  double eps = abi::attrs<KernelId::BatchNormTrain>(a.instr).eps;
  std::vector<double> mean, var;
  channelStats(x, d, mean, var);
  std::vector<float> alpha(d.c), beta(d.c);
  for (int64_t c = 0; c < d.c; ++c) {
    double istd = 1.0 / std::sqrt(var[c] + eps);
    alpha[c] = static_cast<float>(istd * scale[c]);
    beta[c] = static_cast<float>(bias[c] - mean[c] * istd * scale[c]);
  }
  forChannels(d, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t c = c0; c < c1; ++c) {
        const float *src = x + (n * d.c + c) * d.s;
        float *dst = y + (n * d.c + c) * d.s;
        const float al = alpha[c], be = beta[c];
        for (int64_t i = 0; i < d.s; ++i)
          dst[i] = src[i] * al + be;
      }
  });
  // Written last: y may not alias them, but mean/var outputs are small.
  for (int64_t c = 0; c < d.c; ++c) {
    meanOut[c] = static_cast<float>(mean[c]);
    varOut[c] = static_cast<float>(var[c]);
  }
}

void run_batch_norm_train_grad(const KernelArgs &a) {
  const TensorView &X = a.in[1];
  NCS d = ncs(*X.shape);
  const float *dy = a.in[0].f32(), *x = X.f32(), *scale = a.in[2].f32(),
              *mean = a.in[3].f32(), *var = a.in[4].f32();
  float *dx = a.out[0].f32(), *dscale = a.out[1].f32(), *dbias = a.out[2].f32();
  double eps = abi::attrs<KernelId::BatchNormTrainGrad>(a.instr).eps;
  // sum(dy) and sum(dy * (x - mean)) per channel.
  std::vector<double> sumDy(d.c, 0.0), sumDyXmu(d.c, 0.0);
  forChannels(d, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t c = c0; c < c1; ++c) {
        const float *g = dy + (n * d.c + c) * d.s,
                    *xr = x + (n * d.c + c) * d.s;
        double mu = mean[c], s1 = 0.0, s2 = 0.0;
        for (int64_t i = 0; i < d.s; ++i) {
          s1 += g[i];
          s2 += g[i] * (xr[i] - mu);
        }
        sumDy[c] += s1;
        sumDyXmu[c] += s2;
      }
  });
  double m = static_cast<double>(d.perChannel());
  // dx = (dy - sum(dy)/M - (x - mean) * k) * istd * scale, with
  // k = sum(dy (x - mean)) * istd^2 / M (PyTorch's formulation).
  std::vector<float> gmean(d.c), k(d.c), coef(d.c);
  for (int64_t c = 0; c < d.c; ++c) {
    double istd = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    gmean[c] = static_cast<float>(sumDy[c] / m);
    k[c] = static_cast<float>(sumDyXmu[c] * istd * istd / m);
    coef[c] = static_cast<float>(istd * scale[c]);
    dscale[c] = static_cast<float>(sumDyXmu[c] * istd);
    dbias[c] = static_cast<float>(sumDy[c]);
  }
  forChannels(d, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t c = c0; c < c1; ++c) {
        int64_t off = (n * d.c + c) * d.s;
        const float *g = dy + off, *xr = x + off;
        float *out = dx + off;
        const float mu = mean[c], gm = gmean[c], kc = k[c], co = coef[c];
        for (int64_t i = 0; i < d.s; ++i)
          out[i] = (g[i] - gm - (xr[i] - mu) * kc) * co;
      }
  });
}

} // namespace tcc::rt::kernels
