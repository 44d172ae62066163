//===- CudaDevice.cpp - Is there a GPU, and which -------------------------===//
//
// cudart is linked statically and loads the driver (libcuda.so.1) on first
// use, so a machine without a driver gets an error code here, not a failure
// to start: cudaGetDeviceCount returns cudaErrorInsufficientDriver (35)
// there. Any error, or zero devices, means "no GPU".
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaSession.h"

#include <cstdio>

namespace tcc::rt::cuda {

bool deviceAvailable(std::string *why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  std::string reason;
  if (e == cudaErrorInsufficientDriver)
    reason = std::string("no CUDA driver (cudaGetDeviceCount: ") +
             cudaGetErrorString(e) + ")";
  else if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    reason = "no CUDA device";
  else if (e != cudaSuccess)
    reason = std::string("CUDA is not usable (cudaGetDeviceCount: ") +
             cudaGetErrorName(e) + ", " + cudaGetErrorString(e) + ")";
  if (e != cudaSuccess)
    (void)cudaGetLastError(); // not sticky: leave no error behind
  if (reason.empty())
    return true;
  if (why)
    *why = reason;
  return false;
}

std::string deviceDescription() {
  std::string why;
  if (!deviceAvailable(&why))
    throw Error("no GPU: " + why);
  // The current device: the one a session chose (SessionOptions::gpu).
  int dev = 0;
  TCC_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  TCC_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB",
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024));
  return std::string(p.name) + " (sm_" + std::to_string(p.major) +
         std::to_string(p.minor) + ", " + mem + ")";
}

int64_t freeDeviceMemory() {
  if (!deviceAvailable(nullptr))
    return 0;
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess)
    return 0;
  return (int64_t)free;
}

} // namespace tcc::rt::cuda
