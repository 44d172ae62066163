//===- NvrtcCompile.h - CUDA source to cubin with NVRTC ---------*- C++ -*-===//
//
// `tcc compile --target cuda` compiles the generated CUDA C ahead of time,
// so the runtime only loads a cubin (no compiler on the training machine).
// NVRTC is linked only into a tcc built with TCC_ENABLE_CUDA; otherwise
// these functions report that, and nvrtcAvailable() is false.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_NVRTCCOMPILE_H
#define TCC_COMPILER_CODEGEN_NVRTCCOMPILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {

struct DeviceBinary {
  std::vector<uint8_t> cubin;
  std::string compiler; // "nvrtc 13.0"
  double seconds = 0;   // time NVRTC took
  bool cached = false;  // read from the kernel cache (KernelCache.h)
};

/// Whether this tcc was built with NVRTC (TCC_ENABLE_CUDA).
bool nvrtcAvailable();

/// "nvrtc MAJOR.MINOR", or "" without NVRTC.
std::string nvrtcVersionString();

/// The real architectures NVRTC can compile for, as "sm_NN", ascending
/// (empty without NVRTC).
std::vector<std::string> nvrtcSupportedArchs();

/// Checks `arch`: "sm_NN" with NN one NVRTC supports, optionally with the
/// 'a' suffix of architecture-specific features (sm_90a), which only some
/// architectures have. Returns false with a message listing the supported
/// ones. Without NVRTC only the form is checked.
bool checkGpuArch(const std::string &arch, std::string &error);

/// Compiles `source` for `arch` (--gpu-architecture=ARCH -std=c++17, no
/// fast math, no FMA contraction) to a cubin, or reads the cubin of an
/// earlier compile of the same source from the kernel cache
/// (KernelCache.h). Returns false with `error` holding NVRTC's log.
bool compileCudaSource(const std::string &source, const std::string &arch,
                       DeviceBinary &out, std::string &error);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_NVRTCCOMPILE_H
