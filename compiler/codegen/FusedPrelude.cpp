//===- FusedPrelude.cpp - The fixed part of the generated kernels' source -===//
//
// Self-contained (only <cmath> and <cstdint>): fast, branch-free exp, erf
// and tanh that GCC and Clang vectorize (accuracy: exp ~1e-7, erf and tanh
// ~2e-7 relative, checked by FusedCodegenTest against libm), GELU formulas
// as runtime/cpu/KernelsMath.cpp spells them, and row reductions with a
// fixed lane order so results do not depend on the thread count.
// The erf and tanh coefficients are least-squares fits in relative error
// (erf: x*P(x^2) on [0,1), erfc(x)*exp(x^2) = Q(1/x) on [1,4]; tanh:
// (tanh(x)-x)/x^3 = P(x^2) on [0,0.55]).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

const char *tcc::fusedPrelude() {
  return R"TCCPRELUDE(// tcc generated kernels: prelude (self-contained; see runtime/cpu/FusedLibrary.h)
#include <cmath>
#include <cstdint>

namespace {

inline float tcc_bits_to_f(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// exp: Cephes' range reduction and polynomial (~1 ulp). 2^n is applied as
// two factors so n = 128 does not overflow. Results below FLT_MIN are
// flushed to 0 (no slow denormal arithmetic); +inf above; NaN stays NaN.
inline float tcc_exp(float x) {
  float xc = x < -87.33654f ? -87.33654f : x;
  xc = xc > 88.72283f ? 88.72283f : xc;
  float n = __builtin_floorf(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * (r * r) + r + 1.0f;
  int32_t ni = (int32_t)n;
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float y = p * tcc_bits_to_f((uint32_t)(n1 + 127) << 23) *
            tcc_bits_to_f((uint32_t)(n2 + 127) << 23);
  y = x < -87.33654f ? 0.0f : y;
  y = x > 88.72283f ? __builtin_inff() : y;
  return y;
}

// erf: x * P(x^2) below 1, 1 - exp(-x^2) * Q(1/|x|) up to 4, +-1 beyond
// (least-squares fits in relative error, ~2 ulp).
inline float tcc_erf(float x) {
  float a = __builtin_fabsf(x);
  float t = x * x;
  float ps = 7.847259257687256e-05f;
  ps = ps * t + -0.0008008189033716917f;
  ps = ps * t + 0.005188099108636379f;
  ps = ps * t + -0.026853691786527634f;
  ps = ps * t + 0.1128358244895935f;
  ps = ps * t + -0.3761262595653534f;
  ps = ps * t + 1.1283791065216064f;
  float small = x * ps;
  float u = 1.0f / (a < 1.0f ? 1.0f : a);
  float q = 0.02967723590946446f;
  q = q * u + -0.17400144132941775f;
  q = q * u + 0.42458844560720327f;
  q = q * u + -0.5183950055111397f;
  q = q * u + 0.22255830165076568f;
  q = q * u + 0.2390853734909426f;
  q = q * u + -0.3789607464222324f;
  q = q * u + 0.02122417237901275f;
  q = q * u + 0.5616814878346243f;
  q = q * u + 0.00012575778953242934f;
  float big = 1.0f - tcc_exp(-t) * q;
  big = a > 4.0f ? 1.0f : big;
  big = x < 0.0f ? -big : big;
  return a < 1.0f ? small : big;
}

// tanh: x + x^3 P(x^2) below 0.55, else 1 - 2 / (exp(2|x|) + 1).
inline float tcc_tanh(float x) {
  float a = __builtin_fabsf(x);
  float t = x * x;
  float p = -0.006604853892860292f;
  p = p * t + 0.021306113791867847f;
  p = p * t + -0.053908803323513756f;
  p = p * t + 0.1333310988560129f;
  p = p * t + -0.3333333197064501f;
  float small = x + x * t * p;
  float big = 1.0f - 2.0f / (tcc_exp(2.0f * a) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.55f ? small : big;
}

inline float tcc_sigmoid(float x) { return 1.0f / (1.0f + tcc_exp(-x)); }

// GELU and its gradient: runtime/cpu/KernelsMath.cpp's formulas.
constexpr float tcc_kSqrt1_2 = 0.70710678118654752440f;
constexpr float tcc_kTanhBeta = 0.79788456080286535588f;
constexpr float tcc_kErfBeta = 0.39894228040143267794f;
constexpr float tcc_kKappa = 0.044715f;

inline float tcc_gelu_erf(float x) {
  return x * 0.5f * (1.0f + tcc_erf(x * tcc_kSqrt1_2));
}
inline float tcc_gelu_tanh(float x) {
  float inner = tcc_kTanhBeta * (x + tcc_kKappa * x * x * x);
  return 0.5f * x * (1.0f + tcc_tanh(inner));
}
inline float tcc_gelu_erf_grad(float dy, float x) {
  float cdf = 0.5f * (1.0f + tcc_erf(x * tcc_kSqrt1_2));
  float pdf = tcc_kErfBeta * tcc_exp(x * x * -0.5f);
  return dy * (cdf + x * pdf);
}
inline float tcc_gelu_tanh_grad(float dy, float x) {
  float xSq = x * x;
  float inner = tcc_kTanhBeta * (x + tcc_kKappa * xSq * x);
  float t = tcc_tanh(inner);
  float left = 0.5f * x, right = 1.0f + t;
  float leftDerivative = 0.5f * right;
  float rightDerivative =
      (1.0f - t * t) * tcc_kTanhBeta * (1.0f + 3.0f * tcc_kKappa * xSq);
  return dy * (leftDerivative + left * rightDerivative);
}

// Row reductions over n contiguous floats: eight independent lanes (so they
// vectorize without reassociation), then a fixed combination order.
inline float tcc_rowsum(const float *__restrict x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      acc[k] += x[i + k];
  float s = 0.0f;
  for (; i < n; ++i)
    s += x[i];
  return s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// sum(exp(x - m)) with libm's exp in double: the softmax sums of the
// losses, exactly as runtime/cpu/KernelsLoss.cpp computes them (the loss
// gradient drives training, so it matches the reference kernel bit for bit).
inline double tcc_rowsumexp_f64(const float *__restrict x, int64_t n,
                                float m) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i)
    s += std::exp(static_cast<double>(x[i] - m));
  return s;
}

inline float tcc_rowmax(const float *__restrict x, int64_t n) {
  float acc[8];
  for (int k = 0; k < 8; ++k)
    acc[k] = -__builtin_inff();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      acc[k] = acc[k] < x[i + k] ? x[i + k] : acc[k];
  float m = -__builtin_inff();
  for (; i < n; ++i)
    m = m < x[i] ? x[i] : m;
  for (int k = 0; k < 8; ++k)
    m = m < acc[k] ? acc[k] : m;
  return m;
}

} // namespace
)TCCPRELUDE";
}
