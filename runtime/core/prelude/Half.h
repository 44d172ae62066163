//===- Half.h - bf16 and IEEE fp16 conversions ------------------*- C++ -*-===//
//
// The runtime stores bf16 and f16 tensors as raw 16-bit words and computes in
// f32: every kernel converts its operands up, computes, and rounds its
// results down once. These are the two conversions, bit for bit those of
// PyTorch (and of the hardware: F16C's vcvtps2ph, AVX512-BF16's vcvtneps2bf16
// without its denormal flush):
//
//  * f32 -> bf16 / f16: round to nearest, ties to even; values beyond the
//    largest finite value become +-Inf; NaN stays NaN (bf16 keeps the sign
//    and the top payload bits and sets the quiet bit; f16 gives 0x7E00 with
//    the sign); f16 produces subnormals (down to 2^-24) instead of flushing.
//  * bf16 / f16 -> f32: exact (every value, subnormals, Inf and NaN).
//
// The f16 algorithms are the branch-free ones of the FP16 library (Marat
// Dukhan, MIT): they use float arithmetic to round, which is exact under the
// default rounding mode and no flush-to-zero (tcc never builds with
// -ffast-math, and CUDA code is built with --fmad=false). The bf16 NaN test
// is a select, not a branch, so that loops of conversions vectorize.
//
// On the GPU (sm_80 and later) the conversions are the hardware's cvt.rn
// (inline PTX, no CUDA header): bit for bit these but for NaN payloads, in
// one instruction where a bf16 narrowing by hand takes eight. The PTX is
// spelled as cuda_fp16.hpp and cuda_bf16.hpp spell it, so runtime/cuda's
// kernels, which called those intrinsics before, compile to the same
// machine code (NVVM's choices depend on the asm text). The runtime
// (tcc::rt::f32ToBf16 and the other names below), runtime/cuda's kernels
// and both generated preludes use these functions.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_HALF_H
#define TCC_RUNTIME_CORE_PRELUDE_HALF_H

#include "runtime/core/prelude/Config.h"

/// A float's bits and back (a copy, so no aliasing rule is involved).
TCC_PRELUDE_FN unsigned tcc_f_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  unsigned u;
  __builtin_memcpy(&u, &f, 4);
  return u;
#endif
}

TCC_PRELUDE_FN float tcc_bits_to_f(unsigned u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}

/// bf16 -> f32: exact, the word is the float's top half.
TCC_PRELUDE_FN float tcc_bf16_to_f32(unsigned short h) {
  return tcc_bits_to_f(static_cast<unsigned>(h) << 16);
}

/// f32 -> bf16: adding 0x7fff plus the lowest kept bit rounds to nearest,
/// ties to even (a carry out of the mantissa bumps the exponent, to Inf past
/// the largest finite value); a NaN keeps sign and top payload bits and
/// becomes quiet.
TCC_PRELUDE_FN unsigned short tcc_f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("{  cvt.rn.bf16.f32 %0, %1;}\n" : "=h"(h) : "f"(f));
  return h;
#else
  unsigned u = tcc_f_to_bits(f);
  unsigned rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  unsigned nan = (u >> 16) | 0x0040u;
  return static_cast<unsigned short>((u & 0x7fffffffu) > 0x7f800000u ? nan
                                                                     : rounded);
#endif
}

/// f16 -> f32: exact. Normal numbers (and Inf/NaN) shift exponent and
/// mantissa into place and rebias by a multiplication with 2^-112;
/// subnormals put the mantissa below an exponent of 2^-1 and subtract it.
TCC_PRELUDE_FN float tcc_f16_to_f32(unsigned short h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float f;
  asm("{  cvt.f32.f16 %0, %1;}\n" : "=f"(f) : "h"(h));
  return f;
#else
  const unsigned w = static_cast<unsigned>(h) << 16;
  const unsigned sign = w & 0x80000000u;
  const unsigned twoW = w + w;
  const float normalized =
      tcc_bits_to_f((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = tcc_bits_to_f((twoW >> 17) | (126u << 23)) - 0.5f;
  return tcc_bits_to_f(sign | (twoW < (1u << 27) ? tcc_f_to_bits(denormalized)
                                                 : tcc_f_to_bits(normalized)));
#endif
}

/// f32 -> f16: scaling up by 2^112 and back down by 2^-110 makes values
/// beyond f16's range Inf and leaves the rest exact; adding a power of two
/// chosen from the exponent then rounds the mantissa at f16's precision
/// (ties to even, subnormals included), in the float unit. NaN -> 0x7E00.
TCC_PRELUDE_FN unsigned short tcc_f32_to_f16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("{  cvt.rn.f16.f32 %0, %1;}\n" : "=h"(h) : "f"(f));
  return h;
#else
  float base = ((f < 0 ? -f : f) * 0x1.0p+112f) * 0x1.0p-110f;
  const unsigned w = tcc_f_to_bits(f);
  const unsigned shl1W = w + w;
  const unsigned sign = w & 0x80000000u;
  unsigned bias = shl1W & 0xFF000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  base = tcc_bits_to_f((bias >> 1) + 0x07800000u) + base;
  const unsigned bits = tcc_f_to_bits(base);
  const unsigned nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return static_cast<unsigned short>((sign >> 16) |
                                     (shl1W > 0xFF000000u ? 0x7E00u : nonsign));
#endif
}

#ifndef TCC_PRELUDE_GENERATED
#include <cstdint>

// The runtime's names for them.
namespace tcc::rt {
inline uint32_t floatBits(float f) { return tcc_f_to_bits(f); }
inline float floatFromBits(uint32_t u) { return tcc_bits_to_f(u); }
inline float bf16ToF32(uint16_t h) { return tcc_bf16_to_f32(h); }
inline uint16_t f32ToBf16(float f) { return tcc_f32_to_bf16(f); }
inline float f16ToF32(uint16_t h) { return tcc_f16_to_f32(h); }
inline uint16_t f32ToF16(float f) { return tcc_f32_to_f16(f); }
} // namespace tcc::rt
#endif

#endif // TCC_RUNTIME_CORE_PRELUDE_HALF_H
