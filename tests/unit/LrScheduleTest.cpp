//===- LrScheduleTest.cpp - Learning-rate schedules -----------------------===//
#include "runtime/train/LrSchedule.h"
#include "runtime/core/Artifact.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tcc::rt;

namespace {
std::string errorOf(const LrSchedule &s, double compiled, int64_t total) {
  try {
    resolveLrSchedule(s, compiled, total);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

LrSchedule make(LrSchedule::Kind k, double lr, int64_t warmup,
                std::optional<int64_t> decay, std::optional<double> minLr) {
  LrSchedule s;
  s.kind = k;
  s.lr = lr;
  s.warmupSteps = warmup;
  s.decaySteps = decay;
  s.minLr = minLr;
  return s;
}
} // namespace

TEST(LrSchedule, DefaultIsTheCompiledRateThroughout) {
  LrSchedule s = resolveLrSchedule(LrSchedule(), 3e-4, 100);
  EXPECT_TRUE(LrSchedule().isDefault());
  for (int64_t t : {0, 1, 50, 99, 500})
    EXPECT_EQ(lrAt(s, t), 3e-4);
}

TEST(LrSchedule, WarmupIsLinearFromLrOverW) {
  LrSchedule s = resolveLrSchedule(
      make(LrSchedule::Kind::Constant, 0.1, 4, {}, {}), 1e-3, 10);
  EXPECT_DOUBLE_EQ(lrAt(s, 0), 0.025);
  EXPECT_DOUBLE_EQ(lrAt(s, 1), 0.05);
  EXPECT_DOUBLE_EQ(lrAt(s, 3), 0.1);
  EXPECT_DOUBLE_EQ(lrAt(s, 4), 0.1);
  EXPECT_DOUBLE_EQ(lrAt(s, 9), 0.1);
}

TEST(LrSchedule, CosineAndLinearFollowTheFormula) {
  // W = 2, D = 12, M = 0.01: p = (t - 2) / 10 clamped to [0, 1].
  LrSchedule c = resolveLrSchedule(
      make(LrSchedule::Kind::Cosine, 1.0, 2, 12, 0.01), 1e-3, 20);
  LrSchedule l = resolveLrSchedule(
      make(LrSchedule::Kind::Linear, 1.0, 2, 12, 0.01), 1e-3, 20);
  for (int64_t t = 2; t < 20; ++t) {
    double p = std::min(1.0, (t - 2) / 10.0);
    EXPECT_NEAR(lrAt(c, t), 0.01 + 0.99 * 0.5 * (1 + std::cos(M_PI * p)), 1e-15)
        << t;
    EXPECT_NEAR(lrAt(l, t), 1.0 - 0.99 * p, 1e-15) << t;
  }
  EXPECT_DOUBLE_EQ(lrAt(c, 2), 1.0);
  EXPECT_DOUBLE_EQ(lrAt(c, 7), 0.01 + 0.99 * 0.5);
  EXPECT_DOUBLE_EQ(lrAt(c, 12), 0.01);
  EXPECT_NEAR(lrAt(l, 19), 0.01, 1e-15);
}

TEST(LrSchedule, DecayDefaultsToTheRunAndMinLrToZero) {
  LrSchedule s = resolveLrSchedule(
      make(LrSchedule::Kind::Linear, 2.0, 0, {}, {}), 1e-3, 10);
  EXPECT_EQ(*s.decaySteps, 10);
  EXPECT_EQ(*s.minLr, 0.0);
  EXPECT_DOUBLE_EQ(lrAt(s, 5), 1.0);
  // The compiled rate when --lr is not given.
  LrSchedule k;
  k.kind = LrSchedule::Kind::Cosine;
  EXPECT_EQ(*resolveLrSchedule(k, 0.25, 10).lr, 0.25);
  // W = D: p = (t - W) / max(1, 0) is 0 at t = W, then clamps to 1.
  LrSchedule e = resolveLrSchedule(
      make(LrSchedule::Kind::Cosine, 1.0, 5, 5, 0.1), 1e-3, 10);
  EXPECT_DOUBLE_EQ(lrAt(e, 4), 1.0);
  EXPECT_DOUBLE_EQ(lrAt(e, 5), 1.0);
  EXPECT_DOUBLE_EQ(lrAt(e, 6), 0.1);
}

TEST(LrSchedule, DescribeSaysEverythingResumeMustMatch) {
  LrSchedule s = resolveLrSchedule(
      make(LrSchedule::Kind::Cosine, 0.5, 3, 30, 0.05), 1e-3, 40);
  EXPECT_EQ(s.describe(),
            "cosine lr=0.5 warmup=3 decay=30 min_lr=0.050000000000000003");
  EXPECT_EQ(resolveLrSchedule(LrSchedule(), 0.5, 4).describe(),
            "constant lr=0.5 warmup=0");
}

TEST(LrSchedule, BadValuesNameTheFlag) {
  using K = LrSchedule::Kind;
  EXPECT_EQ(errorOf(make(K::Cosine, 1.0, 10, 5, {}), 1, 100),
            "--decay-steps 5 is below --warmup-steps 10: the decay must end "
            "after the warmup");
  EXPECT_EQ(errorOf(make(K::Cosine, -1.0, 0, {}, {}), 1, 100),
            "--lr must be positive and finite, got -1");
  EXPECT_EQ(errorOf(make(K::Cosine, 1.0, -2, {}, {}), 1, 100),
            "--warmup-steps must not be negative, got -2");
  EXPECT_EQ(errorOf(make(K::Linear, 1.0, 0, {}, 2.0), 1, 100),
            "--min-lr 2 is above the learning rate 1");
  EXPECT_EQ(errorOf(make(K::Linear, 1.0, 0, {}, -0.5), 1, 100),
            "--min-lr must be a non-negative number, got -0.5");
  EXPECT_EQ(errorOf(make(K::Constant, 1.0, 0, 50, {}), 1, 100),
            "--decay-steps needs --lr-schedule linear or cosine (the "
            "constant schedule does not decay)");
  EXPECT_EQ(errorOf(make(K::Constant, 1.0, 0, {}, 0.0), 1, 100),
            "--min-lr needs --lr-schedule linear or cosine (the constant "
            "schedule does not decay)");
  EXPECT_EQ(errorOf(make(K::Cosine, 1.0, 20, {}, {}), 1, 10),
            "--warmup-steps 20 is longer than the run (10 optimizer steps), "
            "over which the decay is spread by default; give --decay-steps");
  try {
    parseLrScheduleKind("step");
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(
        e.what(),
        "--lr-schedule must be constant, linear or cosine, got 'step'");
  }
}
