//===- CudaComm.cpp - Gradient buckets of a data-parallel run on CUDA -----===//
//
// The all_reduce kernels of a one-process run: nothing to average. Several
// ranks on CUDA need device-to-device reductions (NCCL), which this backend
// does not have yet; the load-time check says so instead of averaging
// nothing.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Comm.h"
#include "runtime/cuda/CudaKernels.h"

namespace tcc::rt::cuda {

int64_t prepare_all_reduce(const Instr &, const std::vector<TensorInfo> &) {
  LaunchInfo l = launchInfo();
  if (l.size > 1)
    throw Error("this run has " + std::to_string(l.size) +
                " ranks, and data-parallel training on CUDA (NCCL) is not "
                "built yet: run the ranks with --device cpu");
  return 0;
}

void launch_all_reduce(const CudaArgs &) {}

} // namespace tcc::rt::cuda
