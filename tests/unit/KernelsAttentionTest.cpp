//===- KernelsAttentionTest.cpp - attention kernels vs a naive reference --===//
//
// `attention` and `attention_grad` in f32, bf16 and f16 against a reference
// in double that materializes the scores (mask shapes, causal, D != Dv,
// Tq != Tk, rank-4 batches, fully masked rows); where the 16-bit kernels
// round P and dS; a finite-difference check of the gradient against the
// forward; row blocks and the thread pool; the sequence-major layout
// against the packed one; the products on the AVX-512 tiles and on sgemm.
// (The checks on malformed instrs: KernelsAttentionCheckTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/core/prelude/FastExp.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

using namespace tcc::rt;
using tcc::rt::test::broadcastIndex;
using tcc::rt::test::unravel;

namespace {
using Tensors = test::DTypeTensors;

/// What a value becomes stored as type t.
double roundTo(double x, DType t) {
  float f = static_cast<float>(x);
  if (t == DType::F32)
    return f;
  uint16_t h;
  narrowFromF32(&f, t, &h, 1);
  widenToF32(&h, t, &f, 1);
  return f;
}

std::vector<int64_t> cat(std::vector<int64_t> a, std::vector<int64_t> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// One attention problem; an empty maskShape means no mask.
struct Problem {
  std::vector<int64_t> batch;
  int64_t tq, tk, d, dv;
  bool causal = false;
  std::vector<int64_t> maskShape = {};
  double scale = 0.5;
  int64_t entries() const { return test::numel(batch); }
};

/// Inputs of one problem, already representable in the tested type.
struct Data {
  std::vector<float> q, k, v, mask, dout;
};

Data makeData(const Problem &p, DType t, unsigned seed) {
  Data d;
  int64_t b = p.entries();
  d.q = test::roundedTo(test::normalValues(b * p.tq * p.d, seed), t);
  d.k = test::roundedTo(test::normalValues(b * p.tk * p.d, seed + 1), t);
  d.v = test::roundedTo(test::normalValues(b * p.tk * p.dv, seed + 2), t);
  d.dout = test::roundedTo(test::normalValues(b * p.tq * p.dv, seed + 3), t);
  if (!p.maskShape.empty()) {
    d.mask = test::normalValues(test::numel(p.maskShape), seed + 4);
    // Some keys masked out (key padding), never a whole row.
    if (p.maskShape.back() > 1)
      for (size_t i = 0; i < d.mask.size(); ++i)
        if (i % 5 == 3)
          d.mask[i] = -INFINITY;
  }
  return d;
}

/// Reference results in double, with the magnitudes (sums of |terms|) that
/// bound f32 accumulation errors.
struct Ref {
  std::vector<double> out, lse, dq, dk, dv;
  std::vector<double> outMag, dqMag, dkMag, dvMag;
};

/// Materializes S and P per entry. `round16` rounds P and dS to `t` before
/// they are GEMM operands (what the 16-bit kernels must do); the backward
/// takes `out` as given (the kernel's own forward result, as in training).
Ref reference(const Problem &p, const Data &x, DType t, bool round16,
              const std::vector<float> &outGiven) {
  int64_t B = p.entries(), tq = p.tq, tk = p.tk, D = p.d, Dv = p.dv;
  Ref r;
  r.out.assign(B * tq * Dv, 0), r.outMag.assign(B * tq * Dv, 0);
  r.lse.assign(B * tq, 0);
  r.dq.assign(B * tq * D, 0), r.dqMag.assign(B * tq * D, 0);
  r.dk.assign(B * tk * D, 0), r.dkMag.assign(B * tk * D, 0);
  r.dv.assign(B * tk * Dv, 0), r.dvMag.assign(B * tk * Dv, 0);
  auto rnd = [&](double v) { return round16 ? roundTo(v, t) : v; };
  std::vector<double> P(tq * tk), P16(tq * tk), dS16(tq * tk), dSMag(tq * tk);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> bidx = unravel(b, p.batch);
    const float *q = x.q.data() + b * tq * D, *k = x.k.data() + b * tk * D,
                *v = x.v.data() + b * tk * Dv,
                *dout = x.dout.data() + b * tq * Dv,
                *o = outGiven.data() + b * tq * Dv;
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> s(tk);
      double mx = -INFINITY;
      for (int64_t j = 0; j < tk; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < D; ++c)
          acc += double(q[i * D + c]) * k[j * D + c];
        s[j] = p.scale * acc;
        if (!p.maskShape.empty())
          s[j] += x.mask[broadcastIndex(cat(bidx, {i, j}), p.maskShape)];
        if (p.causal && j > i)
          s[j] = -INFINITY;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < tk; ++j)
        sum += std::exp(s[j] - mx);
      double lse = mx + std::log(sum); // NaN when every key is masked
      r.lse[b * tq + i] = lse;
      for (int64_t j = 0; j < tk; ++j) {
        P[i * tk + j] = std::exp(s[j] - lse);
        P16[i * tk + j] = rnd(P[i * tk + j]);
      }
      for (int64_t c = 0; c < Dv; ++c) {
        double acc = 0, mag = 0;
        for (int64_t j = 0; j < tk; ++j) {
          acc += P16[i * tk + j] * v[j * Dv + c];
          mag += std::fabs(P[i * tk + j] * v[j * Dv + c]);
        }
        r.out[(b * tq + i) * Dv + c] = acc;
        r.outMag[(b * tq + i) * Dv + c] = mag;
      }
      // Backward: dS = P * (dout v^T - rowsum(dout * out)) * scale.
      double dot = 0, dotMag = 0;
      for (int64_t c = 0; c < Dv; ++c) {
        dot += double(dout[i * Dv + c]) * o[i * Dv + c];
        dotMag += std::fabs(double(dout[i * Dv + c]) * o[i * Dv + c]);
      }
      for (int64_t j = 0; j < tk; ++j) {
        double dp = 0, dpMag = 0;
        for (int64_t c = 0; c < Dv; ++c) {
          dp += double(dout[i * Dv + c]) * v[j * Dv + c];
          dpMag += std::fabs(double(dout[i * Dv + c]) * v[j * Dv + c]);
        }
        double pij = P[i * tk + j];
        double ds = pij * (dp - dot) * p.scale;
        dS16[i * tk + j] = rnd(ds);
        dSMag[i * tk + j] =
            std::fabs(ds) + std::fabs(pij * p.scale) * (dpMag + dotMag);
      }
    }
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t c = 0; c < D; ++c) {
        double acc = 0, mag = 0;
        for (int64_t j = 0; j < tk; ++j) {
          acc += dS16[i * tk + j] * k[j * D + c];
          mag += dSMag[i * tk + j] * std::fabs(k[j * D + c]);
        }
        r.dq[(b * tq + i) * D + c] = acc;
        r.dqMag[(b * tq + i) * D + c] = mag;
      }
    for (int64_t j = 0; j < tk; ++j) {
      for (int64_t c = 0; c < D; ++c) {
        double acc = 0, mag = 0;
        for (int64_t i = 0; i < tq; ++i) {
          acc += dS16[i * tk + j] * q[i * D + c];
          mag += dSMag[i * tk + j] * std::fabs(q[i * D + c]);
        }
        r.dk[(b * tk + j) * D + c] = acc;
        r.dkMag[(b * tk + j) * D + c] = mag;
      }
      for (int64_t c = 0; c < Dv; ++c) {
        double acc = 0, mag = 0;
        for (int64_t i = 0; i < tq; ++i) {
          acc += P16[i * tk + j] * dout[i * Dv + c];
          mag += std::fabs(P[i * tk + j] * dout[i * Dv + c]);
        }
        r.dv[(b * tk + j) * Dv + c] = acc;
        r.dvMag[(b * tk + j) * Dv + c] = mag;
      }
    }
  }
  return r;
}

/// The kernels' results for one problem.
struct Got {
  std::vector<float> out, lse, dq, dk, dv;
};

/// The kernels on p's data: packed, or with `heads` > 0 (p.batch's last
/// dim) sequence-major, the data permuted to [outer..., T, H, C] and the
/// results permuted back to p's packed layout.
Got runKernels(const Problem &p, const Data &x, DType t, int64_t heads = 0,
               bool fusedQkv = false) {
  std::vector<int64_t> outer(p.batch.begin(), p.batch.end() - (heads ? 1 : 0));
  int64_t o = test::numel(outer);
  auto shape = [&](int64_t rows, int64_t cols) {
    return heads ? cat(outer, {rows, heads, cols}) : cat(p.batch, {rows, cols});
  };
  auto in = [&](const std::vector<float> &v, int64_t rows, int64_t cols) {
    return heads ? test::swapMiddleAxes(v, o, heads, rows, cols) : v;
  };
  Tensors ts;
  int32_t q, k, v;
  if (fusedQkv) {
    // One [outer..., T, 3H, D] tensor: each row is q's heads, k's, v's.
    std::vector<float> parts[3] = {in(x.q, p.tq, p.d), in(x.k, p.tk, p.d),
                                   in(x.v, p.tk, p.dv)};
    int64_t e = heads * p.d, rows = o * p.tq;
    std::vector<float> qkv(rows * 3 * e);
    for (int64_t r = 0; r < rows; ++r)
      for (int part = 0; part < 3; ++part)
        std::copy_n(parts[part].begin() + r * e, e,
                    qkv.begin() + (r * 3 + part) * e);
    q = k = v = ts.add(t, cat(outer, {p.tq, 3 * heads, p.d}), qkv);
  } else {
    q = ts.add(t, shape(p.tq, p.d), in(x.q, p.tq, p.d));
    k = ts.add(t, shape(p.tk, p.d), in(x.k, p.tk, p.d));
    v = ts.add(t, shape(p.tk, p.dv), in(x.v, p.tk, p.dv));
  }
  int32_t dout = ts.add(t, shape(p.tq, p.dv), in(x.dout, p.tq, p.dv));
  int32_t out = ts.add(t, shape(p.tq, p.dv));
  int32_t lse = ts.add(DType::F32, cat(p.batch, {p.tq}));
  // fused_qkv: one gradient, the projection's, split below.
  int32_t dq =
      fusedQkv ? ts.add(t, ts.infos[q].shape) : ts.add(t, shape(p.tq, p.d));
  int32_t dk = fusedQkv ? -1 : ts.add(t, shape(p.tk, p.d));
  int32_t dv = fusedQkv ? -1 : ts.add(t, shape(p.tk, p.dv));
  std::vector<int32_t> fin{q, k, v}, bin{q, k, v, out, lse, dout};
  if (!p.maskShape.empty()) {
    int32_t m = ts.add(DType::F32, p.maskShape, x.mask);
    fin.push_back(m);
    bin.push_back(m);
  }
  std::vector<int64_t> attrs{p.causal, heads ? 1 : 0, fusedQkv ? 1 : 0};
  ts.run("attention", fin, {out, lse}, attrs, {p.scale});
  ts.run("attention_grad", bin,
         fusedQkv ? std::vector<int32_t>{dq} : std::vector<int32_t>{dq, dk, dv},
         attrs, {p.scale});
  auto got = [&](int32_t id, int64_t rows, int64_t cols) {
    std::vector<float> r = ts.get(id);
    return heads ? test::swapMiddleAxes(r, o, rows, heads, cols) : r;
  };
  if (fusedQkv) {
    // Third `part` of every row of the projection's gradient.
    std::vector<float> all = ts.get(dq);
    int64_t e = heads * p.d, rows = o * p.tq;
    auto third = [&](int part) {
      std::vector<float> r(rows * e);
      for (int64_t i = 0; i < rows; ++i)
        std::copy_n(all.begin() + (i * 3 + part) * e, e, r.begin() + i * e);
      return test::swapMiddleAxes(r, o, p.tq, heads, p.d);
    };
    return {got(out, p.tq, p.dv), ts.get(lse), third(0), third(1), third(2)};
  }
  return {got(out, p.tq, p.dv), ts.get(lse), got(dq, p.tq, p.d),
          got(dk, p.tk, p.d), got(dv, p.tk, p.dv)};
}

/// Relative precision of one rounding to t.
double epsOf(DType t) {
  return t == DType::BF16 ? 1.0 / 128 : t == DType::F16 ? 1.0 / 1024 : 0;
}

void expectClose(const char *what, const std::vector<float> &got,
                 const std::vector<double> &ref, const std::vector<double> &mag,
                 DType t) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double eps = epsOf(t);
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(ref[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << " at " << i;
      continue;
    }
    // f32 accumulation, then (16-bit) one rounding of the result and an
    // intermediate rounding of P or dS that f32 and double may place on
    // different sides of a tie.
    double tol = 2e-5 * mag[i] + eps * (std::fabs(ref[i]) + mag[i]) + 1e-6;
    ASSERT_NEAR(got[i], ref[i], tol) << what << " at " << i;
  }
}

void checkProblem(const Problem &p, DType t, unsigned seed = 7) {
  SCOPED_TRACE(std::string(dtypeName(t)) + " batch " + formatShape(p.batch) +
               " Tq " + std::to_string(p.tq) + " Tk " + std::to_string(p.tk) +
               " D " + std::to_string(p.d) + " Dv " + std::to_string(p.dv) +
               (p.causal ? " causal" : "") + " mask " +
               formatShape(p.maskShape));
  Data x = makeData(p, t, seed);
  Got got = runKernels(p, x, t);
  Ref r = reference(p, x, t, true, got.out);
  std::vector<double> lseMag(r.lse.size());
  for (size_t i = 0; i < lseMag.size(); ++i)
    lseMag[i] = 10 * (1 + std::fabs(r.lse[i]));
  expectClose("out", got.out, r.out, r.outMag, t);
  expectClose("lse", got.lse, r.lse, lseMag, DType::F32);
  expectClose("dq", got.dq, r.dq, r.dqMag, t);
  expectClose("dk", got.dk, r.dk, r.dkMag, t);
  expectClose("dv", got.dv, r.dv, r.dvMag, t);
}

const DType kTypes[] = {DType::F32, DType::BF16, DType::F16};
} // namespace

TEST(KernelsAttention, Registered) {
  EXPECT_NE(findKernel("attention"), nullptr);
  EXPECT_NE(findKernel("attention_grad"), nullptr);
  EXPECT_FALSE(kernelAllowsInPlace("attention"));
  EXPECT_FALSE(kernelAllowsInPlace("attention_grad"));
}

TEST(KernelsAttention, PlainAndCausal) {
  for (DType t : kTypes) {
    // D != Dv and Tq != Tk both ways.
    checkProblem({{3}, 5, 7, 4, 6}, t);
    checkProblem({{2}, 6, 3, 5, 2}, t);
    checkProblem({{3}, 5, 7, 4, 6, true}, t);
    checkProblem({{2}, 6, 3, 5, 2, true}, t);
    checkProblem({{2}, 4, 4, 3, 3, true, {}, 1.0}, t);
    // Causal rows in several blocks, each seeing only the keys up to its
    // last row.
    checkProblem({{2}, 40, 40, 3, 2, true}, t);
    checkProblem({{2}, 50, 20, 3, 2, true, {50, 20}}, t);
  }
}

TEST(KernelsAttention, MaskShapes) {
  for (DType t : kTypes) {
    checkProblem({{3}, 5, 7, 4, 6, false, {5, 7}}, t);
    checkProblem({{3}, 5, 7, 4, 6, false, {1, 5, 7}}, t);
    checkProblem({{3}, 5, 7, 4, 6, false, {3, 5, 7}}, t);
    checkProblem({{3}, 5, 7, 4, 6, false, {1, 7}}, t);    // key padding
    checkProblem({{3}, 5, 7, 4, 6, false, {3, 1, 7}}, t); // per entry
    checkProblem({{3}, 5, 7, 4, 6, false, {5, 1}}, t);
    checkProblem({{3}, 5, 7, 4, 6, false, {1, 1}}, t);
    checkProblem({{3}, 5, 7, 4, 6, true, {1, 5, 7}}, t);
    checkProblem({{2}, 6, 4, 3, 5, true, {1, 4}}, t);
  }
}

TEST(KernelsAttention, Rank4Batches) {
  for (DType t : kTypes) {
    checkProblem({{2, 3}, 4, 5, 3, 2}, t);
    checkProblem({{2, 3}, 4, 5, 3, 2, false, {2, 3, 4, 5}}, t);
    checkProblem({{2, 3}, 4, 5, 3, 2, true, {1, 1, 1, 5}}, t);
    checkProblem({{2, 3}, 4, 5, 3, 2, true, {4, 5}}, t);
  }
}

// Longer keys than one block of scores holds: several row blocks, causal
// blocks that skip keys, and enough work for the thread pool.
TEST(KernelsAttention, RowBlocksAndThreads) {
  Problem causal{{3}, 70, 2100, 4, 3, true, {1, 2100}};
  Problem plain{{2}, 40, 3000, 3, 5};
  for (DType t : {DType::F32, DType::BF16}) {
    checkProblem(causal, t);
    checkProblem(plain, t);
  }
  // The result does not depend on the thread count, and OpenBLAS gets its
  // thread count back.
  Data x = makeData(causal, DType::F32, 11);
  int blas = openblas_get_num_threads();
  openblas_set_num_threads(2);
  ThreadPool::setGlobalThreads(1);
  Got one = runKernels(causal, x, DType::F32);
  ThreadPool::setGlobalThreads(3);
  Got three = runKernels(causal, x, DType::F32);
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
  EXPECT_EQ(openblas_get_num_threads(), 2);
  openblas_set_num_threads(blas);
  EXPECT_EQ(one.out, three.out);
  EXPECT_EQ(one.lse, three.lse);
  EXPECT_EQ(one.dq, three.dq);
  EXPECT_EQ(one.dk, three.dk);
  EXPECT_EQ(one.dv, three.dv);
}

// Both ways of computing the products: KernelsAttentionTile.h's AVX-512
// tiles (where the CPU has AVX-512F) and sgemm (TCC_CPU_ATTENTION=blas), at
// head dims of one to two 64-column panels, with lengths that are not
// multiples of the tiles' rows or of 16 lanes, causal (several row blocks)
// and masked.
TEST(KernelsAttention, TilesAndSgemmAtHeadDims) {
  const char *saved = std::getenv("TCC_CPU_ATTENTION");
  std::string before = saved ? saved : "";
  for (const char *way : {"tiles", "blas"}) {
    setenv("TCC_CPU_ATTENTION", way, 1);
    SCOPED_TRACE(way);
    for (int64_t d : {16, 32, 64, 80}) {
      checkProblem({{2}, 67, 67, d, d, true}, DType::F32);
      checkProblem({{3}, 33, 45, d, d, false, {3, 1, 45}}, DType::F32);
      checkProblem({{2}, 21, 21, d, d / 2, true, {21, 21}}, DType::F32);
    }
    checkProblem({{2}, 67, 67, 64, 64, true}, DType::BF16);
    checkProblem({{1}, 130, 130, 32, 32, true, {1, 130}}, DType::F16);
  }
  if (saved)
    setenv("TCC_CPU_ATTENTION", before.c_str(), 1);
  else
    unsetenv("TCC_CPU_ATTENTION");
}

// A row whose keys are all masked is NaN (softmax of all -inf), in the
// forward and wherever it flows in the backward; other rows are finite.
TEST(KernelsAttention, FullyMaskedRowIsNaN) {
  for (DType t : kTypes) {
    Problem p{{2}, 3, 4, 2, 2, false, {1, 3, 4}};
    Data x = makeData(p, t, 3);
    for (int64_t j = 0; j < 4; ++j)
      x.mask[1 * 4 + j] = -INFINITY; // row 1
    for (int64_t j = 0; j < 4; ++j)
      x.mask[0 * 4 + j] = j == 2 ? 0.0f : -INFINITY; // row 0: one key
    x.mask[2 * 4 + 0] = 0.0f;
    Got got = runKernels(p, x, t);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(std::isnan(got.lse[b * 3 + i]), i == 1) << b << " " << i;
        for (int64_t c = 0; c < 2; ++c)
          EXPECT_EQ(std::isnan(got.out[(b * 3 + i) * 2 + c]), i == 1);
      }
    // Row 0 sees only key 2: its output is that key's value.
    EXPECT_EQ(got.out[0], x.v[2 * 2 + 0]);
    Ref r = reference(p, x, t, true, got.out);
    expectClose("out", got.out, r.out, r.outMag, t);
    expectClose("dq", got.dq, r.dq, r.dqMag, t);
    expectClose("dk", got.dk, r.dk, r.dkMag, t);
    expectClose("dv", got.dv, r.dv, r.dvMag, t);
  }
}

// Empty dims: no keys (zero output, lse -inf), no head dim (scores are the
// mask alone), no queries.
TEST(KernelsAttention, EmptyDims) {
  for (DType t : kTypes) {
    checkProblem({{2}, 3, 4, 0, 2, false, {3, 4}}, t);
    checkProblem({{2}, 0, 4, 3, 2}, t);
    checkProblem({{2}, 3, 4, 3, 0}, t);
    Problem p{{2}, 3, 0, 2, 2};
    Got got = runKernels(p, makeData(p, t, 1), t);
    for (float o : got.out)
      EXPECT_EQ(o, 0.0f);
    for (float l : got.lse)
      EXPECT_EQ(l, -INFINITY);
    for (float g : got.dq)
      EXPECT_EQ(g, 0.0f);
  }
}

// The gradient kernel against central differences of the forward (f32).
TEST(KernelsAttention, GradientMatchesFiniteDifferences) {
  // The second: 17 rows and keys, past a tile of rows and a vector of 16
  // lanes, head dim 16 (the products' tiles where the CPU has them).
  for (bool causal : {false, true})
    for (Problem p : {Problem{{2}, 3, 4, 3, 2, causal, {1, 4}, 0.7},
                      Problem{{1}, 17, 17, 16, 16, causal, {1, 17}, 0.25}}) {
      Data x = makeData(p, DType::F32, 21);
      x.mask[1] = -INFINITY;                  // one padded key
      Got got = runKernels(p, x, DType::F32); // dout is the loss weights
      auto loss = [&](const Data &d) {
        Got g = runKernels(p, d, DType::F32);
        double l = 0;
        for (size_t i = 0; i < g.out.size(); ++i)
          l += double(g.out[i]) * d.dout[i];
        return l;
      };
      const double h = 1e-2;
      auto check = [&](std::vector<float> Data::*field,
                       const std::vector<float> &grad, const char *name) {
        for (size_t i = 0; i < (x.*field).size(); ++i) {
          Data plus = x, minus = x;
          (plus.*field)[i] += h;
          (minus.*field)[i] -= h;
          double fd = (loss(plus) - loss(minus)) / (2 * h);
          EXPECT_NEAR(grad[i], fd, 2e-3 * (1 + std::fabs(fd)))
              << name << "[" << i << "] causal " << causal;
        }
      };
      check(&Data::q, got.dq, "dq");
      check(&Data::k, got.dk, "dk");
      check(&Data::v, got.dv, "dv");
    }
}

// 16-bit kernels round P before P v and P^T dout and dS before dS k and
// dS^T q: their results are far closer to a reference that does so than to
// one that keeps P and dS exact (the values v cancel, so the rounding of
// the weights shows through the rounding of the outputs).
TEST(KernelsAttention, RoundsPAndDSLikeA16BitGemm) {
  for (DType t : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(t));
    Problem p{{4}, 16, 64, 8, 8};
    Data x = makeData(p, t, 5);
    Got got = runKernels(p, x, t);
    Ref rounding = reference(p, x, t, true, got.out);
    Ref exact = reference(p, x, t, false, got.out);
    auto meanErr = [&](const std::vector<float> &g,
                       const std::vector<double> &ref,
                       const std::vector<double> &mag) {
      double e = 0;
      for (size_t i = 0; i < g.size(); ++i)
        e += std::fabs(g[i] - roundTo(ref[i], t)) / mag[i];
      return e / g.size();
    };
    struct Out {
      const char *name;
      const std::vector<float> &got;
      std::vector<double> Ref::*ref, Ref::*mag;
    } outs[] = {{"out", got.out, &Ref::out, &Ref::outMag},
                {"dq", got.dq, &Ref::dq, &Ref::dqMag},
                {"dk", got.dk, &Ref::dk, &Ref::dkMag},
                {"dv", got.dv, &Ref::dv, &Ref::dvMag}};
    for (const Out &o : outs) {
      double toRounding = meanErr(o.got, rounding.*o.ref, rounding.*o.mag);
      double toExact = meanErr(o.got, exact.*o.ref, exact.*o.mag);
      EXPECT_LT(toRounding * 4, toExact)
          << o.name << ": mean error " << toRounding
          << " against the rounding reference, " << toExact
          << " against the exact one";
    }
  }
}

// The row passes' exp against libm's in double: a million points of the
// range where results are normal, and the special values.
TEST(KernelsAttention, FastExpIsWithinTwoUlp) {
  double worst = 0;
  const int n = 1 << 20;
  for (int i = 0; i <= n; ++i) {
    float x = static_cast<float>(-87.3 + 176.0 * i / n);
    double ref = std::exp(double(x));
    double ulp = std::nextafter(float(ref), INFINITY) - float(ref);
    worst = std::max(worst, std::fabs(fastExp(x) - ref) / ulp);
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(fastExp(0.0f), 1.0f);
  EXPECT_EQ(fastExp(-INFINITY), 0.0f);
  EXPECT_EQ(fastExp(-100.0f), 0.0f);
  EXPECT_EQ(fastExp(89.0f), INFINITY);
  EXPECT_EQ(fastExp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(fastExp(NAN)));
  RecordProperty("worst_ulp", std::to_string(worst));
}

namespace {
/// Runs p (entries = outer * heads) in the sequence-major layout and
/// expects the packed kernels' results bit for bit (runKernels permutes
/// the data there and back): the same entries with the same arithmetic,
/// read through strides.
void checkSeqMajor(const Problem &p, int64_t heads, DType t) {
  ASSERT_EQ(p.batch.back(), heads);
  SCOPED_TRACE(std::string("seq-major ") + dtypeName(t) + " batch " +
               formatShape(p.batch) + (p.causal ? " causal" : "") + " mask " +
               formatShape(p.maskShape));
  Data x = makeData(p, t, 5);
  Got packed = runKernels(p, x, t);
  Got seq = runKernels(p, x, t, heads);
  EXPECT_EQ(seq.out, packed.out);
  EXPECT_EQ(seq.lse, packed.lse);
  EXPECT_EQ(seq.dq, packed.dq);
  EXPECT_EQ(seq.dk, packed.dk);
  EXPECT_EQ(seq.dv, packed.dv);
  if (p.tq != p.tk || p.d != p.dv)
    return;
  // q, k and v read inside one projection (tcc.attention's fused_qkv): the
  // same entries again, through a wider row pitch.
  Got qkv = runKernels(p, x, t, heads, /*fusedQkv=*/true);
  EXPECT_EQ(qkv.out, packed.out);
  EXPECT_EQ(qkv.lse, packed.lse);
  EXPECT_EQ(qkv.dq, packed.dq);
  EXPECT_EQ(qkv.dk, packed.dk);
  EXPECT_EQ(qkv.dv, packed.dv);
}
} // namespace

// Sequence-major operands ([B..., T, H, D], tcc.attention's seq_major: the
// layout before the head transposes) give the [B..., T, D] results bit for
// bit: rank 3 (nn.MultiheadAttention's [T, N*H, D]) and rank 4 ([B, T, H,
// D]), causal blocks, masks per entry, and entries on the thread pool; and
// so do q, k and v inside one [B..., T, 3H, D] projection where Tq = Tk
// and D = Dv.
TEST(KernelsAttention, SeqMajorMatchesPacked) {
  for (DType t : kTypes) {
    checkSeqMajor({{3}, 5, 7, 4, 6}, 3, t);
    checkSeqMajor({{4}, 6, 6, 3, 5, true}, 4, t);
    checkSeqMajor({{4}, 6, 6, 5, 5, true}, 4, t);
    checkSeqMajor({{2, 3}, 7, 7, 4, 4, false, {2, 3, 7, 7}}, 3, t);
    checkSeqMajor({{2, 3}, 4, 5, 3, 2, false, {2, 3, 4, 5}}, 3, t);
    checkSeqMajor({{2, 3}, 40, 40, 3, 2, true, {1, 1, 1, 40}}, 3, t);
  }
  checkSeqMajor({{4}, 70, 2100, 4, 3, true, {1, 2100}}, 4, DType::F32);
  checkSeqMajor({{2, 2}, 64, 64, 8, 8, true}, 2, DType::BF16);
  checkSeqMajor({{3, 2}, 80, 80, 16, 16, true}, 2, DType::F16);
}

namespace {
/// A fused-QKV attention_grad over [outer, T, 3H, D] random operands,
/// with its column sums (`sums`) or without; returns the gradient, then
/// the sums.
std::pair<std::vector<float>, std::vector<float>>
fusedGradient(DType t, int64_t outer, int64_t tlen, int64_t heads, int64_t d,
              bool sums) {
  Tensors ts;
  std::vector<int64_t> proj = {outer, tlen, 3 * heads, d},
                       rows = {outer, tlen, heads, d};
  int64_t n = test::numel(proj), m = test::numel(rows);
  int32_t x = ts.add(t, proj, test::randomValues(n, 3));
  int32_t dout = ts.add(t, rows, test::randomValues(m, 4));
  int32_t out = ts.add(t, rows), lse = ts.add(DType::F32, {outer, heads, tlen});
  int32_t g = ts.add(t, proj), s = ts.add(DType::F32, {3 * heads * d});
  std::vector<int64_t> attrs = {1, 1, 1};
  ts.run("attention", {x, x, x}, {out, lse}, attrs, {0.5});
  ts.run("attention_grad", {x, x, x, out, lse, dout},
         sums ? std::vector<int32_t>{g, s} : std::vector<int32_t>{g}, attrs,
         {0.5});
  return {ts.get(g), sums ? ts.get(s) : std::vector<float>{}};
}
} // namespace

// A fused-QKV attention_grad's second output, the projection gradient's
// column sums (tcc-pack-attention's column_sums): the gradient is the same
// bits as without it, each sum is the column's sum in double within f32
// rounding, and the same bits as reduce_sum's of the gradient (the
// unfused graph's; rows of 128-row slices and a short last one, two
// sequences, 16-bit gradients widened).
TEST(KernelsAttention, ColumnSumsOfTheFusedGradient) {
  for (DType t : kTypes) {
    SCOPED_TRACE(dtypeName(t));
    const int64_t outer = 2, tlen = 150, heads = 2, d = 4, cols = 3 * heads * d;
    auto [g, sums] = fusedGradient(t, outer, tlen, heads, d, true);
    auto [plain, none] = fusedGradient(t, outer, tlen, heads, d, false);
    EXPECT_EQ(g, plain);
    ASSERT_EQ(sums.size(), static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) {
      double want = 0, mag = 0;
      for (int64_t r = 0; r < outer * tlen; ++r) {
        want += g[r * cols + c];
        mag += std::fabs(g[r * cols + c]);
      }
      EXPECT_NEAR(sums[c], want, 1e-6 * mag + 1e-7) << "column " << c;
    }
    Tensors ts;
    int32_t x = ts.add(DType::F32, {outer * tlen, cols}, g);
    int32_t y = ts.add(DType::F32, {cols});
    ts.run("reduce_sum", {x}, {y}, {0});
    std::vector<float> reduced = ts.get(y);
    EXPECT_EQ(0, std::memcmp(reduced.data(), sums.data(), cols * sizeof(float)))
        << "not reduce_sum's bits";
  }
}

// The column sums' checks: only with fused_qkv, f32 [3HD].
TEST(KernelsAttention, ColumnSumsCheckErrors) {
  Tensors ts;
  DType h = DType::BF16;
  int32_t x = ts.add(h, {2, 5, 6, 4}), out = ts.add(h, {2, 5, 2, 4});
  int32_t lse = ts.add(DType::F32, {2, 2, 5}), g = ts.add(h, {2, 5, 6, 4});
  int32_t sums = ts.add(DType::F32, {24}), bad16 = ts.add(h, {24});
  int32_t short_ = ts.add(DType::F32, {12});
  auto check = [&](std::vector<int32_t> outs) {
    checkInstr(
        Instr{
            "attention_grad", {x, x, x, out, lse, out}, outs, {1, 1, 1}, {0.5}},
        ts.infos);
  };
  EXPECT_NO_THROW(check({g, sums}));
  auto fails = [&](std::vector<int32_t> outs, const std::string &msg) {
    try {
      check(outs);
      ADD_FAILURE() << "no error; expected: " << msg;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  fails({g, bad16}, "is bf16, expected f32 (column sums are always f32)");
  fails({g, short_}, "has shape [12], expected [24]");
  fails({g, sums, sums}, "expects 6 inputs and 1 outputs, got 6 and 3");
}
