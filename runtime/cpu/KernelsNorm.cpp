//===- KernelsNorm.cpp - Layer normalization and its gradient -------------===//
//
// x is viewed as [rows, n]: the dimensions before `axis` are rows, the rest
// are normalized together (scale and bias have n elements). Row statistics
// are accumulated in double, so long rows lose nothing to f32 summation;
// the variance is the biased one and epsilon is added inside the square root,
// as in PyTorch. mean and rstd are saved for the backward.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"
#include "runtime/core/ThreadPool.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

namespace {
struct RowView {
  int64_t rows = 1, n = 1;
};
} // namespace

static RowView rowView(const std::vector<int64_t> &shape, int64_t axis) {
  RowView v;
  for (size_t d = 0; d < shape.size(); ++d)
    (static_cast<int64_t>(d) < axis ? v.rows : v.n) *= shape[d];
  return v;
}

void run_layer_norm(const KernelArgs &a) {
  const float *x = a.in[0].f32(), *gamma = a.in[1].f32(), *beta = a.in[2].f32();
  float *y = a.out[0].f32(), *mean = a.out[1].f32(), *rstd = a.out[2].f32();
  const abi::LayerNormAttrs at = abi::attrs<KernelId::LayerNorm>(a.instr);
  RowView v = rowView(*a.in[0].shape, at.axis);
  const double eps = at.eps;
  for (int64_t r = 0; r < v.rows; ++r) {
    const float *xr = x + r * v.n;
    float *yr = y + r * v.n;
    double sum = 0;
    for (int64_t j = 0; j < v.n; ++j)
      sum += xr[j];
    const double mu = sum / v.n;
    double sq = 0;
    for (int64_t j = 0; j < v.n; ++j) {
      double d = xr[j] - mu;
      sq += d * d;
    }
    const float m = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(sq / v.n + eps));
    mean[r] = m;
    rstd[r] = rs;
    for (int64_t j = 0; j < v.n; ++j)
      yr[j] = (xr[j] - m) * rs * gamma[j] + beta[j];
  }
}

// Per row, with g = dy * scale and xhat = (x - mean) * rstd:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
// scale_grad and bias_grad sum dy * xhat and dy over the rows, in double,
// in the order of a fused region's column sums (ColumnSums).
void run_layer_norm_grad(const KernelArgs &a) {
  const float *dy = a.in[0].f32(), *x = a.in[1].f32(), *gamma = a.in[2].f32(),
              *mean = a.in[3].f32(), *rstd = a.in[4].f32();
  float *dx = a.out[0].f32(), *dgamma = a.out[1].f32(), *dbeta = a.out[2].f32();
  RowView v = rowView(*a.in[1].shape,
                      abi::attrs<KernelId::LayerNormGrad>(a.instr).axis);
  ColumnSums sums(v.rows, v.n, 2);
  for (int64_t r = 0; r < v.rows; ++r) {
    const float *dyr = dy + r * v.n, *xr = x + r * v.n;
    float *dxr = dx + r * v.n;
    double *accGamma = sums.at(r, 0), *accBeta = sums.at(r, 1);
    const float m = mean[r], rs = rstd[r];
    double sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < v.n; ++j) {
      float xhat = (xr[j] - m) * rs;
      float g = dyr[j] * gamma[j];
      sumG += g;
      sumGX += static_cast<double>(g) * xhat;
      accGamma[j] += static_cast<double>(dyr[j]) * xhat;
      accBeta[j] += dyr[j];
    }
    const float meanG = static_cast<float>(sumG / v.n);
    const float meanGX = static_cast<float>(sumGX / v.n);
    for (int64_t j = 0; j < v.n; ++j) {
      float xhat = (xr[j] - m) * rs;
      dxr[j] = rs * (dyr[j] * gamma[j] - meanG - xhat * meanGX);
    }
  }
  sums.finish(0, dgamma);
  sums.finish(1, dbeta);
}

// layer_norm_grad's scale_grad and bias_grad alone: sums of dy * xhat and
// dy over the rows, in double, in ColumnSums' order (row slices on the
// ThreadPool, each in row order), so the result depends neither on the
// threads nor on whether a fused region sums them.
void run_layer_norm_param_grad(const KernelArgs &a) {
  const float *dy = a.in[0].f32(), *x = a.in[1].f32(), *mean = a.in[2].f32(),
              *rstd = a.in[3].f32();
  float *dgamma = a.out[0].f32(), *dbeta = a.out[1].f32();
  RowView v = rowView(*a.in[1].shape,
                      abi::attrs<KernelId::LayerNormParamGrad>(a.instr).axis);
  ColumnSums sums(v.rows, v.n, 2);
  sums.forEachSlice(v.rows * v.n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float *dyr = dy + r * v.n, *xr = x + r * v.n;
      double *accGamma = sums.at(r, 0), *accBeta = sums.at(r, 1);
      const float m = mean[r], rs = rstd[r];
      for (int64_t j = 0; j < v.n; ++j) {
        float xhat = (xr[j] - m) * rs;
        accGamma[j] += static_cast<double>(dyr[j]) * xhat;
        accBeta[j] += dyr[j];
      }
    }
  });
  sums.finish(0, dgamma);
  sums.finish(1, dbeta);
}

} // namespace tcc::rt::kernels
