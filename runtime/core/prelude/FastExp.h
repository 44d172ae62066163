//===- FastExp.h - A vectorizable exp for row passes ------------*- C++ -*-===//
//
// libm's expf is a scalar call that GCC cannot vectorize without
// -ffast-math; in attention's row passes it cost as much as the GEMMs.
// tcc_exp_exact is Cephes' exp in a form GCC vectorizes with plain SSE2
// when the caller is compiled with -fno-trapping-math (the selects then
// become blends). The runtime calls it fastExp (attention, and the losses
// of KernelsLoss.cpp); the generated loss regions call it too, and the two
// must agree bit for bit, so every caller builds it without multiply-add
// contraction (KernelsLoss.cpp's -ffp-contract=off, the host prelude's
// pragma). FastMath.h's tcc_exp is the same reduction with floor and
// written-out fused multiply-adds.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_FASTEXP_H
#define TCC_RUNTIME_CORE_PRELUDE_FASTEXP_H

#include "runtime/core/prelude/Half.h"

/// The last step of both exponentials: p * 2^n (as two factors, so that
/// n = 128 does not overflow), 0 below the range and +inf above it.
TCC_PRELUDE_FN float tcc_exp_scale(float x, float p, float n) {
  int ni = static_cast<int>(n);
  int n1 = ni >> 1, n2 = ni - n1;
  float y = p * tcc_bits_to_f(static_cast<unsigned>(n1 + 127) << 23) *
            tcc_bits_to_f(static_cast<unsigned>(n2 + 127) << 23);
  y = x < -87.33654f ? 0.0f : y;
  return x > 88.72283f ? __builtin_inff() : y;
}

/// e^x with Cephes' range reduction and polynomial: within 2 ulp of the
/// exact value for x in [-87.3, 88.7] (KernelsAttentionTest checks it);
/// results below FLT_MIN flush to 0, e^-inf = 0, +inf past 88.72, NaN
/// stays NaN.
TCC_PRELUDE_FN float tcc_exp_exact(float x) {
  float xc = x > -87.33654f ? x : -87.33654f; // NaN too: n stays in range
  xc = xc < 88.72283f ? xc : 88.72283f;
  // n = round(xc / ln 2): adding 1.5 * 2^23 rounds to an integer (SSE2
  // has no vector floor).
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * (r * r) + r + 1.0f;
  float y = tcc_exp_scale(x, p, n);
  return x != x ? x : y;
}

#ifndef TCC_PRELUDE_GENERATED
namespace tcc::rt {
/// The runtime's name for tcc_exp_exact.
inline float fastExp(float x) { return tcc_exp_exact(x); }
} // namespace tcc::rt
#endif

#endif // TCC_RUNTIME_CORE_PRELUDE_FASTEXP_H
