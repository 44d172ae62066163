//===- Mod.h - The remainder of tcc.mod, for kernels and generated code ---===//
//
// One definition of the element-wise remainder that the CPU and CUDA `mod`
// kernels and both fused code generators call, so that all four agree bit
// for bit. With `fmod` it is C's fmod (truncated division: the sign of the
// dividend), without it NumPy's mod (floored division: the sign of the
// divisor, and a zero remainder takes the divisor's sign too). Float
// remainders are exact, so each is the one correctly rounded answer.
//
// An integer remainder by 0 is 0, NumPy's answer: ONNX leaves it undefined
// and C traps, and a model must not crash the process. x % -1 is 0 without
// computing INT64_MIN % -1, which overflows.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_MOD_H
#define TCC_RUNTIME_CORE_PRELUDE_MOD_H

#include "runtime/core/prelude/Config.h"

struct tcc_mod_math {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  static TCC_PRELUDE_FN float fmod(float a, float b) { return ::fmodf(a, b); }
  static TCC_PRELUDE_FN float copysign(float a, float b) {
    return ::copysignf(a, b);
  }
#else
  static TCC_PRELUDE_FN float fmod(float a, float b) {
    return __builtin_fmodf(a, b);
  }
  static TCC_PRELUDE_FN float copysign(float a, float b) {
    return __builtin_copysignf(a, b);
  }
#endif
};

/// a mod b in float; NaN when b is 0 or a infinite (as fmod).
TCC_PRELUDE_FN float tcc_mod(float a, float b, int fmod) {
  float r = tcc_mod_math::fmod(a, b);
  if (fmod)
    return r;
  if (r == 0.0f)
    return tcc_mod_math::copysign(0.0f, b);
  return (r < 0.0f) != (b < 0.0f) ? r + b : r;
}

/// a mod b in int64; 0 when b is 0.
TCC_PRELUDE_FN long long tcc_mod_i64(long long a, long long b, int fmod) {
  if (b == 0 || b == -1)
    return 0;
  long long r = a % b;
  return !fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

#endif // TCC_RUNTIME_CORE_PRELUDE_MOD_H
