//===- CudaSessionStub.cpp - The CUDA API of a build without CUDA ---------===//
//
// Built instead of the backend when TCC_ENABLE_CUDA is OFF, so tools link
// one API either way: every entry point says honestly that the backend is
// not in this build.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaSession.h"

namespace tcc::rt::cuda {

static const char *const kNotBuilt =
    "this runtime was built without the CUDA backend (TCC_ENABLE_CUDA=OFF)";

[[noreturn]] static void notBuilt() { throw Error(kNotBuilt); }

bool backendBuilt() { return false; }

bool deviceAvailable(std::string *why) {
  if (why)
    *why = kNotBuilt;
  return false;
}

std::string deviceDescription() { notBuilt(); }

struct CudaSession::Impl {};

CudaSession::CudaSession(const Artifact &, ExecMode, const CudaOptions &) {
  notBuilt();
}
CudaSession::~CudaSession() = default;
void *CudaSession::stream() const { notBuilt(); }
void *CudaSession::deviceData(int32_t) const { notBuilt(); }
void CudaSession::bindInput(int32_t, void *) { notBuilt(); }
void CudaSession::run(const std::string &) { notBuilt(); }
void CudaSession::synchronize() { notBuilt(); }
void CudaSession::download(int32_t, void *) { notBuilt(); }
void CudaSession::upload(int32_t, const void *) { notBuilt(); }
MemoryStats CudaSession::memory() const { notBuilt(); }
void CudaSession::setProfiling(bool, bool) { notBuilt(); }
std::vector<Session::KernelTime> CudaSession::profile() const { notBuilt(); }
const std::vector<TensorInfo> &CudaSession::tensors() const { notBuilt(); }
std::string CudaSession::graphStatus() const { notBuilt(); }

} // namespace tcc::rt::cuda
