//===- KernelsIndexTest.cpp - gather_elements, scatters, gather_nd, top_k -===//
//
// The CPU kernels (the conformance suite's reference) against values worked
// out by hand: repeated indices under every reduction, negative indices,
// batch dims, top_k's tie and NaN rules, and the error of a bad index.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

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
} // namespace

TEST(KernelsIndex, GatherElementsNegativeIndicesAndSmallerShape) {
  KernelHarness h;
  int32_t X = h.f32({2, 3}, {1, 2, 3, 4, 5, 6});
  int32_t I = h.i64({1, 2}, {-1, 0}), Y = h.out({1, 2});
  h.run("gather_elements", {X, I}, {Y}, {0}); // y[0][j] = x[i][j]
  EXPECT_EQ(h.get(Y), (std::vector<float>{4, 2}));
  int32_t J = h.i64({2, 1}, {2, -3}), Z = h.out({2, 1});
  h.run("gather_elements", {X, J}, {Z}, {1});
  EXPECT_EQ(h.get(Z), (std::vector<float>{3, 4}));
}

TEST(KernelsIndex, ScatterElementsReductionsCombineRepeatsInOrder) {
  // Row 0 gets updates 2 then 3 at column 1 (-2 wraps to 1), row 1 gets 5
  // twice at column 0; the data is all ones.
  const std::vector<std::vector<float>> want = {
      {1, 3, 1, 5, 1, 1},  // none: the last write wins
      {1, 6, 1, 11, 1, 1}, // add
      {1, 6, 1, 25, 1, 1}, // mul
      {1, 3, 1, 5, 1, 1},  // max
      {1, 1, 1, 1, 1, 1}}; // min
  for (int64_t r = 0; r < 5; ++r) {
    KernelHarness h;
    int32_t X = h.f32({2, 3}, {1, 1, 1, 1, 1, 1});
    int32_t I = h.i64({2, 2}, {1, -2, 0, 0});
    int32_t U = h.f32({2, 2}, {2, 3, 5, 5}), Y = h.out({2, 3});
    h.run("scatter_elements", {X, I, U}, {Y}, {1, r});
    EXPECT_EQ(h.get(Y), want[r]) << "reduction " << r;
  }
}

TEST(KernelsIndex, GatherNdAndScatterNdWithBatchDims) {
  KernelHarness h;
  int32_t X = h.i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  int32_t I = h.i64({2, 1}, {1, 0}), Y = h.out({2, 2}, DType::I64);
  h.run("gather_nd", {X, I}, {Y}, {1}); // batch b takes row I[b]
  EXPECT_EQ(h.getI64(Y), (std::vector<int64_t>{2, 3, 4, 5}));
  int32_t T = h.i64({2, 3}, {1, 1, -1, 0, 0, 0}), Z = h.out({2}, DType::I64);
  h.run("gather_nd", {X, T}, {Z}, {0});
  EXPECT_EQ(h.getI64(Z), (std::vector<int64_t>{7, 0}));
  int32_t U = h.i64({2}, {10, 20}), S = h.out({2, 2, 2}, DType::I64);
  h.run("scatter_nd", {X, T, U}, {S}, {0, 1}); // add
  EXPECT_EQ(h.getI64(S), (std::vector<int64_t>{20, 1, 2, 3, 4, 5, 6, 17}));
}

TEST(KernelsIndex, TopKTiesByLowerIndexNaNLargest) {
  KernelHarness h;
  int32_t X = h.f32({1, 6}, {1, 3, NAN, 3, -1, 1});
  int32_t Y = h.out({1, 4}, DType::I64), Z = h.out({1, 3}, DType::I64);
  h.run("top_k", {X}, {Y}, {1, 1});
  EXPECT_EQ(h.getI64(Y), (std::vector<int64_t>{2, 1, 3, 0}));
  h.run("top_k", {X}, {Z}, {1, 0});
  EXPECT_EQ(h.getI64(Z), (std::vector<int64_t>{4, 0, 5}));
}

TEST(KernelsIndex, BadIndexIsAnErrorNamingIt) {
  KernelHarness h;
  int32_t X = h.f32({2, 3}, {1, 2, 3, 4, 5, 6});
  int32_t I = h.i64({1, 2}, {0, 3}), U = h.f32({1, 2}, {0, 0});
  int32_t Y = h.out({2, 3});
  EXPECT_EQ(errorOf([&] {
              h.run("scatter_elements", {X, I, U}, {Y}, {1, 0});
            }),
            "scatter_elements: index 3 at position [0,1] of the indices is "
            "outside [-3, 3) (dimension 1 of the data has size 3)");
  int32_t T = h.i64({1, 2}, {-3, 0}), Z = h.out({1});
  EXPECT_NE(errorOf([&] {
              h.run("gather_nd", {X, T}, {Z}, {0});
            }).find("gather_nd: index -3 at position [0,0]"),
            std::string::npos);
}
