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

static void expectScalar(const KernelSig &s, bool isInput, size_t i) {
  expectNumel(s, isInput, i, 1);
}

/// logits [..., C] and labels i64 with one label per position.
static void checkLogitsLabels(const KernelSig &s, size_t logits,
                              size_t labels) {
  const TensorInfo &l = *s.in[logits], &y = *s.in[labels];
  if (l.dtype != DType::F32)
    throw Error(operandName(s, true, logits) + " must be f32");
  if (y.dtype != DType::I64)
    throw Error(operandName(s, true, labels) + " must be i64 class indices");
  if (l.shape.empty() || l.shape.back() == 0)
    throw Error(operandName(s, true, logits) + " has shape " +
                formatShape(l.shape) + "; expected [..., classes]");
  expectNumel(s, true, labels, l.numElements() / l.shape.back());
}

static void checkLabel(int64_t label, int64_t pos, int64_t classes) {
  if (label < 0 || label >= classes)
    throw Error("label " + std::to_string(label) + " at position " +
                std::to_string(pos) + " is outside [0, " +
                std::to_string(classes) + ")");
}

void check_softmax_cross_entropy(const KernelSig &s) {
  expectArity(s, 2, 1);
  checkLogitsLabels(s, 0, 1);
  if (s.out[0]->dtype != DType::F32)
    throw Error(operandName(s, false, 0) + " must be f32");
  expectScalar(s, false, 0);
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

void check_softmax_cross_entropy_grad(const KernelSig &s) {
  expectArity(s, 3, 1);
  if (s.in[0]->dtype != DType::F32)
    throw Error(operandName(s, true, 0) + " must be f32");
  expectScalar(s, true, 0);
  checkLogitsLabels(s, 1, 2);
  if (s.out[0]->dtype != DType::F32 || s.out[0]->shape != s.in[1]->shape)
    throw Error(operandName(s, false, 0) + " must be f32 " +
                formatShape(s.in[1]->shape) + " like the logits");
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

void check_mse_loss(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  expectNumel(s, true, 1, s.in[0]->numElements());
  expectScalar(s, false, 0);
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

void check_mse_loss_grad(const KernelSig &s) {
  expectArity(s, 3, 1);
  expectAllF32(s);
  expectScalar(s, true, 0);
  expectNumel(s, true, 2, s.in[1]->numElements());
  expectNumel(s, false, 0, s.in[1]->numElements());
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
