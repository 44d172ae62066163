//===- RandomKernelTest.cpp - The random kernel's statistics --------------===//
//
// tcc.random's kernel draws from dropout's counter-based stream: these tests
// check the distributions (mean and variance of 1e6 draws against their
// standard errors, a chi-square test of uniformity, normal tail masses),
// independence across steps and data-parallel ranks (correlation near 0),
// rank r's numbering from r * n, and that CPU sessions, eager and compiled,
// draw exactly the kernel's values (a recomputed op reads the same step and
// draws the same).
//
//===----------------------------------------------------------------------===//
#include "OneProgram.h"

#include <cmath>
#include <cstring>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// random(step) of n f32 values: iattrs {seed, normal}, fattrs {a, b}.
struct RandomProgram {
  OneProgram p;
  int32_t y;
  RandomProgram(int64_t n, int64_t step, int64_t seed, bool normal, double a,
                double b) {
    int32_t s = p.i64({}, {step});
    y = p.out(DType::F32, {n});
    p.instr("random", {s}, {y}, {seed, normal ? 1 : 0}, {a, b});
  }
  std::vector<float> values(const std::vector<std::vector<uint8_t>> &store,
                            int64_t n) const {
    std::vector<float> v(static_cast<size_t>(n));
    std::memcpy(v.data(), store[y].data(), v.size() * sizeof(float));
    return v;
  }
  std::vector<float> runAs(int64_t n, int64_t rank = 0) const {
    std::vector<std::vector<uint8_t>> store = p.initial();
    std::vector<void *> buffers;
    for (auto &s : store)
      buffers.push_back(s.data());
    const Artifact &a = p.artifact();
    runKernel(a.programs[0].instrs[0], a.tensors, buffers, rank);
    return values(store, n);
  }
};

struct Moments {
  double mean = 0, var = 0;
};

Moments moments(const std::vector<float> &v) {
  Moments m;
  for (float x : v)
    m.mean += x;
  m.mean /= double(v.size());
  for (float x : v)
    m.var += (x - m.mean) * (x - m.mean);
  m.var /= double(v.size() - 1);
  return m;
}

double correlation(const std::vector<float> &a, const std::vector<float> &b) {
  Moments ma = moments(a), mb = moments(b);
  double c = 0;
  for (size_t i = 0; i < a.size(); ++i)
    c += (a[i] - ma.mean) * (b[i] - mb.mean);
  return c / double(a.size() - 1) / std::sqrt(ma.var * mb.var);
}

constexpr int64_t kN = 1000000;

} // namespace

// Normal(2, 3): mean within 5 standard errors (3 / sqrt(n) = 0.003), the
// variance within 5 of its standard errors (9 * sqrt(2 / n) = 0.0127), and
// the tail masses of a standard normal (P(|z| > 1) = 0.3173, > 2 = 0.0455,
// > 3 = 0.0027) to binomial precision.
TEST(RandomKernel, NormalMomentsAndTails) {
  std::vector<float> v = RandomProgram(kN, 4, 11, true, 2.0, 3.0).runAs(kN);
  Moments m = moments(v);
  EXPECT_NEAR(m.mean, 2.0, 5 * 3.0 / std::sqrt(double(kN)));
  EXPECT_NEAR(m.var, 9.0, 5 * 9.0 * std::sqrt(2.0 / double(kN)));
  int64_t over[3] = {0, 0, 0};
  for (float x : v) {
    double z = std::fabs((x - 2.0) / 3.0);
    for (int k = 0; k < 3; ++k)
      over[k] += z > k + 1;
    ASSERT_TRUE(std::isfinite(x));
  }
  const double tail[3] = {0.31731, 0.04550, 0.0026998};
  for (int k = 0; k < 3; ++k) {
    double p = tail[k], se = std::sqrt(p * (1 - p) / double(kN));
    EXPECT_NEAR(double(over[k]) / kN, p, 5 * se) << "|z| > " << k + 1;
  }
}

// Uniform [-1, 3): range, mean 1 (se 4 / sqrt(12 n)), variance 16 / 12, and
// a chi-square test over 100 equal bins: 99 degrees of freedom, whose
// 99.99th percentile is about 156.
TEST(RandomKernel, UniformMomentsAndChiSquare) {
  std::vector<float> v = RandomProgram(kN, 7, -3, false, -1.0, 3.0).runAs(kN);
  Moments m = moments(v);
  EXPECT_NEAR(m.mean, 1.0, 5 * 4.0 / std::sqrt(12.0 * kN));
  // Var of the sample variance of U(0, w): w^4 / 180 / n.
  EXPECT_NEAR(m.var, 16.0 / 12.0, 5 * 16.0 / std::sqrt(180.0 * kN));
  std::vector<int64_t> bins(100, 0);
  for (float x : v) {
    ASSERT_GE(x, -1.0f);
    ASSERT_LT(x, 3.0f);
    ++bins[std::min<size_t>(99, size_t((x + 1.0) / 4.0 * 100))];
  }
  double chi2 = 0, expect = kN / 100.0;
  for (int64_t c : bins)
    chi2 += (c - expect) * (c - expect) / expect;
  EXPECT_LT(chi2, 156.0);
  EXPECT_GT(chi2, 50.0) << "too uniform for random draws";
}

// Consecutive steps, ranks and seeds give uncorrelated draws (|r| within 5
// standard errors, 1 / sqrt(n), of 0), and a step redraws the same values.
TEST(RandomKernel, StepsRanksAndSeedsAreIndependent) {
  const int64_t n = 200000;
  std::vector<float> base = RandomProgram(n, 5, 1, true, 0, 1).runAs(n);
  EXPECT_EQ(base, RandomProgram(n, 5, 1, true, 0, 1).runAs(n));
  const double bound = 5 / std::sqrt(double(n));
  EXPECT_NEAR(correlation(base, RandomProgram(n, 6, 1, true, 0, 1).runAs(n)), 0,
              bound);
  EXPECT_NEAR(correlation(base, RandomProgram(n, 5, 2, true, 0, 1).runAs(n)), 0,
              bound);
  EXPECT_NEAR(correlation(base, RandomProgram(n, 5, 1, true, 0, 1).runAs(n, 1)),
              0, bound);
  // Uniform and normal of one stream share bits but are different values.
  std::vector<float> u = RandomProgram(n, 5, 1, false, 0, 1).runAs(n);
  EXPECT_NE(u, base);
}

// Rank r draws elements [r * n, (r + 1) * n) of the one-process tensor of
// N * n elements, as dropout does.
TEST(RandomKernel, RankRNumbersFromRTimesN) {
  const int64_t N = 3, n = 101;
  std::vector<float> whole =
      RandomProgram(N * n, 2, 9, true, 0, 1).runAs(N * n);
  for (int64_t r = 0; r < N; ++r) {
    std::vector<float> got = RandomProgram(n, 2, 9, true, 0, 1).runAs(n, r);
    EXPECT_EQ(got, std::vector<float>(whole.begin() + r * n,
                                      whole.begin() + (r + 1) * n))
        << "rank " << r;
  }
}

// Sessions, compiled and eager, at each rank, draw the kernel's values bit
// for bit; running the program twice at one step draws the same again.
TEST(RandomKernel, SessionsDrawTheKernelsValues) {
  const int64_t n = 4096;
  for (bool normal : {false, true}) {
    RandomProgram rp(n, 13, 21, normal, -0.5, 2.0);
    for (int64_t rank : {0, 2}) {
      std::vector<float> want = rp.runAs(n, rank);
      for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
        SessionOptions o;
        o.rank = rank;
        EXPECT_EQ(rp.values(rp.p.runOn("cpu", mode, o, 2), n), want)
            << (normal ? "normal" : "uniform") << " rank " << rank
            << (mode == ExecMode::Eager ? " eager" : " compiled");
      }
    }
  }
}

TEST(RandomKernel, CheckRefusesBadOperands) {
  OneProgram p;
  int32_t s = p.i64({}, {0});
  int32_t y = p.out(DType::F32, {4});
  p.instr("random", {s}, {y}, {1, 0}, {2.0, 1.0}); // low > high
  EXPECT_THROW(p.runCpu(), Error);
  OneProgram q;
  int32_t f = q.out(DType::F32, {});
  int32_t z = q.out(DType::F32, {4});
  q.instr("random", {f}, {z}, {1, 1}, {0.0, 1.0}); // not the step counter
  EXPECT_THROW(q.runCpu(), Error);
}
