//===- GemmAlgoPickTest.cpp - Which timed GEMM algorithm is kept ----------===//
//
// The rule behind TCC_CUDA_GEMM_AUTOTUNE (GemmAlgoPick.h): medians of the
// rounds, failed runs left out, and the heuristic's first answer kept
// unless another beats it by more than the margin.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/GemmAlgoPick.h"
#include "runtime/core/Artifact.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tcc::rt;
using namespace tcc::rt::cuda;

namespace {

const float kNaN = std::nanf("");

TEST(GemmAlgoPick, MedianLeavesOutFailedRuns) {
  EXPECT_DOUBLE_EQ(*medianRun({3.0f, 1.0f, 2.0f}), 2.0);
  EXPECT_DOUBLE_EQ(*medianRun({4.0f, 1.0f, 3.0f, 2.0f}), 2.5);
  EXPECT_DOUBLE_EQ(*medianRun({kNaN, 5.0f, -1.0f, 1.0f}), 3.0);
  EXPECT_FALSE(medianRun({}).has_value());
  EXPECT_FALSE(medianRun({kNaN, -1.0f}).has_value());
}

TEST(GemmAlgoPick, KeepsTheHeuristicsAnswerWithinTheMargin) {
  // 2% faster is inside a 3% margin; 5% is not.
  EXPECT_EQ(pickTimedAlgo({{1.00f, 1.00f, 1.00f}, {0.98f, 0.98f, 0.98f}}, 3.0),
            0u);
  EXPECT_EQ(pickTimedAlgo({{1.00f, 1.00f, 1.00f}, {0.95f, 0.95f, 0.95f}}, 3.0),
            1u);
  // With no margin the shortest median wins.
  EXPECT_EQ(pickTimedAlgo({{1.00f}, {0.99f}}, 0.0), 1u);
}

TEST(GemmAlgoPick, ScoresByMedianNotBestRun) {
  // Candidate 1 had one lucky run; its median is no better.
  EXPECT_EQ(pickTimedAlgo({{1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
                           {0.5f, 1.0f, 1.0f, 1.1f, 1.0f}},
                          3.0),
            0u);
  // One slow round of the heuristic's answer does not lose it its place.
  EXPECT_EQ(pickTimedAlgo({{1.0f, 1.0f, 2.0f, 1.0f, 1.0f},
                           {0.99f, 0.99f, 0.99f, 0.99f, 0.99f}},
                          3.0),
            0u);
}

TEST(GemmAlgoPick, PicksTheShortestMedianBeyondTheMargin) {
  EXPECT_EQ(
      pickTimedAlgo({{1.0f, 1.0f}, {0.9f, 0.9f}, {0.8f, 0.8f}, {0.85f, 0.85f}},
                    3.0),
      2u);
  // Ties go to the earlier answer.
  EXPECT_EQ(pickTimedAlgo({{1.0f}, {0.8f}, {0.8f}}, 3.0), 1u);
}

TEST(GemmAlgoPick, FailedRunsAndCandidates) {
  // The heuristic's answer failed every run: the best that ran.
  EXPECT_EQ(pickTimedAlgo({{kNaN, kNaN}, {1.2f, 1.2f}, {1.1f, kNaN}}, 3.0), 2u);
  // Nothing ran.
  EXPECT_FALSE(pickTimedAlgo({{kNaN}, {-1.0f}}, 3.0).has_value());
  EXPECT_FALSE(pickTimedAlgo({}, 3.0).has_value());
}

TEST(GemmAlgoPick, MarginFromTheEnvironment) {
  EXPECT_DOUBLE_EQ(gemmAutotuneMargin(nullptr), kGemmAutotuneMarginPercent);
  EXPECT_DOUBLE_EQ(gemmAutotuneMargin(""), kGemmAutotuneMarginPercent);
  EXPECT_DOUBLE_EQ(gemmAutotuneMargin("0"), 0.0);
  EXPECT_DOUBLE_EQ(gemmAutotuneMargin("2.5"), 2.5);
  for (const char *bad : {"-1", "51", "3%", "fast", "nan"}) {
    try {
      gemmAutotuneMargin(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error &e) {
      std::string what = e.what();
      EXPECT_NE(what.find("TCC_CUDA_GEMM_AUTOTUNE_MARGIN is '" +
                          std::string(bad) + "'"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("0 to 50"), std::string::npos) << what;
    }
  }
}

} // namespace
