//===- BlasCore.cpp - OpenBLAS kernels for CPUs it does not recognise -----===//
#include "runtime/cpu/BlasCore.h"

#include <cblas.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>

namespace tcc::rt {

const char *recognisedBlasCore(const char *core, bool avx512, bool avx2AndFma) {
  if (!core || strcasecmp(core, "Prescott") != 0)
    return nullptr;
  if (avx512)
    return "SkylakeX";
  return avx2AndFma ? "Haswell" : nullptr;
}

void useRecognisedBlasCore(char **argv) {
  // Set by the user (their choice) or by the re-execution below.
  if (std::getenv("OPENBLAS_CORETYPE"))
    return;
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  // SkylakeX's kernels need these four AVX-512 subsets.
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512vl");
  const char *core = recognisedBlasCore(openblas_get_corename(), avx512, avx2);
  if (!core || setenv("OPENBLAS_CORETYPE", core, 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE"); // exec failed: as it was
#else
  (void)argv;
#endif
}

} // namespace tcc::rt
