//===- KernelsGemmEpilogueTest.cpp - matmul_epilogue vs a naive reference -===//
//
// Every epilogue of GemmEpilogue.h in f32, bf16 and f16, against a
// reference in double computed from the (rounded) operands; the bias
// gradients bit for bit against reduce_sum; the row blocks and the thread
// pool on a problem large enough to use them; and the checks on malformed
// instrs (artifacts are untrusted).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/cpu/Kernels.h"
#include "tests/unit/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace tcc::rt;

namespace {
using Tensors = test::DTypeTensors;

Instr instr(std::vector<int32_t> in, std::vector<int32_t> out,
            std::vector<int64_t> iattrs,
            const std::string &kernel = "matmul_epilogue") {
  return Instr{kernel, std::move(in), std::move(out), std::move(iattrs), {}};
}

double geluTanh(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double geluTanhGrad(double dy, double x) {
  double t = std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x));
  double dt = (1 - t * t) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
  return dy * (0.5 * (1 + t) + 0.5 * x * dt);
}

/// One problem: rows x K times K x N (or the 2-D weight-gradient form).
struct Problem {
  std::vector<int64_t> aShape, bShape;
  bool ta, tb;
};

/// Runs `e` on `p` in dtype `t` and compares with the double reference;
/// with `f32Out`, D is f32 (16-bit operands of a bias-gradient form) and
/// is not rounded.
void checkEpilogue(const GemmEpilogueInfo &e, const Problem &p, DType t,
                   unsigned seed, bool f32Out = false) {
  SCOPED_TRACE(std::string(e.name) + " " + dtypeName(t) +
               (f32Out ? " -> f32" : "") + " A " + formatShape(p.aShape) +
               (p.ta ? "^T" : "") + " B " + formatShape(p.bShape) +
               (p.tb ? "^T" : ""));
  int64_t na = 1;
  for (int64_t d : p.aShape)
    na *= d;
  int64_t k = p.ta ? p.aShape[0] : p.aShape.back();
  int64_t m = 1; // rows: A's dims but K
  for (size_t i = 0; i < p.aShape.size(); ++i)
    if (i != (p.ta ? 0 : p.aShape.size() - 1))
      m *= p.aShape[i];
  int64_t n = p.tb ? p.bShape[0] : p.bShape[1];
  std::vector<float> a = test::roundedTo(test::normalValues(na, seed), t);
  std::vector<float> b =
      test::roundedTo(test::normalValues(k * n, seed + 1), t);
  std::vector<float> x =
      test::roundedTo(test::normalValues(m * n, seed + 2), t);
  Tensors ts;
  int32_t A = ts.add(t, p.aShape, a), B = ts.add(t, p.bShape, b);
  std::vector<int64_t> dShape =
      e.rowsFlatten()
          ? std::vector<int64_t>(p.aShape.begin(), p.aShape.end() - 1)
          : std::vector<int64_t>{m};
  dShape.push_back(n);
  std::vector<int32_t> in{A, B}, out{ts.add(f32Out ? DType::F32 : t, dShape)};
  if (e.bias)
    in.push_back(ts.add(t, {n}, std::vector<float>(x.begin(), x.begin() + n)));
  if (e.act == GemmAct::DgeluTanh)
    in.push_back(ts.add(t, dShape, x));
  // A bias gradient in f32 (as the optimizer reads it) for 16-bit GEMMs.
  if (e.preactOut)
    out.push_back(ts.add(t, dShape));
  else if (e.bgrad != GemmBiasGrad::None)
    out.push_back(ts.add(DType::F32, {e.bgrad == GemmBiasGrad::Lhs ? m : n}));
  ts.run(instr(in, out, {p.ta, p.tb, e.code}));

  auto aAt = [&](int64_t i, int64_t kk) {
    return p.ta ? a[kk * m + i] : a[i * k + kk];
  };
  auto bAt = [&](int64_t kk, int64_t j) {
    return p.tb ? b[j * k + kk] : b[kk * n + j];
  };
  std::vector<double> d(m * n), pre(m * n),
      sums(e.bgrad == GemmBiasGrad::Lhs ? m : n);
  std::vector<double> mag(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, g = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        double pr = double(aAt(i, kk)) * bAt(kk, j);
        s += pr;
        g += std::fabs(pr);
      }
      if (e.bias) {
        s += x[j];
        g += std::fabs(x[j]);
      }
      pre[i * n + j] = s;
      mag[i * n + j] = g;
      double v = s;
      if (e.act == GemmAct::Relu)
        v = s > 0 ? s : 0;
      else if (e.act == GemmAct::GeluTanh)
        v = geluTanh(s);
      else if (e.act == GemmAct::DgeluTanh)
        v = geluTanhGrad(s, x[i * n + j]);
      d[i * n + j] = v;
      if (e.bgrad == GemmBiasGrad::Out)
        sums[j] += v;
    }
  if (e.bgrad == GemmBiasGrad::Lhs)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk)
        sums[i] += aAt(i, kk);
  if (e.bgrad == GemmBiasGrad::Rhs)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        sums[j] += bAt(kk, j);

  // f32 accumulation error, plus one rounding of the output; gelu's slope
  // is below 1.2, dgelu's below ~1.2 * |preact| + 1.
  double eps = t == DType::BF16 ? 1.0 / 256 : t == DType::F16 ? 1.0 / 2048 : 0;
  double epsD = f32Out ? 0 : eps;
  std::vector<float> got = ts.get(out[0]);
  for (int64_t i = 0; i < m * n; ++i) {
    double slope =
        e.act == GemmAct::DgeluTanh ? 1.5 * (1 + std::fabs(x[i]) * 2) : 1.2;
    double tol = 1e-5 * mag[i] * slope + epsD * std::fabs(d[i]) + 1e-6;
    ASSERT_NEAR(got[i], d[i], tol) << "D at " << i;
  }
  if (e.preactOut) {
    std::vector<float> gp = ts.get(out[1]);
    for (int64_t i = 0; i < m * n; ++i)
      ASSERT_NEAR(gp[i], pre[i], 1e-5 * mag[i] + eps * std::fabs(pre[i]) + 1e-6)
          << "pre-activation at " << i;
  }
  if (e.bgrad != GemmBiasGrad::None) {
    std::vector<float> gs = ts.get(out[1]);
    for (size_t i = 0; i < sums.size(); ++i) {
      double scale = e.bgrad == GemmBiasGrad::Out ? 8.0 * m : 1.0 * k;
      ASSERT_NEAR(gs[i], sums[i], 1e-5 * scale * (1 + 4 * eps * 256))
          << "bias gradient at " << i;
    }
  }
}

class GemmEpilogueDtypes : public ::testing::TestWithParam<DType> {};
} // namespace

TEST_P(GemmEpilogueDtypes, EveryEpilogueMatchesTheReference) {
  DType t = GetParam();
  unsigned seed = 1;
  for (const GemmEpilogueInfo &e : kGemmEpilogues) {
    std::vector<Problem> problems;
    if (e.bgrad == GemmBiasGrad::Lhs)
      problems = {{{37, 12}, {37, 20}, true, false},
                  {{37, 12}, {20, 37}, true, true}};
    else if (e.bgrad == GemmBiasGrad::Rhs)
      problems = {{{37, 12}, {37, 20}, true, false},
                  {{12, 37}, {37, 20}, false, false}};
    else // rows flatten: a batched left operand, both right layouts
      problems = {{{2, 9, 13}, {13, 21}, false, false},
                  {{18, 13}, {21, 13}, false, true},
                  {{3, 5, 0}, {0, 7}, false, false}}; // K = 0
    for (const Problem &p : problems)
      checkEpilogue(e, p, t, seed += 10);
  }
}

INSTANTIATE_TEST_SUITE_P(, GemmEpilogueDtypes,
                         ::testing::Values(DType::F32, DType::BF16, DType::F16),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

// Several row blocks (N = 1024 gives blocks of 128 rows) and enough work to
// split each block's epilogue across the thread pool.
TEST(GemmEpilogueKernel, RowBlocksAndThreads) {
  for (const char *name : {"bias_gelu_tanh_aux", "dgelu_tanh_bgrad"})
    checkEpilogue(*gemmEpilogueByName(name),
                  {{3, 100, 8}, {8, 1024}, false, false}, DType::F32, 7);
}

// A fused bias gradient is the unfused reduce_sum, bit for bit (the same
// order: kernels::ColumnSums), so fusing it changes no weight update on
// the CPU.
TEST(GemmEpilogueKernel, BiasGradientIsReduceSumBitForBit) {
  Tensors ts;
  std::vector<float> x = test::normalValues(300 * 40, 3),
                     w = test::normalValues(300 * 24, 4);
  int32_t X = ts.add(DType::F32, {300, 40}, x),
          DY = ts.add(DType::F32, {300, 24}, w);
  int32_t DW = ts.add(DType::F32, {40, 24}), DB = ts.add(DType::F32, {24});
  int32_t DB2 = ts.add(DType::F32, {24});
  ts.run(
      instr({X, DY}, {DW, DB}, {1, 0, gemmEpilogueByName("bgrad_rhs")->code}));
  ts.run(instr({DY}, {DB2}, {0}, "reduce_sum"));
  std::vector<float> fused = ts.get(DB), plain = ts.get(DB2);
  for (size_t i = 0; i < fused.size(); ++i)
    ASSERT_EQ(floatBits(fused[i]), floatBits(plain[i])) << i;
}

// Weight gradients in f32 from 16-bit operands (what tcc-mixed-precision
// makes for the optimizer): against the double reference with no output
// rounding, and bit for bit the f32 kernel on the widened operands (the CPU
// computes exactly that), so D equals the plain matmul's f32 output.
TEST(GemmEpilogueKernel, WeightGradientsInF32From16BitOperands) {
  const Problem lhsP{{37, 12}, {37, 20}, true, false};
  const Problem rhsP{{37, 12}, {37, 20}, true, false};
  unsigned seed = 500;
  for (DType t : {DType::BF16, DType::F16}) {
    checkEpilogue(*gemmEpilogueByName("bgrad_lhs"), lhsP, t, seed += 10, true);
    checkEpilogue(*gemmEpilogueByName("bgrad_rhs"), rhsP, t, seed += 10, true);
    for (const char *name : {"bgrad_lhs", "bgrad_rhs"}) {
      SCOPED_TRACE(std::string(name) + " " + dtypeName(t));
      const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
      Tensors ts;
      int32_t A = ts.add(t, {37, 12}, test::normalValues(37 * 12, seed += 10));
      int32_t B = ts.add(t, {37, 20}, test::normalValues(37 * 20, seed += 10));
      int64_t len = e.bgrad == GemmBiasGrad::Lhs ? 12 : 20;
      int32_t D = ts.add(DType::F32, {12, 20}), S = ts.add(DType::F32, {len});
      ts.run(instr({A, B}, {D, S}, {1, 0, e.code}));
      int32_t A32 = ts.as(DType::F32, A), B32 = ts.as(DType::F32, B);
      int32_t D32 = ts.add(DType::F32, {12, 20}),
              S32 = ts.add(DType::F32, {len});
      ts.run(instr({A32, B32}, {D32, S32}, {1, 0, e.code}));
      int32_t P = ts.add(DType::F32, {12, 20});
      ts.run(instr({A, B}, {P}, {1, 0}, "matmul"));
      std::vector<float> d = ts.get(D), d32 = ts.get(D32), pl = ts.get(P);
      std::vector<float> sg = ts.get(S), s32 = ts.get(S32);
      for (size_t i = 0; i < d.size(); ++i) {
        ASSERT_EQ(floatBits(d[i]), floatBits(d32[i])) << "D at " << i;
        ASSERT_EQ(floatBits(d[i]), floatBits(pl[i])) << "matmul at " << i;
      }
      // Not the 16-bit product widened: some element keeps more bits.
      bool wider = false;
      for (float v : d)
        wider = wider || test::roundedTo({v}, t)[0] != v;
      EXPECT_TRUE(wider);
      for (size_t i = 0; i < sg.size(); ++i)
        ASSERT_EQ(floatBits(sg[i]), floatBits(s32[i])) << "sum at " << i;
    }
  }
}

static std::string checkError(Tensors &ts, const Instr &in) {
  try {
    checkInstr(in, ts.infos);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(GemmEpilogueKernel, MalformedInstrsAreRejected) {
  Tensors ts;
  int32_t A = ts.add(DType::F32, {4, 3}), B = ts.add(DType::F32, {3, 5});
  int32_t D = ts.add(DType::F32, {4, 5}), bias = ts.add(DType::F32, {5});
  int32_t bad = ts.add(DType::F32, {4});
  int32_t B3 = ts.add(DType::F32, {2, 3, 5}),
          D3 = ts.add(DType::F32, {2, 4, 5});
  int32_t I = ts.add(DType::I64, {5});
  int64_t biasCode = gemmEpilogueByName("bias")->code;
  EXPECT_EQ(checkError(ts, instr({A, B, bias}, {D}, {0, 0, biasCode})), "");
  EXPECT_NE(checkError(ts, instr({A, B, bias}, {D}, {0, 0, 99}))
                .find("unknown GEMM epilogue code 99"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B}, {D}, {0, 0, biasCode}))
                .find("expects 3 inputs"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B, bad}, {D}, {0, 0, biasCode}))
                .find("expected [5]"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B, I}, {D}, {0, 0, biasCode}))
                .find("must be f32"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B3, bias}, {D3}, {0, 0, biasCode}))
                .find("needs a 2-D right operand"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B, bias}, {D}, {1, 0, biasCode}))
                .find("non-transposed left operand"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B, bias}, {D}, {0, 2, biasCode}))
                .find("attribute 'transB' must be 0 or 1, got 2"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({A, B, bias}, {bias}, {0, 0, biasCode}))
                .find("do not agree"),
            std::string::npos);
  // bgrad_lhs sums the transposed left operand only.
  int32_t At = ts.add(DType::F32, {3, 4}), M = ts.add(DType::F32, {4});
  int64_t lhs = gemmEpilogueByName("bgrad_lhs")->code;
  EXPECT_EQ(checkError(ts, instr({At, B}, {D, M}, {1, 0, lhs})), "");
  EXPECT_NE(checkError(ts, instr({A, B}, {D, M}, {0, 0, lhs}))
                .find("transpose_lhs is 0"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({At, B}, {D, bias}, {1, 0, lhs}))
                .find("expected [4]"),
            std::string::npos);
  int64_t rhs = gemmEpilogueByName("bgrad_rhs")->code;
  int32_t Bt = ts.add(DType::F32, {5, 3});
  EXPECT_NE(checkError(ts, instr({A, Bt}, {D, bias}, {0, 1, rhs}))
                .find("transpose_rhs is 1"),
            std::string::npos);
  // dgelu needs its pre-activation in D's shape.
  int64_t dgelu = gemmEpilogueByName("dgelu_tanh")->code;
  EXPECT_NE(checkError(ts, instr({A, B, bias}, {D}, {0, 0, dgelu}))
                .find("expected [4,5]"),
            std::string::npos);
}

// GEMMs with a 16-bit operand: the widened f32 check cannot see a mix, so
// the element types are checked first (artifacts are untrusted). Only a
// plain GEMM (matmul, bgrad_lhs, bgrad_rhs) of 16-bit operands may write f32.
TEST(GemmEpilogueKernel, MixedElementTypesAreRejected) {
  Tensors ts;
  int32_t Ab = ts.add(DType::BF16, {4, 3}), Bb = ts.add(DType::BF16, {3, 5});
  int32_t Bh = ts.add(DType::F16, {3, 5});
  int32_t A = ts.add(DType::F32, {4, 3}), B = ts.add(DType::F32, {3, 5});
  int32_t Db = ts.add(DType::BF16, {4, 5}), Dh = ts.add(DType::F16, {4, 5});
  int32_t D = ts.add(DType::F32, {4, 5});
  auto mm = [](std::vector<int32_t> in, std::vector<int32_t> out) {
    return instr(in, out, {0, 0}, "matmul");
  };
  EXPECT_EQ(checkError(ts, mm({Ab, Bb}, {Db})), "");
  EXPECT_EQ(checkError(ts, mm({Ab, Bb}, {D})), "");
  EXPECT_EQ(checkError(ts, mm({A, B}, {D})), "");
  EXPECT_NE(checkError(ts, mm({Ab, Bh}, {D}))
                .find("the GEMM's operands must share one element type; input "
                      "0 't0' is bf16, input 1 't2' f16"),
            std::string::npos)
      << checkError(ts, mm({Ab, Bh}, {D}));
  EXPECT_NE(checkError(ts, mm({Ab, B}, {D})).find("must share one element"),
            std::string::npos);
  EXPECT_NE(checkError(ts, mm({Ab, Bb}, {Dh}))
                .find("is f16; a bf16 GEMM writes bf16 or f32"),
            std::string::npos)
      << checkError(ts, mm({Ab, Bb}, {Dh}));
  EXPECT_NE(checkError(ts, mm({A, B}, {Db})).find("a f32 GEMM writes f32"),
            std::string::npos)
      << checkError(ts, mm({A, B}, {Db}));

  int64_t lhs = gemmEpilogueByName("bgrad_lhs")->code;
  int64_t relu = gemmEpilogueByName("relu")->code;
  int64_t bias = gemmEpilogueByName("bias")->code;
  int32_t At = ts.add(DType::BF16, {3, 4});
  int32_t S = ts.add(DType::F32, {4}), Sb = ts.add(DType::BF16, {4}),
          Sh = ts.add(DType::F16, {4});
  EXPECT_EQ(checkError(ts, instr({At, Bb}, {D, S}, {1, 0, lhs})), "");
  EXPECT_EQ(checkError(ts, instr({At, Bb}, {D, Sb}, {1, 0, lhs})), "");
  EXPECT_NE(checkError(ts, instr({At, Bb}, {D, Sh}, {1, 0, lhs}))
                .find("a bias gradient has the operands' type bf16 or f32"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({At, Bb}, {Dh, S}, {1, 0, lhs}))
                .find("a bf16 GEMM with the bgrad_lhs epilogue writes bf16 "
                      "or f32"),
            std::string::npos);
  EXPECT_NE(checkError(ts, instr({Ab, Bb}, {D}, {0, 0, relu}))
                .find("a bf16 GEMM with the relu epilogue writes bf16"),
            std::string::npos)
      << checkError(ts, instr({Ab, Bb}, {D}, {0, 0, relu}));
  int32_t biasF = ts.add(DType::F32, {5});
  EXPECT_NE(checkError(ts, instr({Ab, Bb, biasF}, {Db}, {0, 0, bias}))
                .find("the bias epilogue reads it in the operands' type bf16"),
            std::string::npos);
}
