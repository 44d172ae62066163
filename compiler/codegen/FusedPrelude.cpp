//===- FusedPrelude.cpp - The fixed part of the generated kernels' source -===//
//
// Self-contained (only <cmath> and <cstdint>): fast, branch-free exp, erf
// and tanh that GCC and Clang vectorize (accuracy: exp ~1e-7, erf and tanh
// ~2e-7 relative, checked by FusedCodegenTest against libm), GELU formulas
// as runtime/cpu/KernelsMath.cpp spells them, and row reductions with a
// fixed lane order so results do not depend on the thread count.
// bf16/f16 values: the conversions of runtime/core/prelude/Half.h, written again
// here (round to nearest-even, NaN kept quiet, f16 subnormals), and libm
// variants of the special functions (tcc_libm_*) for ops whose result is
// rounded to 16 bits, so those are bit for bit the unfused kernels'.
// Multiply-add contraction is off for the whole unit: an op computes what
// its library kernel computes, operation for operation (the runtime is
// built without FMA contraction; -march=x86-64-v3 would allow it here).
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

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

// The fast functions' polynomials use fused multiply-adds where the CPU
// has them (contraction being off, they are written out).
#if defined(__FMA__)
#define TCC_MADD(a, b, c) __builtin_fmaf(a, b, c)
#else
#define TCC_MADD(a, b, c) ((a) * (b) + (c))
#endif

namespace {

inline float tcc_bits_to_f(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

inline uint32_t tcc_f_to_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}

// bf16 <-> f32 (runtime/core/prelude/Half.h): widening is exact; narrowing adds
// 0x7fff plus the lowest kept bit (nearest, ties to even; past the largest
// finite value it carries into Inf); a NaN keeps sign and top payload bits
// and becomes quiet.
inline float tcc_bf16_to_f32(uint16_t h) {
  return tcc_bits_to_f(static_cast<uint32_t>(h) << 16);
}
inline uint16_t tcc_f32_to_bf16(float f) {
  uint32_t u = tcc_f_to_bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x0040u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan
                                                                : rounded);
}

// f16 <-> f32 (runtime/core/prelude/Half.h, after the FP16 library): float
// arithmetic does the rebiasing and the rounding (exact without flush to
// zero), subnormals included; beyond f16's range Inf, NaN -> 0x7E00.
inline float tcc_f16_to_f32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t twoW = w + w;
  const float normalized =
      tcc_bits_to_f((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = tcc_bits_to_f((twoW >> 17) | (126u << 23)) - 0.5f;
  return tcc_bits_to_f(sign | (twoW < (1u << 27) ? tcc_f_to_bits(denormalized)
                                                 : tcc_f_to_bits(normalized)));
}
inline uint16_t tcc_f32_to_f16(float f) {
  float base = ((f < 0 ? -f : f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = tcc_f_to_bits(f);
  const uint32_t shl1W = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1W & 0xFF000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  base = tcc_bits_to_f((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = tcc_f_to_bits(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return static_cast<uint16_t>((sign >> 16) |
                               (shl1W > 0xFF000000u ? 0x7E00u : nonsign));
}

// The last step of both exponentials: p * 2^n (as two factors, so that
// n = 128 does not overflow), 0 below the range and +inf above it.
inline float tcc_exp_scale(float x, float p, float n) {
  int32_t ni = (int32_t)n;
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float y = p * tcc_bits_to_f((uint32_t)(n1 + 127) << 23) *
            tcc_bits_to_f((uint32_t)(n2 + 127) << 23);
  y = x < -87.33654f ? 0.0f : y;
  return x > 88.72283f ? __builtin_inff() : y;
}

// exp: Cephes' range reduction and polynomial (~1 ulp). 2^n is applied as
// two factors so n = 128 does not overflow. Results below FLT_MIN are
// flushed to 0 (no slow denormal arithmetic); +inf above; NaN stays NaN.
inline float tcc_exp(float x) {
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

// erf: x * P(x^2) below 1, 1 - exp(-x^2) * Q(1/|x|) up to 4, +-1 beyond
// (least-squares fits in relative error, ~2 ulp).
inline float tcc_erf(float x) {
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

// tanh: x + x^3 P(x^2) below 0.55, else 1 - 2 / (exp(2|x|) + 1).
inline float tcc_tanh(float x) {
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

// The special functions a formula uses: the fast ones above, or libm's
// (as runtime/cpu/KernelsMath.cpp calls them) for 16-bit results.
struct tcc_fast_math {
  static float exp(float x) { return tcc_exp(x); }
  static float erf(float x) { return tcc_erf(x); }
  static float tanh(float x) { return tcc_tanh(x); }
};
struct tcc_libm_math {
  static float exp(float x) { return std::exp(x); }
  static float erf(float x) { return std::erf(x); }
  static float tanh(float x) { return std::tanh(x); }
};

template <class M> inline float tcc_sigmoid_t(float x) {
  return 1.0f / (1.0f + M::exp(-x));
}

// GELU and its gradient: runtime/cpu/KernelsMath.cpp's formulas.
constexpr float tcc_kSqrt1_2 = 0.70710678118654752440f;
constexpr float tcc_kTanhBeta = 0.79788456080286535588f;
constexpr float tcc_kErfBeta = 0.39894228040143267794f;
constexpr float tcc_kKappa = 0.044715f;

template <class M> inline float tcc_gelu_erf_t(float x) {
  return x * 0.5f * (1.0f + M::erf(x * tcc_kSqrt1_2));
}
template <class M> inline float tcc_gelu_tanh_t(float x) {
  float inner = tcc_kTanhBeta * (x + tcc_kKappa * x * x * x);
  return 0.5f * x * (1.0f + M::tanh(inner));
}
template <class M> inline float tcc_gelu_erf_grad_t(float dy, float x) {
  float cdf = 0.5f * (1.0f + M::erf(x * tcc_kSqrt1_2));
  float pdf = tcc_kErfBeta * M::exp(x * x * -0.5f);
  return dy * (cdf + x * pdf);
}
template <class M> inline float tcc_gelu_tanh_grad_t(float dy, float x) {
  float xSq = x * x;
  float inner = tcc_kTanhBeta * (x + tcc_kKappa * xSq * x);
  float t = M::tanh(inner);
  float left = 0.5f * x, right = 1.0f + t;
  float leftDerivative = 0.5f * right;
  float rightDerivative =
      (1.0f - t * t) * tcc_kTanhBeta * (1.0f + 3.0f * tcc_kKappa * xSq);
  return dy * (leftDerivative + left * rightDerivative);
}

inline float tcc_sigmoid(float x) { return tcc_sigmoid_t<tcc_fast_math>(x); }
inline float tcc_gelu_erf(float x) { return tcc_gelu_erf_t<tcc_fast_math>(x); }
inline float tcc_gelu_tanh(float x) { return tcc_gelu_tanh_t<tcc_fast_math>(x); }
inline float tcc_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad_t<tcc_fast_math>(dy, x);
}
inline float tcc_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad_t<tcc_fast_math>(dy, x);
}
inline float tcc_libm_sigmoid(float x) { return tcc_sigmoid_t<tcc_libm_math>(x); }
inline float tcc_libm_gelu_erf(float x) {
  return tcc_gelu_erf_t<tcc_libm_math>(x);
}
inline float tcc_libm_gelu_tanh(float x) {
  return tcc_gelu_tanh_t<tcc_libm_math>(x);
}
inline float tcc_libm_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad_t<tcc_libm_math>(dy, x);
}
inline float tcc_libm_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad_t<tcc_libm_math>(dy, x);
}
inline float tcc_libm_exp(float x) { return std::exp(x); }
inline float tcc_libm_erf(float x) { return std::erf(x); }
inline float tcc_libm_tanh(float x) { return std::tanh(x); }

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

// e^x as runtime/core/prelude/FastExp.h's fastExp computes it, operation for
// operation (no fused multiply-add: contraction is off here, and the
// runtime has none), so the losses' softmax is the library kernel's bit for
// bit while both vectorize (FusedCodegenTest checks the two agree).
inline float tcc_exp_exact(float x) {
  float xc = x > -87.33654f ? x : -87.33654f;
  xc = xc < 88.72283f ? xc : 88.72283f;
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

// sum(exp(x - m)) in double of tcc_exp_exact's floats, in order: the
// softmax sums of the losses, exactly as runtime/cpu/KernelsLoss.cpp
// computes them (the loss gradient drives training, so it matches the
// reference kernel bit for bit). The exponentials go through a block of
// 64 so that they vectorize; the sum keeps its order.
inline double tcc_rowsumexp_f64(const float *__restrict x, int64_t n,
                                float m) {
  double s = 0.0;
  float e[64];
  for (int64_t i0 = 0; i0 < n; i0 += 64) {
    int64_t k = n - i0 < 64 ? n - i0 : 64;
    for (int64_t i = 0; i < k; ++i)
      e[i] = tcc_exp_exact(x[i0 + i] - m);
    for (int64_t i = 0; i < k; ++i)
      s += static_cast<double>(e[i]);
  }
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
