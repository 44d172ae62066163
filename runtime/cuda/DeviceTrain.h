//===- DeviceTrain.h - One training run on the CPU or a GPU -----*- C++ -*-===//
//
// What `tcc train` and `tcc-run train` share below their command lines: the
// flags as TrainOptions, the session on the device DeviceSelect chose, the
// loop (runtime/train/TrainLoop.h or runtime/cuda/CudaTrainLoop.h) and the
// summary lines. The tools differ only in how they parse flags and in what
// they add (tcc: the predicted memory and the ONNX export; tcc-run: the
// runtime's own memory line).
//
// Built with and without the CUDA backend: without it, a Device::Cuda run
// fails with CudaSession's "built without the CUDA backend" Error.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_DEVICETRAIN_H
#define TCC_RUNTIME_CUDA_DEVICETRAIN_H

#include "runtime/core/Session.h"
#include "runtime/cuda/CudaSession.h"
#include "runtime/cuda/DeviceSelect.h"
#include "runtime/train/TrainLoop.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// The training flags both trainers take, as given on the command line.
struct TrainFlags {
  std::string device = "auto", tokens, tokenType = "u8", metrics;
  std::string checkpointDir, resume, onNonfinite = "stop";
  std::vector<std::string> data, evalData;
  int64_t steps = -1, epochs = -1, prefetch = 4;
  int64_t checkpointEvery = 0, keepCheckpoints = 3;
  int64_t seed = 0; // shuffling seed, >= 0
  bool eager = false, tf32 = false, noShuffle = false, noProgress = false;
  bool noGraphs = false;
};

/// The loop's options from the flags, with the stop flag of
/// installStopHandlers. Throws Error naming a bad --token-type,
/// --on-nonfinite or NAME=FILE binding.
TrainOptions trainOptionsOf(const TrainFlags &f,
                            const std::atomic<int> *stopSignal);

/// The GPU options the flags ask for (--tf32, --no-cuda-graphs).
cuda::CudaOptions cudaOptionsOf(const TrainFlags &f);

/// One session on one device, trained and then evaluated or read back.
class DeviceTrainRun {
public:
  /// Builds the session (on a GPU: allocates and uploads the weights).
  DeviceTrainRun(const Artifact &artifact, Device device, ExecMode mode,
                 const cuda::CudaOptions &cudaOptions);
  ~DeviceTrainRun();
  DeviceTrainRun(const DeviceTrainRun &) = delete;
  DeviceTrainRun &operator=(const DeviceTrainRun &) = delete;

  TrainResult train(const TrainOptions &opts);
  EvalResult evaluate(const std::vector<DataBinding> &data);
  MemoryStats memory() const;
  bool onGpu() const { return cuda_ != nullptr; }
  /// Tensor `id`'s values on the host: the CPU session's buffer, or a
  /// download of the GPU tensor (once; kept for later calls).
  const void *hostData(int32_t id);

private:
  const Artifact &artifact_;
  std::unique_ptr<Session> cpu_;
  std::unique_ptr<cuda::CudaSession> cuda_;
  std::map<int32_t, std::vector<uint8_t>> downloads_;
};

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

#endif // TCC_RUNTIME_CUDA_DEVICETRAIN_H
