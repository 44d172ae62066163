//===- FusedAbi.cpp - ISA checks and the `fused` instr's checks -----------===//
#include "runtime/core/abi/FusedAbi.h"

#include "runtime/core/abi/KernelCheck.h"
#include "runtime/core/abi/Kernels.h"

#include <algorithm>
#include <cstdlib>

namespace tcc::rt {

/// The x86-64 levels in order: code built for one runs on any CPU at that
/// level or above. "generic" is no -march at all (baseline x86-64, or any
/// other architecture); "x86-64" names the same level.
static int isaLevel(const std::string &isa) {
  if (isa == "generic" || isa == "x86-64")
    return 1;
  if (isa == "x86-64-v3")
    return 3;
  if (isa == "x86-64-v4")
    return 4;
  return 0;
}

std::string detectedIsa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
  bool v4 = v3 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512cd") &&
            __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl");
  if (v4)
    return "x86-64-v4";
  if (v3)
    return "x86-64-v3";
#endif
  return "generic";
}

bool knownIsa(const std::string &isa) { return isaLevel(isa) > 0; }

std::string hostIsa() {
  std::string detected = detectedIsa();
  // TCC_HOST_ISA lowers what the CPU is taken to support (tests of the
  // load check, benchmarks of the narrower code); it never raises it.
  const char *env = std::getenv("TCC_HOST_ISA");
  if (!env || !*env)
    return detected;
  std::string cap = env;
  if (!knownIsa(cap))
    throw Error("TCC_HOST_ISA='" + cap +
                "' is not an ISA (x86-64-v4, x86-64-v3 or x86-64)");
  if (cap == "x86-64")
    cap = "generic";
  return isaLevel(cap) < isaLevel(detected) ? cap : detected;
}

bool cpuSupportsIsa(const std::string &isa) {
  int want = isaLevel(isa);
  return want > 0 && want <= isaLevel(hostIsa());
}

void checkFusedOperands(
    const Instr &instr, const std::vector<TensorInfo> &tensors, int64_t k,
    const std::vector<std::pair<DType, int64_t>> &inputs,
    const std::vector<std::pair<DType, int64_t>> &outputs,
    const std::vector<std::pair<int64_t, int64_t>> &inPlace) {
  if (instr.inputs.size() != inputs.size() ||
      instr.outputs.size() != outputs.size())
    throw Error("generated kernel " + std::to_string(k) + " takes " +
                std::to_string(inputs.size()) + " inputs and " +
                std::to_string(outputs.size()) + " outputs, got " +
                std::to_string(instr.inputs.size()) + " and " +
                std::to_string(instr.outputs.size()));
  auto expect = [&](const std::vector<int32_t> &ids,
                    const std::vector<std::pair<DType, int64_t>> &sig,
                    const char *role) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const TensorInfo &t = tensors[ids[i]];
      if (t.dtype != sig[i].first || t.numElements() != sig[i].second)
        throw Error(std::string(role) + " " + std::to_string(i) + " '" +
                    t.name + "' is " + dtypeName(t.dtype) + " " +
                    formatShape(t.shape) + "; generated kernel " +
                    std::to_string(k) + " was compiled for " +
                    dtypeName(sig[i].first) + " with " +
                    std::to_string(sig[i].second) + " elements");
    }
  };
  expect(instr.inputs, inputs, "input");
  expect(instr.outputs, outputs, "output");
  for (const auto &pair : fusedInPlacePairs(instr)) {
    if (std::find(inPlace.begin(), inPlace.end(), pair) == inPlace.end())
      throw Error("output " + std::to_string(pair.first) + " over input " +
                  std::to_string(pair.second) + " in place: generated kernel " +
                  std::to_string(k) +
                  " was not compiled to run that pair in place");
  }
}

namespace abi {

// What holds without the generated code: the kernel's own table is checked
// when the backend has it (FusedLibrary::check, the CUDA session's).
void check_fused(const KernelSig &s) {
  FusedAttrs a = attrs<KernelId::Fused>(s.instr);
  if (a.inPlace.size() % 2 != 0)
    throw Error("expects the kernel index and (output, input) pairs as "
                "integer attributes, got " +
                std::to_string(s.instr.iattrs.size()));
  if (a.kernel < 0)
    throw Error("kernel index " + std::to_string(a.kernel) + " is negative");
  if (s.out.empty())
    throw Error("expects at least one output");
  for (size_t p = 0; p < a.inPlacePairs(); ++p) {
    auto [o, i] = a.inPlacePair(p);
    if (o < 0 || o >= (int64_t)s.out.size() || i < 0 ||
        i >= (int64_t)s.in.size())
      throw Error("in-place pair (" + std::to_string(o) + ", " +
                  std::to_string(i) + ") names no output/input (" +
                  std::to_string(s.out.size()) + " outputs, " +
                  std::to_string(s.in.size()) + " inputs)");
  }
}

} // namespace abi

} // namespace tcc::rt
