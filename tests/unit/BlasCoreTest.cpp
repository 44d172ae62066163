// The tools re-execute with OPENBLAS_CORETYPE=SkylakeX (or Haswell) only
// where OpenBLAS fell back to its generic kernels on a CPU that runs the
// AVX-512 (or AVX2) ones.
#include "runtime/cpu/BlasCore.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace tcc::rt;

TEST(BlasCore, OnlyTheGenericFallbackChangesToTheWidestIsa) {
  EXPECT_STREQ(recognisedBlasCore("Prescott", true, true), "SkylakeX");
  EXPECT_STREQ(recognisedBlasCore("prescott", false, true), "Haswell");
  EXPECT_EQ(recognisedBlasCore("Prescott", false, false), nullptr); // SSE3
  EXPECT_EQ(recognisedBlasCore("Haswell", true, true), nullptr);
  EXPECT_EQ(recognisedBlasCore("SkylakeX", true, true), nullptr);
  EXPECT_EQ(recognisedBlasCore("Cooperlake", true, true), nullptr);
  EXPECT_EQ(recognisedBlasCore(nullptr, true, true), nullptr);
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
