//===- LrSchedule.cpp - The learning rate of each optimizer step ----------===//
#include "runtime/train/LrSchedule.h"

#include "runtime/core/Artifact.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace tcc::rt;

const char *tcc::rt::lrScheduleName(LrSchedule::Kind k) {
  switch (k) {
  case LrSchedule::Kind::Constant:
    return "constant";
  case LrSchedule::Kind::Linear:
    return "linear";
  case LrSchedule::Kind::Cosine:
    return "cosine";
  }
  return "?";
}

LrSchedule::Kind tcc::rt::parseLrScheduleKind(const std::string &s) {
  for (LrSchedule::Kind k :
       {LrSchedule::Kind::Constant, LrSchedule::Kind::Linear,
        LrSchedule::Kind::Cosine})
    if (s == lrScheduleName(k))
      return k;
  throw Error("--lr-schedule must be constant, linear or cosine, got '" + s +
              "'");
}

static std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string LrSchedule::describe() const {
  std::string s = std::string(lrScheduleName(kind)) +
                  " lr=" + (lr ? num(*lr) : "compiled") +
                  " warmup=" + std::to_string(warmupSteps);
  if (kind != Kind::Constant)
    s += " decay=" + (decaySteps ? std::to_string(*decaySteps) : "run") +
         " min_lr=" + num(minLr.value_or(0));
  return s;
}

LrSchedule tcc::rt::resolveLrSchedule(LrSchedule s, double compiledLr,
                                      int64_t totalSteps) {
  auto fail = [](const std::string &m) { throw Error(m); };
  if (s.lr && !(std::isfinite(*s.lr) && *s.lr > 0))
    fail("--lr must be positive and finite, got " + num(*s.lr));
  if (!s.lr)
    s.lr = compiledLr;
  if (s.warmupSteps < 0)
    fail("--warmup-steps must not be negative, got " +
         std::to_string(s.warmupSteps));
  if (s.kind == LrSchedule::Kind::Constant) {
    if (s.decaySteps || s.minLr)
      fail(std::string(s.decaySteps ? "--decay-steps" : "--min-lr") +
           " needs --lr-schedule linear or cosine (the constant schedule "
           "does not decay)");
    s.minLr = 0;
    s.decaySteps = 0;
    return s;
  }
  if (s.decaySteps && *s.decaySteps < s.warmupSteps)
    fail("--decay-steps " + std::to_string(*s.decaySteps) +
         " is below --warmup-steps " + std::to_string(s.warmupSteps) +
         ": the decay must end after the warmup");
  if (!s.decaySteps) {
    if (totalSteps < s.warmupSteps)
      fail("--warmup-steps " + std::to_string(s.warmupSteps) +
           " is longer than the run (" + std::to_string(totalSteps) +
           " optimizer steps), over which the decay is spread by default; "
           "give --decay-steps");
    s.decaySteps = totalSteps;
  }
  double m = s.minLr.value_or(0);
  if (!std::isfinite(m) || m < 0)
    fail("--min-lr must be a non-negative number, got " + num(m));
  if (m > *s.lr)
    fail("--min-lr " + num(m) + " is above the learning rate " + num(*s.lr));
  s.minLr = m;
  return s;
}

double tcc::rt::lrAt(const LrSchedule &s, int64_t t) {
  const double lr = s.lr.value_or(0), m = s.minLr.value_or(0);
  const int64_t w = s.warmupSteps;
  if (t < w)
    return lr * static_cast<double>(t + 1) / static_cast<double>(w);
  if (s.kind == LrSchedule::Kind::Constant)
    return lr;
  const int64_t d = s.decaySteps.value_or(0);
  double p = static_cast<double>(t - w) /
             static_cast<double>(std::max<int64_t>(1, d - w));
  p = std::clamp(p, 0.0, 1.0);
  if (s.kind == LrSchedule::Kind::Cosine)
    return m + (lr - m) * 0.5 * (1.0 + std::cos(M_PI * p));
  return lr - (lr - m) * p;
}
