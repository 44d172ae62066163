// The tools re-execute with OPENBLAS_CORETYPE=Haswell only where OpenBLAS
// fell back to its generic kernels on a CPU that runs the AVX2 ones.
#include "runtime/cpu/BlasCore.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace tcc::rt;

TEST(BlasCore, OnlyTheGenericFallbackOnAnAvx2CpuChanges) {
  EXPECT_TRUE(blasCoreNeedsHaswell("Prescott", true));
  EXPECT_TRUE(blasCoreNeedsHaswell("prescott", true));
  EXPECT_FALSE(blasCoreNeedsHaswell("Prescott", false)); // no AVX2 to use
  EXPECT_FALSE(blasCoreNeedsHaswell("Haswell", true));
  EXPECT_FALSE(blasCoreNeedsHaswell("SkylakeX", true));
  EXPECT_FALSE(blasCoreNeedsHaswell(nullptr, true));
}

// A core the user set is kept: the call returns without re-executing.
TEST(BlasCore, UsersSettingIsKept) {
  const char *old = std::getenv("OPENBLAS_CORETYPE");
  std::string saved = old ? old : "";
  setenv("OPENBLAS_CORETYPE", "Sandybridge", 1);
  char arg0[] = "tcc_unit_tests";
  char *argv[] = {arg0, nullptr};
  useRecognisedBlasCore(argv);
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "Sandybridge");
  if (old)
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else
    unsetenv("OPENBLAS_CORETYPE");
}
