//===- KernelsOptim.cpp - SGD, SGD with momentum, AdamW updates -----------===//
//
// The arithmetic follows torch.optim's single-tensor (non-foreach) code step
// by step, in the same order and precision (scalars cast to f32 where PyTorch
// casts them), so trajectories match PyTorch closely. Each loop loads all
// inputs of element i before storing, so outputs may alias inputs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include <cmath>

namespace tcc::rt::kernels {

/// All operands f32 with the parameter's element count; `scalars` inputs at
/// the end are single elements instead.
static void checkUpdate(const KernelSig &s, size_t nIn, size_t nOut,
                        size_t nF, size_t scalars) {
  expectArity(s, nIn, nOut);
  expectFAttrs(s, nF);
  expectAllF32(s);
  int64_t n = s.in[0]->numElements();
  for (size_t i = 1; i < nIn; ++i)
    expectNumel(s, true, i, i + scalars >= nIn ? 1 : n);
  for (size_t i = 0; i < nOut; ++i)
    expectNumel(s, false, i, n);
}

void check_sgd_update(const KernelSig &s) { checkUpdate(s, 2, 1, 2, 0); }

void run_sgd_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32();
  float *out = a.out[0].f32();
  const float lr = static_cast<float>(a.instr.fattrs[0]);
  const float wd = static_cast<float>(a.instr.fattrs[1]);
  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i];
    float d = g[i] + wd * pi;
    out[i] = pi - lr * d;
  }
}

void check_sgd_momentum_update(const KernelSig &s) {
  checkUpdate(s, 3, 2, 3, 0);
}

void run_sgd_momentum_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32(), *buf = a.in[2].f32();
  float *pOut = a.out[0].f32(), *bufOut = a.out[1].f32();
  const float lr = static_cast<float>(a.instr.fattrs[0]);
  const float momentum = static_cast<float>(a.instr.fattrs[1]);
  const float wd = static_cast<float>(a.instr.fattrs[2]);
  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i], bi = buf[i];
    float d = g[i] + wd * pi;
    float b = momentum * bi + d;
    bufOut[i] = b;
    pOut[i] = pi - lr * b;
  }
}

void check_adamw_update(const KernelSig &s) { checkUpdate(s, 5, 3, 5, 1); }

void run_adamw_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32(), *m = a.in[2].f32(),
              *v = a.in[3].f32();
  float *pOut = a.out[0].f32(), *mOut = a.out[1].f32(),
        *vOut = a.out[2].f32();
  const auto &f = a.instr.fattrs;
  const double lr = f[0], beta1 = f[1], beta2 = f[2], eps = f[3], wd = f[4];
  const double step = a.in[4].f32()[0];

  // Python-side scalars of torch.optim.adamw._single_tensor_adamw, in double.
  const double bc1 = 1.0 - std::pow(beta1, step);
  const double bc2 = 1.0 - std::pow(beta2, step);
  const double stepSize = lr / bc1;
  const double bc2Sqrt = std::sqrt(bc2);
  // ...and as the f32 tensor ops see them.
  const float decay = static_cast<float>(1.0 - lr * wd);
  const float w1 = static_cast<float>(1.0 - beta1);
  const float b2 = static_cast<float>(beta2);
  const float w2 = static_cast<float>(1.0 - beta2);
  const float bc2SqrtF = static_cast<float>(bc2Sqrt);
  const float epsF = static_cast<float>(eps);
  const float negStep = static_cast<float>(-stepSize);
  const bool lerpFromStart = w1 < 0.5f;

  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i], gi = g[i], mi = m[i], vi = v[i];
    pi = pi * decay;                                        // param.mul_
    mi = lerpFromStart ? mi + w1 * (gi - mi)                // exp_avg.lerp_
                       : gi - (gi - mi) * (1.0f - w1);
    vi = vi * b2 + w2 * gi * gi;                            // mul_.addcmul_
    float denom = std::sqrt(vi) / bc2SqrtF + epsF;          // sqrt/div/add
    pOut[i] = pi + negStep * mi / denom;                    // addcdiv_
    mOut[i] = mi;
    vOut[i] = vi;
  }
}

} // namespace tcc::rt::kernels
