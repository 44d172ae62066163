//===- BlasCore.cpp - OpenBLAS kernels for CPUs it does not recognise -----===//
#include "runtime/cpu/BlasCore.h"

#include <cblas.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>

namespace tcc::rt {

bool blasCoreNeedsHaswell(const char *core, bool avx2AndFma) {
  return core && strcasecmp(core, "Prescott") == 0 && avx2AndFma;
}

void useRecognisedBlasCore(char **argv) {
  // Set by the user (their choice) or by the re-execution below.
  if (std::getenv("OPENBLAS_CORETYPE"))
    return;
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!blasCoreNeedsHaswell(openblas_get_corename(), avx2))
    return;
  if (setenv("OPENBLAS_CORETYPE", "Haswell", 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE"); // exec failed: as it was
#else
  (void)argv;
#endif
}

} // namespace tcc::rt
