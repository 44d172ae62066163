//===- KernelsMath.cpp - Element-wise math, GELU, dropout -----------------===//
//
// Forward and backward formulas follow PyTorch's CPU kernels term by term
// (same order of operations, f32 arithmetic, the same special cases: pow by
// 2, 3, 0.5, -0.5, -1, -2; a zero gradient for an exponent of 0), so results
// agree with PyTorch to rounding. Each loop reads element i of every input
// before writing element i of the outputs, so outputs may alias inputs.
//
// Dropout draws from a counter-based generator (see run_dropout), so a mask
// is a pure function of (seed, step, element index).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/Activations.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cmath>

namespace tcc::rt::kernels {

//===----------------------------------------------------------------------===//
// Unary functions and their gradients
//===----------------------------------------------------------------------===//

template <class F> static void mapUnary(const KernelArgs &a, F f) {
  const float *x = a.in[0].f32();
  float *y = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i)
    y[i] = f(x[i]);
}

/// dx[i] = f(dy[i], v[i]).
template <class F> static void mapGrad(const KernelArgs &a, F f) {
  const float *dy = a.in[0].f32(), *v = a.in[1].f32();
  float *dx = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i)
    dx[i] = f(dy[i], v[i]);
}

void run_exp(const KernelArgs &a) {
  mapUnary(a, [](float x) { return std::exp(x); });
}
void run_log(const KernelArgs &a) {
  mapUnary(a, [](float x) { return std::log(x); });
}
void run_sqrt(const KernelArgs &a) {
  mapUnary(a, [](float x) { return std::sqrt(x); });
}
void run_tanh(const KernelArgs &a) {
  mapUnary(a, [](float x) { return std::tanh(x); });
}
void run_sigmoid(const KernelArgs &a) {
  mapUnary(a, [](float x) { return tcc_sigmoid_t<tcc_libm_math>(x); });
}
void run_erf(const KernelArgs &a) {
  mapUnary(a, [](float x) { return std::erf(x); });
}

void run_sqrt_grad(const KernelArgs &a) {
  mapGrad(a, [](float dy, float y) { return dy / (2.0f * y); });
}
void run_tanh_grad(const KernelArgs &a) {
  mapGrad(a, [](float dy, float y) { return dy * (1.0f - y * y); });
}
void run_sigmoid_grad(const KernelArgs &a) {
  mapGrad(a, [](float dy, float y) { return dy * (1.0f - y) * y; });
}
void run_erf_grad(const KernelArgs &a) {
  const float k = static_cast<float>(2.0 / std::sqrt(M_PI));
  mapGrad(a, [k](float dy, float x) { return k * std::exp(-(x * x)) * dy; });
}

//===----------------------------------------------------------------------===//
// Powers
//===----------------------------------------------------------------------===//

/// x^e with PyTorch's special cases for a scalar exponent.
static float powScalar(float x, float e) {
  if (e == 2.0f)
    return x * x;
  if (e == 3.0f)
    return x * x * x;
  if (e == 0.5f)
    return std::sqrt(x);
  if (e == -0.5f)
    return 1.0f / std::sqrt(x);
  if (e == -1.0f)
    return 1.0f / x;
  if (e == -2.0f)
    return 1.0f / (x * x);
  return std::pow(x, e);
}

void run_pow_scalar(const KernelArgs &a) {
  const float e =
      static_cast<float>(abi::attrs<KernelId::PowScalar>(a.instr).exponent);
  // The switch is outside the loop so each common case vectorizes.
  if (e == 2.0f)
    return mapUnary(a, [](float x) { return x * x; });
  if (e == 3.0f)
    return mapUnary(a, [](float x) { return x * x * x; });
  if (e == 0.5f)
    return mapUnary(a, [](float x) { return std::sqrt(x); });
  mapUnary(a, [e](float x) { return powScalar(x, e); });
}

void run_pow_scalar_grad(const KernelArgs &a) {
  const double exponent = abi::attrs<KernelId::PowScalarGrad>(a.instr).exponent;
  const float e = static_cast<float>(exponent);
  if (e == 0.0f)
    return mapGrad(a, [](float, float) { return 0.0f; });
  if (e == 2.0f) // x^1 needs no pow
    return mapGrad(a, [](float dy, float x) { return dy * (2.0f * x); });
  const float em1 = static_cast<float>(exponent - 1.0);
  mapGrad(a,
          [e, em1](float dy, float x) { return dy * (e * powScalar(x, em1)); });
}

void run_pow(const KernelArgs &args) {
  const TensorView &A = args.in[0], &B = args.in[1], &C = args.out[0];
  const float *a = A.f32(), *b = B.f32();
  float *c = C.f32();
  size_t rank = C.rank();
  LoopNest<3> nest(*C.shape, {contiguousStrides(*C.shape),
                              broadcastStrides(*A.shape, rank),
                              broadcastStrides(*B.shape, rank)});
  int64_t inner = nest.innerDim();
  auto st = nest.innerStrides();
  nest.forEachOuter(1, [&](const std::array<int64_t, 3> &off) {
    for (int64_t i = 0; i < inner; ++i)
      c[off[0] + i * st[0]] =
          std::pow(a[off[1] + i * st[1]], b[off[2] + i * st[2]]);
  });
}

// PyTorch: d lhs = dy * (b * a^(b-1)); d rhs = dy * (a^b * log(a)), 0 where
// a == 0 and b >= 0.
void run_pow_grad(const KernelArgs &args) {
  const float *dy = args.in[0].f32(), *a = args.in[1].f32(),
              *b = args.in[2].f32();
  float *da = args.out[0].f32(), *db = args.out[1].f32();
  for (int64_t i = 0, n = args.in[0].numel; i < n; ++i) {
    float g = dy[i], x = a[i], e = b[i];
    float dxa = g * (e * std::pow(x, e - 1.0f));
    float dxb =
        x == 0.0f && e >= 0.0f ? 0.0f : g * (std::pow(x, e) * std::log(x));
    da[i] = dxa;
    db[i] = dxb;
  }
}

//===----------------------------------------------------------------------===//
// GELU (GeluAttrs::tanh: the tanh form, else the erf form)
//===----------------------------------------------------------------------===//

// The formulas are runtime/core/prelude/Activations.h's, which the
// generated kernels share.
void run_gelu(const KernelArgs &a) {
  if (!abi::attrs<KernelId::Gelu>(a.instr).tanh)
    return mapUnary(a,
                    [](float x) { return tcc_gelu_erf_t<tcc_libm_math>(x); });
  mapUnary(a, [](float x) { return tcc_gelu_tanh_t<tcc_libm_math>(x); });
}

void run_gelu_grad(const KernelArgs &a) {
  if (!abi::attrs<KernelId::GeluGrad>(a.instr).tanh)
    return mapGrad(a, [](float dy, float x) {
      return tcc_gelu_erf_grad_t<tcc_libm_math>(dy, x);
    });
  mapGrad(a, [](float dy, float x) {
    return tcc_gelu_tanh_grad_t<tcc_libm_math>(dy, x);
  });
}

//===----------------------------------------------------------------------===//
// Dropout and the step counter
//===----------------------------------------------------------------------===//

/// The SplitMix64 output function (Steele, Lea, Flood 2014; Stafford's mix
/// 13): a bijection of 64-bit integers whose outputs pass BigCrush for
/// consecutive inputs.
static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element i of the op with seed `seed` at step t draws
//   key  = mix64(seed ^ mix64(t)),   bits = mix64(key + (i + 1) * gamma)
// (gamma = 0x9E3779B97F4A7C15: the i-th output of a SplitMix64 generator
// seeded with key) and is dropped when bits' top 32 bits < ratio * 2^32.
// Nothing depends on the order or the thread the elements are visited in.
// Data-parallel rank r numbers its n elements from r * n: the indices its
// rows have in the one-process tensor of N * B rows when the batch leads.
void run_dropout(const KernelArgs &a) {
  const float *x = a.in[0].f32();
  const uint64_t step = static_cast<uint64_t>(a.in[1].i64()[0]);
  float *y = a.out[0].f32(), *mask = a.out[1].f32();
  const abi::DropoutAttrs d = abi::attrs<KernelId::Dropout>(a.instr);
  const double ratio = d.ratio;
  const uint64_t seed = static_cast<uint64_t>(d.seed);
  const uint64_t threshold = static_cast<uint64_t>(std::ldexp(ratio, 32));
  // PyTorch: noise = bernoulli(1 - p) / (1 - p); y = x * noise.
  const float keep =
      ratio < 1.0 ? 1.0f / (1.0f - static_cast<float>(ratio)) : 0.0f;
  const uint64_t key = mix64(seed ^ mix64(step));
  constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  const int64_t n = a.in[0].numel;
  const uint64_t first = static_cast<uint64_t>(a.rank * n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits =
        mix64(key + (first + static_cast<uint64_t>(i) + 1) * kGamma);
    float m = (bits >> 32) < threshold ? 0.0f : keep;
    float xi = x[i];
    mask[i] = m;
    y[i] = xi * m;
  }
}

// Random numbers from dropout's stream: element i (numbered from rank * n,
// as dropout) takes bits = mix64(key + (i + 1) * gamma). Uniform:
// u = (bits >> 40) * 2^-24, exact in f32 and in [0, 1), so u < p holds with
// probability p rounded to 2^-24 (Bernoulli imports as that compare).
// Normal: Box-Muller on the two 32-bit halves, u1 = (hi + 1) * 2^-32 in
// (0, 1] (no log 0), u2 = lo * 2^-32, z = sqrt(-2 ln u1) cos(2 pi u2), in
// double; the CUDA kernel computes the same expression.
void run_random(const KernelArgs &a) {
  const uint64_t step = static_cast<uint64_t>(a.in[0].i64()[0]);
  float *y = a.out[0].f32();
  const abi::RandomAttrs r = abi::attrs<KernelId::Random>(a.instr);
  const uint64_t key = mix64(static_cast<uint64_t>(r.seed) ^ mix64(step));
  constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  const int64_t n = a.out[0].numel;
  const uint64_t first = static_cast<uint64_t>(a.rank * n);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits =
        mix64(key + (first + static_cast<uint64_t>(i) + 1) * kGamma);
    if (!r.normal) {
      float u = std::ldexp(static_cast<float>(bits >> 40), -24);
      y[i] = static_cast<float>(r.a + (r.b - r.a) * static_cast<double>(u));
      continue;
    }
    double u1 = std::ldexp(static_cast<double>((bits >> 32) + 1), -32);
    double u2 = std::ldexp(static_cast<double>(bits & 0xFFFFFFFFull), -32);
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
    y[i] = static_cast<float>(r.a + r.b * z);
  }
}

void run_increment(const KernelArgs &a) {
  a.out[0].i64()[0] = a.in[0].i64()[0] + 1;
}

} // namespace tcc::rt::kernels
