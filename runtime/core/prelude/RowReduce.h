//===- RowReduce.h - Row reductions in a fixed order ------------*- C++ -*-===//
//
// Sum, max and softmax sum of n contiguous floats, in an order that depends
// on n only, so results do not depend on the thread count. Sum and max use
// eight independent lanes (they vectorize without reassociation) combined
// in a fixed order (the softmax sum in double lanes). The generated host
// kernels use all three;
// runtime/cpu/KernelsReduce.cpp sums rows with tcc_rowsum and
// KernelsLoss.cpp takes the losses' softmax sums from tcc_rowsumexp_f64,
// so a fused loss equals the library's bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_ROWREDUCE_H
#define TCC_RUNTIME_CORE_PRELUDE_ROWREDUCE_H

#include "runtime/core/prelude/FastExp.h"

// The eight lanes as one vector: the same sums in the same order as eight
// scalar accumulators, but GCC's -march=x86-64-v4 SLP pass turned those
// (in rows of known length) into 512-bit loads, lane extracts and scalar
// adds, which made a layer norm 1.6x slower than at x86-64-v3.
typedef float tcc_f32x8 __attribute__((vector_size(32), aligned(4)));

TCC_PRELUDE_FN float tcc_rowsum(const float *__restrict x, long long n) {
  tcc_f32x8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
  long long i = 0;
  for (; i + 8 <= n; i += 8) {
    tcc_f32x8 v;
    __builtin_memcpy(&v, x + i, sizeof v);
    acc += v;
  }
  float s = 0.0f;
  for (; i < n; ++i)
    s += x[i];
  return s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// A NaN element never replaces the maximum (-inf for n = 0).
TCC_PRELUDE_FN float tcc_rowmax(const float *__restrict x, long long n) {
  float acc[8];
  for (int k = 0; k < 8; ++k)
    acc[k] = -__builtin_inff();
  long long i = 0;
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

/// sum(exp(x - m)) in double of tcc_exp_exact's floats: the losses'
/// softmax sums (the loss gradient drives training, so the fused and the
/// library kernel agree bit for bit). The exponentials go through a block
/// of 64 so that they vectorize; the sums in eight double lanes (element i
/// in lane i mod 8, the last partial eight apart), combined in a fixed
/// order: one chain of dependent double adds per element cost more than
/// the exponentials.
typedef double tcc_f64x8 __attribute__((vector_size(64), aligned(8)));

TCC_PRELUDE_FN double tcc_rowsumexp_f64(const float *__restrict x, long long n,
                                        float m) {
  tcc_f64x8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
  double tail = 0.0;
  float e[64];
  for (long long i0 = 0; i0 < n; i0 += 64) {
    long long k = n - i0 < 64 ? n - i0 : 64;
    for (long long i = 0; i < k; ++i)
      e[i] = tcc_exp_exact(x[i0 + i] - m);
    long long i = 0;
    for (; i + 8 <= k; i += 8) {
      tcc_f32x8 v;
      __builtin_memcpy(&v, e + i, sizeof v);
      acc += __builtin_convertvector(v, tcc_f64x8);
    }
    for (; i < k; ++i)
      tail += static_cast<double>(e[i]);
  }
  return tail + ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#endif // TCC_RUNTIME_CORE_PRELUDE_ROWREDUCE_H
