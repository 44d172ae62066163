//===- FusedCudaMath.h - The math names of generated CUDA kernels ---------===//
//
// The node templates the two emitters share are spelled in C++ (std::pow,
// std::exp, ...); compiler/codegen/CudaEmit.cpp rewrites `std::` to
// `tccm::`, whose device overloads keep C++'s float/double overload
// resolution. The math is CUDA's accurate library (expf, erff, tanhf: a few
// ulp), not the __expf-style intrinsics (but for the losses' exponential,
// tcc_exp_exact), and the program is compiled without fast math, so NaN and
// Inf propagate as in the host library. The sigmoid and GELU formulas are
// Activations.h's over that library, as in runtime/cuda's kernels; the
// host's tcc_libm_* variants (16-bit results) are the same functions here.
// Only the generated kernels use this header.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_FUSEDCUDAMATH_H
#define TCC_RUNTIME_CORE_PRELUDE_FUSEDCUDAMATH_H

#include "runtime/core/prelude/Activations.h"
#include "runtime/core/prelude/Ptx.h"

namespace tccm {
__device__ __forceinline__ float pow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) {
  return ::pow(a, b);
}
__device__ __forceinline__ float log(float a) { return ::logf(a); }
__device__ __forceinline__ double log(double a) { return ::log(a); }
__device__ __forceinline__ float sqrt(float a) { return ::sqrtf(a); }
__device__ __forceinline__ double sqrt(double a) { return ::sqrt(a); }
__device__ __forceinline__ float exp(float a) { return ::expf(a); }
__device__ __forceinline__ double exp(double a) { return ::exp(a); }
__device__ __forceinline__ float nan_f() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ float inf_f() { return __int_as_float(0x7f800000); }
} // namespace tccm

__device__ __forceinline__ float tcc_exp(float x) { return ::expf(x); }
// The losses' exponential, of x - max <= 0 (the host's is FastExp.h's
// tcc_exp_exact, which the GPU does not match bit for bit either way). On
// the GPU 2^(x log2 e) by one multiply and ex2.approx.ftz, two instructions
// where expf's range reduction takes eight, twice per logit: GPT-2's loss
// kernel (50257 logits a row) is bound by instruction issue. Relative
// error: ex2's 2 ulp, plus the rounding of x log2 e, 2^-24 |x log2 e| (3e-7
// at x = -5, 5e-6 at x = -87, where e^x < 2e-38); results below 2^-126 are
// 0. The consumers are a double sum whose log is the loss and a gradient
// rounded to bf16 or f32. Off the GPU (the emulator) expf.
__device__ __forceinline__ float tcc_exp_exact(float x) {
#ifdef __CUDA_ARCH__
  return tcc_ex2_approx(x * 1.4426950408889634f);
#else
  return ::expf(x);
#endif
}
__device__ __forceinline__ float tcc_erf(float x) { return ::erff(x); }
__device__ __forceinline__ float tcc_tanh(float x) { return ::tanhf(x); }
__device__ __forceinline__ float tcc_sigmoid(float x) {
  return tcc_sigmoid_t<tcc_libm_math>(x);
}
__device__ __forceinline__ float tcc_gelu_erf(float x) {
  return tcc_gelu_erf_t<tcc_libm_math>(x);
}
__device__ __forceinline__ float tcc_gelu_tanh(float x) {
  return tcc_gelu_tanh_t<tcc_libm_math>(x);
}
__device__ __forceinline__ float tcc_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad_t<tcc_libm_math>(dy, x);
}
__device__ __forceinline__ float tcc_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad_t<tcc_libm_math>(dy, x);
}

// One math library on the device: the exact variants are the same.
__device__ __forceinline__ float tcc_libm_exp(float x) { return tcc_exp(x); }
__device__ __forceinline__ float tcc_libm_erf(float x) { return tcc_erf(x); }
__device__ __forceinline__ float tcc_libm_tanh(float x) { return tcc_tanh(x); }
__device__ __forceinline__ float tcc_libm_sigmoid(float x) {
  return tcc_sigmoid(x);
}
__device__ __forceinline__ float tcc_libm_gelu_erf(float x) {
  return tcc_gelu_erf(x);
}
__device__ __forceinline__ float tcc_libm_gelu_tanh(float x) {
  return tcc_gelu_tanh(x);
}
__device__ __forceinline__ float tcc_libm_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad(dy, x);
}
__device__ __forceinline__ float tcc_libm_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad(dy, x);
}

#endif // TCC_RUNTIME_CORE_PRELUDE_FUSEDCUDAMATH_H
