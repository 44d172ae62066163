//===- KernelsLoss.cpp - Cross-entropy and MSE losses with gradients ------===//
//
// Losses are means over positions, like PyTorch's reduction="mean"; the sums
// are kept in double so the loss of a large batch does not drift.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/FastExp.h"
#include "runtime/core/prelude/RowReduce.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

static void checkLabel(int64_t label, int64_t pos, int64_t classes) {
  if (label < 0 || label >= classes)
    throw Error("label " + std::to_string(label) + " at position " +
                std::to_string(pos) + " is outside [0, " +
                std::to_string(classes) + ")");
}

namespace {
/// A row's max and sum(exp(row - max)): softmax and log-sum-exp without
/// overflow.
struct RowExp {
  float max;
  double sum;
};
} // namespace

/// The exponentials are fastExp's (within 2 ulp, vectorized) summed in
/// double in order: tcc_rowsumexp_f64 of runtime/core/prelude/RowReduce.h,
/// which the generated loss regions call too, so they agree bit for bit.
static RowExp rowExp(const float *row, int64_t n) {
  float mx = row[0];
  for (int64_t c = 1; c < n; ++c)
    mx = std::max(mx, row[c]);
  return {mx, tcc_rowsumexp_f64(row, n, mx)};
}

void run_softmax_cross_entropy(const KernelArgs &a) {
  const TensorView &L = a.in[0];
  const float *logits = L.f32();
  const int64_t *labels = a.in[1].i64();
  int64_t classes = L.dim(L.rank() - 1), positions = a.in[1].numel;
  double total = 0.0;
  for (int64_t p = 0; p < positions; ++p) {
    checkLabel(labels[p], p, classes);
    const float *row = logits + p * classes;
    RowExp e = rowExp(row, classes);
    // -log_softmax[label] = log(sum) - (x[label] - max)
    total += std::log(e.sum) - (row[labels[p]] - e.max);
  }
  a.out[0].f32()[0] = positions ? static_cast<float>(total / positions) : NAN;
}

void run_softmax_cross_entropy_grad(const KernelArgs &a) {
  const TensorView &L = a.in[1];
  const float *logits = L.f32();
  const int64_t *labels = a.in[2].i64();
  float *dlogits = a.out[0].f32();
  int64_t classes = L.dim(L.rank() - 1), positions = a.in[2].numel;
  if (positions == 0)
    return;
  float scale = a.in[0].f32()[0] / static_cast<float>(positions);
  for (int64_t p = 0; p < positions; ++p) {
    checkLabel(labels[p], p, classes);
    const float *row = logits + p * classes;
    float *drow = dlogits + p * classes;
    RowExp e = rowExp(row, classes);
    const float inv = static_cast<float>(1.0 / e.sum);
    for (int64_t c = 0; c < classes; ++c)
      drow[c] = fastExp(row[c] - e.max) * inv * scale;
    drow[labels[p]] -= scale;
  }
}

void run_mse_loss(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *t = a.in[1].f32();
  int64_t n = a.in[0].numel;
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(p[i]) - t[i];
    total += d * d;
  }
  a.out[0].f32()[0] = n ? static_cast<float>(total / n) : NAN;
}

void run_mse_loss_grad(const KernelArgs &a) {
  const float *p = a.in[1].f32(), *t = a.in[2].f32();
  float *dp = a.out[0].f32();
  int64_t n = a.in[1].numel;
  if (n == 0)
    return;
  const float scale = 2.0f * a.in[0].f32()[0] / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i)
    dp[i] = scale * (p[i] - t[i]);
}

} // namespace tcc::rt::kernels
