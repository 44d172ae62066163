//===- CudaTrainLoopStub.cpp - GPU training in a build without CUDA -------===//
//
// Built instead of CudaTrainLoop.cpp when TCC_ENABLE_CUDA is OFF: the entry
// points say honestly that the backend is not in this build (a CudaSession
// cannot be made there either, so they are not reached in practice).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaTrainLoop.h"

namespace tcc::rt::cuda {

[[noreturn]] static void notBuilt() {
  throw Error(
      "this runtime was built without the CUDA backend (TCC_ENABLE_CUDA=OFF)");
}

TrainResult trainOnGpu(CudaSession &, const Artifact &, const TrainOptions &) {
  notBuilt();
}

EvalResult evaluateOnGpu(CudaSession &, const Artifact &,
                         const std::vector<DataBinding> &) {
  notBuilt();
}

double timeRun(CudaSession &, const std::string &) { notBuilt(); }

} // namespace tcc::rt::cuda
