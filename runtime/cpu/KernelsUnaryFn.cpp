//===- KernelsUnaryFn.cpp - The unary function family ---------------------===//
//
// unary_fn and unary_fn_grad: runtime/core/prelude/UnaryFn.h's formulas,
// which the generated kernels and the CUDA backend share. Each function
// gets its own loop (the code a template argument), so the switch over
// functions runs once per call, not per element. Element i is read before
// it is written, so outputs may alias inputs.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/UnaryFn.h"
#include "runtime/cpu/KernelsInternal.h"

namespace tcc::rt::kernels {

template <int Fn>
static void mapUnaryFn(const KernelArgs &a, float alpha, float beta) {
  const float *x = a.in[0].f32();
  float *y = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i)
    y[i] = tcc_unary_fn(Fn, x[i], alpha, beta);
}

template <int Fn>
static void mapUnaryFnGrad(const KernelArgs &a, float alpha, float beta) {
  const float *dy = a.in[0].f32(), *x = a.in[1].f32();
  float *dx = a.out[0].f32();
  for (int64_t i = 0, n = a.out[0].numel; i < n; ++i)
    dx[i] = tcc_unary_fn_grad(Fn, dy[i], x[i], alpha, beta);
}

void run_unary_fn(const KernelArgs &a) {
  abi::UnaryFnAttrs f = abi::attrs<KernelId::UnaryFn>(a.instr);
  float alpha = static_cast<float>(f.alpha), beta = static_cast<float>(f.beta);
  switch (f.fn) {
#define TCC_UNARY_FN_CASE(E, N)                                                \
  case TCC_UFN_##E:                                                            \
    return mapUnaryFn<TCC_UFN_##E>(a, alpha, beta);
    TCC_UNARY_FNS(TCC_UNARY_FN_CASE)
#undef TCC_UNARY_FN_CASE
  }
}

void run_unary_fn_grad(const KernelArgs &a) {
  abi::UnaryFnAttrs f = abi::attrs<KernelId::UnaryFnGrad>(a.instr);
  float alpha = static_cast<float>(f.alpha), beta = static_cast<float>(f.beta);
  switch (f.fn) {
#define TCC_UNARY_FN_CASE(E, N)                                                \
  case TCC_UFN_##E:                                                            \
    return mapUnaryFnGrad<TCC_UFN_##E>(a, alpha, beta);
    TCC_UNARY_FNS(TCC_UNARY_FN_CASE)
#undef TCC_UNARY_FN_CASE
  }
}

} // namespace tcc::rt::kernels
