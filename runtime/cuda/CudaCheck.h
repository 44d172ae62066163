//===- CudaCheck.h - CUDA and cuBLASLt status codes as Errors ---*- C++ -*-===//
//
// Every CUDA runtime and cuBLASLt call of the backend goes through one of
// these macros: a failure becomes a tcc::rt::Error naming the call (the
// function, not its arguments) and the library's own words, e.g.
//   "cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)".
// Kernel launches are checked with checkLaunch(name) right after the <<<>>>.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDACHECK_H
#define TCC_RUNTIME_CUDA_CUDACHECK_H

#include "runtime/core/Artifact.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

namespace tcc::rt::cuda {

/// "cudaMalloc(&p, n)" -> "cudaMalloc": the call's name without arguments.
inline std::string callName(const char *expr) {
  std::string s(expr);
  size_t paren = s.find('(');
  return paren == std::string::npos ? s : s.substr(0, paren);
}

inline void checkCuda(cudaError_t e, const char *expr) {
  if (e == cudaSuccess)
    return;
  // Clear the sticky "last error" of non-fatal failures so a later
  // cudaGetLastError does not report this one again.
  (void)cudaGetLastError();
  throw Error(callName(expr) + " failed: " + cudaGetErrorName(e) + " (" +
              cudaGetErrorString(e) + ")");
}

inline void checkCublas(cublasStatus_t s, const char *expr) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return;
  throw Error(callName(expr) + " failed: " + cublasLtGetStatusName(s) + " (" +
              cublasLtGetStatusString(s) + ")");
}

/// After a kernel launch: a bad configuration or a missing kernel image
/// shows here (errors inside the kernel show at the next synchronize).
inline void checkLaunch(const char *kernel) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(std::string("launching the CUDA kernel ") + kernel +
                " failed: " + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ")");
}

} // namespace tcc::rt::cuda

#define TCC_CUDA_CHECK(call) ::tcc::rt::cuda::checkCuda((call), #call)
#define TCC_CUBLAS_CHECK(call) ::tcc::rt::cuda::checkCublas((call), #call)

#endif // TCC_RUNTIME_CUDA_CUDACHECK_H
