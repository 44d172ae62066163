//===- CudaSession.h - Executes an artifact's programs on a GPU -*- C++ -*-===//
//
// The CUDA backend's Session (runtime/core/Session.h), for artifacts
// compiled with `tcc compile --target cuda`. It runs the same programs (the
// same instrs, tensor table and memory plan) with CUDA kernels:
//  - memory: one cudaMalloc holds every persistent tensor and one arena
//    that the programs share (the largest program's; each program's temps
//    laid out in it by the compiler's static plan) (Compiled), or
//    persistent tensors in that block and each temporary from the
//    stream-ordered pool (cudaMallocAsync) around its uses, as a framework's
//    caching allocator does (Eager);
//  - `matmul`: cuBLASLt (runtime/cuda/CudaGemm.h), algorithm chosen once per
//    shape and cached; fp32 (TF32 when SessionOptions::tf32), bf16, fp16;
//  - `fused`: the artifact's cubin (Artifact::device, ABI in Artifact.h),
//    loaded with cudaLibraryLoadData;
//  - conv2d and its gradients: cuDNN (runtime/cuda/CudnnConv.h), descriptors
//    and algorithm set up once per instr;
//  - everything else: hand-written kernels (runtime/cuda/CudaKernels*.cu),
//    runs of adamw_update as one multi-tensor launch.
// All work is enqueued on one compute stream; run() does not wait
// (traits().asynchronous). Input slots are pinned host buffers and device
// buffers copied on a stream of their own (CudaInputSlots.cpp); events are
// CUDA events on the compute stream.
//
// Part of the CUDA backend's module (libtcc_backend_cuda.so), which the
// runtime loads only when a CUDA session is asked for.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDASESSION_H
#define TCC_RUNTIME_CUDA_CUDASESSION_H

#include "runtime/core/Artifact.h"
#include "runtime/core/Backend.h"
#include "runtime/core/Session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

/// Whether a usable CUDA device is present. When not, `why` (if given) says
/// why in a user's terms: "no CUDA driver (cudaGetDeviceCount: CUDA driver
/// version is insufficient ...)", "no CUDA device". Never throws; any CUDA
/// error counts as no GPU.
bool deviceAvailable(std::string *why = nullptr);

/// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for device 0; throws Error
/// without one.
std::string deviceDescription();
/// Free memory of device 0 now (cudaMemGetInfo), 0 without a device.
int64_t freeDeviceMemory();

class CudaSession final : public Session {
public:
  /// Checks the artifact (its device code must exist and be built for this
  /// GPU's architecture; every instr needs a CUDA kernel, an Error names the
  /// first that has none: "program 'train_step' instr 12 (conv2d): no CUDA
  /// kernel: this build of the CUDA backend has no cuDNN ..."), loads the
  /// cubin, sets up the convolutions' cuDNN plans,
  /// allocates device memory and uploads initial values (blob data or the
  /// seeded initializers, runtime/core/Initializer.h). Throws Error.
  CudaSession(const Artifact &artifact, ExecMode mode,
              const SessionOptions &opts = {});
  ~CudaSession() override;

  /// The compute stream (a cudaStream_t) every program runs on.
  void *stream() const;
  /// Device pointer of tensor `id` (null for temps not allocated now:
  /// compiled, a temp has one from its program's run until another program
  /// runs, since the programs share the arena).
  void *deviceData(int32_t id) const;
  /// Makes input tensor `id` read `devicePtr` from now on (it must hold
  /// byteSize() bytes and stay valid while programs that read it run): the
  /// input slots rotate their device buffers this way instead of copying.
  void bindInput(int32_t id, void *devicePtr);

  const char *backend() const override { return "cuda"; }
  std::string deviceDescription() const override;
  ExecMode mode() const override;
  const std::vector<TensorInfo> &tensors() const override;
  SessionTraits traits() const override;

  /// Synchronous copies; they wait for the stream first.
  void upload(int32_t id, const void *host) override;
  void download(int32_t id, void *host) override;
  void readAsync(int32_t id, void *host, size_t bytes) override;
  void writeAsync(int32_t id, const void *host, size_t bytes) override;
  /// Pinned (cudaHostAlloc): copies from and to it are DMA'd without a
  /// staging copy and run asynchronously.
  std::unique_ptr<HostBuffer> allocateHost(size_t bytes) override;
  /// cudaHostRegister: the optimizer offload's gradients and parameters in
  /// the host session's own buffers, copied without a staging copy.
  void registerHost(void *host, size_t bytes) override;
  void unregisterHost(void *host) override;
  std::unique_ptr<InputSlots> inputSlots(const std::vector<int32_t> &targets,
                                         size_t count) override;

  /// Enqueues every instr of `program` on stream(); returns without
  /// waiting. Throws Error for an unknown program or a failed launch.
  void run(const std::string &program) override;
  /// Waits for stream(); throws Error for a kernel error raised since the
  /// last synchronize (a label out of range: names the tensor, position and
  /// value) or a CUDA error.
  void synchronize() override;
  std::unique_ptr<Event> createEvent() override;
  void record(Event &e) override;
  void wait(Event &e) override;
  double seconds(Event &from, Event &to) override;
  /// Counts NaN/Inf of each tensor on the device (one read at memory
  /// speed, one word per tensor back).
  bool anyNonFinite(const std::vector<int32_t> &ids) override;

  /// Device bytes: persistentBytes (params, state, inputs, constants),
  /// tempPeakBytes (the shared arena, or the eager peak of live
  /// temporaries), and measuredPeakBytes (what cudaMalloc/cudaMallocAsync
  /// handed out at most, plus cuBLASLt workspace).
  MemoryStats memory() const override;
  /// Per-kernel GPU time from CUDA events around each instr (off by
  /// default; on, every run() synchronizes at its end).
  void setProfiling(bool on, bool byShape = false) override;
  std::vector<KernelTime> profile() const override;
  /// "on: 2 graphs, 40 replays", "off (not asked for)", "off (eager mode)"
  /// or "off: <why capture failed>".
  std::string graphStatus() const override;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDASESSION_H
