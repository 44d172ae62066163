//===- EvalDuringTraining.h - Evaluation every N steps ----------*- C++ -*-===//
//
// --eval-every N: the training loop hands each finished step to this, which
// runs the forward program over held-out data (Evaluator, Evaluate.h) after
// every N-th step and the last one. The loop makes those steps sync points
// (TrainLoop.cpp): the step has finished and nothing else is enqueued when
// the forward program runs, so it reads the parameters of exactly that step
// on the CPU and on the asynchronous CUDA stream alike, and its temporaries
// may reuse the arena the programs share (they run one at a time). On CUDA
// the forward program's inputs may be bound to one of the feeder's device
// slots at that moment; the slot that is bound is the one the finished
// step read, which the feeder refills only when the next step is enqueued.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_EVALDURINGTRAINING_H
#define TCC_RUNTIME_TRAIN_EVALDURINGTRAINING_H

#include "runtime/train/Evaluate.h"
#include "runtime/train/TrainLoop.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace tcc::rt::detail {

/// Evaluations of at most this many batches unless --eval-batches says.
constexpr int64_t kDefaultEvalBatches = 20;

class PeriodicEval {
public:
  /// Null when opts.evalEvery is 0. Throws Error for a bad --eval-every or
  /// --eval-batches, --eval-every without held-out data, and data that
  /// does not fit the model (Evaluator), before any step runs.
  static std::unique_ptr<PeriodicEval>
  make(const Artifact &a, const TrainOptions &opts, int64_t totalSteps);

  /// Whether step `step` is followed by an evaluation.
  bool due(int64_t step) const { return step % every_ == 0 || step == total_; }
  /// Evaluates the session as step `step` left it; appends to r.evals.
  const EvalResult &run(Session &s, int64_t step, TrainResult &r);

private:
  PeriodicEval(std::unique_ptr<Evaluator> e, int64_t every, int64_t total)
      : eval_(std::move(e)), every_(every), total_(total) {}
  std::unique_ptr<Evaluator> eval_;
  int64_t every_, total_;
};

/// "eval loss 1.2345 ppl 3.44" (or "acc 97.50%"), for the progress line.
std::string evalSummary(const EvalResult &e);
/// The metrics fields of an evaluation: eval_loss, and eval_ppl (token
/// corpus) or eval_accuracy (classification).
void addEvalFields(nlohmann::json &line, const EvalResult &e);

} // namespace tcc::rt::detail

#endif // TCC_RUNTIME_TRAIN_EVALDURINGTRAINING_H
