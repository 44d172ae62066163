//===- CpuBackend.cpp - The CPU backend's registration
//---------------------===//
//
// Part of the runtime library itself: every artifact carries host code
// (its host library of generated kernels, or none at all), so the CPU can
// run anything and is always there.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Backend.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/cpu/Kernels.h"

namespace tcc::rt::cpu {
namespace {

class CpuBackend final : public Backend {
public:
  const char *name() const override { return "cpu"; }
  bool available(std::string *) const override { return true; }
  bool runs(const Artifact &) const override { return true; }
  bool hasKernel(abi::KernelId id) const override {
    return findKernel(abi::name(id)) != nullptr;
  }
  std::string deviceDescription() const override { return "cpu"; }
  int64_t memoryBytes() const override { return availableMemoryBytes(); }
  std::unique_ptr<Session> open(const Artifact &a, ExecMode mode,
                                const SessionOptions &o) const override {
    return std::make_unique<CpuSession>(a, mode, o.rank);
  }
};

const BackendRegistration registration(std::make_unique<CpuBackend>());

} // namespace
} // namespace tcc::rt::cpu
