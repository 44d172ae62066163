//===- CudaNonFinite.cu - Counting NaN/Inf on the device ------------------===//
//
// A grid-stride loop; each thread counts in a register and adds its count
// with one atomic only when it is non-zero, so a healthy tensor costs no
// atomics at all and the result does not depend on scheduling.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaNonFinite.h"

#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

__global__ void countNonFiniteKernel(const void *x, int tx, long long n,
                                     unsigned long long *count) {
  unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float v = ldf(x, tx, i);
    // False for NaN (every comparison is) and for +-Inf.
    if (!(fabsf(v) <= 3.40282347e38f))
      ++bad;
  }
  if (bad)
    atomicAdd(count, bad);
}

void countNonFinite(const TensorView &t, unsigned long long *count,
                    cudaStream_t stream, int smCount) {
  if (t.dtype != DType::F32 && t.dtype != DType::BF16 && t.dtype != DType::F16)
    throw Error("countNonFinite: tensor of dtype " +
                std::string(dtypeName(t.dtype)) + " is not a float tensor");
  (void)stream; // unused when emulated
  if (t.numel == 0)
    return;
  TCC_LAUNCH(countNonFiniteKernel, gridFor(t.numel, kBlock, smCount), kBlock,
             stream)
  (t.data, dt(t), static_cast<long long>(t.numel), count);
  checkLaunch("countNonFinite");
}

} // namespace tcc::rt::cuda
