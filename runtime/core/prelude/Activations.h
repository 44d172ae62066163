//===- Activations.h - Sigmoid and GELU formulas ----------------*- C++ -*-===//
//
// Sigmoid, GELU (erf and tanh forms) and GELU's gradients, written once over
// a math policy M (M::exp, M::erf, M::tanh) and term by term as PyTorch's
// CPU kernels compute them. runtime/cpu/KernelsMath.cpp and
// runtime/cuda/CudaKernelsElementwise.cu instantiate them with
// tcc_libm_math (libm on the host, CUDA's expf/erff/tanhf on the device);
// the generated host kernels also with FastMath.h's functions
// (FusedHostMath.h), the generated CUDA kernels with tcc_libm_math
// (FusedCudaMath.h). Since callers build without multiply-add contraction,
// a fused region computes what the unfused kernel computes.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_ACTIVATIONS_H
#define TCC_RUNTIME_CORE_PRELUDE_ACTIVATIONS_H

#include "runtime/core/prelude/Config.h"

// sqrt(1/2); sqrt(2 / pi) and 1 / sqrt(2 pi), as PyTorch spells them; the
// tanh form's cubic coefficient. Macros, not constexpr variables: NVRTC and
// nvcc would give each of those a (never read) global in device memory.
// (M_SQRT1_2, M_SQRT2 * M_2_SQRTPI / 2 and M_2_SQRTPI * M_SQRT1_2 / 2 round
// to the same floats.)
#define TCC_GELU_SQRT1_2 0.70710678118654752440f
#define TCC_GELU_TANH_BETA 0.79788456080286535588f
#define TCC_GELU_ERF_BETA 0.39894228040143267794f
#define TCC_GELU_KAPPA 0.044715f

/// The C library's functions (the host's libm; on the device CUDA's
/// accurate expf, erff and tanhf, not the __expf intrinsics).
struct tcc_libm_math {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  static TCC_PRELUDE_FN float exp(float x) { return ::expf(x); }
  static TCC_PRELUDE_FN float erf(float x) { return ::erff(x); }
  static TCC_PRELUDE_FN float tanh(float x) { return ::tanhf(x); }
#else
  static TCC_PRELUDE_FN float exp(float x) { return __builtin_expf(x); }
  static TCC_PRELUDE_FN float erf(float x) { return __builtin_erff(x); }
  static TCC_PRELUDE_FN float tanh(float x) { return __builtin_tanhf(x); }
#endif
};

template <class M> TCC_PRELUDE_FN float tcc_sigmoid_t(float x) {
  return 1.0f / (1.0f + M::exp(-x));
}

template <class M> TCC_PRELUDE_FN float tcc_gelu_erf_t(float x) {
  return x * 0.5f * (1.0f + M::erf(x * TCC_GELU_SQRT1_2));
}

template <class M> TCC_PRELUDE_FN float tcc_gelu_tanh_t(float x) {
  float inner = TCC_GELU_TANH_BETA * (x + TCC_GELU_KAPPA * x * x * x);
  return 0.5f * x * (1.0f + M::tanh(inner));
}

/// dy * d/dx gelu_erf(x).
template <class M> TCC_PRELUDE_FN float tcc_gelu_erf_grad_t(float dy, float x) {
  float cdf = 0.5f * (1.0f + M::erf(x * TCC_GELU_SQRT1_2));
  float pdf = TCC_GELU_ERF_BETA * M::exp(x * x * -0.5f);
  return dy * (cdf + x * pdf);
}

/// dy * d/dx gelu_tanh(x).
template <class M>
TCC_PRELUDE_FN float tcc_gelu_tanh_grad_t(float dy, float x) {
  float xSq = x * x;
  float inner = TCC_GELU_TANH_BETA * (x + TCC_GELU_KAPPA * xSq * x);
  float t = M::tanh(inner);
  float left = 0.5f * x, right = 1.0f + t;
  float leftDerivative = 0.5f * right;
  float rightDerivative = (1.0f - t * t) * TCC_GELU_TANH_BETA *
                          (1.0f + 3.0f * TCC_GELU_KAPPA * xSq);
  return dy * (leftDerivative + left * rightDerivative);
}

#endif // TCC_RUNTIME_CORE_PRELUDE_ACTIVATIONS_H
