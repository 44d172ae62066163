//===- KernelsLoss.cpp - Cross-entropy and MSE losses with gradients ------===//
//
// Losses are means over positions, like PyTorch's reduction="mean"; the sums
// are kept in double so the loss of a large batch does not drift. The
// cross-entropy leaves out positions labelled ignore_index and smooths
// labels as PyTorch's CrossEntropyLoss (CrossEntropyAttrs).
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

/// Whether position `pos` counts in the loss: not labelled ignore_index
/// (which may lie outside [0, classes), as PyTorch's -100 does), and
/// otherwise a class.
static bool counted(int64_t label, int64_t pos, int64_t classes,
                    int64_t ignoreIndex) {
  if (label == ignoreIndex)
    return false;
  checkLabel(label, pos, classes);
  return true;
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
/// double lanes in a fixed order: tcc_rowsumexp_f64 of
/// runtime/core/prelude/RowReduce.h, which the generated loss regions call too,
/// so they agree bit for bit.
static RowExp rowExp(const float *row, int64_t n) {
  float mx = row[0];
  for (int64_t c = 1; c < n; ++c)
    mx = std::max(mx, row[c]);
  return {mx, tcc_rowsumexp_f64(row, n, mx)};
}

/// Per counted position: -log_softmax[label] = log(sum) - (x[label] - max),
/// and with label smoothing S, (1 - S) of it plus S times the mean over
/// classes of -log_softmax = log(sum) - (sum(x) / C - max); sum(x) is
/// tcc_rowsum's, as the generated loss regions compute it. The mean over
/// counted positions is 0 when none counts (PyTorch: 0/0 = NaN).
void run_softmax_cross_entropy(const KernelArgs &a) {
  const abi::CrossEntropyAttrs at =
      abi::attrs<KernelId::SoftmaxCrossEntropy>(a.instr);
  const TensorView &L = a.in[0];
  const float *logits = L.f32();
  const int64_t *labels = a.in[1].i64();
  int64_t classes = L.dim(L.rank() - 1), positions = a.in[1].numel;
  const double S = at.labelSmoothing;
  double total = 0.0;
  int64_t count = 0;
  for (int64_t p = 0; p < positions; ++p) {
    if (!counted(labels[p], p, classes, at.ignoreIndex))
      continue;
    ++count;
    const float *row = logits + p * classes;
    RowExp e = rowExp(row, classes);
    if (S == 0.0) {
    total += std::log(e.sum) - (row[labels[p]] - e.max);
      continue;
  }
    total += std::log(e.sum) -
             (1.0 - S) * static_cast<double>(row[labels[p]] - e.max) -
             S * (static_cast<double>(tcc_rowsum(row, classes)) /
                      static_cast<double>(classes) -
                  static_cast<double>(e.max));
  }
  a.out[0].f32()[0] = count ? static_cast<float>(total / count) : 0.0f;
}

/// in[0] is the gradient per counted position (the gradient rule divided
/// the loss's by their count): softmax * it, less (1 - S) of it at the
/// label and S / C of it everywhere; ignored rows get 0.
void run_softmax_cross_entropy_grad(const KernelArgs &a) {
  const abi::CrossEntropyAttrs at =
      abi::attrs<KernelId::SoftmaxCrossEntropyGrad>(a.instr);
  const TensorView &L = a.in[1];
  const float *logits = L.f32();
  const int64_t *labels = a.in[2].i64();
  float *dlogits = a.out[0].f32();
  int64_t classes = L.dim(L.rank() - 1), positions = a.in[2].numel;
  const float scale = a.in[0].f32()[0];
  const double S = at.labelSmoothing;
  const float hit = scale * static_cast<float>(1.0 - S);
  const float smooth = scale * static_cast<float>(S / classes);
  for (int64_t p = 0; p < positions; ++p) {
    float *drow = dlogits + p * classes;
    if (!counted(labels[p], p, classes, at.ignoreIndex)) {
      std::fill(drow, drow + classes, 0.0f);
      continue;
    }
    const float *row = logits + p * classes;
    RowExp e = rowExp(row, classes);
    const float inv = static_cast<float>(1.0 / e.sum);
    if (S == 0.0)
    for (int64_t c = 0; c < classes; ++c)
      drow[c] = fastExp(row[c] - e.max) * inv * scale;
    else
      for (int64_t c = 0; c < classes; ++c)
        drow[c] = fastExp(row[c] - e.max) * inv * scale - smooth;
    drow[labels[p]] -= hit;
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
