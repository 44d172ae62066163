//===- PreludeTest.cpp - The preludes assembled from embedded headers -----===//
//
// The generated kernels' preludes are the text of runtime/core/prelude's
// headers, embedded at build time with their includes of each other turned
// into comments (cmake/EmbedText.cmake). Generated code is compiled from
// that one text without an include path, so each header must come after
// the headers it includes, and the runtime-only parts must be switched off
// before the first one. (That the preludes compile and compute what the
// runtime computes is what FusedCodegenTest, CudaCodegenTest and the 16-bit
// tests check.)
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace {

/// The include guard of runtime/core/prelude/<name>.
std::string guardOf(const std::string &name) {
  std::string g = "TCC_RUNTIME_CORE_PRELUDE_";
  for (char c : name.substr(0, name.find('.')))
    g += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return g + "_H";
}

void checkOrder(const std::string &prelude) {
  EXPECT_EQ(prelude.find("#include \""), std::string::npos)
      << "a project include is left in the prelude";
  size_t generated = prelude.find("#define TCC_PRELUDE_GENERATED");
  ASSERT_NE(generated, std::string::npos);
  EXPECT_LT(generated, prelude.find("#define TCC_RUNTIME_CORE_PRELUDE_"));
  const std::string marker =
      "// (embedded before this header: \"runtime/core/prelude/";
  int markers = 0;
  for (size_t at = prelude.find(marker); at != std::string::npos;
       at = prelude.find(marker, at + 1)) {
    size_t begin = at + marker.size();
    std::string name = prelude.substr(begin, prelude.find('"', begin) - begin);
    size_t defined = prelude.find("#define " + guardOf(name) + "\n");
    EXPECT_LT(defined, at) << name << " is embedded after a header that "
                           << "includes it, or not at all";
    ++markers;
  }
  EXPECT_GT(markers, 0);
}

} // namespace

TEST(FusedPrelude, HostHeadersFollowTheHeadersTheyInclude) {
  checkOrder(::tcc::fusedPrelude());
}

TEST(FusedPrelude, CudaHeadersFollowTheHeadersTheyInclude) {
  checkOrder(::tcc::cudaPrelude());
}
