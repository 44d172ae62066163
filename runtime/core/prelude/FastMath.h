//===- FastMath.h - Branch-free exp, erf and tanh that vectorize ----------===//
//
// The generated host kernels' exp, erf and tanh for f32 results (ops with
// 16-bit results call libm's instead, see FusedHostMath.h): GCC and Clang
// vectorize them, where libm's are scalar calls. Accuracy: exp ~1e-7, erf
// and tanh ~2e-7 relative (FusedCodegenTest checks them against libm).
// The erf and tanh coefficients are least-squares fits in relative error
// (erf: x*P(x^2) on [0,1), erfc(x)*exp(x^2) = Q(1/x) on [1,4]; tanh:
// (tanh(x)-x)/x^3 = P(x^2) on [0,0.55]).
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

/// erf: x * P(x^2) below 1, 1 - exp(-x^2) * Q(1/|x|) up to 4, +-1 beyond
/// (~2 ulp).
TCC_PRELUDE_FN float tcc_erf(float x) {
  float a = __builtin_fabsf(x);
  float t = x * x;
  float ps = 7.847259257687256e-05f;
  ps = TCC_MADD(ps, t, -0.0008008189033716917f);
  ps = TCC_MADD(ps, t, 0.005188099108636379f);
  ps = TCC_MADD(ps, t, -0.026853691786527634f);
  ps = TCC_MADD(ps, t, 0.1128358244895935f);
  ps = TCC_MADD(ps, t, -0.3761262595653534f);
  ps = TCC_MADD(ps, t, 1.1283791065216064f);
  float small = x * ps;
  float u = 1.0f / (a < 1.0f ? 1.0f : a);
  float q = 0.02967723590946446f;
  q = TCC_MADD(q, u, -0.17400144132941775f);
  q = TCC_MADD(q, u, 0.42458844560720327f);
  q = TCC_MADD(q, u, -0.5183950055111397f);
  q = TCC_MADD(q, u, 0.22255830165076568f);
  q = TCC_MADD(q, u, 0.2390853734909426f);
  q = TCC_MADD(q, u, -0.3789607464222324f);
  q = TCC_MADD(q, u, 0.02122417237901275f);
  q = TCC_MADD(q, u, 0.5616814878346243f);
  q = TCC_MADD(q, u, 0.00012575778953242934f);
  float big = TCC_MADD(-tcc_exp(-t), q, 1.0f);
  big = a > 4.0f ? 1.0f : big;
  big = x < 0.0f ? -big : big;
  return a < 1.0f ? small : big;
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
