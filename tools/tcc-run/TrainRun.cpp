//===- TrainRun.cpp - tcc-run train ---------------------------------------===//
//
// `tcc train` without the compiler: the same options (less --export, which
// writes ONNX), the same loop on the CPU (runtime/train/TrainLoop.h) and its
// GPU counterpart (runtime/cuda/CudaTrainLoop.h), the same summary lines.
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-run/Commands.h"

#include "runtime/core/ProcessMemory.h"
#include "runtime/core/Session.h"
#include "runtime/cuda/CudaTrainLoop.h"
#include "runtime/cuda/DeviceSelect.h"
#include "runtime/train/TrainLoop.h"
#include "tools/tcc-run/Args.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unistd.h>

using namespace tcc;

/// The signal that asked the run to stop (SIGINT, SIGTERM), 0 while none
/// has; the loop polls it between steps (see tools/tcc/TrainCommand.cpp).
static std::atomic<int> stopRequested{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "the signal handler needs a lock-free atomic");

static void onStopSignal(int sig) {
  int none = 0; // the first signal wins
  stopRequested.compare_exchange_strong(none, sig);
}

static void installStopHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

namespace {
struct Flags {
  std::string artifact, device = "auto", tokens, tokenType = "u8", metrics;
  std::string checkpointDir, resume, onNonfinite = "stop";
  std::vector<std::string> data, evalData;
  int64_t steps = -1, epochs = -1, prefetch = 4, seed = 0;
  int64_t checkpointEvery = 0, keepCheckpoints = 3;
  bool eager = false, tf32 = false, noShuffle = false, noProgress = false;
  bool noGraphs = false;
};
} // namespace

static run::Args trainArgs(Flags &f) {
  run::Args a(
      "tcc-run train",
      "tcc-run train ART (--data NAME=FILE ... | --tokens FILE) "
      "(--steps N | --epochs E) [options]",
      "Trains the artifact ART (from tcc compile) on the CPU or a GPU.");
  a.positional(&f.artifact, "the artifact to train");
  a.value("device", &f.device, "auto|cpu|cuda",
          "where to run (default auto: the GPU when ART has CUDA code and a "
          "GPU is present)");
  a.list("data", &f.data, "NAME=FILE",
         "data for model input NAME (.npy or .csv), one per input and labels");
  a.value("tokens", &f.tokens, "FILE",
          "a token corpus for a language model: windows of T+1 tokens feed "
          "the int64 input [N,T] and labels [N,T]");
  a.value("token-type", &f.tokenType, "u8|u16",
          "token width (u16: little-endian), default u8");
  a.integer("steps", &f.steps, 1, "N", "number of training steps");
  a.integer("epochs", &f.epochs, 1, "E", "number of epochs");
  a.integer("prefetch", &f.prefetch, 1, "N",
            "batches prepared ahead (on a GPU also the device input slots), "
            "default 4");
  a.flag("eager", &f.eager,
         "run op by op, a fresh buffer per result, as a framework does");
  a.flag("tf32", &f.tf32,
         "GPU: fp32 matrix products on TF32 tensor cores (ignored on the "
         "CPU)");
  a.flag("no-cuda-graphs", &f.noGraphs,
         "GPU: launch every kernel of a compiled step on its own instead of "
         "replaying the step as a CUDA graph");
  a.value("metrics", &f.metrics, "FILE", "write one JSON line per step");
  a.integer("seed", &f.seed, 0, "N", "shuffling seed, default 0");
  a.flag("no-shuffle", &f.noShuffle, "take batches in file order");
  a.flag("no-progress", &f.noProgress, "no live progress line");
  a.list("eval-data", &f.evalData, "NAME=FILE",
         "held-out data for accuracy after training");
  a.value("checkpoint-dir", &f.checkpointDir, "DIR",
          "write checkpoints here (every --checkpoint-every steps and after "
          "the last)");
  a.integer("checkpoint-every", &f.checkpointEvery, 0, "N",
            "steps between checkpoints (0: only at the end)");
  a.integer("keep-checkpoints", &f.keepCheckpoints, 1, "K",
            "checkpoints to keep, default 3");
  a.value("resume", &f.resume, "DIR|FILE",
          "continue from the newest valid checkpoint in DIR (or FILE)");
  a.value("on-nonfinite", &f.onNonfinite, "stop|skip",
          "a NaN/Inf loss stops the run (default), or with fp16 loss scaling "
          "a skipped step may have one");
  return a;
}

static rt::TrainOptions trainOptions(const Flags &f) {
  rt::TrainOptions o;
  o.data = rt::parseDataBindings(f.data);
  o.steps = f.steps;
  o.epochs = f.epochs;
  o.seed = static_cast<uint64_t>(f.seed);
  o.shuffle = !f.noShuffle;
  o.metricsPath = f.metrics;
  o.progress = !f.noProgress;
  o.prefetch = static_cast<size_t>(f.prefetch);
  o.tokensPath = f.tokens;
  if (f.tokenType != "u8" && f.tokenType != "u16")
    throw rt::Error("--token-type must be u8 or u16, got '" + f.tokenType +
                    "'");
  o.tokenBytes = f.tokenType == "u16" ? 2 : 1;
  o.checkpointDir = f.checkpointDir;
  o.checkpointEvery = f.checkpointEvery;
  o.keepCheckpoints = f.keepCheckpoints;
  o.resumeFrom = f.resume;
  if (f.onNonfinite != "stop" && f.onNonfinite != "skip")
    throw rt::Error("--on-nonfinite must be 'stop' or 'skip', got '" +
                    f.onNonfinite + "'");
  o.skipNonfinite = f.onNonfinite == "skip";
  o.stopSignal = &stopRequested;
  return o;
}

/// Tokens per optimizer step when the data is a token corpus: N x T of the
/// model's token input per micro-batch.
static int64_t tokensPerStep(const rt::Artifact &a, const rt::TrainResult &r) {
  const rt::Program *p = a.findProgram("accumulate");
  if (!p)
    p = a.findProgram("train_step");
  for (int32_t id : p->inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    if (t.name != "labels" && t.dtype == rt::DType::I64 && t.shape.size() == 2)
      return t.shape[0] * t.shape[1] * r.gradAccum;
  }
  return 0;
}

int run::runTrain(int argc, char **argv) {
  Flags f;
  try {
    run::Args args = trainArgs(f);
    if (!args.parse(argc, argv, 2))
      return 0;
    rt::DeviceRequest req = rt::parseDeviceRequest(f.device);
    rt::TrainOptions o = trainOptions(f);
    auto evalBindings = rt::parseDataBindings(f.evalData);
    // Without a GPU, --device cuda fails before anything is read.
    rt::DeviceProbe probe;
    if (req == rt::DeviceRequest::Cuda) {
      probe = rt::probeDevices();
      rt::requireGpu(probe);
    }
    rt::Artifact a = rt::readArtifact(f.artifact);
    rt::DeviceChoice choice = req == rt::DeviceRequest::Cuda
                                  ? rt::selectDevice(req, a, f.artifact, probe)
                                  : rt::selectDevice(req, a, f.artifact);
    bool gpu = choice.device == rt::Device::Cuda;
    if (!choice.note.empty())
      std::fprintf(stderr, "tcc-run: %s\n", choice.note.c_str());
    if (gpu)
      std::fprintf(stderr, "tcc-run: GPU %s\n",
                   rt::cuda::deviceDescription().c_str());
    installStopHandlers();
    rt::ExecMode mode = f.eager ? rt::ExecMode::Eager : rt::ExecMode::Compiled;
    rt::resetPeakRss();
    int64_t rssBefore = rt::readProcessMemory().rssBytes;
    std::unique_ptr<rt::Session> cpu;
    std::unique_ptr<rt::cuda::CudaSession> cuda;
    rt::TrainResult r;
    if (gpu) {
      rt::cuda::CudaOptions co;
      co.tf32 = f.tf32;
      co.graphs = !f.noGraphs;
      cuda = std::make_unique<rt::cuda::CudaSession>(a, mode, co);
      r = rt::cuda::trainOnGpu(*cuda, a, o);
    } else {
      cpu = std::make_unique<rt::Session>(a, mode);
      r = rt::train(*cpu, a, o);
    }
    if (r.interruptedBy) {
      std::string where = r.checkpointsWritten
                              ? "checkpoint written to " + r.lastCheckpoint
                              : std::string("no checkpoint (no "
                                            "--checkpoint-dir)");
      std::fflush(stdout);
      std::fprintf(stderr, "%sinterrupted at step %lld; %s\n",
                   o.progress && isatty(2) ? "\n" : "", (long long)r.steps,
                   where.c_str());
      return 128 + r.interruptedBy;
    }
    rt::MemoryStats m = gpu ? cuda->memory() : cpu->memory();
    double ms = rt::median(r.stepSeconds) * 1e3;
    double sps = ms > 0 ? r.batchSize / (ms / 1e3) : 0.0;
    std::string resumed =
        r.resumedFrom.empty()
            ? ""
            : ", resumed at step " + std::to_string(r.startStep);
    std::string tokens;
    if (int64_t t = o.tokensPath.empty() ? 0 : tokensPerStep(a, r))
      tokens = " (" + std::to_string((long long)(sps * t / r.batchSize)) +
               " tokens/s)";
    std::string copyWait;
    if (gpu) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", GPU input-copy wait %.3f s",
                    r.copyWaitSeconds);
      copyWait = buf;
    }
    std::printf("trained %lld steps (%s, %s%s) in %.2f s: final loss %.4f, "
                "median step %.3f ms, %.0f samples/s%s, tensor memory peak "
                "%s, data wait %.2f s%s\n",
                (long long)(r.steps - r.startStep),
                f.eager ? "eager" : "compiled", rt::deviceName(choice.device),
                resumed.c_str(), r.totalSeconds,
                r.losses.empty() ? r.resumedLoss : r.losses.back(), ms, sps,
                tokens.c_str(), formatBytes(m.peakBytes).c_str(),
                r.dataWaitSeconds, copyWait.c_str());
    if (rt::lossScaleSkippedTensor(a) >= 0)
      std::printf("fp16 loss scaling: %lld of %lld steps skipped (Inf/NaN "
                  "gradients), loss scale now %g\n",
                  (long long)r.skippedSteps, (long long)(r.steps - r.startStep),
                  r.lossScale);
    int64_t rssGrowth = rt::readProcessMemory().peakRssBytes - rssBefore;
    std::printf("memory: %s persistent %s, temporaries peak %s, measured peak "
                "%s; process peak RSS +%s since the session was built\n",
                gpu ? "device" : "host", formatBytes(m.persistentBytes).c_str(),
                formatBytes(m.tempPeakBytes).c_str(),
                formatBytes(m.measuredPeakBytes).c_str(),
                formatBytes(rssGrowth).c_str());
    if (r.checkpointsWritten)
      std::printf("wrote %lld checkpoint(s) in %.2f s, the last %s\n",
                  (long long)r.checkpointsWritten, r.checkpointSeconds,
                  r.lastCheckpoint.c_str());
    if (!evalBindings.empty()) {
      rt::EvalResult e = gpu ? rt::cuda::evaluateOnGpu(*cuda, a, evalBindings)
                             : rt::evaluate(*cpu, a, evalBindings);
      std::printf("eval: %lld samples, accuracy %.2f%%, loss %.4f\n",
                  (long long)e.samples, e.accuracy * 100, e.loss);
    }
  } catch (const rt::Error &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tcc-run train: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
