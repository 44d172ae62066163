//===- TrainRun.cpp - One training run on the chosen device ---------------===//
#include "runtime/train/TrainRun.h"

#include "runtime/core/Comm.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/OffloadSession.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sched.h>
#include <thread>
#include <unistd.h>

using namespace tcc;
using namespace tcc::rt;

/// The whole of `s` as a finite number; Error naming `flag` otherwise.
static double parseNumber(const std::string &s, const char *flag) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || errno == ERANGE || !std::isfinite(v))
    throw Error(std::string(flag) + " must be a finite number, got '" + s +
                "'");
  return v;
}

/// The whole of `s` as a non-negative integer; Error naming `flag`.
static int64_t parseCount(const std::string &s, const char *flag) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno == ERANGE || v < 0)
    throw Error(std::string(flag) +
                " must be a non-negative whole number, got '" + s + "'");
  return v;
}

TrainOptions rt::trainOptionsOf(const TrainFlags &f,
                                const std::atomic<int> *stopSignal) {
  TrainOptions o;
  o.data = parseDataBindings(f.data);
  o.steps = f.steps;
  o.epochs = f.epochs;
  o.seed = static_cast<uint64_t>(f.seed);
  o.shuffle = !f.noShuffle;
  o.metricsPath = f.metrics;
  o.progress = !f.noProgress;
  o.prefetch = static_cast<size_t>(f.prefetch);
  o.tokensPath = f.tokens;
  if (!f.tokenType.empty() && f.tokenType != "u8" && f.tokenType != "u16" &&
      f.tokenType != "u32")
    throw Error("--token-type must be u8, u16 or u32, got '" + f.tokenType +
                "'");
  // Not given: an llm.c header says, a headerless file is u8.
  o.tokenBytes = f.tokenType.empty()    ? 0
                 : f.tokenType == "u8"  ? 1
                 : f.tokenType == "u16" ? 2
                                        : 4;
  o.evalEvery = f.evalEvery;
  o.evalBatches = f.evalBatches;
  o.evalTokens = f.evalTokens;
  o.evalData = parseDataBindings(f.evalData, "--eval-data");
  o.checkpointDir = f.checkpointDir;
  o.checkpointEvery = f.checkpointEvery;
  o.keepCheckpoints = f.keepCheckpoints;
  o.resumeFrom = f.resume;
  if (f.onNonfinite != "stop" && f.onNonfinite != "skip")
    throw Error("--on-nonfinite must be 'stop' or 'skip', got '" +
                f.onNonfinite + "'");
  o.skipNonfinite = f.onNonfinite == "skip";
  o.stopSignal = stopSignal;
  o.lrSchedule.kind = parseLrScheduleKind(f.lrSchedule);
  if (!f.lr.empty())
    o.lrSchedule.lr = parseNumber(f.lr, "--lr");
  if (!f.minLr.empty())
    o.lrSchedule.minLr = parseNumber(f.minLr, "--min-lr");
  if (!f.decaySteps.empty())
    o.lrSchedule.decaySteps = parseCount(f.decaySteps, "--decay-steps");
  o.lrSchedule.warmupSteps = f.warmupSteps;
  if (f.traceSteps < 1)
    throw Error("--trace-steps must be at least 1, got " +
                std::to_string(f.traceSteps));
  o.tracePath = f.trace;
  o.traceSteps = f.traceSteps;
  // Checked before the run, not after it: a long run must not end in
  // "cannot write the trace".
  if (!o.tracePath.empty())
    Tracer::checkWritable(o.tracePath);
  return o;
}

SessionOptions rt::sessionOptionsOf(const TrainFlags &f) {
  SessionOptions o;
  o.tf32 = f.tf32;
  o.graphs = !f.noGraphs;
  LaunchInfo l = launchInfo();
  if (l.size > 1) {
    o.gpu = l.localRank;
    o.rank = l.rank; // each rank its own dropout masks, those of N * B
  }
  return o;
}

void rt::shareMachineAmongRanks() {
  LaunchInfo l = launchInfo();
  if (l.size <= 1)
    return;
  if (const char *env = std::getenv("TCC_NUM_THREADS"); env && *env)
    return; // the user's choice
  int hw = static_cast<int>(std::thread::hardware_concurrency());
  hw = hw > 0 ? hw : 1;
  // The ranks on the node split its threads, and a rank uses no more than
  // the CPUs mpirun bound it to (Open MPI binds each of two ranks to one
  // core, more ranks to a socket each: then several share a socket).
  cpu_set_t set;
  CPU_ZERO(&set);
  int bound = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  int threads = std::max(
      1, std::min(bound > 0 ? bound : hw, hw / std::max(1, l.localSize)));
  // Read by the CPU session (OpenBLAS) and the kernels' thread pool when
  // they start, which is after this.
  ::setenv("TCC_NUM_THREADS", std::to_string(threads).c_str(), 1);
}

bool rt::isLeadRank() { return launchInfo().rank == 0; }

int rt::reportTrainError(const std::string &tool, const std::string &what) {
  std::fflush(stdout);
  LaunchInfo l;
  try {
    l = launchInfo();
  } catch (const Error &) {
    // The launcher's variables are what failed: report as one process.
  }
  if (l.size <= 1) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), what.c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: rank %d: error: %s\n", tool.c_str(), l.rank,
               what.c_str());
  std::fflush(stderr);
  try {
    communicator().abortAll(1);
  } catch (const Error &e) {
    // No communicator (the MPI module could not be loaded): the other
    // ranks fail the same way.
    std::fprintf(stderr, "%s: rank %d: error: %s\n", tool.c_str(), l.rank,
                 e.what());
  }
  return 1;
}

TrainRun::TrainRun(const Artifact &artifact, Device device, ExecMode mode,
                   const SessionOptions &options)
    : artifact_(artifact), session_(openTrainingSession(
                               deviceName(device), artifact, mode, options)) {}

std::string TrainRun::offloadSummary() const {
  auto *o = dynamic_cast<const OffloadSession *>(session_.get());
  return o ? o->summary() : "";
}

TrainResult TrainRun::train(const TrainOptions &opts) {
  // In a data-parallel run rank 0 alone writes the trace.
  if (opts.tracePath.empty() || !isLeadRank())
    return rt::train(*session_, artifact_, opts);
  Tracer::checkWritable(opts.tracePath);
  tracer_ = std::make_unique<Tracer>(
      opts.traceSteps,
      std::string("tcc train (") + session_->backend() +
          (session_->mode() == ExecMode::Eager ? ", eager)" : ")"));
  tracer_->note("device", session_->deviceDescription());
  for (const char *key : {"source", "batch", "optimizer"})
    if (auto it = artifact_.meta.find(key); it != artifact_.meta.end())
      tracer_->note(key, it->second);
  tracePath_ = opts.tracePath;
  session_->setTracer(tracer_.get());
  TrainOptions o = opts;
  o.tracer = tracer_.get();
  try {
    TrainResult r = rt::train(*session_, artifact_, o);
    tracer_->write(tracePath_);
    return r;
  } catch (const Error &) {
    // The trace of a failed run is the one worth looking at.
    try {
      tracer_->write(tracePath_);
    } catch (const Error &) {
    }
    throw;
  }
}

std::string TrainRun::traceSummary() const {
  if (!tracer_)
    return "";
  return "trace: " + tracePath_ + " (" +
         std::to_string(tracer_->detailedSteps()) + " step(s) in detail, " +
         std::to_string(tracer_->events()) +
         " events; open it in ui.perfetto.dev or chrome://tracing)";
}

EvalResult TrainRun::evaluate(const std::vector<DataBinding> &data) {
  return rt::evaluate(*session_, artifact_, data);
}

bool TrainRun::finalEvaluation(const TrainOptions &o, const TrainResult &r,
                               EvalResult &out) {
  if (o.evalEvery > 0 && !r.evals.empty() && r.evals.back().step == r.steps) {
    out = r.evals.back().result;
    return true;
  }
  if (o.evalData.empty() && o.evalTokens.empty())
    return false;
  int64_t cap = o.evalBatches;
  if (cap < 0 && !o.evalTokens.empty())
    cap = 20; // a held-out corpus may be large: as many as --eval-every's
  out = Evaluator(artifact_, o.evalData, o.evalTokens, o.tokenBytes, cap)
            .run(*session_);
  if (tracer_) // the trace written after training, now with this pass
    tracer_->write(tracePath_);
  return true;
}

void rt::printEvalSummary(const EvalResult &e) {
  if (e.tokens)
    std::printf("eval: %lld windows, loss %.4f, perplexity %.2f\n",
                (long long)e.samples, e.loss, std::exp(e.loss));
  else if (e.hasAccuracy)
    std::printf("eval: %lld samples, accuracy %.2f%%, loss %.4f\n",
                (long long)e.samples, e.accuracy * 100, e.loss);
  else
    std::printf("eval: %lld samples, loss %.4f (%s)\n", (long long)e.samples,
                e.loss, e.kind.c_str());
}

const void *TrainRun::hostData(int32_t id) {
  if (const void *p = session_->hostData(id))
    return p;
  std::vector<uint8_t> &v = downloads_[id];
  if (v.empty()) {
    v.resize(static_cast<size_t>(artifact_.tensors[id].byteSize()));
    session_->download(id, v.data());
  }
  return v.data();
}

int rt::reportInterrupted(const TrainResult &r, const TrainOptions &opts) {
  std::string where = r.checkpointsWritten
                          ? "checkpoint written to " + r.lastCheckpoint
                          : std::string("no checkpoint (no --checkpoint-dir)");
  std::fflush(stdout);
  // A live progress line on the terminal is ended first.
  std::fprintf(stderr, "%sinterrupted at step %lld; %s\n",
               opts.progress && isatty(2) ? "\n" : "", (long long)r.steps,
               where.c_str());
  return 128 + r.interruptedBy;
}

/// Tokens per optimizer step when the data is a token corpus: N x T of the
/// model's int64 token input per micro-batch.
static int64_t tokensPerStep(const Artifact &a, const TrainResult &r) {
  const Program *p = a.findProgram("accumulate");
  if (!p)
    p = a.findProgram("train_step");
  if (!p)
    return 0;
  for (int32_t id : p->inputs) {
    const TensorInfo &t = a.tensors[id];
    if (t.name != "labels" && t.dtype == DType::I64 && t.shape.size() == 2)
      return t.shape[0] * t.shape[1] * r.gradAccum;
  }
  return 0;
}

void rt::printTrainSummary(const Artifact &artifact, const TrainOptions &opts,
                           const TrainResult &r, const MemoryStats &m,
                           ExecMode mode, Device device) {
  double ms = median(r.stepSeconds) * 1e3;
  // Samples of every rank: the global batch.
  int64_t globalBatch = r.batchSize * r.ranks;
  double sps = ms > 0 ? globalBatch / (ms / 1e3) : 0.0;
  std::string resumed = r.resumedFrom.empty() ? ""
                                              : ", resumed at step " +
                                                    std::to_string(r.startStep);
  std::string tokens;
  if (int64_t t = opts.tokensPath.empty() ? 0 : tokensPerStep(artifact, r))
    tokens = " (" + std::to_string((long long)(sps * t / r.batchSize)) +
             " tokens/s)";
  std::string copyWait;
  if (device == Device::Cuda) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", GPU input-copy wait %.3f s",
                  r.copyWaitSeconds);
    copyWait = buf;
  }
  std::string ranks;
  if (r.ranks > 1)
    ranks = ", " + std::to_string(r.ranks) + " ranks \u00d7 " +
            std::to_string(r.batchSize) + " = global batch " +
            std::to_string(globalBatch);
  std::printf("trained %lld steps (%s, %s%s%s) in %.2f s: final loss %.4f, "
              "median step %.3f ms, %.0f samples/s%s, tensor memory peak "
              "%s, data wait %.2f s%s\n",
              (long long)(r.steps - r.startStep),
              mode == ExecMode::Eager ? "eager" : "compiled",
              deviceName(device), ranks.c_str(), resumed.c_str(),
              r.totalSeconds,
              r.losses.empty() ? r.resumedLoss : r.losses.back(), ms, sps,
              tokens.c_str(), formatBytes(m.peakBytes).c_str(),
              r.dataWaitSeconds, copyWait.c_str());
  if (lossScaleSkippedTensor(artifact) >= 0)
    std::printf("fp16 loss scaling: %lld of %lld steps skipped (Inf/NaN "
                "gradients), loss scale now %g\n",
                (long long)r.skippedSteps, (long long)(r.steps - r.startStep),
                r.lossScale);
}
