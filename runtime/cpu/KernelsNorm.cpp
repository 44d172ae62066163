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

/// Checks that x's [axis, rank) dims are normalized and the tensors at
/// `paramIdx` (inputs) have n elements, those at `statIdx` rows.
static RowView checkNorm(const KernelSig &s, const TensorInfo &x,
                         std::initializer_list<std::pair<bool, size_t>> params,
                         std::initializer_list<std::pair<bool, size_t>> stats) {
  expectAllF32(s);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (s.instr.iattrs.empty())
    throw Error("expects the axis as integer attribute 0");
  int64_t axis = s.instr.iattrs[0];
  if (axis < 0 || axis >= rank)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  RowView v = rowView(x.shape, axis);
  for (auto [isIn, i] : params)
    expectNumel(s, isIn, i, v.n);
  for (auto [isIn, i] : stats)
    expectNumel(s, isIn, i, v.rows);
  return v;
}

void check_layer_norm(const KernelSig &s) {
  expectArity(s, 3, 3);
  expectIAttrs(s, 1);
  expectFAttrs(s, 1);
  checkNorm(s, *s.in[0], {{true, 1}, {true, 2}}, {{false, 1}, {false, 2}});
  expectNumel(s, false, 0, s.in[0]->numElements());
  if (!(s.instr.fattrs[0] >= 0.0))
    throw Error("epsilon must not be negative, got " +
                std::to_string(s.instr.fattrs[0]));
}

void run_layer_norm(const KernelArgs &a) {
  const float *x = a.in[0].f32(), *gamma = a.in[1].f32(), *beta = a.in[2].f32();
  float *y = a.out[0].f32(), *mean = a.out[1].f32(), *rstd = a.out[2].f32();
  RowView v = rowView(*a.in[0].shape, a.instr.iattrs[0]);
  const double eps = a.instr.fattrs[0];
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

void check_layer_norm_grad(const KernelSig &s) {
  expectArity(s, 5, 3);
  expectIAttrs(s, 1);
  checkNorm(s, *s.in[1], {{true, 2}, {false, 1}, {false, 2}},
            {{true, 3}, {true, 4}});
  expectNumel(s, true, 0, s.in[1]->numElements());
  expectNumel(s, false, 0, s.in[1]->numElements());
}

// Per row, with g = dy * scale and xhat = (x - mean) * rstd:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
// scale_grad and bias_grad sum dy * xhat and dy over the rows, in double,
// in the order of a fused region's column sums (ColumnSums).
void run_layer_norm_grad(const KernelArgs &a) {
  const float *dy = a.in[0].f32(), *x = a.in[1].f32(), *gamma = a.in[2].f32(),
              *mean = a.in[3].f32(), *rstd = a.in[4].f32();
  float *dx = a.out[0].f32(), *dgamma = a.out[1].f32(), *dbeta = a.out[2].f32();
  RowView v = rowView(*a.in[1].shape, a.instr.iattrs[0]);
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

void check_layer_norm_param_grad(const KernelSig &s) {
  expectArity(s, 4, 2);
  expectIAttrs(s, 1);
  checkNorm(s, *s.in[1], {{false, 0}, {false, 1}}, {{true, 2}, {true, 3}});
  expectNumel(s, true, 0, s.in[1]->numElements());
}

// layer_norm_grad's scale_grad and bias_grad alone: sums of dy * xhat and
// dy over the rows, in double, in ColumnSums' order (row slices on the
// ThreadPool, each in row order), so the result depends neither on the
// threads nor on whether a fused region sums them.
void run_layer_norm_param_grad(const KernelArgs &a) {
  const float *dy = a.in[0].f32(), *x = a.in[1].f32(), *mean = a.in[2].f32(),
              *rstd = a.in[3].f32();
  float *dgamma = a.out[0].f32(), *dbeta = a.out[1].f32();
  RowView v = rowView(*a.in[1].shape, a.instr.iattrs[0]);
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
