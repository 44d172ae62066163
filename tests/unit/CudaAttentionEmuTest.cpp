//===- CudaAttentionEmuTest.cpp - attention's CUDA path, emulated ---------===//
//
// runtime/cuda/CudaAttention.cpp's chunk loops and CudaKernelsAttention.cu's
// row kernels on the CPU (CudaKernelEmu.h), with a host GEMM in place of
// cuBLASLt (CudaAttentionEmuGemm.cpp):
//  - the row passes against a double reference: warp rows, block rows,
//    rows too long for registers, mask broadcasts, causal, a chunk that
//    starts inside the batch, 16-bit P and dS, nothing written outside;
//  - forward + backward through several chunks (an uneven last one)
//    against a naive double reference and the CPU kernel; results must not
//    depend on the chunk size; scratch operands of every GEMM 256-byte
//    aligned, and every GEMM row inside an operand;
//  (sequence-major operands: CudaAttentionSeqMajorEmuTest.cpp; the chunk
//  policy and the settings: CudaAttentionPlanTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "CudaAttentionEmu.h"
#include "CudaTestUtil.h"
#include "KernelTestUtil.h"

#include "runtime/cuda/CudaAttention.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

using namespace tcc::rt;
using namespace tcc::rt::test;
using cuda::AttentionPlan;
using cuda::AttentionRows;

namespace {

/// |got - want| <= rtol |want| + atol; a NaN reference (a row of only
/// -inf scores) needs a NaN.
::testing::AssertionResult near(double got, double want, double rtol,
                                double atol) {
  bool ok = std::isnan(want)
                ? std::isnan(got)
                : std::fabs(got - want) <= rtol * std::fabs(want) + atol;
  if (ok)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << ", reference " << want;
}

float asF32(DType t, float x) {
  float y;
  std::vector<uint8_t> b(4);
  narrowFromF32(&x, t, b.data(), 1);
  widenToF32(b.data(), t, &y, 1);
  return y;
}

//===----------------------------------------------------------------------===//
// The row passes
//===----------------------------------------------------------------------===//

struct RowsCase {
  long long entries, tq, tk;
  bool causal;
  long long mEntry, mRow, mCol; // of a [entries + 1, tq, tk] mask, or none
  bool mask;
  DType p;
};

std::string describe(const RowsCase &c) {
  return "tk " + std::to_string(c.tk) + " tq " + std::to_string(c.tq) +
         (c.causal ? " causal" : "") + (c.mask ? " mask" : "") + " " +
         dtypeName(c.p);
}

void checkRows(const RowsCase &c) {
  SCOPED_TRACE(describe(c));
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-3, 3);
  AttentionRows r;
  r.rows = c.entries * c.tq;
  r.tq = c.tq;
  r.tk = c.tk;
  r.entryStride = c.tq * c.tk + 5; // padding the kernels must not touch
  r.firstEntry = 1;                // a chunk inside the batch
  r.firstRow = c.tq;
  r.causal = c.causal;
  r.scale = 0.37f;
  int64_t n = c.entries * r.entryStride;
  std::vector<float> s(n), dp(n), mask((c.entries + 1) * c.tq * c.tk);
  for (float &x : s)
    x = u(rng);
  for (float &x : dp)
    x = u(rng);
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = i % 7 == 3 ? -INFINITY : u(rng);
  if (c.mask) {
    r.mask = mask.data();
    r.mEntry = c.mEntry;
    r.mRow = c.mRow;
    r.mCol = c.mCol;
  }
  size_t es = dtypeSize(c.p);
  const uint8_t kSentinel = 0xa5;
  std::vector<uint8_t> p(n * es, kSentinel);
  std::vector<float> lse(r.firstRow + r.rows + 3, 123.0f);
  cuda::attentionRows(r, s.data(), p.data(), static_cast<int>(c.p), lse.data(),
                      false, nullptr);

  // The reference in double; 16-bit P is compared after rounding.
  double tolP = c.p == DType::F32 ? 2e-6 : 1e-2;
  std::vector<double> ref(c.tk);
  for (long long row = 0; row < r.rows; ++row) {
    long long e = row / c.tq, i = row % c.tq;
    double mx = -INFINITY;
    for (long long j = 0; j < c.tk; ++j) {
      double x = (double)r.scale * s[e * r.entryStride + i * c.tk + j];
      if (c.mask)
        x += mask[(e + 1) * c.mEntry + i * c.mRow + j * c.mCol];
      if (c.causal && j > i)
        x = -INFINITY;
      ref[j] = x;
      mx = std::max(mx, x);
    }
    double sum = 0;
    for (long long j = 0; j < c.tk; ++j)
      sum += std::exp(ref[j] - mx);
    double l = mx + std::log(sum);
    ASSERT_TRUE(near(lse[r.firstRow + row], l, 1e-5, 1e-5)) << "row " << row;
    for (long long j = 0; j < c.tk; ++j) {
      float got;
      widenToF32(p.data() + (e * r.entryStride + i * c.tk + j) * es, c.p, &got,
                 1);
      double want = std::exp(ref[j] - l);
      ASSERT_TRUE(near(got, want, tolP, 1e-7)) << "row " << row << " j " << j;
    }
  }
  // Nothing outside the rows: lse before and after, P's padding.
  for (long long i = 0; i < r.firstRow; ++i)
    EXPECT_EQ(lse[i], 123.0f);
  EXPECT_EQ(lse[r.firstRow + r.rows], 123.0f);
  for (long long e = 0; e < c.entries; ++e)
    for (long long x = c.tq * c.tk; x < r.entryStride; ++x)
      for (size_t b = 0; b < es; ++b)
        ASSERT_EQ(p[(e * r.entryStride + x) * es + b], kSentinel);

  // The backward's recomputation from the saved lse gives the same P.
  std::vector<uint8_t> p2(n * es, kSentinel);
  cuda::attentionRows(r, s.data(), p2.data(), static_cast<int>(c.p), lse.data(),
                      true, nullptr);
  EXPECT_EQ(p2, p);

  // dS = P (dP - D) scale over P, D = rowsum(dO O) of rows firstRow + r.
  const long long dv = 5;
  std::vector<float> dout((r.firstRow + r.rows) * dv), out(dout.size());
  for (float &x : dout)
    x = asF32(c.p, u(rng));
  for (float &x : out)
    x = asF32(c.p, u(rng));
  std::vector<uint8_t> dout16(dout.size() * es), out16(out.size() * es);
  narrowFromF32(dout.data(), c.p, dout16.data(), (int64_t)dout.size());
  narrowFromF32(out.data(), c.p, out16.data(), (int64_t)out.size());
  std::vector<uint8_t> ds = p;
  cuda::attentionGradRows(r, dp.data(), ds.data(), static_cast<int>(c.p),
                          dout16.data(), out16.data(), static_cast<int>(c.p),
                          dv, nullptr);
  for (long long row = 0; row < r.rows; ++row) {
    long long e = row / c.tq, i = row % c.tq;
    double d = 0;
    for (long long k = 0; k < dv; ++k)
      d += (double)dout[(r.firstRow + row) * dv + k] *
           out[(r.firstRow + row) * dv + k];
    for (long long j = 0; j < c.tk; ++j) {
      long long at = e * r.entryStride + i * c.tk + j;
      float pj, got;
      widenToF32(p.data() + at * es, c.p, &pj, 1);
      widenToF32(ds.data() + at * es, c.p, &got, 1);
      double want = pj * (dp[at] - d) * r.scale;
      ASSERT_TRUE(near(got, want, tolP, 1e-6)) << "row " << row << " j " << j;
    }
  }
  for (long long e = 0; e < c.entries; ++e)
    for (long long x = c.tq * c.tk; x < r.entryStride; ++x)
      ASSERT_EQ(ds[(e * r.entryStride + x) * es], kSentinel);
}

// Warp rows (tk <= 256: 8 rows a block, the last block partial), block rows
// (tk 257: 64 threads; 1000: 128), and rows longer than the registers hold
// (tk 8193: 1024 threads, read again), f32 and 16-bit P.
TEST(CudaAttentionEmu, RowPasses) {
  for (DType t : {DType::F32, DType::BF16})
    for (long long tk : {1ll, 7ll, 33ll, 256ll, 257ll, 1000ll})
      checkRows({2, 5, tk, false, 0, 0, 0, false, t});
  checkRows({1, 2, 8193, false, 0, 0, 0, false, DType::F32});
  checkRows({1, 2, 8193, true, 0, 0, 0, false, DType::BF16});
}

// Each mask broadcast (per entry or shared, rows full or 1, columns full or
// 1) with and without causal; causal with Tq > Tk and Tq < Tk.
TEST(CudaAttentionEmu, RowPassMasksAndCausal) {
  const long long tq = 6;
  struct M {
    bool entry, row, col; // which of its dims the mask has in full
  };
  for (M m : {M{true, true, true}, M{false, true, true}, M{true, false, true},
              M{false, true, false}, M{false, false, false}})
    for (bool causal : {false, true})
      for (long long tk : {9ll, 300ll}) // warp rows, block rows
        checkRows({3, tq, tk, causal, m.entry ? tq * tk : 0, m.row ? tk : 0,
                   m.col ? 1 : 0, true, DType::F16});
  checkRows({2, 9, 4, true, 0, 0, 0, false, DType::F32});
  checkRows({2, 3, 40, true, 0, 0, 0, false, DType::F32});
}

//===----------------------------------------------------------------------===//
// Forward and backward through the chunk loops
//===----------------------------------------------------------------------===//

struct LoopCase {
  std::string name;
  DType t;
  std::vector<int64_t> batch;
  int64_t tq, tk, d, dv;
  std::vector<int64_t> mask; // empty: none
  bool causal;
  bool maskRow = false; // row 1 of the mask all -inf (NaN rows)
};


/// The program attention -> attention_grad of a case.
struct LoopProgram {
  OneProgram p;
  int32_t q, k, v, mask = -1, dout, out, lse, dq, dk, dv;
};

std::unique_ptr<LoopProgram> build(const LoopCase &c) {
  auto lp = std::make_unique<LoopProgram>();
  OneProgram &p = lp->p;
  lp->q = p.random(c.t, cat(c.batch, {c.tq, c.d}), -1.5f, 1.5f);
  lp->k = p.random(c.t, cat(c.batch, {c.tk, c.d}), -1.5f, 1.5f);
  lp->v = p.random(c.t, cat(c.batch, {c.tk, c.dv}));
  lp->dout = p.random(c.t, cat(c.batch, {c.tq, c.dv}));
  std::vector<int32_t> in = {lp->q, lp->k, lp->v};
  if (!c.mask.empty()) {
    int64_t n = 1;
    for (int64_t x : c.mask)
      n *= x;
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-2, 2);
    std::vector<float> m(n);
    int64_t cols = c.mask.back();
    for (int64_t i = 0; i < n; ++i)
      m[i] = (c.maskRow && i / cols == 1) || (cols > 1 && i % 5 == 2)
                 ? -INFINITY
                 : u(rng);
    lp->mask = p.floats(DType::F32, c.mask, m);
  }
  lp->out = p.out(c.t, cat(c.batch, {c.tq, c.dv}));
  lp->lse = p.out(DType::F32, cat(c.batch, {c.tq}));
  lp->dq = p.out(c.t, cat(c.batch, {c.tq, c.d}));
  lp->dk = p.out(c.t, cat(c.batch, {c.tk, c.d}));
  lp->dv = p.out(c.t, cat(c.batch, {c.tk, c.dv}));
  double scale = 1.0 / std::sqrt((double)std::max<int64_t>(c.d, 1));
  std::vector<int32_t> fin = in;
  if (lp->mask >= 0)
    fin.push_back(lp->mask);
  p.instr("attention", fin, {lp->out, lp->lse}, {c.causal, 0}, {scale});
  std::vector<int32_t> gin = {lp->q, lp->k, lp->v, lp->out, lp->lse, lp->dout};
  if (lp->mask >= 0)
    gin.push_back(lp->mask);
  p.instr("attention_grad", gin, {lp->dq, lp->dk, lp->dv}, {c.causal, 0},
          {scale});
  return lp;
}

/// The naive double reference of the two kernels (the backward from the
/// out and lse it is given, as the kernel is).
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

Reference reference(const LoopCase &c, const LoopProgram &lp,
                    const std::vector<std::vector<uint8_t>> &got) {
  auto val = [&](int32_t id) { return asDoubles(lp.p.info(id), got[id]); };
  std::vector<double> q = val(lp.q), k = val(lp.k), v = val(lp.v),
                      dout = val(lp.dout), gotOut = val(lp.out),
                      gotLse = val(lp.lse), mask;
  if (lp.mask >= 0)
    mask = val(lp.mask);
  int64_t B = 1, tq = c.tq, tk = c.tk, D = c.d, Dv = c.dv;
  for (int64_t x : c.batch)
    B *= x;
  const auto &ms = c.mask;
  size_t mr = ms.size();
  int64_t mRows = mr ? ms[mr - 2] : 1, mCols = mr ? ms[mr - 1] : 1;
  int64_t mEntry =
      mr && (int64_t)mask.size() > mRows * mCols ? mRows * mCols : 0;
  double scale = c.d ? 1.0 / std::sqrt((double)c.d) : 1.0;
  Reference r;
  r.out.assign(B * tq * Dv, 0);
  r.lse.assign(B * tq, 0);
  r.dq.assign(B * tq * D, 0);
  r.dk.assign(B * tk * D, 0);
  r.dv.assign(B * tk * Dv, 0);
  std::vector<double> s(tk), pr(tk), pg(tk);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = 0; j < tk; ++j) {
        double x = 0;
        for (int64_t d = 0; d < D; ++d)
          x += q[(b * tq + i) * D + d] * k[(b * tk + j) * D + d];
        x *= scale;
        if (!mask.empty())
          x += mask[b * mEntry + (mRows == 1 ? 0 : i * mCols) +
                    (mCols == 1 ? 0 : j)];
        if (c.causal && j > i)
          x = -INFINITY;
        s[j] = x;
      }
      double mx = -INFINITY, sum = 0;
      for (double x : s)
        mx = std::max(mx, x);
      for (double x : s)
        sum += std::exp(x - mx);
      double l = mx + std::log(sum);
      r.lse[b * tq + i] = l;
      double lIn = gotLse[b * tq + i], dd = 0;
      for (int64_t e = 0; e < Dv; ++e)
        dd += dout[(b * tq + i) * Dv + e] * gotOut[(b * tq + i) * Dv + e];
      for (int64_t j = 0; j < tk; ++j) {
        pr[j] = std::exp(s[j] - l);
        pg[j] = std::exp(s[j] - lIn);
        double dp = 0;
        for (int64_t e = 0; e < Dv; ++e) {
          double dO = dout[(b * tq + i) * Dv + e];
          r.out[(b * tq + i) * Dv + e] += pr[j] * v[(b * tk + j) * Dv + e];
          r.dv[(b * tk + j) * Dv + e] += pg[j] * dO;
          dp += dO * v[(b * tk + j) * Dv + e];
        }
        double ds = pg[j] * (dp - dd) * scale;
        for (int64_t d = 0; d < D; ++d) {
          r.dq[(b * tq + i) * D + d] += ds * k[(b * tk + j) * D + d];
          r.dk[(b * tk + j) * D + d] += ds * q[(b * tq + i) * D + d];
        }
      }
    }
  return r;
}

void expectNear(const char *what, const std::vector<double> &got,
                const std::vector<double> &want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    bool ok = std::isnan(want[i])   ? std::isnan(got[i])
              : std::isinf(want[i]) ? got[i] == want[i]
                                    : std::fabs(got[i] - want[i]) <=
                                          atol + rtol * std::fabs(want[i]);
    if (!ok)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i]
                    << ", reference " << want[i] << " (" << ++bad << ")";
  }
}

std::vector<LoopCase> loopCases() {
  std::vector<LoopCase> cs;
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    std::string n = dtypeName(t);
    cs.push_back({"plain_" + n, t, {5}, 6, 9, 8, 4, {}, false});
    cs.push_back({"causal_" + n, t, {2, 3}, 7, 7, 5, 6, {}, true});
    cs.push_back({"mask2d_" + n, t, {5}, 6, 9, 8, 4, {6, 9}, false});
  }
  DType f = DType::F32;
  cs.push_back(
      {"mask_shared_causal", f, {2, 3}, 6, 9, 4, 4, {1, 1, 6, 9}, true});
  cs.push_back({"mask_per_entry", f, {2, 3}, 6, 9, 4, 5, {2, 3, 6, 9}, false});
  cs.push_back(
      {"mask_keys_only", DType::BF16, {5}, 6, 9, 4, 4, {5, 1, 9}, false});
  cs.push_back({"mask_rows_only", f, {5}, 6, 9, 4, 4, {1, 6, 1}, true});
  cs.push_back({"mask_scalar", f, {5}, 6, 9, 4, 4, {1, 1}, false});
  cs.push_back({"tq_above_tk_causal", f, {3}, 9, 4, 3, 5, {}, true});
  cs.push_back({"block_rows", DType::BF16, {3}, 4, 300, 8, 8, {4, 300}, true});
  cs.push_back({"masked_row_nan", f, {3}, 4, 5, 4, 4, {4, 5}, false, true});
  cs.push_back({"no_keys", f, {3}, 4, 0, 4, 4, {}, false});
  cs.push_back({"no_head_dim", f, {3}, 4, 5, 0, 3, {}, false});
  return cs;
}

void PrintTo(const LoopCase &c, std::ostream *os) { *os << c.name; }

class CudaAttentionLoop : public ::testing::TestWithParam<LoopCase> {};

} // namespace

// Forward and backward against the double reference and the CPU kernel,
// one entry per chunk and 2 per chunk (5 or 6 entries: an uneven last
// chunk) and unchunked; the three must agree bit for bit.
TEST_P(CudaAttentionLoop, MatchesReferenceInEveryChunking) {
  const LoopCase &c = GetParam();
  std::unique_ptr<LoopProgram> lp = build(c);
  int64_t chunks = 0;
  auto whole = runLoops(lp->p, 0, &chunks);
  EXPECT_EQ(chunks, 1);
  for (int64_t cap : {1, 2}) {
    auto chunked = runLoops(lp->p, cap, &chunks);
    EXPECT_TRUE(chunks > 1 || c.tk == 0) << "no scores, no chunks";
    for (int32_t id : {lp->out, lp->lse, lp->dq, lp->dk, lp->dv})
      EXPECT_EQ(chunked[id], whole[id])
          << lp->p.info(id).name << " differs with chunks of " << cap;
  }
  Reference ref = reference(c, *lp, whole);
  bool f32 = c.t == DType::F32;
  // About 5x the largest error seen (f32 sums in another order; 16-bit
  // roundings of P, dS and the outputs).
  double tol = f32 ? 1e-6 : c.t == DType::F16 ? 2e-3 : 1e-2;
  auto got = [&](int32_t id) { return asDoubles(lp->p.info(id), whole[id]); };
  expectNear("out", got(lp->out), ref.out, tol, tol);
  expectNear("lse", got(lp->lse), ref.lse, 1e-6, 1e-6);
  expectNear("dq", got(lp->dq), ref.dq, tol, tol);
  expectNear("dk", got(lp->dk), ref.dk, tol, tol);
  expectNear("dv", got(lp->dv), ref.dv, tol, tol);
  // And the CPU kernel (16-bit dS: within about one rounding, see
  // CudaAttention.h).
  auto cpu = lp->p.runCpu();
  for (int32_t id : {lp->out, lp->lse, lp->dq, lp->dk, lp->dv})
    expectClose(lp->p, cpu, whole, id, f32 ? 2e-5 : rtolFor(c.t),
                f32 ? 1e-5 : atolFor(c.t));
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaAttentionLoop,
                         ::testing::ValuesIn(loopCases()),
                         [](const ::testing::TestParamInfo<LoopCase> &i) {
                           return i.param.name;
                         });
