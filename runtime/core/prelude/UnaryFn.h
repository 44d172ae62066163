//===- UnaryFn.h - The unary function family and its gradients --*- C++ -*-===//
//
// The element-wise functions of `tcc.unary_fn` (abs, sign, floor, ceil,
// round, sin, cos, hard_swish, hard_sigmoid, leaky_relu, elu, selu,
// softplus, mish, clip, tan, asin, acos, atan, sinh, cosh, asinh, acosh,
// atanh, softsign, shrink, celu, thresholded_relu, norm_sqrt), their
// gradients, and the
// one list that names them. Each takes up to two float parameters, alpha and
// beta (see the list). runtime/cpu/KernelsUnaryFn.cpp,
// runtime/cuda/CudaKernelsElementwise.cu and the generated kernels of both
// backends (compiler/codegen's templates write `tcc_unary_fn(TCC_UFN_ELU, x,
// alpha, beta)`) all call these functions, so a fused region computes what the
// unfused kernel computes. The formulas and the gradients' conventions are
// PyTorch's (torch.abs, torch.nn.functional.elu, ...): the gradient of abs is 0
// at 0, of sign/floor/ceil/round 0 everywhere, clip passes dy where min <= x <=
// max (torch.clamp), softplus has torch's beta 1 and threshold
// 20, norm_sqrt is sqrt whose gradient is 0 at 0 (the square root of a sum of
// squares, whose gradient at an all-zero group PyTorch's norms define as 0,
// where sqrt's would be Inf and the chain's NaN). The math is the C library's on the host and CUDA's accurate functions
// on the device.
//
// Adding a function: a row in TCC_UNARY_FNS, its case in tcc_unary_fn and
// tcc_unary_fn_grad, and (for ONNX) a row in frontends/onnx's table.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_UNARYFN_H
#define TCC_RUNTIME_CORE_PRELUDE_UNARYFN_H

#include "runtime/core/prelude/Config.h"

// X(ENUM, "name"): the code TCC_UFN_ENUM (its position, stored in artifacts:
// append only) and the name `tcc.unary_fn`'s `fn` attribute spells.
// Parameters: hard_sigmoid max(0, min(1, alpha x + beta)); leaky_relu and
// elu alpha; selu alpha and gamma (beta); clip min (alpha) and max (beta);
// shrink lambd (alpha) and bias (beta); celu and thresholded_relu alpha.
#define TCC_UNARY_FNS(X)                                                       \
  X(ABS, "abs")                                                                \
  X(SIGN, "sign")                                                              \
  X(FLOOR, "floor")                                                            \
  X(CEIL, "ceil")                                                              \
  X(ROUND, "round")                                                            \
  X(SIN, "sin")                                                                \
  X(COS, "cos")                                                                \
  X(HARD_SWISH, "hard_swish")                                                  \
  X(HARD_SIGMOID, "hard_sigmoid")                                              \
  X(LEAKY_RELU, "leaky_relu")                                                  \
  X(ELU, "elu")                                                                \
  X(SELU, "selu")                                                              \
  X(SOFTPLUS, "softplus")                                                      \
  X(MISH, "mish")                                                              \
  X(CLIP, "clip")                                                              \
  X(TAN, "tan")                                                                \
  X(ASIN, "asin")                                                              \
  X(ACOS, "acos")                                                              \
  X(ATAN, "atan")                                                              \
  X(SINH, "sinh")                                                              \
  X(COSH, "cosh")                                                              \
  X(ASINH, "asinh")                                                            \
  X(ACOSH, "acosh")                                                            \
  X(ATANH, "atanh")                                                            \
  X(SOFTSIGN, "softsign")                                                      \
  X(SHRINK, "shrink")                                                          \
  X(CELU, "celu")                                                              \
  X(THRESHOLDED_RELU, "thresholded_relu")                                      \
  X(NORM_SQRT, "norm_sqrt")

enum tcc_unary_fn_code {
#define TCC_UNARY_FN_ENUM(E, N) TCC_UFN_##E,
  TCC_UNARY_FNS(TCC_UNARY_FN_ENUM)
#undef TCC_UNARY_FN_ENUM
      TCC_UFN_COUNT
};

/// The library functions the family needs, one spelling for every compiler.
struct tcc_ufn_math {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  static TCC_PRELUDE_FN float floor(float x) { return ::floorf(x); }
  static TCC_PRELUDE_FN float ceil(float x) { return ::ceilf(x); }
  static TCC_PRELUDE_FN float rint(float x) { return ::rintf(x); }
  static TCC_PRELUDE_FN float sin(float x) { return ::sinf(x); }
  static TCC_PRELUDE_FN float cos(float x) { return ::cosf(x); }
  static TCC_PRELUDE_FN float exp(float x) { return ::expf(x); }
  static TCC_PRELUDE_FN float expm1(float x) { return ::expm1f(x); }
  static TCC_PRELUDE_FN float log1p(float x) { return ::log1pf(x); }
  static TCC_PRELUDE_FN float tanh(float x) { return ::tanhf(x); }
  static TCC_PRELUDE_FN float tan(float x) { return ::tanf(x); }
  static TCC_PRELUDE_FN float asin(float x) { return ::asinf(x); }
  static TCC_PRELUDE_FN float acos(float x) { return ::acosf(x); }
  static TCC_PRELUDE_FN float atan(float x) { return ::atanf(x); }
  static TCC_PRELUDE_FN float sinh(float x) { return ::sinhf(x); }
  static TCC_PRELUDE_FN float cosh(float x) { return ::coshf(x); }
  static TCC_PRELUDE_FN float asinh(float x) { return ::asinhf(x); }
  static TCC_PRELUDE_FN float acosh(float x) { return ::acoshf(x); }
  static TCC_PRELUDE_FN float atanh(float x) { return ::atanhf(x); }
  static TCC_PRELUDE_FN float sqrt(float x) { return ::sqrtf(x); }
#else
  static TCC_PRELUDE_FN float floor(float x) { return __builtin_floorf(x); }
  static TCC_PRELUDE_FN float ceil(float x) { return __builtin_ceilf(x); }
  static TCC_PRELUDE_FN float rint(float x) { return __builtin_rintf(x); }
  static TCC_PRELUDE_FN float sin(float x) { return __builtin_sinf(x); }
  static TCC_PRELUDE_FN float cos(float x) { return __builtin_cosf(x); }
  static TCC_PRELUDE_FN float exp(float x) { return __builtin_expf(x); }
  static TCC_PRELUDE_FN float expm1(float x) { return __builtin_expm1f(x); }
  static TCC_PRELUDE_FN float log1p(float x) { return __builtin_log1pf(x); }
  static TCC_PRELUDE_FN float tanh(float x) { return __builtin_tanhf(x); }
  static TCC_PRELUDE_FN float tan(float x) { return __builtin_tanf(x); }
  static TCC_PRELUDE_FN float asin(float x) { return __builtin_asinf(x); }
  static TCC_PRELUDE_FN float acos(float x) { return __builtin_acosf(x); }
  static TCC_PRELUDE_FN float atan(float x) { return __builtin_atanf(x); }
  static TCC_PRELUDE_FN float sinh(float x) { return __builtin_sinhf(x); }
  static TCC_PRELUDE_FN float cosh(float x) { return __builtin_coshf(x); }
  static TCC_PRELUDE_FN float asinh(float x) { return __builtin_asinhf(x); }
  static TCC_PRELUDE_FN float acosh(float x) { return __builtin_acoshf(x); }
  static TCC_PRELUDE_FN float atanh(float x) { return __builtin_atanhf(x); }
  static TCC_PRELUDE_FN float sqrt(float x) { return __builtin_sqrtf(x); }
#endif
};

/// f(x). Comparisons are written so that a NaN x gives NaN (as PyTorch).
TCC_PRELUDE_FN float tcc_unary_fn(int fn, float x, float alpha, float beta) {
  typedef tcc_ufn_math M;
  switch (fn) {
  case TCC_UFN_ABS:
    return x < 0.0f ? -x : (x == 0.0f ? 0.0f : x);
  case TCC_UFN_SIGN:
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x));
  case TCC_UFN_FLOOR:
    return M::floor(x);
  case TCC_UFN_CEIL:
    return M::ceil(x);
  case TCC_UFN_ROUND: // half to even: rint in the default rounding mode
    return M::rint(x);
  case TCC_UFN_SIN:
    return M::sin(x);
  case TCC_UFN_COS:
    return M::cos(x);
  case TCC_UFN_HARD_SWISH: { // x * min(max(x + 3, 0), 6) / 6
    float t = x + 3.0f;
    t = t < 0.0f ? 0.0f : t;
    t = t > 6.0f ? 6.0f : t;
    return x * t / 6.0f;
  }
  case TCC_UFN_HARD_SIGMOID: {
    float t = alpha * x + beta;
    t = t < 0.0f ? 0.0f : t;
    return t > 1.0f ? 1.0f : t;
  }
  case TCC_UFN_LEAKY_RELU:
    return x > 0.0f ? x : x * alpha;
  case TCC_UFN_ELU:
    return x <= 0.0f ? M::expm1(x) * alpha : x;
  case TCC_UFN_SELU:
    return x <= 0.0f ? M::expm1(x) * (alpha * beta) : x * beta;
  case TCC_UFN_SOFTPLUS:
    return x > 20.0f ? x : M::log1p(M::exp(x));
  case TCC_UFN_MISH:
    return x * M::tanh(M::log1p(M::exp(x)));
  case TCC_UFN_CLIP: { // min(max(x, lo), hi): hi wins when lo > hi
    float y = x < alpha ? alpha : x;
    return y > beta ? beta : y;
  }
  case TCC_UFN_TAN:
    return M::tan(x);
  case TCC_UFN_ASIN:
    return M::asin(x);
  case TCC_UFN_ACOS:
    return M::acos(x);
  case TCC_UFN_ATAN:
    return M::atan(x);
  case TCC_UFN_SINH:
    return M::sinh(x);
  case TCC_UFN_COSH:
    return M::cosh(x);
  case TCC_UFN_ASINH:
    return M::asinh(x);
  case TCC_UFN_ACOSH:
    return M::acosh(x);
  case TCC_UFN_ATANH:
    return M::atanh(x);
  case TCC_UFN_SOFTSIGN: // x / (1 + |x|)
    return x / (1.0f + (x < 0.0f ? -x : x));
  case TCC_UFN_SHRINK: // ONNX Shrink: lambd alpha, bias beta
    return x < -alpha ? x + beta : (x > alpha ? x - beta : (x == x ? 0.0f : x));
  case TCC_UFN_CELU: // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    return x <= 0.0f ? M::expm1(x / alpha) * alpha : x;
  case TCC_UFN_THRESHOLDED_RELU:
    return x > alpha ? x : (x == x ? 0.0f : x);
  case TCC_UFN_NORM_SQRT:
    return M::sqrt(x);
  default:
    return x;
  }
}

/// dy * f'(x), PyTorch's backward formulas.
TCC_PRELUDE_FN float tcc_unary_fn_grad(int fn, float dy, float x, float alpha,
                                       float beta) {
  typedef tcc_ufn_math M;
  switch (fn) {
  case TCC_UFN_ABS:
    return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
  case TCC_UFN_SIGN:
  case TCC_UFN_FLOOR:
  case TCC_UFN_CEIL:
  case TCC_UFN_ROUND:
    return 0.0f;
  case TCC_UFN_SIN:
    return dy * M::cos(x);
  case TCC_UFN_COS:
    return dy * -M::sin(x);
  case TCC_UFN_HARD_SWISH:
    return x < -3.0f ? 0.0f : (x <= 3.0f ? dy * (x / 3.0f + 0.5f) : dy);
  case TCC_UFN_HARD_SIGMOID: {
    float t = alpha * x + beta;
    return t > 0.0f && t < 1.0f ? dy * alpha : 0.0f;
  }
  case TCC_UFN_LEAKY_RELU:
    return x > 0.0f ? dy : dy * alpha;
  case TCC_UFN_ELU:
    return x <= 0.0f ? dy * alpha * M::exp(x) : dy;
  case TCC_UFN_SELU:
    return x <= 0.0f ? dy * (alpha * beta) * M::exp(x) : dy * beta;
  case TCC_UFN_SOFTPLUS: {
    float z = M::exp(x);
    return x > 20.0f ? dy : dy * z / (z + 1.0f);
  }
  case TCC_UFN_MISH: {
    float sigmoid = 1.0f / (1.0f + M::exp(-x));
    float t = M::tanh(M::log1p(M::exp(x)));
    return dy * (t + x * sigmoid * (1.0f - t * t));
  }
  case TCC_UFN_CLIP:
    return x >= alpha && x <= beta ? dy : 0.0f;
  case TCC_UFN_TAN: { // torch: dy * (1 + tan(x)^2)
    float t = M::tan(x);
    return dy * (1.0f + t * t);
  }
  case TCC_UFN_ASIN:
    return dy / M::sqrt(1.0f - x * x);
  case TCC_UFN_ACOS:
    return -dy / M::sqrt(1.0f - x * x);
  case TCC_UFN_ATAN:
    return dy / (1.0f + x * x);
  case TCC_UFN_SINH:
    return dy * M::cosh(x);
  case TCC_UFN_COSH:
    return dy * M::sinh(x);
  case TCC_UFN_ASINH:
    return dy / M::sqrt(x * x + 1.0f);
  case TCC_UFN_ACOSH:
    return dy / M::sqrt(x * x - 1.0f);
  case TCC_UFN_ATANH:
    return dy / (1.0f - x * x);
  case TCC_UFN_SOFTSIGN: {
    float d = 1.0f + (x < 0.0f ? -x : x);
    return dy / (d * d);
  }
  case TCC_UFN_SHRINK: // torch.nn.functional.hardshrink/softshrink
    return x < -alpha || x > alpha ? dy : 0.0f;
  case TCC_UFN_CELU:
    return x <= 0.0f ? dy * M::exp(x / alpha) : dy;
  case TCC_UFN_THRESHOLDED_RELU: // torch.threshold(x, alpha, 0)
    return x > alpha ? dy : 0.0f;
  case TCC_UFN_NORM_SQRT: // 0 at 0, as torch.linalg.vector_norm's backward
    return x == 0.0f ? 0.0f : dy * 0.5f / M::sqrt(x);
  default:
    return dy;
  }
}

#ifndef TCC_PRELUDE_GENERATED
// Outside the generated code: the names, for the dialect's verifier and
// printers. (Global and prefixed like the rest, not in namespace tcc, which
// would make `tcc::` ambiguous where `mlir::tcc` is in use.)

/// The `fn` name of a code, or null.
inline const char *tcc_unary_fn_name(int fn) {
  static const char *const names[] = {
#define TCC_UNARY_FN_NAME(E, N) N,
      TCC_UNARY_FNS(TCC_UNARY_FN_NAME)
#undef TCC_UNARY_FN_NAME
  };
  return fn >= 0 && fn < TCC_UFN_COUNT ? names[fn] : nullptr;
}

/// The code of a name (`size` characters, not terminated), or -1.
inline int tcc_unary_fn_code(const char *name, unsigned long size) {
  for (int fn = 0; fn < TCC_UFN_COUNT; ++fn) {
    const char *n = tcc_unary_fn_name(fn);
    unsigned long i = 0;
    while (i < size && n[i] && n[i] == name[i])
      ++i;
    if (i == size && !n[i])
      return fn;
  }
  return -1;
}
#endif

#endif // TCC_RUNTIME_CORE_PRELUDE_UNARYFN_H
