//===- KernelsLogicTest.cpp - compare, logic, extrema on the CPU ----------===//
//
// Known values of the CPU kernels of KernelsLogic.cpp, which the
// conformance cases (KernelCasesLogic.h) then hold every backend to: the
// predicates with NaN, bools as any non-zero word, NaN propagation and
// ties of the extrema, mod's sign rules and zero divisors, and which index
// arg_max takes.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

template <class F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

std::vector<int64_t> bools(std::initializer_list<int64_t> v) { return v; }

} // namespace

TEST(KernelsLogic, CompareEveryPredicate) {
  KernelHarness h;
  int32_t A = h.f32({4}, {1, 2, 3, NAN}), B = h.f32({}, {2});
  const std::vector<std::vector<int64_t>> want = {
      {0, 1, 0, 0}, {1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 0}, {0, 1, 1, 0}};
  for (int64_t p = 0; p < 5; ++p) {
    int32_t Y = h.out({4}, DType::I64);
    h.run("compare", {A, B}, {Y}, {p});
    EXPECT_EQ(h.getI64(Y), want[p]) << p;
  }
  int32_t I = h.i64({2, 1}, {3, -1}), J = h.i64({3}, {-1, 3, 4});
  int32_t Y = h.out({2, 3}, DType::I64);
  h.run("compare", {I, J}, {Y}, {1}); // lt
  EXPECT_EQ(h.getI64(Y), bools({0, 0, 1, 0, 1, 1}));
  EXPECT_NE(errorOf([&] {
              h.check("compare", {A, B}, {h.out({4}, DType::I64)}, {5});
            }).find("predicate 5 is not one of 0..4"),
            std::string::npos);
}

TEST(KernelsLogic, LogicReadsNonZeroAsTrue) {
  KernelHarness h;
  int32_t A = h.i64({4}, {0, 0, 1, 7}), B = h.i64({4}, {0, 1, 0, 1});
  const std::vector<std::vector<int64_t>> want = {
      {0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
  for (int64_t k = 0; k < 3; ++k) {
    int32_t Y = h.out({4}, DType::I64);
    h.run("logic", {A, B}, {Y}, {k});
    EXPECT_EQ(h.getI64(Y), want[k]) << k;
  }
  int32_t F = h.f32({4}, {0, 0, 1, 1});
  EXPECT_NE(errorOf([&] {
              h.check("logic", {A, F}, {h.out({4}, DType::I64)}, {0});
            }).find("is f32, expected i64"),
            std::string::npos);
}

TEST(KernelsLogic, ExtremaPropagateNaN) {
  KernelHarness h;
  int32_t A = h.f32({2, 3}, {1, NAN, 5, -2, 0, 3});
  int32_t B = h.f32({3}, {1, 4, NAN});
  int32_t Mx = h.out({2, 3}), Mn = h.out({2, 3});
  h.run("maximum", {A, B}, {Mx});
  h.run("minimum", {A, B}, {Mn});
  std::vector<float> mx = h.get(Mx), mn = h.get(Mn);
  EXPECT_EQ(mx[0], 1.0f);
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_TRUE(std::isnan(mx[2]));
  EXPECT_EQ(mx[3], 1.0f);
  EXPECT_EQ(mx[4], 4.0f);
  EXPECT_EQ(mn[3], -2.0f);
  EXPECT_EQ(mn[4], 0.0f);
  EXPECT_TRUE(std::isnan(mn[5]));
  int32_t I = h.i64({2}, {3, -9}), J = h.i64({2}, {-3, 4});
  int32_t Y = h.out({2}, DType::I64);
  h.run("maximum", {I, J}, {Y});
  EXPECT_EQ(h.getI64(Y), bools({3, 4}));
}

// numpy.fmod and numpy.mod's answers (torch.fmod and torch.remainder agree),
// with the signed zeros; an integer remainder by 0 is 0, never a trap.
TEST(KernelsLogic, ModSignRulesAndZeroDivisors) {
  KernelHarness h;
  int32_t A = h.f32({6}, {7, -7, 7, -7, -4, 1});
  int32_t B = h.f32({6}, {3, 3, -3, -3, 2, -INFINITY});
  int32_t F = h.out({6}), M = h.out({6});
  h.run("mod", {A, B}, {F}, {1});
  h.run("mod", {A, B}, {M}, {0});
  std::vector<float> f = h.get(F), m = h.get(M);
  EXPECT_EQ(f, std::vector<float>({1, -1, 1, -1, -0.0f, 1}));
  EXPECT_TRUE(std::signbit(f[4]));
  EXPECT_EQ(m, std::vector<float>({1, 2, -2, -1, 0, -INFINITY}));
  EXPECT_FALSE(std::signbit(m[4]));
  int32_t Z = h.f32({}, {0}), NZ = h.out({6});
  h.run("mod", {A, Z}, {NZ}, {1});
  for (float v : h.get(NZ))
    EXPECT_TRUE(std::isnan(v));

  int64_t lo = std::numeric_limits<int64_t>::min();
  int32_t I = h.i64({6}, {7, -7, 7, -7, 5, lo});
  int32_t J = h.i64({6}, {3, 3, -3, -3, 0, -1});
  int32_t IF = h.out({6}, DType::I64), IM = h.out({6}, DType::I64);
  h.run("mod", {I, J}, {IF}, {1});
  h.run("mod", {I, J}, {IM}, {0});
  EXPECT_EQ(h.getI64(IF), bools({1, -1, 1, -1, 0, 0}));
  EXPECT_EQ(h.getI64(IM), bools({1, 2, -2, -1, 0, 0}));
  EXPECT_NE(errorOf([&] {
              h.check("mod", {A, I}, {F}, {1});
            }).find("expected f32"),
            std::string::npos);
}

TEST(KernelsLogic, ReduceMaxMin) {
  KernelHarness h;
  int32_t X = h.f32({2, 3}, {1, 5, -2, 0, NAN, 3});
  int32_t R = h.out({3}), C = h.out({2}), All = h.out({});
  h.run("reduce_max", {X}, {R}, {0});
  h.run("reduce_min", {X}, {C}, {1});
  std::vector<float> r = h.get(R), c = h.get(C);
  EXPECT_EQ(r[0], 1.0f);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_EQ(r[2], 3.0f);
  EXPECT_EQ(c[0], -2.0f);
  EXPECT_TRUE(std::isnan(c[1]));
  int32_t Y = h.f32({2, 2}, {4, -1, 7, 2});
  h.run("reduce_max", {Y}, {All}, {0, 1});
  EXPECT_EQ(h.get(All)[0], 7.0f);
}

TEST(KernelsLogic, ArgMaxTiesAndNaN) {
  KernelHarness h;
  int32_t X = h.f32({2, 4}, {1, 3, 3, -1, 0, NAN, 2, NAN});
  auto run = [&](const char *k, int64_t axis, int64_t last,
                 std::vector<int64_t> shape) {
    int32_t Y = h.out(shape, DType::I64);
    h.run(k, {X}, {Y}, {axis, last});
    return h.getI64(Y);
  };
  EXPECT_EQ(run("arg_max", 1, 0, {2}), bools({1, 1}));
  EXPECT_EQ(run("arg_max", 1, 1, {2}), bools({2, 3}));
  EXPECT_EQ(run("arg_min", 1, 0, {2}), bools({3, 1}));
  EXPECT_EQ(run("arg_max", 0, 0, {4}), bools({0, 1, 0, 1}));
  EXPECT_EQ(run("arg_min", 0, 1, {4}), bools({1, 1, 1, 1}));
  EXPECT_NE(errorOf([&] {
              h.check("arg_max", {X}, {h.out({2}, DType::I64)}, {2, 0});
            }).find("axis 2 is out of range for rank 2"),
            std::string::npos);
}

// reduce_prod over axes {0, 2} of [2, 2, 3]; its gradient is the product of
// the other elements of each group, also where x has one zero (the zero's
// gradient is the others' product) or two (all zero), not prod / x.
TEST(KernelsReduce, ProdAndItsGradientWithZeros) {
  KernelHarness h;
  int32_t X = h.f32({2, 2, 3}, {1, 2, 3, 0, 5, 6, 4, 0.5f, 2, 0, 1, 0});
  int32_t Y = h.out({2});
  h.run("reduce_prod", {X}, {Y}, {0, 2});
  EXPECT_EQ(h.get(Y), (std::vector<float>{24, 0}));
  int32_t DY = h.f32({1, 2, 1}, {2, 3}), DX = h.out({2, 2, 3});
  h.run("reduce_prod_grad", {DY, X}, {DX}, {0, 2});
  EXPECT_EQ(h.get(DX),
            (std::vector<float>{48, 24, 16, 0, 0, 0, 12, 96, 24, 0, 0, 0}));
  int32_t Z = h.f32({1, 3}, {2, 0, 3}), DZ = h.out({1, 3});
  h.run("reduce_prod_grad", {h.f32({}, {1}), Z}, {DZ}, {1});
  EXPECT_EQ(h.get(DZ), (std::vector<float>{0, 6, 0}));
}

TEST(KernelsReduce, CumSumEveryMode) {
  KernelHarness h;
  int32_t X = h.f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> want =
      {{{1, 0, 0}, {1, 3, 6, 4, 9, 15}},  {{1, 1, 0}, {0, 1, 3, 0, 4, 9}},
       {{1, 0, 1}, {6, 5, 3, 15, 11, 6}}, {{1, 1, 1}, {5, 3, 0, 11, 6, 0}},
       {{0, 0, 0}, {1, 2, 3, 5, 7, 9}},   {{0, 1, 1}, {4, 5, 6, 0, 0, 0}}};
  for (const auto &[attrs, y] : want) {
    int32_t Y = h.out({2, 3});
    h.run("cumsum", {X}, {Y}, attrs);
    EXPECT_EQ(h.get(Y), y) << attrs[0] << attrs[1] << attrs[2];
  }
}
