//===- CudaSession.h - Executes an artifact's programs on a GPU -*- C++ -*-===//
//
// The GPU counterpart of runtime/core/Session.h, for artifacts compiled with
// `tcc compile --target cuda`. It runs the same programs (the same instrs,
// tensor table and memory plan) with CUDA kernels:
//  - memory: one cudaMalloc holds every persistent tensor and one arena
//    that the programs share (the largest program's; each program's temps
//    laid out in it by the compiler's static plan) (Compiled), or
//    persistent tensors in that block and each temporary from the
//    stream-ordered pool (cudaMallocAsync) around its uses, as a framework's
//    caching allocator does (Eager);
//  - `matmul`: cuBLASLt (runtime/cuda/CudaGemm.h), algorithm chosen once per
//    shape and cached; fp32 (TF32 when CudaOptions::tf32), bf16, fp16;
//  - `fused`: the artifact's cubin (Artifact::device, ABI in Artifact.h),
//    loaded with cudaLibraryLoadData;
//  - everything else: hand-written kernels (runtime/cuda/CudaKernels*.cu),
//    runs of adamw_update as one multi-tensor launch.
// All work is enqueued on one compute stream; run() does not wait.
//
// The header needs no CUDA header: streams and events are opaque pointers,
// so tools include it whether or not the CUDA backend is built
// (TCC_ENABLE_CUDA). Without it every entry point throws Error saying so.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDASESSION_H
#define TCC_RUNTIME_CUDA_CUDASESSION_H

#include "runtime/core/Artifact.h"
#include "runtime/core/Session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

/// Whether this runtime was built with the CUDA backend.
bool backendBuilt();

/// Whether a usable CUDA device is present. When not, `why` (if given) says
/// why in a user's terms: "this runtime was built without CUDA", "no CUDA
/// driver (cudaGetDeviceCount: CUDA driver version is insufficient ...)",
/// "no CUDA device". Never throws; any CUDA error counts as no GPU.
bool deviceAvailable(std::string *why = nullptr);

/// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for device 0; throws Error
/// without one.
std::string deviceDescription();

struct CudaOptions {
  /// fp32 GEMMs may use TF32 tensor cores (cuBLASLt compute type
  /// CUBLAS_COMPUTE_32F_FAST_TF32).
  bool tf32 = false;
  /// matmul_epilogue as one cuBLASLt GEMM with the epilogue; false: a plain
  /// GEMM and the element-wise kernels (its fallback when cuBLASLt has no
  /// algorithm for an epilogue; tests run both).
  bool gemmEpilogues = true;
  /// Compiled mode: replay each program's launches as a CUDA graph
  /// (runtime/cuda/CudaGraphs.h); off, or when profiling, every instr is
  /// launched on its own.
  bool graphs = true;
};

class CudaSession {
public:
  /// Checks the artifact (its device code must exist and be built for this
  /// GPU's architecture; every instr needs a CUDA kernel, an Error names the
  /// first that has none: "program 'train_step' instr 12 (conv2d): no CUDA
  /// kernel yet; run it on the CPU (--device cpu)"), loads the cubin,
  /// allocates device memory and uploads initial values (blob data or the
  /// seeded initializers, runtime/core/Initializer.h). Throws Error.
  CudaSession(const Artifact &artifact, ExecMode mode,
              const CudaOptions &opts = {});
  ~CudaSession();
  CudaSession(const CudaSession &) = delete;
  CudaSession &operator=(const CudaSession &) = delete;

  /// The compute stream (a cudaStream_t) every program runs on.
  void *stream() const;

  /// Device pointer of tensor `id` (null for temps not allocated now:
  /// compiled, a temp has one from its program's run until another program
  /// runs, since the programs share the arena).
  void *deviceData(int32_t id) const;
  /// Makes input tensor `id` read `devicePtr` from now on (it must hold
  /// byteSize() bytes and stay valid while programs that read it run): the
  /// feeder rotates its device buffers this way instead of copying.
  void bindInput(int32_t id, void *devicePtr);

  /// Enqueues every instr of `program` on stream(); returns without
  /// waiting. Throws Error for an unknown program or a failed launch.
  void run(const std::string &program);
  /// Waits for stream(); throws Error for a kernel error raised since the
  /// last synchronize (a label out of range: names the tensor, position and
  /// value) or a CUDA error.
  void synchronize();

  /// Synchronous copies between tensor `id` and host memory (byteSize()
  /// bytes); they wait for the stream first.
  void download(int32_t id, void *host);
  void upload(int32_t id, const void *host);

  /// Device bytes: persistentBytes (params, state, inputs, constants),
  /// tempPeakBytes (the shared arena, or the eager peak of live
  /// temporaries), and
  /// measuredPeakBytes (what cudaMalloc/cudaMallocAsync handed out at most,
  /// plus cuBLASLt workspace).
  MemoryStats memory() const;

  /// Per-kernel GPU time from CUDA events around each instr (off by
  /// default; on, every run() synchronizes at its end). `byShape`: GEMMs
  /// and attention per problem shape (rt::profileShape).
  void setProfiling(bool on, bool byShape = false);
  std::vector<Session::KernelTime> profile() const;

  const std::vector<TensorInfo> &tensors() const;

  /// "on: 2 graphs, 40 replays", "off (not asked for)", "off (eager mode)"
  /// or "off: <why capture failed>".
  std::string graphStatus() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDASESSION_H
