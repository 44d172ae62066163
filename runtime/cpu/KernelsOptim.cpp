//===- KernelsOptim.cpp - SGD, SGD with momentum, AdamW updates -----------===//
//
// The arithmetic follows torch.optim's single-tensor (non-foreach) code step
// by step, in the same order and precision (scalars cast to f32 where PyTorch
// casts them), so trajectories match PyTorch closely. Each loop loads all
// inputs of element i before storing, so outputs may alias inputs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

void run_sgd_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32();
  float *out = a.out[0].f32();
  const abi::SgdAttrs h = abi::attrs<KernelId::SgdUpdate>(a.instr);
  const float lr = static_cast<float>(h.lr);
  const float wd = static_cast<float>(h.weightDecay);
  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i];
    float d = g[i] + wd * pi;
    out[i] = pi - lr * d;
  }
}

void run_sgd_momentum_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32(), *buf = a.in[2].f32();
  float *pOut = a.out[0].f32(), *bufOut = a.out[1].f32();
  const abi::SgdMomentumAttrs h =
      abi::attrs<KernelId::SgdMomentumUpdate>(a.instr);
  const float lr = static_cast<float>(h.lr);
  const float momentum = static_cast<float>(h.momentum);
  const float wd = static_cast<float>(h.weightDecay);
  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i], bi = buf[i];
    float d = g[i] + wd * pi;
    float b = momentum * bi + d;
    bufOut[i] = b;
    pOut[i] = pi - lr * b;
  }
}

namespace {
/// The per-step scalars, as the f32 tensor ops of PyTorch see them.
struct AdamScalars {
  float decay, wm, b2, w2, bc2Sqrt, eps, negStep;
  bool lerpFromStart;
};
} // namespace

static inline void adamwElem(float &p, float g, float &m, float &v,
                             const AdamScalars &s) {
  p = p * s.decay;                         // param.mul_
  m = s.lerpFromStart ? m + s.wm * (g - m) // exp_avg.lerp_
                      : g - (g - m) * s.wm;
  v = v * s.b2 + s.w2 * g * g;                    // mul_.addcmul_
  float denom = std::sqrt(v) / s.bc2Sqrt + s.eps; // sqrt/div/add
  p = p + s.negStep * m / denom;                  // addcdiv_
}

/// The usual case, p/m/v updated in place: with restrict GCC needs no
/// runtime alias checks (too many for 4 streams) and vectorizes the loop.
static void adamwInPlace(float *__restrict p, const float *__restrict g,
                         float *__restrict m, float *__restrict v, int64_t n,
                         float inv, const AdamScalars &s) {
  for (int64_t i = 0; i < n; ++i)
    adamwElem(p[i], g[i] * inv, m[i], v[i], s);
}

/// A skipped step (fp16 loss scaling saw an Inf or NaN): every output is
/// its old value. In place that is nothing to do; the 16-bit copy is the
/// rounding of the old parameter, which is what it holds.
static void adamwKeep(const KernelArgs &a) {
  const int64_t n = a.in[0].numel;
  const int from[3] = {0, 2, 3}; // p', m', v' keep p, m, v
  for (int k = 0; k < 3; ++k)
    if (a.out[k].data != a.in[from[k]].data)
      std::copy(a.in[from[k]].f32(), a.in[from[k]].f32() + n, a.out[k].f32());
  if (a.out.size() == 4)
    narrowFromF32(a.in[0].f32(), a.out[3].dtype, a.out[3].data, n);
}

void run_adamw_update(const KernelArgs &a) {
  bool scaled = a.in.size() == 7;
  if (scaled && a.in[6].i64()[0] == 0)
    return adamwKeep(a);
  // The gradient is g * inv, rounded to f32 as a tcc.mul by the inverse
  // scale gives it (PyTorch's fused AdamW multiplies the same way); without
  // loss scaling inv is 1, and g * 1 is g exactly.
  const float inv = scaled ? a.in[5].f32()[0] : 1.0f;
  const float *p = a.in[0].f32(), *g = a.in[1].f32(), *m = a.in[2].f32(),
              *v = a.in[3].f32();
  float *pOut = a.out[0].f32(), *mOut = a.out[1].f32(), *vOut = a.out[2].f32();
  const abi::AdamwAttrs h = abi::attrs<KernelId::AdamwUpdate>(a.instr);
  const double lr = h.lr, beta1 = h.beta1, beta2 = h.beta2, eps = h.eps,
               wd = h.weightDecay;
  const double step = a.in[4].f32()[0];

  // Python-side scalars of torch.optim.adamw._single_tensor_adamw, in double,
  // then cast to f32 where the tensor ops cast them.
  const double bc1 = 1.0 - std::pow(beta1, step);
  const double bc2 = 1.0 - std::pow(beta2, step);
  AdamScalars s;
  s.decay = static_cast<float>(1.0 - lr * wd);
  const float w1 = static_cast<float>(1.0 - beta1);
  // lerp(m, g, w) is m + w*(g-m) for w < 0.5, else g - (g-m)*(1-w).
  s.lerpFromStart = w1 < 0.5f;
  s.wm = s.lerpFromStart ? w1 : 1.0f - w1;
  s.b2 = static_cast<float>(beta2);
  s.w2 = static_cast<float>(1.0 - beta2);
  s.bc2Sqrt = static_cast<float>(std::sqrt(bc2));
  s.eps = static_cast<float>(eps);
  s.negStep = static_cast<float>(-(lr / bc1));

  int64_t n = a.in[0].numel;
  bool distinctGrad = g != p && g != m && g != v;
  // The 16-bit copy never aliases an operand: it is a tensor of its own.
  uint16_t *low =
      a.out.size() == 4 ? static_cast<uint16_t *>(a.out[3].data) : nullptr;
  if (pOut == p && mOut == m && vOut == v && distinctGrad) {
    if (!low)
      return adamwInPlace(pOut, g, mOut, vOut, n, inv, s);
    // Rounding inside the update loop stops GCC from vectorizing it (4x
    // slower); two vectorized loops over a chunk still in L1 are not.
    constexpr int64_t kChunk = 2048;
    for (int64_t i = 0; i < n; i += kChunk) {
      int64_t c = std::min(kChunk, n - i);
      adamwInPlace(pOut + i, g + i, mOut + i, vOut + i, c, inv, s);
      narrowFromF32(pOut + i, a.out[3].dtype, low + i, c);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i], mi = m[i], vi = v[i];
    adamwElem(pi, g[i] * inv, mi, vi, s);
    pOut[i] = pi;
    mOut[i] = mi;
    vOut[i] = vi;
  }
  if (low)
    narrowFromF32(pOut, a.out[3].dtype, low, n);
}

} // namespace tcc::rt::kernels
