//===- FusedPrelude.cpp - The fixed part of the generated kernels' source -===//
//
// The generated host kernels start with this prelude: the headers of
// runtime/core/prelude that they share with the runtime (bf16/f16
// conversions, exp, the sigmoid and GELU formulas, row reductions) and the
// fast exp/erf/tanh and the names the kernels call (FastMath.h,
// FusedHostMath.h), as their text embedded at build time (TccPreludeTexts,
// cmake/TccEmbedText.cmake), dependencies first. The result is one
// self-contained source (only <cmath> and <cstdint>) that the host compiler
// builds into a shared object without an include path.
//
// Everything is in an anonymous namespace, so the library exports none of
// it. Multiply-add contraction is off for the whole unit: an op computes
// what its library kernel computes, operation for operation (the runtime
// is built without FMA contraction; -march=x86-64-v3/-v4 would allow it
// here), and the v3 and v4 builds of a unit give the same bits (a wider
// vector computes each element the same way; FastMathTest).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

#include "compiler/codegen/PreludeTexts.h"

#include <string>

const char *tcc::fusedPrelude() {
  static const std::string text = [] {
    // The system headers come first: the prelude headers include none, and
    // the generated code after them uses both.
    std::string s = "// tcc generated kernels: prelude (self-contained; see "
                    "runtime/cpu/FusedLibrary.h)\n"
                    "#define TCC_PRELUDE_GENERATED 1\n"
                    "#include <cmath>\n"
                    "#include <cstdint>\n"
                    "\n"
                    "#if defined(__clang__)\n"
                    "#pragma clang fp contract(off)\n"
                    "#elif defined(__GNUC__)\n"
                    "#pragma GCC optimize(\"fp-contract=off\")\n"
                    "#endif\n"
                    "\n"
                    "namespace {\n";
    for (const char *header :
         {embedded::ConfigH, embedded::HalfH, embedded::FastExpH,
          embedded::FastMathH, embedded::ActivationsH, embedded::FusedHostMathH,
          embedded::RowReduceH, embedded::UnaryFnH, embedded::ModH})
      s.append(header).append("\n");
    s += "} // namespace\n";
    return s;
  }();
  return text.c_str();
}
