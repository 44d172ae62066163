//===- CudaComm.cpp - Gradient buckets of a data-parallel run on CUDA -----===//
//
// all_reduce forks the bucket's averaging onto the session's communication
// stream (NCCL, CudaNccl.h) and returns, so the backward's next kernels run
// beside it; all_reduce_wait, which the compiler puts before the first
// reader, makes the compute stream wait for it on the device, never on the
// host. Both are stream events and NCCL launches, so a step with buckets
// is captured into a CUDA graph like any other. With one rank (and no
// TCC_NCCL=force) the session has no buckets and both do nothing.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Comm.h"
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/CudaNccl.h"

namespace tcc::rt::cuda {

// A build without NCCL refuses several ranks here, before the GPU is
// touched (the session's setup, CudaNccl.cpp, would too, later).
int64_t prepare_all_reduce(const Instr &, const std::vector<TensorInfo> &) {
#if !TCC_CUDA_HAS_NCCL
  LaunchInfo l = launchInfo();
  if (l.size > 1)
    throw Error("this run has " + std::to_string(l.size) +
                " ranks, and this build of the CUDA backend has no NCCL to "
                "average their gradients on the GPU (nccl.h was not found in "
                "the CUDA toolkit at configure time): run the ranks with "
                "--device cpu, or rebuild with NCCL");
#endif
  return 0;
}

void launch_all_reduce(const CudaArgs &a) {
  if (!a.buckets)
    return;
  if (abi::is(a.instr, abi::KernelId::AllReduce))
    a.buckets->start(abi::attrs<abi::KernelId::AllReduce>(a.instr).bucket, a.in,
                     a.stream);
  else
    a.buckets->wait(abi::attrs<abi::KernelId::AllReduceWait>(a.instr).bucket,
                    a.stream);
}

} // namespace tcc::rt::cuda
