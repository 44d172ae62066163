//===- FastMath.h - Branch-free exp, erf and tanh that vectorize ----------===//
//
// The generated host kernels' exp, erf and tanh for f32 results (ops with
// 16-bit results call libm's instead, see FusedHostMath.h): GCC and Clang
// vectorize them, where libm's are scalar calls. Accuracy: exp ~1e-7, erf
// 3e-7 and tanh ~2e-7 relative (FusedCodegenTest checks them against
// libm). The coefficients are least-squares fits in relative error (erf:
// the rational x P(x^2) / Q(x^2) on (0, 3.925]; tanh: (tanh(x)-x)/x^3 =
// P(x^2) on [0,0.55]).
//
// The polynomials use fused multiply-adds where the CPU has them; since
// the generated unit is compiled without contraction, they are written out
// (TCC_MADD).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_FASTMATH_H
#define TCC_RUNTIME_CORE_PRELUDE_FASTMATH_H

#include "runtime/core/prelude/FastExp.h"

#if defined(__FMA__)
#define TCC_MADD(a, b, c) __builtin_fmaf(a, b, c)
#else
#define TCC_MADD(a, b, c) ((a) * (b) + (c))
#endif

/// exp: Cephes' range reduction and polynomial (~1 ulp). Results below
/// FLT_MIN are flushed to 0 (no slow denormal arithmetic); +inf above; NaN
/// stays NaN.
TCC_PRELUDE_FN float tcc_exp(float x) {
  float xc = x < -87.33654f ? -87.33654f : x;
  xc = xc > 88.72283f ? 88.72283f : xc;
  float n = __builtin_floorf(TCC_MADD(xc, 1.44269504088896341f, 0.5f));
  float r = TCC_MADD(-n, 0.693359375f, xc);
  r = TCC_MADD(-n, -2.12194440e-4f, r);
  float p = 1.9875691500E-4f;
  p = TCC_MADD(p, r, 1.3981999507E-3f);
  p = TCC_MADD(p, r, 8.3334519073E-3f);
  p = TCC_MADD(p, r, 4.1665795894E-2f);
  p = TCC_MADD(p, r, 1.6666665459E-1f);
  p = TCC_MADD(p, r, 5.0000001201E-1f);
  p = TCC_MADD(p, r * r, r) + 1.0f;
  return tcc_exp_scale(x, p, n);
}

/// erf: x P(x^2) / Q(x^2) with x clamped to +-3.925 (where erf rounds to
/// +-1 in f32), then clamped to [-1, 1]: eleven multiply-adds and one
/// division, no exp and no second branch, so a vector of it costs about a
/// third of the two-branch form it replaced (erf of x P(x^2) below 1 and
/// 1 - exp(-x^2) Q(1/x) above), which kept the GELU regions compute-bound.
/// Error (in f32 with fused multiply-adds, against double erf, over
/// [0, 6] and 2^-39..1): 2.9e-7 relative, 3.2e-7 absolute, at most 5 ulp,
/// the largest where erf is within 1e-5 of 1 (3.6e-7 without FMA)
/// (PreludeFunctionsAreAccurate and FastMathTest check it). The coefficients
/// are an iteratively reweighted least-squares fit of the relative error of the
/// rational form on (0, 3.925] (Sanathanan-Koerner, then Lawson weights).
TCC_PRELUDE_FN float tcc_erf(float x) {
  float xc = x < -3.925f ? -3.925f : x;
  xc = xc > 3.925f ? 3.925f : xc;
  float t = xc * xc;
  float p = 1.9869475e-08f;
  p = TCC_MADD(p, t, -1.956593e-06f);
  p = TCC_MADD(p, t, 0.000142172183f);
  p = TCC_MADD(p, t, 0.00371921482f);
  p = TCC_MADD(p, t, 0.0506313145f);
  p = TCC_MADD(p, t, 0.200365886f);
  p = TCC_MADD(p, t, 1.12837911f);
  float q = 0.000959976343f;
  q = TCC_MADD(q, t, 0.0143900923f);
  q = TCC_MADD(q, t, 0.115180291f);
  q = TCC_MADD(q, t, 0.510901272f);
  q = TCC_MADD(q, t, 1.0f);
  float y = xc * p / q; // NaN stays NaN through the clamps
  y = y > 1.0f ? 1.0f : y;
  return y < -1.0f ? -1.0f : y;
}

/// tanh: x + x^3 P(x^2) below 0.55, else 1 - 2 / (exp(2|x|) + 1).
TCC_PRELUDE_FN float tcc_tanh(float x) {
  float a = __builtin_fabsf(x);
  float t = x * x;
  float p = -0.006604853892860292f;
  p = TCC_MADD(p, t, 0.021306113791867847f);
  p = TCC_MADD(p, t, -0.053908803323513756f);
  p = TCC_MADD(p, t, 0.1333310988560129f);
  p = TCC_MADD(p, t, -0.3333333197064501f);
  float small = TCC_MADD(x * t, p, x);
  float big = 1.0f - 2.0f / (tcc_exp(2.0f * a) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.55f ? small : big;
}

#endif // TCC_RUNTIME_CORE_PRELUDE_FASTMATH_H
