//===- FusedHostMath.h - The math names of generated host kernels ---------===//
//
// The functions the generated host kernels call by name (the templates of
// compiler/codegen/FusedTemplates.cpp): tcc_exp, tcc_sigmoid, tcc_gelu_*
// are FastMath.h's fast functions, for f32 results; their tcc_libm_*
// twins call libm as runtime/cpu/KernelsMath.cpp does, for ops whose
// result is rounded to 16 bits, so those are bit for bit the unfused
// kernels' (a fast function's 1e-7 would move a value across a rounding
// boundary now and then). Only the generated kernels use this header.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_FUSEDHOSTMATH_H
#define TCC_RUNTIME_CORE_PRELUDE_FUSEDHOSTMATH_H

#include "runtime/core/prelude/Activations.h"
#include "runtime/core/prelude/FastMath.h"

struct tcc_fast_math {
  static TCC_PRELUDE_FN float exp(float x) { return tcc_exp(x); }
  static TCC_PRELUDE_FN float erf(float x) { return tcc_erf(x); }
  static TCC_PRELUDE_FN float tanh(float x) { return tcc_tanh(x); }
};

TCC_PRELUDE_FN float tcc_sigmoid(float x) {
  return tcc_sigmoid_t<tcc_fast_math>(x);
}
TCC_PRELUDE_FN float tcc_gelu_erf(float x) {
  return tcc_gelu_erf_t<tcc_fast_math>(x);
}
TCC_PRELUDE_FN float tcc_gelu_tanh(float x) {
  return tcc_gelu_tanh_t<tcc_fast_math>(x);
}
TCC_PRELUDE_FN float tcc_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad_t<tcc_fast_math>(dy, x);
}
TCC_PRELUDE_FN float tcc_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad_t<tcc_fast_math>(dy, x);
}

TCC_PRELUDE_FN float tcc_libm_exp(float x) { return tcc_libm_math::exp(x); }
TCC_PRELUDE_FN float tcc_libm_erf(float x) { return tcc_libm_math::erf(x); }
TCC_PRELUDE_FN float tcc_libm_tanh(float x) { return tcc_libm_math::tanh(x); }
TCC_PRELUDE_FN float tcc_libm_sigmoid(float x) {
  return tcc_sigmoid_t<tcc_libm_math>(x);
}
TCC_PRELUDE_FN float tcc_libm_gelu_erf(float x) {
  return tcc_gelu_erf_t<tcc_libm_math>(x);
}
TCC_PRELUDE_FN float tcc_libm_gelu_tanh(float x) {
  return tcc_gelu_tanh_t<tcc_libm_math>(x);
}
TCC_PRELUDE_FN float tcc_libm_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad_t<tcc_libm_math>(dy, x);
}
TCC_PRELUDE_FN float tcc_libm_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad_t<tcc_libm_math>(dy, x);
}

#endif // TCC_RUNTIME_CORE_PRELUDE_FUSEDHOSTMATH_H
