//===- CudaNonFinite.h - Counting NaN/Inf on the device ---------*- C++ -*-===//
//
// The training loop scans parameters and optimizer state for NaN/Inf every
// few steps. On the GPU that used to mean downloading every weight (650 MB
// for GPT-2 small) and scanning it on one host thread: tens of ms per scan,
// more than a step. Counting on the device reads the weights once at memory
// speed and brings back one word per tensor; the weights travel only when
// something is wrong (to name the first bad value) or for a checkpoint.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDANONFINITE_H
#define TCC_RUNTIME_CUDA_CUDANONFINITE_H

#include "runtime/core/abi/Kernels.h"

#include <cuda_runtime_api.h>

namespace tcc::rt::cuda {

/// Enqueues a count of the non-finite elements of `t` (f32, bf16 or f16;
/// device memory) added to `*count` (device memory, zeroed by the caller).
/// Throws Error for another dtype or a failed launch.
void countNonFinite(const TensorView &t, unsigned long long *count,
                    cudaStream_t stream, int smCount);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDANONFINITE_H
