//===- CudnnConv.h - Convolutions through cuDNN -----------------*- C++ -*-===//
//
// conv2d, conv2d_grad_input and conv2d_grad_weight on the GPU, by cuDNN's
// convolution API (cudnnConvolutionForward / BackwardData / BackwardFilter).
// Everything that does not depend on the step's data is done once, when the
// session is made: the descriptors, the algorithm (cuDNN's heuristics,
// CudnnConvPlan.h's rule) and its workspace, which is part of the session's
// kernel scratch. A launch is then at most a padding copy and one or two
// cuDNN calls on the session's stream: no allocation, no synchronization,
// so it is captured in the session's CUDA graphs like any kernel.
//
// cuDNN is optional at build time (runtime/CMakeLists.txt links it when
// the toolkit has it: TCC_CUDA_HAS_CUDNN). Without it the kernel table has
// no convolution, and a session refuses a convolution saying so.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDNNCONV_H
#define TCC_RUNTIME_CUDA_CUDNNCONV_H

#include "runtime/cuda/CudaKernels.h"

#include <memory>
#include <string>

namespace tcc::rt::cuda {

/// Whether this build of the CUDA backend has cuDNN.
bool cudnnBuilt();

/// cuDNN's library handle, bound to one stream. Throws Error without cuDNN
/// or when cudnnCreate fails.
class CudnnHandle {
public:
  explicit CudnnHandle(cudaStream_t stream);
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle &) = delete;
  CudnnHandle &operator=(const CudnnHandle &) = delete;
  void *get() const { return handle_; }

private:
  void *handle_ = nullptr;
};

/// One convolution instr's descriptors and algorithm.
class CudnnConv {
public:
  /// `in` is a checked conv2d, conv2d_grad_input or conv2d_grad_weight;
  /// fp32 convolutions use TF32 tensor cores only when `tf32`. Throws Error
  /// when cuDNN has no algorithm for it.
  CudnnConv(const CudnnHandle &h, const Instr &in,
            const std::vector<TensorInfo> &tensors, bool tf32);
  ~CudnnConv();
  CudnnConv(const CudnnConv &) = delete;
  CudnnConv &operator=(const CudnnConv &) = delete;

  /// Scratch bytes a launch uses: the padded copy, then the workspace.
  int64_t scratchBytes() const;
  /// "fwd algo 1, deterministic, 4096 B workspace" (for logs and tests).
  std::string describe() const;
  /// Enqueues the instr on the handle's stream (a.scratch holds at least
  /// scratchBytes()).
  void run(const CudaArgs &a) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDNNCONV_H
