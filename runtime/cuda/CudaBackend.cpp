//===- CudaBackend.cpp - The CUDA backend's registration ------------------===//
//
// Registers "cuda" when its module (libtcc_backend_cuda.so) loads: the
// runtime loads the module only when a CUDA session is asked for, so a run
// on the CPU never maps cudart, cuBLASLt or cuDNN.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Backend.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/CudaSession.h"

namespace tcc::rt::cuda {
namespace {

class CudaBackend final : public Backend {
public:
  const char *name() const override { return "cuda"; }
  bool available(std::string *why) const override {
    return deviceAvailable(why);
  }
  bool runs(const Artifact &a) const override { return a.device.present(); }
  /// An entry with a launcher (every kernel; the convolutions only in a
  /// build with cuDNN).
  bool hasKernel(abi::KernelId id) const override {
    return findCudaKernel(abi::name(id)) != nullptr;
  }
  std::string deviceDescription() const override {
    return cuda::deviceDescription();
  }
  int64_t memoryBytes() const override { return freeDeviceMemory(); }
  std::unique_ptr<Session> open(const Artifact &a, ExecMode mode,
                                const SessionOptions &o) const override {
    return std::make_unique<CudaSession>(a, mode, o);
  }
};

const BackendRegistration registration(std::make_unique<CudaBackend>());

} // namespace
} // namespace tcc::rt::cuda
