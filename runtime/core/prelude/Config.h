//===- Config.h - One prelude header for C++, nvcc and NVRTC ----*- C++ -*-===//
//
// The headers of this folder are code that generated kernels share with the
// runtime. The runtime includes them; the compiler embeds their text into
// the prelude of every generated translation unit at build time (cmake/
// EmbedText.cmake, compiler/codegen/FusedPrelude.cpp and CudaPrelude.cpp).
// So that one text serves every compiler that reads it:
//
//  * a function is TCC_PRELUDE_FN: `inline` for the host compiler (the
//    runtime, the generated host library, the CUDA emulators of
//    tests/unit), `__host__ __device__ __forceinline__` for nvcc and NVRTC;
//  * outside its runtime-only block (the last point), a header includes no
//    system header and names no std:: function (NVRTC compiles the CUDA
//    prelude without any include path): plain integer types, `__builtin_`
//    math on the host, CUDA's on the device;
//  * a header includes other prelude headers only (`#include
//    "runtime/core/prelude/X.h"`), which the embedding step turns into
//    comments: the preludes embed every header after the ones it includes;
//  * the runtime's own names for these functions (namespace tcc::rt) sit
//    in `#ifndef TCC_PRELUDE_GENERATED` blocks, which the preludes skip by
//    defining that macro first.
//
// The generated host prelude wraps everything in an anonymous namespace,
// so a generated library exports none of these functions.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_CONFIG_H
#define TCC_RUNTIME_CORE_PRELUDE_CONFIG_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TCC_PRELUDE_FN __host__ __device__ __forceinline__
#else
// Always inlined: the runtime's AVX-512 clones of its loops (IsaClone.h)
// must get AVX-512 code of them too, not a call to the baseline copy.
#define TCC_PRELUDE_FN inline __attribute__((always_inline))
#endif

// The headers spell uint16_t, uint32_t and int64_t as the builtin types
// they are on every platform tcc builds for (no <cstdint> under NVRTC).
static_assert(sizeof(unsigned short) == 2 && sizeof(unsigned) == 4 &&
                  sizeof(int) == 4 && sizeof(long long) == 8,
              "the prelude's integer types have the widths it assumes");

#endif // TCC_RUNTIME_CORE_PRELUDE_CONFIG_H
