//===- TrainLoop.h - Training steps fed by the data feeder ------*- C++ -*-===//
//
// The loop that `tcc train` and `tcc-run train` drive, on any backend's
// Session (runtime/core/Session.h): it binds data files to the artifact's
// inputs, pulls batches from the asynchronous feeder, runs the train_step
// program and reports loss, throughput and progress; it writes checkpoints
// and resumes from them (Checkpoint.h). It also evaluates the forward
// program on held-out data.
//
// One loop for every device. What a device offers is read from the
// session's traits: on an asynchronous session (CUDA) batches are staged
// `prefetch` slots ahead and step N's loss is read back while step N + 1
// runs; on a synchronous one (CPU) each step is finished as soon as it ran.
// Steps that write a checkpoint or scan the parameters, and the last step,
// are always finished before the next is enqueued.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_TRAINLOOP_H
#define TCC_RUNTIME_TRAIN_TRAINLOOP_H

#include "runtime/core/Artifact.h"
#include "runtime/core/Session.h"
#include "runtime/train/LrSchedule.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcc::rt {

/// `name=path`: the file that feeds the model input `name`.
struct DataBinding {
  std::string name;
  std::string path;
};

/// Parses "name=path" specs; throws Error naming a malformed one and the
/// flag they came from.
std::vector<DataBinding>
parseDataBindings(const std::vector<std::string> &specs,
                  const std::string &flag = "--data");

struct TrainOptions {
  std::vector<DataBinding> data;
  /// Instead of `data`: a token corpus for a language model, a file, a glob
  /// of shards or a directory of them (TokenCorpus.h; memory-mapped).
  /// Windows of T+1 tokens feed the model's one int64 input [N, T] and
  /// `labels` [N, T] (the next token at each position).
  std::string tokensPath;
  /// Width of headerless tokens: 1, 2 or 4 bytes; 0: an llm.c header's,
  /// else 1. Given, it must agree with the headers.
  int tokenBytes = 0;
  /// Evaluation while training: after every `evalEvery` steps and the last
  /// one (0: never), the forward program over `evalData` (NAME=FILE, as
  /// --eval-data) or `evalTokens` (a corpus like tokensPath, read with
  /// tokenBytes), at most `evalBatches` batches each time (-1: 20). The
  /// results go to TrainResult::evals, the metrics lines and the progress
  /// line.
  int64_t evalEvery = 0;
  std::vector<DataBinding> evalData;
  std::string evalTokens;
  int64_t evalBatches = -1;
  int64_t steps = -1; // exactly one of steps and epochs is set
  int64_t epochs = -1;
  uint64_t seed = 0;
  bool shuffle = true;
  std::string metricsPath; // one JSON object per step, when set
  bool progress = true;    // live progress line on stderr
  size_t prefetch = 4;     // batches the feeder keeps ready

  /// Checkpoints go to this directory (created if needed) every
  /// `checkpointEvery` steps (0: none on the way) and after the last step.
  /// It must hold no checkpoint yet unless the run resumes from it.
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int64_t keepCheckpoints = 3; // older ones are deleted
  /// A checkpoint file, or a directory whose newest valid checkpoint is
  /// taken. The run continues at its step; the options must match the ones
  /// it was written with. The metrics file is appended to, after dropping
  /// lines of steps past the checkpoint (written by the interrupted run).
  std::string resumeFrom;
  /// Notes about resuming (which checkpoint, which were skipped and why).
  /// Default: printed to stderr.
  std::function<void(const std::string &)> log;

  /// Graceful stop: when set, the loop reads it after every step; a
  /// non-zero value (the signal number, by convention) ends the run there,
  /// after a checkpoint of that step when checkpointDir is set (whatever
  /// checkpointEvery says). The loop installs no signal handler itself: the
  /// caller (tcc train) does, and stores into this from its handler.
  const std::atomic<int> *stopSignal = nullptr;
  /// Every how many steps all parameters and state tensors are scanned for
  /// NaN/Inf. The loss is checked every step, and the scan always runs after
  /// the last step and before a checkpoint is written. 0: only then. Not
  /// every step: on a small model a scan costs a noticeable share of a step
  /// (benchmarks/results/design-measurements.md), and a non-finite weight
  /// shows up in the next step's loss anyway.
  int64_t nonfiniteCheckEvery = 10;
  /// `--on-nonfinite skip`: a step that fp16 loss scaling skipped (an
  /// Inf/NaN gradient; the compiled step left parameters and optimizer
  /// state untouched) may also have a non-finite loss without stopping the
  /// run. Needs an artifact with loss scaling (the `loss_scale.skipped`
  /// state of tcc-mixed-precision); Error otherwise. Either way such steps
  /// are counted in TrainResult::skippedSteps.
  bool skipNonfinite = false;
  /// The learning rate of each optimizer step (LrSchedule.h), written into
  /// the artifact's `optimizer.lr` tensor before the step. The default is
  /// the compiled rate throughout.
  LrSchedule lrSchedule;
  /// `--trace FILE`: a Perfetto timeline of the first `traceSteps` steps
  /// (runtime/core/Trace.h), written by TrainRun. `tracer` is what the loop
  /// records into (steps, feeder waits, checkpoints); null: none.
  std::string tracePath;
  int64_t traceSteps = 5;
  Tracer *tracer = nullptr;
};

/// One evaluation of the forward program on held-out data (Evaluate.h).
struct EvalResult {
  int64_t samples = 0; // samples (token windows) evaluated, full batches only
  /// The mean loss: cross-entropy, mean squared error or the graph's own
  /// loss output, as the artifact was compiled (`kind`).
  double loss = 0;
  double accuracy = 0;      // argmax over the last axis equals the label
  bool hasAccuracy = false; // cross-entropy over --eval-data
  bool tokens = false;      // over a token corpus: perplexity exp(loss)
  std::string kind;         // "cross_entropy", "mse" or the output's name
};

/// An evaluation during training (TrainOptions::evalEvery).
struct EvalPoint {
  int64_t step = 0;
  EvalResult result;
};

struct TrainResult {
  int64_t startStep = 0; // the checkpoint's step when resuming
  int64_t steps = 0;     // global step reached (startStep + run)
  int64_t batchSize = 0; // samples per optimizer step (micro-batch x K)
  /// Processes of a data-parallel run (mpirun -np N): each step trains on
  /// ranks x batchSize samples, and losses are means over the ranks.
  int ranks = 1;
  int64_t gradAccum = 1;           // micro-batches per optimizer step
  std::vector<float> losses;       // one per step of this run
  std::vector<double> stepSeconds; // run time of each train_step
  double totalSeconds = 0;         // wall time of the loop
  double dataWaitSeconds = 0;      // time spent waiting for the feeder
  /// Asynchronous sessions: device time the runs stood waiting for their
  /// batches' copies to the device (events around the waits).
  double copyWaitSeconds = 0;
  std::string resumedFrom; // the checkpoint file, when resuming
  float resumedLoss = 0;   // the loss of its last step
  int64_t checkpointsWritten = 0;
  std::string lastCheckpoint;   // path of the newest one written
  double checkpointSeconds = 0; // time spent writing them
  /// Non-zero: the run stopped early at `steps` because stopSignal held
  /// this value.
  int interruptedBy = 0;
  double nonfiniteCheckSeconds = 0; // time spent scanning for NaN/Inf
  /// fp16 loss scaling (artifacts compiled with --precision fp16): steps of
  /// this run that were skipped for an Inf/NaN gradient, and the loss scale
  /// after the last step. lossScale is 0 without loss scaling.
  int64_t skippedSteps = 0;
  float lossScale = 0;
  /// Evaluations during training, in step order.
  std::vector<EvalPoint> evals;
  /// The schedule the run followed (defaults filled in; lr 0 when the
  /// artifact has no optimizer.lr tensor and no `lr` in its meta).
  LrSchedule lrSchedule;
};

/// The `loss_scale.skipped` state of an artifact with fp16 loss scaling,
/// -1 if it has none.
int32_t lossScaleSkippedTensor(const Artifact &a);

/// The `optimizer.lr` state (an f32 scalar the optimizer kernels read), -1
/// if the artifact has none (compiled before the rate was a runtime value).
int32_t learningRateTensor(const std::vector<TensorInfo> &tensors);
/// The rate the artifact was compiled with: optimizer.lr's initial value,
/// else its meta `lr`; 0 if neither says.
double compiledLearningRate(const Artifact &a);

/// Trains `session` (opened from `artifact`). Throws Error on bad data,
/// mismatched inputs, a non-finite loss or parameter ("step 12: the loss is
/// NaN"; a checkpoint is never written with non-finite values), a checkpoint
/// that cannot be written (the previous ones stay intact) or one that cannot
/// be resumed from, and the session's own errors (a CUDA call, a label out
/// of range). opts.prefetch (at least 1) is the feeder's queue and, on an
/// asynchronous session, the number of input slots.
TrainResult train(Session &session, const Artifact &artifact,
                  const TrainOptions &opts);

/// Runs the forward program over every full batch of `data`, which must bind
/// each forward input and `labels` (integer classes shaped like the output
/// without its last axis; for mse, shaped like the output): each batch is
/// uploaded, run and its output downloaded and scored on the host
/// (Evaluator, Evaluate.h).
EvalResult evaluate(Session &session, const Artifact &artifact,
                    const std::vector<DataBinding> &data);
/// The same with any executor: `forward` gets one batch (a tensor per
/// forward input, in its order, then the labels), runs the forward program
/// and returns the scored output's values (the first output; the loss
/// output of --loss output:NAME), valid until the next call.
using ForwardFn =
    std::function<const float *(const std::vector<std::vector<uint8_t>> &)>;
EvalResult evaluate(const Artifact &artifact,
                    const std::vector<DataBinding> &data,
                    const ForwardFn &forward);

/// The median of `v` (0 for an empty vector).
double median(std::vector<double> v);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_TRAINLOOP_H
