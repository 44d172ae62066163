//===- NvrtcCompile.cpp - CUDA source to cubin with NVRTC -----------------===//
//
// Options: the architecture, C++17 and --fmad=false. No fast math (NaN and
// Inf propagate, divisions and square roots are IEEE-rounded) and no FMA
// contraction, so the kernels round like the host library's C++ (built
// without contraction) and like runtime/cuda's kernels (--fmad=false too).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/NvrtcCompile.h"
#include "compiler/codegen/KernelCache.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#ifdef TCC_HAVE_NVRTC
#include <nvrtc.h>
#endif

using namespace tcc;

/// "sm_NN" or "sm_NNa" -> NN and whether the suffix is there; false if
/// `arch` has another form.
static bool parseArch(const std::string &arch, int &number, bool &specific) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
    return false;
  std::string digits = arch.substr(3);
  specific = digits.back() == 'a';
  if (specific)
    digits.pop_back();
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return std::isdigit((unsigned char)c); }))
    return false;
  number = std::stoi(digits);
  return true;
}

#ifdef TCC_HAVE_NVRTC

static std::string listArchs(const std::vector<std::string> &archs) {
  std::string s;
  for (const std::string &a : archs)
    s += (s.empty() ? "" : ", ") + a;
  return s;
}

bool tcc::nvrtcAvailable() { return true; }

std::string tcc::nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "nvrtc";
  return "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> tcc::nvrtcSupportedArchs() {
  int n = 0;
  std::vector<std::string> out;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
    return out;
  std::vector<int> archs(n);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return out;
  std::sort(archs.begin(), archs.end());
  for (int a : archs)
    out.push_back("sm_" + std::to_string(a));
  return out;
}

namespace {
/// An NVRTC program destroyed on every path.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p)
      nvrtcDestroyProgram(&p);
  }
};
} // namespace

static std::string nvrtcError(const char *call, nvrtcResult r) {
  return std::string(call) + " failed: " + nvrtcGetErrorString(r);
}

/// Compiles; `log` gets NVRTC's log whether or not it succeeds.
static bool compile(const std::string &source, const std::string &arch,
                    DeviceBinary &out, std::string &error, std::string &log) {
  Program prog;
  nvrtcResult r = nvrtcCreateProgram(&prog.p, source.c_str(), "tcc_fused.cu", 0,
                                     nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    error = nvrtcError("nvrtcCreateProgram", r);
    return false;
  }
  std::string archOpt = "--gpu-architecture=" + arch;
  const char *opts[] = {archOpt.c_str(), "-std=c++17", "--fmad=false"};
  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult compiled = nvrtcCompileProgram(prog.p, 3, opts);
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(prog.p, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    log.assign(logSize, '\0');
    if (nvrtcGetProgramLog(prog.p, log.data()) != NVRTC_SUCCESS)
      log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS) {
    error = nvrtcError("nvrtcCompileProgram", compiled);
    return false;
  }
  size_t size = 0;
  if ((r = nvrtcGetCUBINSize(prog.p, &size)) != NVRTC_SUCCESS) {
    error = nvrtcError("nvrtcGetCUBINSize", r);
    return false;
  }
  out.cubin.assign(size, 0);
  if ((r = nvrtcGetCUBIN(prog.p, reinterpret_cast<char *>(out.cubin.data()))) !=
      NVRTC_SUCCESS) {
    error = nvrtcError("nvrtcGetCUBIN", r);
    return false;
  }
  out.compiler = nvrtcVersionString();
  return true;
}

bool tcc::checkGpuArch(const std::string &arch, std::string &error) {
  std::vector<std::string> archs = nvrtcSupportedArchs();
  int number = 0;
  bool specific = false;
  std::string supported = "; " + nvrtcVersionString() + " supports " +
                          listArchs(archs) +
                          ", and sm_NNa for the architecture-specific "
                          "features of some (e.g. sm_90a)";
  if (!parseArch(arch, number, specific)) {
    error = "--gpu-arch '" + arch + "' is not of the form sm_NN or sm_NNa" +
            supported;
    return false;
  }
  if (std::find(archs.begin(), archs.end(), "sm_" + std::to_string(number)) ==
      archs.end()) {
    error = "--gpu-arch '" + arch + "' is not supported" + supported;
    return false;
  }
  if (!specific)
    return true;
  // NVRTC has no query for which architectures have an 'a' variant; an
  // empty program (tens of milliseconds) answers it, with a clearer
  // message than NVRTC's own ("invalid ... --nv_arch flag").
  DeviceBinary probe;
  std::string err, log;
  if (!compile("", arch, probe, err, log)) {
    error = "--gpu-arch '" + arch + "': sm_" + std::to_string(number) +
            " has no architecture-specific ('a') variant" + supported;
    return false;
  }
  return true;
}

bool tcc::compileCudaSource(const std::string &source, const std::string &arch,
                            DeviceBinary &out, std::string &error) {
  // The options compile() passes besides the architecture are fixed, so
  // the version, the architecture and the source decide the cubin.
  std::string key = kernelCacheKey(
      {"nvrtc", nvrtcVersionString(), arch, "-std=c++17 --fmad=false", source});
  if (std::optional<std::vector<uint8_t>> hit = kernelCacheGet("nvrtc", key)) {
    out.cubin = std::move(*hit);
    out.compiler = nvrtcVersionString();
    out.seconds = 0;
    out.cached = true;
    return true;
  }
  std::string log;
  if (compile(source, arch, out, error, log)) {
    kernelCachePut("nvrtc", key, out.cubin);
    return true;
  }
  if (log.size() > 8000)
    log = log.substr(0, 8000) + "\n[...]";
  error = "NVRTC failed to compile the generated CUDA kernels for " + arch +
          " (" + error + ")" + (log.empty() ? "" : "\n  log:\n" + log);
  return false;
}

#else // !TCC_HAVE_NVRTC

static const char *kNoCuda =
    "this tcc was built without the CUDA backend (TCC_ENABLE_CUDA=OFF: no "
    "CUDA toolkit at build time), so --target cuda is not available";

bool tcc::nvrtcAvailable() { return false; }
std::string tcc::nvrtcVersionString() { return ""; }
std::vector<std::string> tcc::nvrtcSupportedArchs() { return {}; }

bool tcc::checkGpuArch(const std::string &arch, std::string &error) {
  int number = 0;
  bool specific = false;
  if (parseArch(arch, number, specific))
    return true;
  error = "--gpu-arch '" + arch + "' is not of the form sm_NN or sm_NNa";
  return false;
}

bool tcc::compileCudaSource(const std::string &, const std::string &,
                            DeviceBinary &, std::string &error) {
  error = kNoCuda;
  return false;
}

#endif
