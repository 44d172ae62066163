//===- KernelsOptim.cpp - SGD, Adam(W), Lion and Adafactor updates --------===//
//
// The arithmetic follows torch.optim's single-tensor (non-foreach) code step
// by step, in the same order and precision (scalars cast to f32 where PyTorch
// casts them), so trajectories match PyTorch closely. Each loop loads all
// inputs of element i before storing, so outputs may alias inputs. The
// learning rate is read from its f32 operand at each run: the train loop
// may change it between steps; scalars derived from it are computed in
// double from that f32 value.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

void run_sgd_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32();
  float *out = a.out[0].f32();
  const abi::SgdAttrs h = abi::attrs<KernelId::SgdUpdate>(a.instr);
  const float lr = a.in[2].f32()[0];
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
  const float lr = a.in[3].f32()[0];
  const float momentum = static_cast<float>(h.momentum);
  const float wd = static_cast<float>(h.weightDecay);
  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i], bi = buf[i];
    float d = g[i] + wd * pi;
    float b = momentum * bi + d;
    bufOut[i] = b;
    // Nesterov: d_p = d_p.add(buf, alpha=momentum), then param -= lr * d_p.
    pOut[i] = pi - lr * (h.nesterov ? d + momentum * b : b);
  }
}

/// Lion as lion-pytorch writes it: decay, the sign of the interpolation,
/// then the moment's update.
void run_lion_update(const KernelArgs &a) {
  const float *p = a.in[0].f32(), *g = a.in[1].f32(), *m = a.in[2].f32();
  float *pOut = a.out[0].f32(), *mOut = a.out[1].f32();
  const abi::LionAttrs h = abi::attrs<KernelId::LionUpdate>(a.instr);
  const float lr = a.in[3].f32()[0];
  const float decay = static_cast<float>(1.0 - double(lr) * h.weightDecay);
  const float b1 = static_cast<float>(h.beta1),
              w1 = static_cast<float>(1.0 - h.beta1);
  const float b2 = static_cast<float>(h.beta2),
              w2 = static_cast<float>(1.0 - h.beta2);
  for (int64_t i = 0, n = a.in[0].numel; i < n; ++i) {
    float pi = p[i], gi = g[i], mi = m[i];
    float c = mi * b1 + w1 * gi;
    float u = static_cast<float>((c > 0.0f) - (c < 0.0f)); // sign, 0 at 0
    pi = pi * decay;
    pOut[i] = pi - lr * u;
    mOut[i] = mi * b2 + w2 * gi;
  }
}

namespace {
/// The per-step scalars, as the f32 tensor ops of PyTorch see them.
struct AdamScalars {
  float decay, wm, b2, w2, bc2Sqrt, eps, negStep, l2;
  bool lerpFromStart;
};
} // namespace

/// L2: torch.optim.Adam's `grad = grad.add(param, alpha=wd)` (decay is 1);
/// else AdamW's decoupled decay (l2 unused).
template <bool L2>
static inline void adamwElem(float &p, float g, float &m, float &v,
                             const AdamScalars &s) {
  if (L2)
    g = g + s.l2 * p;
  else
    p = p * s.decay;                       // param.mul_
  m = s.lerpFromStart ? m + s.wm * (g - m) // exp_avg.lerp_
                      : g - (g - m) * s.wm;
  v = v * s.b2 + s.w2 * g * g;                    // mul_.addcmul_
  float denom = std::sqrt(v) / s.bc2Sqrt + s.eps; // sqrt/div/add
  p = p + s.negStep * m / denom;                  // addcdiv_
}

/// The usual case, p/m/v updated in place: with restrict GCC needs no
/// runtime alias checks (too many for 4 streams) and vectorizes the loop.
template <bool L2>
static void adamwInPlaceT(float *__restrict p, const float *__restrict g,
                          float *__restrict m, float *__restrict v, int64_t n,
                          float inv, const AdamScalars &s) {
  for (int64_t i = 0; i < n; ++i)
    adamwElem<L2>(p[i], g[i] * inv, m[i], v[i], s);
}

static void adamwInPlace(float *p, const float *g, float *m, float *v,
                         int64_t n, float inv, const AdamScalars &s, bool l2) {
  if (l2)
    adamwInPlaceT<true>(p, g, m, v, n, inv, s);
  else
    adamwInPlaceT<false>(p, g, m, v, n, inv, s);
}

/// adamwInPlace over chunks on the ThreadPool when the tensor is large
/// enough to be worth waking it (each element on its own: same bits).
static void adamwInPlaceParallel(float *p, const float *g, float *m, float *v,
                                 int64_t n, float inv, const AdamScalars &s,
                                 bool l2) {
  constexpr int64_t kMinParallel = 1 << 15, kAlign = 16;
  ThreadPool &pool = ThreadPool::global();
  if (n < kMinParallel || pool.size() < 2)
    return adamwInPlace(p, g, m, v, n, inv, s, l2);
  int64_t per = (n + pool.size() - 1) / pool.size();
  per = (per + kAlign - 1) / kAlign * kAlign;
  pool.parallelFor((n + per - 1) / per, [&](int64_t i) {
    int64_t b = i * per, c = std::min(per, n - b);
    adamwInPlace(p + b, g + b, m + b, v + b, c, inv, s, l2);
  });
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
  bool scaled = a.in.size() == 8;
  if (scaled && a.in[7].i64()[0] == 0)
    return adamwKeep(a);
  // The gradient is g * inv, rounded to f32 as a tcc.mul by the inverse
  // scale gives it (PyTorch's fused AdamW multiplies the same way); without
  // loss scaling inv is 1, and g * 1 is g exactly.
  const float inv = scaled ? a.in[6].f32()[0] : 1.0f;
  const float *p = a.in[0].f32(), *g = a.in[1].f32(), *m = a.in[2].f32(),
              *v = a.in[3].f32();
  float *pOut = a.out[0].f32(), *mOut = a.out[1].f32(), *vOut = a.out[2].f32();
  const abi::AdamwAttrs h = abi::attrs<KernelId::AdamwUpdate>(a.instr);
  const double lr = a.in[5].f32()[0], beta1 = h.beta1, beta2 = h.beta2,
               eps = h.eps, wd = h.weightDecay;
  const double step = a.in[4].f32()[0];

  // Python-side scalars of torch.optim.adamw._single_tensor_adamw, in double,
  // then cast to f32 where the tensor ops cast them.
  const double bc1 = 1.0 - std::pow(beta1, step);
  const double bc2 = 1.0 - std::pow(beta2, step);
  AdamScalars s;
  // Adam adds the decay to the gradient (alpha=wd, cast to f32); AdamW
  // decays the parameter.
  s.decay = h.l2Decay ? 1.0f : static_cast<float>(1.0 - lr * wd);
  s.l2 = static_cast<float>(wd);
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
      return adamwInPlaceParallel(pOut, g, mOut, vOut, n, inv, s, h.l2Decay);
    // Rounding inside the update loop stops GCC from vectorizing it (4x
    // slower); two vectorized loops over a chunk still in L1 are not.
    constexpr int64_t kChunk = 2048;
    for (int64_t i = 0; i < n; i += kChunk) {
      int64_t c = std::min(kChunk, n - i);
      adamwInPlace(pOut + i, g + i, mOut + i, vOut + i, c, inv, s, h.l2Decay);
      narrowFromF32(pOut + i, a.out[3].dtype, low + i, c);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i], mi = m[i], vi = v[i];
    if (h.l2Decay)
      adamwElem<true>(pi, g[i] * inv, mi, vi, s);
    else
      adamwElem<false>(pi, g[i] * inv, mi, vi, s);
    pOut[i] = pi;
    mOut[i] = mi;
    vOut[i] = vi;
  }
  if (low)
    narrowFromF32(pOut, a.out[3].dtype, low, n);
}

} // namespace tcc::rt::kernels

namespace tcc::rt::kernels {

/// torch's lerp_: self + w * (end - self) for w < 0.5, else
/// end - (end - self) * (1 - w).
static inline float lerpF(float self, float end, float w) {
  return w < 0.5f ? self + w * (end - self) : end - (end - self) * (1.0f - w);
}

/// torch.optim.Adafactor's _single_tensor_adafactor: the step's scalars in
/// double (Python floats there; norms and means, which torch reduces in
/// f32 and reads with .item(), are summed in double here), the tensor
/// arithmetic in f32 in its order. Three passes: statistics and the second
/// moment, the update's norm, then the update (recomputed rather than
/// stored, so the kernel needs no scratch).
void run_adafactor_update(const KernelArgs &a) {
  const bool factored = a.in.size() == 6;
  const float *p = a.in[0].f32(), *g = a.in[1].f32();
  const double t = a.in[2].f32()[0], lr = a.in[3].f32()[0];
  float *pOut = a.out[0].f32();
  const abi::AdafactorAttrs h = abi::attrs<KernelId::AdafactorUpdate>(a.instr);
  const int64_t n = a.in[0].numel;
  if (n == 0)
    return;
  const float w = static_cast<float>(std::pow(t, h.beta2Decay));
  const double rho = std::min(lr, 1.0 / std::sqrt(t));
  double pn = 0;
  for (int64_t i = 0; i < n; ++i)
    pn += double(p[i]) * p[i];
  const double alpha =
      std::max(h.eps2, std::sqrt(pn) / std::sqrt(double(n))) * rho;
  const float decay = static_cast<float>(1.0 - lr * h.weightDecay);
  for (int64_t i = 0; i < n; ++i)
    pOut[i] = h.weightDecay != 0 ? p[i] * decay : p[i];
  const float eps1 = static_cast<float>(h.eps1);
  const float eps1Sq = static_cast<float>(h.eps1 * h.eps1);
  auto update = [&](float gi, float var) {
    return 1.0f / std::sqrt(std::max(var, eps1Sq)) * gi;
  };

  // The variance estimate of element (b, i, j), or of i unfactored.
  const std::vector<int64_t> &shape = *a.in[0].shape;
  const int64_t rows = factored ? shape[shape.size() - 2] : 1;
  const int64_t cols = factored ? shape.back() : n;
  const int64_t batches = n / (rows * cols);
  std::vector<float> rowMean(batches);
  float *vOut = a.out[1].f32(); // unfactored: the new second moment
  if (factored) {
    const float *row = a.in[4].f32(), *col = a.in[5].f32();
    float *rowOut = a.out[1].f32(), *colOut = a.out[2].f32();
    for (int64_t b = 0; b < batches; ++b) {
      const float *gb = g + b * rows * cols;
      for (int64_t i = 0; i < rows; ++i) {
        double ss = 0;
        for (int64_t j = 0; j < cols; ++j)
          ss += double(gb[i * cols + j]) * gb[i * cols + j];
        float nrm = static_cast<float>(std::sqrt(ss));
        int64_t r = b * rows + i;
        rowOut[r] = lerpF(row[r], nrm * nrm / float(cols), w);
      }
      for (int64_t j = 0; j < cols; ++j) {
        double ss = 0;
        for (int64_t i = 0; i < rows; ++i)
          ss += double(gb[i * cols + j]) * gb[i * cols + j];
        float nrm = static_cast<float>(std::sqrt(ss));
        int64_t c = b * cols + j;
        colOut[c] = lerpF(col[c], nrm * nrm / float(rows), w);
      }
      double rs = 0;
      for (int64_t i = 0; i < rows; ++i)
        rs += rowOut[b * rows + i];
      rowMean[b] = std::max(static_cast<float>(rs / double(rows)), eps1);
    }
  } else {
    const float *v = a.in[4].f32();
    for (int64_t i = 0; i < n; ++i)
      vOut[i] = lerpF(v[i], g[i] * g[i], w);
  }
  auto var = [&](int64_t b, int64_t i, int64_t j) {
    if (!factored)
      return vOut[j];
    return a.out[1].f32()[b * rows + i] * a.out[2].f32()[b * cols + j] /
           rowMean[b];
  };
  auto forEach = [&](auto &&f) {
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          f((b * rows + i) * cols + j, var(b, i, j));
  };
  double uu = 0;
  forEach([&](int64_t e, float v) {
    float u = update(g[e], v);
    uu += double(u) * u;
  });
  const double denom =
      std::max(1.0, std::sqrt(uu) / (std::sqrt(double(n)) * h.d));
  const float scale = static_cast<float>(-alpha / denom);
  forEach(
      [&](int64_t e, float v) { pOut[e] = pOut[e] + scale * update(g[e], v); });
}

} // namespace tcc::rt::kernels
