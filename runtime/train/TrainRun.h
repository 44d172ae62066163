//===- TrainRun.h - One training run on the chosen device -------*- C++ -*-===//
//
// What `tcc train` and `tcc-run train` share below their command lines: the
// flags as TrainOptions, the session opened on the device DeviceSelect
// chose (any registered backend), the one training loop and the summary
// lines. The tools differ only in how they parse flags and in what they add
// (tcc: the predicted memory and the ONNX export; tcc-run: the runtime's own
// memory line).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_TRAINRUN_H
#define TCC_RUNTIME_TRAIN_TRAINRUN_H

#include "runtime/core/Backend.h"
#include "runtime/core/DeviceSelect.h"
#include "runtime/core/Session.h"
#include "runtime/train/TrainLoop.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// The training flags both trainers take, as given on the command line.
struct TrainFlags {
  std::string device = "auto", tokens, tokenType, metrics;
  std::string checkpointDir, resume, onNonfinite = "stop", evalTokens;
  std::vector<std::string> data, evalData;
  int64_t evalEvery = 0, evalBatches = -1;
  int64_t steps = -1, epochs = -1, prefetch = 4;
  int64_t checkpointEvery = 0, keepCheckpoints = 3;
  int64_t seed = 0; // shuffling seed, >= 0
  bool eager = false, tf32 = false, noShuffle = false, noProgress = false;
  bool noGraphs = false;
  /// The learning-rate schedule; the numbers as typed ("" when not given),
  /// checked by trainOptionsOf.
  std::string lr, lrSchedule = "constant", decaySteps, minLr;
  int64_t warmupSteps = 0;
  /// --trace FILE and --trace-steps N (runtime/core/Trace.h).
  std::string trace;
  int64_t traceSteps = 5;
};

/// The loop's options from the flags, with the stop flag of
/// installStopHandlers. Throws Error naming a bad --token-type,
/// --on-nonfinite, NAME=FILE binding (--data and --eval-data),
/// --lr-schedule or number, --trace-steps, or a --trace file that cannot be
/// written.
TrainOptions trainOptionsOf(const TrainFlags &f,
                            const std::atomic<int> *stopSignal);

/// The session options the flags ask for (--tf32, --no-cuda-graphs); in a
/// data-parallel run, the GPU of the rank's local rank.
SessionOptions sessionOptionsOf(const TrainFlags &f);

/// A data-parallel rank's share of the machine, decided from the launcher's
/// environment (launchInfo()) before any session or thread pool starts:
/// unless TCC_NUM_THREADS is set, max(1, hardware threads / ranks on the
/// node), and no more than the CPUs the launcher bound the rank to.
/// Nothing for a one-process run.
void shareMachineAmongRanks();

/// Whether this process prints and writes what a run prints and writes:
/// a one-process run, or rank 0 of a data-parallel one.
bool isLeadRank();

/// Reports a failed training run and returns its exit status: "TOOL:
/// error: WHAT" on stderr; in a data-parallel run "TOOL: rank R: error:
/// WHAT", and every rank is ended (Communicator::abortAll) so that none
/// waits forever for this one.
int reportTrainError(const std::string &tool, const std::string &what);

/// One session on one device, trained and then evaluated or read back.
class TrainRun {
public:
  /// Opens the session (on a GPU: allocates and uploads the weights); for an
  /// artifact compiled with --offload-optimizer, an OffloadSession.
  TrainRun(const Artifact &artifact, Device device, ExecMode mode,
           const SessionOptions &options);

  /// With opts.tracePath, records the run (and the final evaluation) and
  /// writes the trace after it, also when it fails.
  TrainResult train(const TrainOptions &opts);
  /// "trace: FILE (N step(s) in detail, E events; ...)", "" without one.
  std::string traceSummary() const;
  EvalResult evaluate(const std::vector<DataBinding> &data);
  /// The evaluation reported at the end of a run, if any: the one the loop
  /// ran after the last step (--eval-every), else the forward program over
  /// opts.evalData (all of it unless --eval-batches) or opts.evalTokens
  /// (--eval-batches, default 20 batches) now. False when there is none.
  bool finalEvaluation(const TrainOptions &opts, const TrainResult &r,
                       EvalResult &out);
  /// The device's memory (with --offload-optimizer, without the state the
  /// host holds).
  MemoryStats memory() const { return session_->memory(); }
  /// "optimizer offload: ..." (OffloadSession::summary), "" without it.
  std::string offloadSummary() const;
  Session &session() { return *session_; }
  /// Tensor `id`'s values on the host: the session's own bytes where the
  /// host addresses them, else a download (once; kept for later calls).
  const void *hostData(int32_t id);

private:
  const Artifact &artifact_;
  std::unique_ptr<Session> session_;
  std::map<int32_t, std::vector<uint8_t>> downloads_;
  std::unique_ptr<Tracer> tracer_;
  std::string tracePath_;
};

/// Prints the end-of-run "eval: ..." line to stdout.
void printEvalSummary(const EvalResult &e);

/// A run cut short by a signal: prints "interrupted at step N; checkpoint
/// written to ..." (or that there is none) to stderr and returns the exit
/// status, 128 + the signal.
int reportInterrupted(const TrainResult &r, const TrainOptions &opts);

/// Prints the summary line to stdout: "trained N steps (compiled, cpu) in
/// T s: final loss L, median step M ms, S samples/s[ (K tokens/s)], tensor
/// memory peak P, data wait W s[, GPU input-copy wait C s]", and the fp16
/// loss-scaling line when the artifact scales the loss.
void printTrainSummary(const Artifact &artifact, const TrainOptions &opts,
                       const TrainResult &r, const MemoryStats &m,
                       ExecMode mode, Device device);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_TRAINRUN_H
