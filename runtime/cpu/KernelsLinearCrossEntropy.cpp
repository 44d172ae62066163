//===- KernelsLinearCrossEntropy.cpp - Cut cross-entropy on the CPU -------===//
//
// linear_cross_entropy and its gradient (runtime/core/abi/Kernels.h): the
// LM head's GEMM and the cross-entropy over the vocabulary in slices of
// `block` columns, so only an [N, block] slice of logits exists at a time.
// Per slice: one GEMM (split over the thread pool) writes the logits,
// then the rows are updated on the thread pool. The forward keeps each
// row's running maximum m and sum s of exp(x - m) (rescaled by
// exp(m_old - m_new) when a slice raises the maximum: the online softmax),
// its label's logit and, for label smoothing, the sum of its logits; lse =
// m + log(s). The backward recomputes a slice, turns it into dlogits in
// place (exp(x - lse) * g - smoothing, less the label's share) and feeds it
// to two GEMMs: dhidden += dlogits op(W_slice)^T (beta 1) and the weight
// gradient's slice = hidden^T dlogits (or its transpose), written in place
// in the full gradient through the leading dimension.
//
// The exponentials are tcc_exp_exact's and the sums double, as the library
// cross-entropy's (KernelsLoss.cpp); the online rescaling makes the loss
// differ from it in the last bits when V > block, not more. The row passes
// have AVX-512 clones (IsaClone.h): the same bits, 4x the width.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/core/prelude/FastExp.h"
#include "runtime/core/prelude/RowReduce.h"
#include "runtime/cpu/IsaClone.h"
#include "runtime/cpu/KernelsInternal.h"
#include "runtime/cpu/ParallelGemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tcc::rt::kernels {

namespace {
/// The operands both kernels read. W is [D, V], or [V, D] with transposed.
struct Head {
  const float *hidden, *weight, *bias;
  const int64_t *labels;
  int64_t rows, features, classes, block;
  bool transposed;
  int64_t ignoreIndex;
  double smoothing;

  /// logits[:, v0:v0+n] = hidden op(W)[:, v0:v0+n] (+ bias), [rows, n].
  void slice(int64_t v0, int64_t n, float *out) const {
    const float *w = transposed ? weight + v0 * features : weight + v0;
    int64_t ldw = transposed ? features : classes;
    parallelSgemm(false, transposed, rows, n, features, 1.0f, hidden, features,
                  w, ldw, 0.0f, out, n);
    if (bias)
      forRows([&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float *row = out + r * n;
          for (int64_t j = 0; j < n; ++j)
            row[j] += bias[v0 + j];
        }
      });
  }

  /// fn(r0, r1) for ranges of rows that cover them all, on the pool when
  /// there is enough work.
  template <class F> void forRows(F &&fn) const {
    constexpr int64_t kRowsPerTask = 16;
    int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
    auto task = [&](int64_t t) {
      fn(t * kRowsPerTask, std::min(rows, (t + 1) * kRowsPerTask));
    };
    ThreadPool &pool = ThreadPool::global();
    if (tasks > 1 && pool.size() > 1 && rows * std::min(block, classes) >= 4096)
      pool.parallelFor(tasks, task);
    else
      for (int64_t t = 0; t < tasks; ++t)
        task(t);
  }

  /// Throws on a label outside [0, classes) that is not ignore_index;
  /// returns the number of counted rows.
  int64_t countLabels() const {
    int64_t count = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (labels[r] == ignoreIndex)
        continue;
      if (labels[r] < 0 || labels[r] >= classes)
        throw Error("label " + std::to_string(labels[r]) + " at position " +
                    std::to_string(r) + " is outside [0, " +
                    std::to_string(classes) + ")");
      ++count;
    }
    return count;
  }
};
} // namespace

/// in[first..]: hidden, weight, labels; in[biasAt] the optional bias.
static Head headOf(const KernelArgs &a, size_t first, size_t biasAt) {
  const abi::LinearCrossEntropyAttrs at =
      abi::attrs<KernelId::LinearCrossEntropy>(a.instr);
  const TensorView &H = a.in[first], &W = a.in[first + 1];
  Head h{};
  h.hidden = H.f32();
  h.weight = W.f32();
  h.bias = a.in.size() > biasAt ? a.in[biasAt].f32() : nullptr;
  h.labels = a.in[first + 2].i64();
  h.features = H.dim(H.rank() - 1);
  h.rows = a.in[first + 2].numel;
  h.transposed = at.transposeWeight;
  h.classes = W.dim(at.transposeWeight ? 0 : 1);
  h.block = std::min<int64_t>(std::max<int64_t>(at.block, 1), h.classes);
  h.ignoreIndex = at.ignoreIndex;
  h.smoothing = at.labelSmoothing;
  return h;
}

namespace {
/// One slice's forward row pass: running max and sum, the label's logit.
struct ForwardRows {
  const Head *h;
  const float *logits;
  int64_t v0, n;
  float *mx;
  double *sum, *rowSum;
  float *hit;
};

/// One slice's backward row pass: logits into dlogits in place.
struct BackwardRows {
  const Head *h;
  float *dl;
  int64_t v0, n;
  const float *lse;
  float g, smooth, hitScale;
};
} // namespace

TCC_CLONE_BODY void forwardRowsBody(const ForwardRows &f, int64_t r0,
                                    int64_t r1) {
  const Head &h = *f.h;
  for (int64_t r = r0; r < r1; ++r) {
    const float *row = f.logits + r * f.n;
    float m = std::max(f.mx[r], tcc_rowmax(row, f.n));
    // exp(-inf) is 0: the first slice rescales an empty sum.
    double rescale = f.mx[r] == -INFINITY ? 0.0 : std::exp(double(f.mx[r]) - m);
    f.sum[r] = f.sum[r] * rescale + tcc_rowsumexp_f64(row, f.n, m);
    f.mx[r] = m;
    int64_t label = h.labels[r];
    if (label >= f.v0 && label < f.v0 + f.n)
      f.hit[r] = row[label - f.v0];
    if (h.smoothing != 0.0)
      f.rowSum[r] += static_cast<double>(tcc_rowsum(row, f.n));
  }
}
static void forwardRows(const ForwardRows &f, int64_t r0, int64_t r1) {
  forwardRowsBody(f, r0, r1);
}
TCC_AVX512_TARGET static void forwardRowsAvx512(const ForwardRows &f,
                                                int64_t r0, int64_t r1) {
  forwardRowsBody(f, r0, r1);
}

TCC_CLONE_BODY void backwardRowsBody(const BackwardRows &b, int64_t r0,
                                     int64_t r1) {
  const Head &h = *b.h;
  for (int64_t r = r0; r < r1; ++r) {
    float *row = b.dl + r * b.n;
    int64_t label = h.labels[r];
    if (label == h.ignoreIndex) {
      std::fill(row, row + b.n, 0.0f);
      continue;
    }
    const float l = b.lse[r], g = b.g, smooth = b.smooth;
    for (int64_t j = 0; j < b.n; ++j)
      row[j] = tcc_exp_exact(row[j] - l) * g - smooth;
    if (label >= b.v0 && label < b.v0 + b.n)
      row[label - b.v0] -= b.hitScale;
  }
}
static void backwardRows(const BackwardRows &b, int64_t r0, int64_t r1) {
  backwardRowsBody(b, r0, r1);
}
TCC_AVX512_TARGET static void backwardRowsAvx512(const BackwardRows &b,
                                                 int64_t r0, int64_t r1) {
  backwardRowsBody(b, r0, r1);
}

/// colSum[j] += sum over rows of dl[r, j], in row order (the bias gradient).
TCC_CLONE_BODY void columnSumsBody(const float *dl, int64_t rows, int64_t n,
                                   double *colSum) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = dl + r * n;
    for (int64_t j = 0; j < n; ++j)
      colSum[j] += row[j];
  }
}
static void columnSums(const float *dl, int64_t rows, int64_t n,
                       double *colSum) {
  columnSumsBody(dl, rows, n, colSum);
}
TCC_AVX512_TARGET static void columnSumsAvx512(const float *dl, int64_t rows,
                                               int64_t n, double *colSum) {
  columnSumsBody(dl, rows, n, colSum);
}

void run_linear_cross_entropy(const KernelArgs &a) {
  const Head h = headOf(a, 0, 3);
  float *lse = a.out[1].f32();
  int64_t count = h.countLabels();
  std::vector<float> logits(static_cast<size_t>(h.rows * h.block));
  std::vector<float> mx(static_cast<size_t>(h.rows), -INFINITY);
  std::vector<double> sum(static_cast<size_t>(h.rows), 0.0),
      rowSum(static_cast<size_t>(h.rows), 0.0);
  std::vector<float> hit(static_cast<size_t>(h.rows), 0.0f);
  for (int64_t v0 = 0; v0 < h.classes; v0 += h.block) {
    int64_t n = std::min(h.block, h.classes - v0);
    h.slice(v0, n, logits.data());
    ForwardRows f{&h,         logits.data(), v0,        n, mx.data(),
                  sum.data(), rowSum.data(), hit.data()};
    h.forRows([&](int64_t r0, int64_t r1) {
      if (avx512Cpu())
        forwardRowsAvx512(f, r0, r1);
      else
        forwardRows(f, r0, r1);
    });
  }
  double total = 0.0;
  const double S = h.smoothing;
  for (int64_t r = 0; r < h.rows; ++r) {
    double l = double(mx[r]) + std::log(sum[r]);
    lse[r] = static_cast<float>(l);
    if (h.labels[r] == h.ignoreIndex)
      continue;
    total += l - (1.0 - S) * hit[r] -
             (S != 0.0 ? S * rowSum[r] / static_cast<double>(h.classes) : 0.0);
  }
  a.out[0].f32()[0] = count ? static_cast<float>(total / count) : 0.0f;
}

void run_linear_cross_entropy_grad(const KernelArgs &a) {
  const Head h = headOf(a, 1, 5);
  const float g = a.in[0].f32()[0];
  const float *lse = a.in[4].f32();
  float *dh = a.out[0].f32(), *dw = a.out[1].f32();
  float *db = a.out.size() > 2 ? a.out[2].f32() : nullptr;
  h.countLabels();
  const float hitScale = g * static_cast<float>(1.0 - h.smoothing);
  const float smooth =
      g * static_cast<float>(h.smoothing / static_cast<double>(h.classes));
  std::fill(dh, dh + h.rows * h.features, 0.0f);
  std::vector<float> dl(static_cast<size_t>(h.rows * h.block));
  std::vector<double> colSum;
  const int64_t D = h.features;
  for (int64_t v0 = 0; v0 < h.classes; v0 += h.block) {
    int64_t n = std::min(h.block, h.classes - v0);
    h.slice(v0, n, dl.data());
    BackwardRows b{&h, dl.data(), v0, n, lse, g, smooth, hitScale};
    h.forRows([&](int64_t r0, int64_t r1) {
      if (avx512Cpu())
        backwardRowsAvx512(b, r0, r1);
      else
        backwardRows(b, r0, r1);
    });
    const float *w = h.transposed ? h.weight + v0 * h.features : h.weight + v0;
    if (h.transposed) {
      // W slice [n, D]: dh += dl W_s; dW[v0:v0+n, :] = dl^T hidden.
      parallelSgemm(false, false, h.rows, D, n, 1.0f, dl.data(), n, w, D, 1.0f,
                    dh, D);
      parallelSgemm(true, false, n, D, h.rows, 1.0f, dl.data(), n, h.hidden, D,
                    0.0f, dw + v0 * h.features, D);
    } else {
      // W slice [D, n] of leading dimension V: dh += dl W_s^T;
      // dW[:, v0:v0+n] = hidden^T dl.
      int64_t ldw = h.classes;
      parallelSgemm(false, true, h.rows, D, n, 1.0f, dl.data(), n, w, ldw, 1.0f,
                    dh, D);
      parallelSgemm(true, false, D, n, h.rows, 1.0f, h.hidden, D, dl.data(), n,
                    0.0f, dw + v0, ldw);
    }
    if (db) {
      colSum.assign(static_cast<size_t>(n), 0.0);
      if (avx512Cpu())
        columnSumsAvx512(dl.data(), h.rows, n, colSum.data());
      else
        columnSums(dl.data(), h.rows, n, colSum.data());
      for (int64_t j = 0; j < n; ++j)
        db[v0 + j] = static_cast<float>(colSum[j]);
    }
  }
}

} // namespace tcc::rt::kernels
