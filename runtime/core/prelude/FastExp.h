//===- FastExp.h - A vectorizable exp for row passes ----------------------===//
//
// libm's expf is a scalar call that GCC cannot vectorize without
// -ffast-math; in attention's row passes it cost as much as the GEMMs.
// This is the generated kernels' tcc_exp (compiler/codegen/FusedPrelude.cpp)
// in a form GCC vectorizes with plain SSE2 when the caller is compiled with
// -fno-trapping-math (the selects then become blends). The prelude's
// tcc_exp_exact is this function operation for operation: the losses
// (KernelsLoss.cpp) and the generated loss regions use it and must agree
// bit for bit, so callers build it without multiply-add contraction.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_FASTEXP_H
#define TCC_RUNTIME_CORE_PRELUDE_FASTEXP_H

#include "runtime/core/prelude/Half.h"

#include <cmath>
#include <cstdint>

namespace tcc::rt {

/// e^x with Cephes' range reduction and polynomial: within 2 ulp of the
/// exact value for x in [-87.3, 88.7] (KernelsAttentionTest checks it);
/// results below FLT_MIN flush to 0, e^-inf = 0, +inf past 88.72, NaN
/// stays NaN.
inline float fastExp(float x) {
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
  // 2^n as two factors, so that n = 128 does not overflow.
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float y = p * floatFromBits(static_cast<uint32_t>(n1 + 127) << 23) *
            floatFromBits(static_cast<uint32_t>(n2 + 127) << 23);
  y = x < -87.33654f ? 0.0f : y;
  y = x > 88.72283f ? INFINITY : y;
  return x != x ? x : y;
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_PRELUDE_FASTEXP_H
