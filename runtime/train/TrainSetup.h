//===- TrainSetup.h - Options, feeding, metrics and progress of a run -*- C++
//-*-===//
//
// The training loop's pieces that do not touch a session (TrainLoop.cpp):
// binding data files to inputs, batching, gradient accumulation, run
// length, checkpoint and resume rules, metrics lines and the progress line.
// Internal to the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_TRAINSETUP_H
#define TCC_RUNTIME_TRAIN_TRAINSETUP_H

#include "runtime/feeder/DataFeeder.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainLoop.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tcc::rt::detail {

using Clock = std::chrono::steady_clock;
inline double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The program `name` of `a`; Error if it has none.
const Program &program(const Artifact &a, const std::string &name);

/// One feeder source per bound input of `inputs`, in that order. With `ids`,
/// also the identity of each source's data (for checkpoints). `flag` is the
/// option the bindings came from, for the messages.
std::vector<DataFeeder::Source>
makeSources(const Artifact &a, const std::vector<int32_t> &inputs,
            const std::vector<DataBinding> &data, int64_t &batch,
            std::vector<DataIdentity> *ids = nullptr,
            const std::string &flag = "--data");

/// How a run is fed: which program reads the data, the batch geometry and
/// the run's length, checked against the options.
struct TrainPlan {
  const Program *step = nullptr;  // train_step
  const Program *micro = nullptr; // "accumulate" (--grad-accum K), or null
  const Program *data = nullptr;  // micro if any, else step: reads the data
  /// "optimizer_step" (--offload-optimizer: the update, run after the
  /// step's other programs; OffloadSession.h), or null.
  const Program *offload = nullptr;
  int64_t gradAccum = 1;          // micro-batches per optimizer step
  int64_t microBatch = 0;         // samples per micro-batch
  int64_t batchSize = 0;          // samples per optimizer step
  int64_t perEpoch = 0;           // optimizer steps per epoch
  int64_t total = 0;              // the run's length in steps
  /// The program input each batch tensor goes to, in the feeder's order.
  std::vector<int32_t> feedTargets;
  /// Identities of the data (filled when checkpointing or resuming).
  std::vector<DataIdentity> ids;
  bool tokens = false; // a token corpus (TrainOptions::tokensPath)
  std::vector<DataFeeder::Source> sources;
  std::shared_ptr<const TokenCorpus> corpus;
};

/// The int64 token input [N, T] of `prog` (and with `labels`, its labels
/// [N, T], required). Error naming `flag` for a model that is not a
/// language model.
int32_t tokenInput(const Artifact &a, const Program &prog, int32_t *labels,
                   const std::string &flag);
/// How a corpus feeding token input `input` is read: the width option, T
/// and the vocabulary (the forward output's class axis, when [N, T, V]).
TokenCorpus::Options tokenOptions(const Artifact &a, const TensorInfo &input,
                                  const TrainOptions &opts);

/// Checks the options (exactly one of steps and epochs, checkpoint options,
/// data or tokens) against the artifact and plans the feeding for a run of
/// `ranks` processes (an epoch counts global batches of ranks x the
/// artifact's batch). Throws Error, in the order the CPU loop always has.
TrainPlan planTraining(const Artifact &a, const TrainOptions &opts,
                       int ranks = 1);

/// The feeder for `plan` (it counts micro-batches), starting after
/// `startStep` optimizer steps, feeding rank `shard.rank`'s share of every
/// global micro-batch. Moves the plan's sources.
std::unique_ptr<DataFeeder> startFeeder(TrainPlan &plan,
                                        const TrainOptions &opts,
                                        int64_t startStep,
                                        DataShard shard = {});

/// fp16 loss scaling: the state tensor counting skipped steps and the loss
/// scale (-1 when absent). Error when opts.skipNonfinite has no loss
/// scaling to rely on.
struct LossScaling {
  int32_t skippedId = -1, scaleId = -1;
};
LossScaling lossScaling(const Artifact &a, const TrainOptions &opts);

/// The run's learning-rate schedule with its defaults filled in (the
/// artifact's rate, decay over plan.total steps). Error for bad values, and
/// for a schedule or --lr given to an artifact whose rate is compiled in.
LrSchedule learningRateSchedule(const Artifact &a, const TrainOptions &opts,
                                const TrainPlan &plan);

/// The checkpoint metadata of this run of `ranks` processes (step and loss
/// left 0), with the session's orderingThreads(). Moves plan.ids.
CheckpointMeta checkpointMeta(const Artifact &a, const TrainOptions &opts,
                              TrainPlan &plan, int64_t orderingThreads,
                              int ranks = 1);

/// After restoring `c`: records where the run resumes in `r` and logs it.
void noteResumed(TrainResult &r, const Checkpoint &c, const TrainPlan &plan,
                 const std::function<void(const std::string &)> &log);

/// The options' log, or stderr.
std::function<void(const std::string &)> logOf(const TrainOptions &opts);

/// A fresh run must not mix its checkpoints with another run's: Error if
/// opts.checkpointDir holds some, unless `resumed` came from it.
void checkFreshDir(const TrainOptions &o, const Checkpoint *resumed);

/// Opens the metrics file (null when not asked for). Resuming: appends,
/// after dropping the lines past `startStep`.
std::unique_ptr<std::ofstream>
openMetrics(const TrainOptions &opts, bool resuming, int64_t startStep,
            const std::function<void(const std::string &)> &log);

/// One metrics line. `scaling`: the artifact has fp16 loss scaling, and the
/// line says whether the step was skipped and the scale after it.
/// `gradNorm`: the step's grad_norm output (null in the line without one).
/// `eval`: the evaluation run after this step, if any (its fields are
/// added: EvalDuringTraining.h).
void writeMetricsLine(std::ofstream &out, int64_t step, int64_t epoch,
                      float loss, int64_t batchSize, double stepSeconds,
                      bool scaling, bool skipped, float lossScale, double lr,
                      std::optional<float> gradNorm = std::nullopt,
                      const EvalResult *eval = nullptr);

/// "step 12: the loss is NaN; lower the learning rate or check the data".
std::string nonFiniteLossMessage(int64_t step, float loss);

/// Test hook for crash recovery: TCC_TEST_KILL_AFTER_STEP=N makes the
/// process SIGKILL itself right after step N (its metrics line and any
/// checkpoint due are written), a crash at a chosen point. -1 when unset.
int64_t killAfterStepForTesting();

/// The live progress line: rewritten in place on a terminal, a line every
/// tenth of the run otherwise (logs stay readable). samplesPerSec counts
/// the samples of every rank.
class Progress {
public:
  Progress(bool enabled, int64_t first, int64_t total);
  void update(int64_t step, float loss, double samplesPerSec, double elapsed);
  /// The latest evaluation (evalSummary), shown on the lines that follow;
  /// the next update prints whatever the interval says.
  void setEval(const std::string &summary);

private:
  std::string eval_;
  bool forceNext_ = false;
  bool enabled;
  int64_t first, total; // steps done before this run, steps in all
  bool tty;
  Clock::time_point lastPrint{};
};

} // namespace tcc::rt::detail

#endif // TCC_RUNTIME_TRAIN_TRAINSETUP_H
