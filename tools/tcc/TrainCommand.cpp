//===- TrainCommand.cpp - tcc train ---------------------------------------===//
#include "compiler/OnnxModelIO.h"
#include "compiler/codegen/MemoryReport.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/core/Session.h"
#include "runtime/cuda/CudaTrainLoop.h"
#include "runtime/cuda/DeviceSelect.h"
#include "runtime/train/TrainLoop.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <unistd.h>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::trainCmd));
static cl::list<std::string>
    data("data", cl::desc("Input data: NAME=FILE (.npy or .csv)"),
         cl::value_desc("name=file"), cl::sub(tool::trainCmd));
static cl::opt<int64_t> steps("steps", cl::desc("Number of training steps"),
                              cl::init(-1), cl::sub(tool::trainCmd));
static cl::opt<int64_t> epochs("epochs", cl::desc("Number of epochs"),
                               cl::init(-1), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    tokens("tokens",
           cl::desc("A token corpus for a language model: windows of T+1 "
                    "tokens feed the int64 input [N,T] and labels [N,T]"),
           cl::value_desc("file"), cl::sub(tool::trainCmd));
static cl::opt<std::string> tokenType("token-type",
                                      cl::desc("Token width: u8 or u16 "
                                               "(little-endian)"),
                                      cl::init("u8"), cl::sub(tool::trainCmd));
static cl::opt<uint64_t> seed("seed", cl::desc("Shuffling seed"), cl::init(0),
                              cl::sub(tool::trainCmd));
static cl::opt<bool> noShuffle("no-shuffle",
                               cl::desc("Take batches in file order"),
                               cl::sub(tool::trainCmd));
static cl::opt<std::string> metrics("metrics",
                                    cl::desc("Write one JSON line per step"),
                                    cl::value_desc("file.jsonl"),
                                    cl::sub(tool::trainCmd));
static cl::opt<std::string>
    exportPath("export",
               cl::desc("Write the ONNX model with the trained weights"),
               cl::value_desc("trained.onnx"), cl::sub(tool::trainCmd));
static cl::opt<bool> eager("eager",
                           cl::desc("Run op by op, a fresh buffer per result, "
                                    "as a framework does"),
                           cl::sub(tool::trainCmd));
static cl::list<std::string>
    evalData("eval-data",
             cl::desc("Held-out data for accuracy after training: NAME=FILE"),
             cl::value_desc("name=file"), cl::sub(tool::trainCmd));
static cl::opt<bool> noProgress("no-progress",
                                cl::desc("No live progress line"),
                                cl::sub(tool::trainCmd));
static cl::opt<unsigned> prefetch("prefetch",
                                  cl::desc("Batches the feeder keeps ready"),
                                  cl::init(4), cl::sub(tool::trainCmd));
static cl::opt<std::string> checkpointDir(
    "checkpoint-dir",
    cl::desc("Write checkpoints here (every --checkpoint-every steps and "
             "after the last step)"),
    cl::value_desc("dir"), cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("Steps between checkpoints (0: only at the end)"),
                    cl::value_desc("N"), cl::init(0), cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    keepCheckpoints("keep-checkpoints",
                    cl::desc("Checkpoints to keep; older ones are deleted"),
                    cl::value_desc("K"), cl::init(3), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    resume("resume",
           cl::desc("Continue from the newest valid checkpoint in a directory "
                    "(or from a checkpoint file)"),
           cl::value_desc("dir|file"), cl::sub(tool::trainCmd));

static cl::opt<std::string> onNonfinite(
    "on-nonfinite",
    cl::desc("What a NaN/Inf loss, parameter or state does: 'stop' (the "
             "default: exit 1 naming the step and tensor). 'skip' (fp16 "
             "loss scaling only): a step whose gradients overflowed, which "
             "the step itself skips, may also have a NaN/Inf loss and the "
             "run goes on"),
    cl::value_desc("stop|skip"), cl::init("stop"), cl::sub(tool::trainCmd));

static cl::opt<std::string> device(
    "device",
    cl::desc("Where to train: 'auto' (the default: the GPU when the artifact "
             "was compiled with --target cuda and a GPU is present, else the "
             "CPU), 'cpu' or 'cuda'"),
    cl::value_desc("auto|cpu|cuda"), cl::init("auto"), cl::sub(tool::trainCmd));
static cl::opt<bool>
    tf32("tf32",
         cl::desc("GPU: fp32 matrix products on TF32 tensor cores (ignored on "
                  "the CPU)"),
         cl::sub(tool::trainCmd));

/// The signal that asked the run to stop (SIGINT, SIGTERM), 0 while none
/// has. The loop polls it between steps; the handler only stores into it,
/// which is async-signal-safe for a lock-free atomic.
static std::atomic<int> stopRequested{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "the signal handler needs a lock-free atomic");

static void onStopSignal(int sig) {
  // The first signal wins; later ones (a second Ctrl-C while the last
  // checkpoint is written) are ignored, so the checkpoint is completed.
  int none = 0;
  stopRequested.compare_exchange_strong(none, sig);
}

/// Installs the handler for SIGINT and SIGTERM for the whole command.
/// SA_RESTART: a checkpoint write in progress is not cut by EINTR.
static void installStopHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

/// Writes the artifact's ONNX model with the session's current parameters
/// and running statistics (state tensors named after an initializer; the
/// optimizer's state has no initializer and stays out). `data(id)` holds
/// tensor id's values (a CPU session's buffer, or a GPU tensor's download).
static void exportTrained(const rt::Artifact &a,
                          const std::function<const void *(int32_t)> &data,
                          const std::string &path) {
  if (a.onnxOffset < 0)
    throw rt::Error("the artifact carries no ONNX model to export");
  std::string bad = rt::findNonFinite(a.tensors, data);
  if (!bad.empty())
    throw rt::Error("refusing to export " + path + ": " + bad);
  std::map<std::string, std::vector<float>> values, state;
  for (int32_t id = 0; id < (int32_t)a.tensors.size(); ++id) {
    const rt::TensorInfo &t = a.tensors[id];
    bool isState = t.kind == rt::TensorKind::State;
    if ((t.kind != rt::TensorKind::Param && !isState) ||
        t.dtype != rt::DType::F32)
      continue;
    const float *p = static_cast<const float *>(data(id));
    (isState ? state : values)[t.name].assign(p, p + t.numElements());
  }
  std::string bytes(
      reinterpret_cast<const char *>(a.blob.data()) + a.onnxOffset, a.onnxSize);
  std::string err;
  if (!writeTrainedOnnx(bytes, values, path, err, state))
    throw rt::Error(err);
}

int tool::runTrain() {
  try {
    rt::DeviceRequest req = rt::parseDeviceRequest(device);
    rt::Artifact a = rt::readArtifact(input);
    rt::DeviceChoice choice = rt::selectDevice(req, a, input);
    bool gpu = choice.device == rt::Device::Cuda;
    if (!choice.note.empty())
      errs() << "tcc train: " << choice.note << "\n";
    rt::TrainOptions o;
    o.data = rt::parseDataBindings(data);
    o.steps = steps;
    o.epochs = epochs;
    o.seed = seed;
    o.shuffle = !noShuffle;
    o.metricsPath = metrics;
    o.progress = !noProgress;
    o.prefetch = prefetch;
    o.tokensPath = tokens;
    if (tokenType != "u8" && tokenType != "u16")
      throw rt::Error("--token-type must be u8 or u16, got '" + tokenType +
                      "'");
    o.tokenBytes = tokenType == "u16" ? 2 : 1;
    o.checkpointDir = checkpointDir;
    o.checkpointEvery = checkpointEvery;
    o.keepCheckpoints = keepCheckpoints;
    o.resumeFrom = resume;
    if (onNonfinite != "stop" && onNonfinite != "skip")
      throw rt::Error("--on-nonfinite must be 'stop' or 'skip', got '" +
                      onNonfinite + "'");
    o.skipNonfinite = onNonfinite == "skip";
    o.stopSignal = &stopRequested;
    installStopHandlers();
    auto evalBindings = rt::parseDataBindings(evalData);
    // RSS growth from here covers the session, the feeder and OpenBLAS.
    rt::resetPeakRss();
    int64_t rssBefore = rt::readProcessMemory().rssBytes;
    rt::ExecMode mode = eager ? rt::ExecMode::Eager : rt::ExecMode::Compiled;
    std::unique_ptr<rt::Session> cpu;
    std::unique_ptr<rt::cuda::CudaSession> cuda;
    rt::TrainResult r;
    if (gpu) {
      rt::cuda::CudaOptions co;
      co.tf32 = tf32;
      cuda = std::make_unique<rt::cuda::CudaSession>(a, mode, co);
      r = rt::cuda::trainOnGpu(*cuda, a, o);
    } else {
      cpu = std::make_unique<rt::Session>(a, mode);
      r = rt::train(*cpu, a, o);
    }
    if (r.interruptedBy) {
      // No evaluation or export of a run cut short: it resumes from the
      // checkpoint instead.
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
    std::string resumed =
        r.resumedFrom.empty()
            ? ""
            : ", resumed at step " + std::to_string(r.startStep);
    std::string copyWait;
    if (gpu) {
      resumed = ", cuda" + resumed;
      char buf[64];
      std::snprintf(buf, sizeof buf, ", GPU input-copy wait %.3f s",
                    r.copyWaitSeconds);
      copyWait = buf;
    }
    std::printf("trained %lld steps (%s%s) in %.2f s: final loss %.4f, median "
                "step %.3f ms, %.0f samples/s, tensor memory peak %s, data "
                "wait %.2f s%s\n",
                (long long)(r.steps - r.startStep),
                eager ? "eager" : "compiled", resumed.c_str(), r.totalSeconds,
                r.losses.empty() ? r.resumedLoss : r.losses.back(), ms,
                ms > 0 ? r.batchSize / (ms / 1e3) : 0.0,
                formatBytes(m.peakBytes).c_str(), r.dataWaitSeconds,
                copyWait.c_str());
    if (rt::lossScaleSkippedTensor(a) >= 0)
      std::printf("fp16 loss scaling: %lld of %lld steps skipped (Inf/NaN "
                  "gradients), loss scale now %g\n",
                  (long long)r.skippedSteps,
                  (long long)(r.steps - r.startStep), r.lossScale);
    MemoryReport predicted = analyzeMemory(a);
    int64_t rssGrowth = rt::readProcessMemory().peakRssBytes - rssBefore;
    std::printf("memory: predicted peak %s (compiled plan), measured peak %s "
                "(session allocations + kernel scratch), process peak RSS "
                "+%s since the session was built\n",
                formatBytes(predicted.predictedPeak(
                                predicted.trainingPrograms()))
                    .c_str(),
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
    if (!exportPath.empty()) {
      // On a GPU, each tensor the export reads is downloaded once.
      std::map<int32_t, std::vector<uint8_t>> host;
      auto data = [&](int32_t id) -> const void * {
        if (!gpu)
          return cpu->data(id);
        std::vector<uint8_t> &v = host[id];
        if (v.empty()) {
          v.resize(static_cast<size_t>(a.tensors[id].byteSize()));
          cuda->download(id, v.data());
        }
        return v.data();
      };
      exportTrained(a, data, exportPath);
      std::printf("exported %s\n", exportPath.c_str());
    }
  } catch (const rt::Error &e) {
    errs() << "tcc train: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
