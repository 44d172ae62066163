//===- LrSchedule.h - The learning rate of each optimizer step --*- C++ -*-===//
//
// `tcc train --lr-schedule`: the rate the train loop writes into the
// artifact's `optimizer.lr` tensor before each optimizer step, so changing
// it needs no recompilation. The formulas are the ones the README gives
// (warmup, then constant, linear or cosine decay to a floor), written as
// functions of the step alone so that a resumed run continues the schedule
// exactly.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_LRSCHEDULE_H
#define TCC_RUNTIME_TRAIN_LRSCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>

namespace tcc::rt {

struct LrSchedule {
  enum class Kind : uint8_t { Constant, Linear, Cosine };
  Kind kind = Kind::Constant;
  /// The peak rate; none: the artifact's (what it was compiled with).
  std::optional<double> lr;
  int64_t warmupSteps = 0;
  /// The step at which the decay reaches minLr; none: the run's total
  /// optimizer steps.
  std::optional<int64_t> decaySteps;
  std::optional<double> minLr; // none: 0

  /// Whether this is what a run without schedule flags gets: the compiled
  /// rate throughout, so the loop need not write it.
  bool isDefault() const {
    return kind == Kind::Constant && !lr && warmupSteps == 0;
  }
  /// "cosine lr=0.001 warmup=100 decay=5000 min_lr=0.0001": what a
  /// checkpoint records and resume compares.
  std::string describe() const;
};

const char *lrScheduleName(LrSchedule::Kind k); // "constant", "linear", ...
/// Throws Error for a name that is not one of the three.
LrSchedule::Kind parseLrScheduleKind(const std::string &s);

/// Fills in the defaults (the artifact's rate `compiledLr`, decay over
/// `totalSteps`) and checks the values; throws Error naming the flag at
/// fault: a rate that is not positive and finite, a negative warmup,
/// --decay-steps below the warmup, --min-lr negative or above the rate, or
/// --decay-steps/--min-lr with the constant schedule (they would do
/// nothing).
LrSchedule resolveLrSchedule(LrSchedule s, double compiledLr,
                             int64_t totalSteps);

/// The rate of optimizer step `t` (0 for the first).
double lrAt(const LrSchedule &s, int64_t t);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_LRSCHEDULE_H
