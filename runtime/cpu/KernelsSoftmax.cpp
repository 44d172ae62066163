//===- KernelsSoftmax.cpp - softmax, log_softmax and their gradients ------===//
//
// Every kernel views its operands as [outer, L, inner] around the axis. The
// common last-axis case (inner == 1) walks contiguous rows; otherwise the
// loops run over `inner` innermost, which is contiguous too.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt::kernels {

namespace {
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
} // namespace

static AxisView axisView(const KernelArgs &a, const TensorView &t) {
  AxisView v;
  // The four kernels share AxisAttrs (an axis checkInstr bounded).
  size_t axis = static_cast<size_t>(
      normalizeAxis(abi::attrsOf<abi::AxisAttrs>(a.instr).axis, t.rank()));
  for (size_t d = 0; d < t.rank(); ++d) {
    if (d < axis)
      v.outer *= t.dim(d);
    else if (d == axis)
      v.len = t.dim(d);
    else
      v.inner *= t.dim(d);
  }
  return v;
}

/// Row-wise softmax over `len` strided elements; `logOut` selects
/// log_softmax. Handles inner == 1 with unit strides.
static void softmaxRows(const float *x, float *y, const AxisView &v,
                        bool logOut) {
  std::vector<float> mx(v.inner), sum(v.inner);
  for (int64_t o = 0; o < v.outer; ++o) {
    const float *xo = x + o * v.len * v.inner;
    float *yo = y + o * v.len * v.inner;
    std::fill(mx.begin(), mx.end(), -INFINITY);
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t l = 0; l < v.len; ++l)
      for (int64_t i = 0; i < v.inner; ++i)
        mx[i] = std::max(mx[i], xo[l * v.inner + i]);
    for (int64_t l = 0; l < v.len; ++l)
      for (int64_t i = 0; i < v.inner; ++i) {
        float e = std::exp(xo[l * v.inner + i] - mx[i]);
        sum[i] += e;
        if (!logOut)
          yo[l * v.inner + i] = e;
      }
    if (logOut) {
      // (x - max) - log(sum), not x - (max + log(sum)): adding the max back
      // first would round away the low bits of large logits.
      for (int64_t i = 0; i < v.inner; ++i)
        sum[i] = std::log(sum[i]);
      for (int64_t l = 0; l < v.len; ++l)
        for (int64_t i = 0; i < v.inner; ++i)
          yo[l * v.inner + i] = (xo[l * v.inner + i] - mx[i]) - sum[i];
    } else {
      for (int64_t i = 0; i < v.inner; ++i)
        sum[i] = 1.0f / sum[i];
      for (int64_t l = 0; l < v.len; ++l)
        for (int64_t i = 0; i < v.inner; ++i)
          yo[l * v.inner + i] *= sum[i];
    }
  }
}

void run_softmax(const KernelArgs &a) {
  softmaxRows(a.in[0].f32(), a.out[0].f32(), axisView(a, a.in[0]), false);
}

void run_log_softmax(const KernelArgs &a) {
  softmaxRows(a.in[0].f32(), a.out[0].f32(), axisView(a, a.in[0]), true);
}

/// dx = y * (dy - sum(dy*y)) for softmax, dx = dy - exp(y) * sum(dy) for
/// log_softmax (where y is the forward output).
static void softmaxGrad(const KernelArgs &a, bool logIn) {
  const float *dy = a.in[0].f32(), *y = a.in[1].f32();
  float *dx = a.out[0].f32();
  AxisView v = axisView(a, a.in[0]);
  std::vector<float> sum(v.inner);
  for (int64_t o = 0; o < v.outer; ++o) {
    int64_t base = o * v.len * v.inner;
    const float *dyo = dy + base, *yo = y + base;
    float *dxo = dx + base;
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t l = 0; l < v.len; ++l)
      for (int64_t i = 0; i < v.inner; ++i) {
        int64_t k = l * v.inner + i;
        sum[i] += logIn ? dyo[k] : dyo[k] * yo[k];
      }
    for (int64_t l = 0; l < v.len; ++l)
      for (int64_t i = 0; i < v.inner; ++i) {
        int64_t k = l * v.inner + i;
        dxo[k] = logIn ? dyo[k] - std::exp(yo[k]) * sum[i]
                       : yo[k] * (dyo[k] - sum[i]);
      }
  }
}

void run_softmax_grad(const KernelArgs &a) { softmaxGrad(a, false); }
void run_log_softmax_grad(const KernelArgs &a) { softmaxGrad(a, true); }

} // namespace tcc::rt::kernels
