//===- Half.h - bf16 and IEEE fp16 conversions ----------------------------===//
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
// -ffast-math).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_HALF_H
#define TCC_RUNTIME_CORE_PRELUDE_HALF_H

#include <cstdint>
#include <cstring>

namespace tcc::rt {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float bf16ToF32(uint16_t h) {
  return floatFromBits(static_cast<uint32_t>(h) << 16);
}

inline uint16_t f32ToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it one, quiet
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // a carry out of the mantissa bumps the exponent (to Inf past the max).
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16ToF32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t twoW = w + w;
  // Normal numbers (and Inf/NaN): shift exponent and mantissa into place
  // and rebias by multiplying with 2^-112 (exact).
  const uint32_t expOffset = 0xE0u << 23;
  const float normalized = floatFromBits((twoW >> 4) + expOffset) * 0x1.0p-112f;
  // Subnormals: put the mantissa below an exponent of 2^-1 and subtract it.
  const float denormalized = floatFromBits((twoW >> 17) | (126u << 23)) - 0.5f;
  const uint32_t denormCutoff = 1u << 27;
  return floatFromBits(sign | (twoW < denormCutoff ? floatBits(denormalized)
                                                   : floatBits(normalized)));
}

inline uint16_t f32ToF16(float f) {
  // Scaling up by 2^112 and back down by 2^-110 makes values beyond f16's
  // range Inf and leaves the rest exact; adding a power of two chosen from
  // the exponent then rounds the mantissa at f16's precision (ties to even,
  // subnormals included), in the float unit.
  float base = ((f < 0 ? -f : f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = floatBits(f);
  const uint32_t shl1W = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1W & 0xFF000000u;
  if (bias < 0x71000000u)
    bias = 0x71000000u;
  base = floatFromBits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = floatBits(base);
  const uint32_t expBits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissaBits = bits & 0x00000FFFu;
  const uint32_t nonsign = expBits + mantissaBits;
  return static_cast<uint16_t>((sign >> 16) |
                               (shl1W > 0xFF000000u ? 0x7E00u : nonsign));
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_PRELUDE_HALF_H
