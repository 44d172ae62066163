//===- DeviceTrain.cpp - One training run on the CPU or a GPU -------------===//
#include "runtime/cuda/DeviceTrain.h"

#include "runtime/core/ProcessMemory.h"
#include "runtime/cuda/CudaTrainLoop.h"

#include <cstdio>
#include <unistd.h>

using namespace tcc;
using namespace tcc::rt;

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
  if (f.tokenType != "u8" && f.tokenType != "u16")
    throw Error("--token-type must be u8 or u16, got '" + f.tokenType + "'");
  o.tokenBytes = f.tokenType == "u16" ? 2 : 1;
  o.checkpointDir = f.checkpointDir;
  o.checkpointEvery = f.checkpointEvery;
  o.keepCheckpoints = f.keepCheckpoints;
  o.resumeFrom = f.resume;
  if (f.onNonfinite != "stop" && f.onNonfinite != "skip")
    throw Error("--on-nonfinite must be 'stop' or 'skip', got '" +
                f.onNonfinite + "'");
  o.skipNonfinite = f.onNonfinite == "skip";
  o.stopSignal = stopSignal;
  return o;
}

cuda::CudaOptions rt::cudaOptionsOf(const TrainFlags &f) {
  cuda::CudaOptions co;
  co.tf32 = f.tf32;
  co.graphs = !f.noGraphs;
  return co;
}

DeviceTrainRun::DeviceTrainRun(const Artifact &artifact, Device device,
                               ExecMode mode,
                               const cuda::CudaOptions &cudaOptions)
    : artifact_(artifact) {
  if (device == Device::Cuda)
    cuda_ = std::make_unique<cuda::CudaSession>(artifact, mode, cudaOptions);
  else
    cpu_ = std::make_unique<Session>(artifact, mode);
}

DeviceTrainRun::~DeviceTrainRun() = default;

TrainResult DeviceTrainRun::train(const TrainOptions &opts) {
  return cuda_ ? cuda::trainOnGpu(*cuda_, artifact_, opts)
               : rt::train(*cpu_, artifact_, opts);
}

EvalResult DeviceTrainRun::evaluate(const std::vector<DataBinding> &data) {
  return cuda_ ? cuda::evaluateOnGpu(*cuda_, artifact_, data)
               : rt::evaluate(*cpu_, artifact_, data);
}

MemoryStats DeviceTrainRun::memory() const {
  return cuda_ ? cuda_->memory() : cpu_->memory();
}

const void *DeviceTrainRun::hostData(int32_t id) {
  if (!cuda_)
    return cpu_->data(id);
  std::vector<uint8_t> &v = downloads_[id];
  if (v.empty()) {
    v.resize(static_cast<size_t>(artifact_.tensors[id].byteSize()));
    cuda_->download(id, v.data());
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
  double sps = ms > 0 ? r.batchSize / (ms / 1e3) : 0.0;
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
  std::printf("trained %lld steps (%s, %s%s) in %.2f s: final loss %.4f, "
              "median step %.3f ms, %.0f samples/s%s, tensor memory peak "
              "%s, data wait %.2f s%s\n",
              (long long)(r.steps - r.startStep),
              mode == ExecMode::Eager ? "eager" : "compiled",
              deviceName(device), resumed.c_str(), r.totalSeconds,
              r.losses.empty() ? r.resumedLoss : r.losses.back(), ms, sps,
              tokens.c_str(), formatBytes(m.peakBytes).c_str(),
              r.dataWaitSeconds, copyWait.c_str());
  if (lossScaleSkippedTensor(artifact) >= 0)
    std::printf("fp16 loss scaling: %lld of %lld steps skipped (Inf/NaN "
                "gradients), loss scale now %g\n",
                (long long)r.skippedSteps, (long long)(r.steps - r.startStep),
                r.lossScale);
}
