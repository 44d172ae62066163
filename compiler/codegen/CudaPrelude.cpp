//===- CudaPrelude.cpp - The fixed part of the generated CUDA source ------===//
//
// The generated CUDA kernels start with this prelude: the headers of
// runtime/core/prelude they share with runtime/cuda's kernels (bf16/f16
// conversions, the sigmoid and GELU formulas, ex2 and the mbarrier and
// bulk-copy PTX) and the ones only they use (FusedCudaMath.h,
// FusedCudaRows.h), as their text embedded at build time (TccPreludeTexts,
// cmake/TccEmbedText.cmake), dependencies first. NVRTC compiles the result
// without any header or include path (its CUDA math API is built in); the
// CUDA emulator of tests/unit compiles the same text with the host compiler
// after a shim that defines the CUDA names.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

#include "compiler/codegen/PreludeTexts.h"

#include <string>

const char *tcc::cudaPrelude() {
  static const std::string text = [] {
    std::string s = "// tcc generated CUDA kernels: prelude (self-contained; "
                    "ABI: runtime/core/Artifact.h, DeviceKernel)\n"
                    "#define TCC_PRELUDE_GENERATED 1\n";
    for (const char *header :
         {embedded::ConfigH, embedded::HalfH, embedded::ActivationsH,
          embedded::PtxH, embedded::FusedCudaMathH, embedded::FusedCudaRowsH,
          embedded::UnaryFnH, embedded::ModH})
      s.append(header).append("\n");
    return s;
  }();
  return text.c_str();
}
