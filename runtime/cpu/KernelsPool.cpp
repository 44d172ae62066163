//===- KernelsPool.cpp - 2-D max and average pooling with gradients -------===//
//
// Plain loops over each [H, W] plane; windows are clipped to the input, so
// padding never wins a max and counts in an average only with
// count_include_pad. Boundary rules are PyTorch's (max_pool2d /
// avg_pool2d on CPU), which the ONNX exporter's models are trained with.
//
// Attributes (MaxPool2dAttrs, AvgPool2dAttrs; checked by the ABI's
// CheckConv.cpp): the window [kH, kW, sH, sW, padTop, padLeft, padBottom,
// padRight, dH, dW, ceil_mode] and, for the average, count_include_pad
// (its dilations are 1). max_pool2d_grad takes none: the indices say where
// each gradient goes.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/WindowGeometry.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tcc::rt::kernels {

using abi::Window2d;

//===----------------------------------------------------------------------===//
// max_pool2d: in [x], out [y, indices (i64)]
//===----------------------------------------------------------------------===//

void run_max_pool2d(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0], &I = a.out[1];
  Window2d w = abi::poolWindow(abi::attrs<KernelId::MaxPool2d>(a.instr));
  int64_t planes = X.dim(0) * X.dim(1), h = X.dim(2), wd = X.dim(3);
  int64_t oh = Y.dim(2), ow = Y.dim(3);
  const float *x = X.f32();
  float *y = Y.f32();
  int64_t *idx = I.i64();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float *plane = x + pl * h * wd;
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t c = 0; c < ow; ++c) {
        int64_t h0 = r * w.sh - w.pt, w0 = c * w.sw - w.pl;
        float best = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t i = 0; i < w.kh; ++i) {
          int64_t ih = h0 + i * w.dh;
          if (ih < 0 || ih >= h)
            continue;
          for (int64_t j = 0; j < w.kw; ++j) {
            int64_t iw = w0 + j * w.dw;
            if (iw < 0 || iw >= wd)
              continue;
            float v = plane[ih * wd + iw];
            // PyTorch's rule: the first maximum (the first element when all
            // are -inf), and NaN propagates.
            if (at < 0)
              at = ih * wd + iw;
            if (v > best || std::isnan(v)) {
              best = v;
              at = ih * wd + iw;
            }
          }
        }
        int64_t o = (pl * oh + r) * ow + c;
        y[o] = best;
        idx[o] = at;
      }
  }
}

//===----------------------------------------------------------------------===//
// max_pool2d_grad: in [dy, indices], out [dx]
//===----------------------------------------------------------------------===//

void run_max_pool2d_grad(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &I = a.in[1], &DX = a.out[0];
  float *dx = DX.f32();
  std::fill(dx, dx + DX.numel, 0.0f);
  int64_t planes = DY.dim(0) * DY.dim(1);
  int64_t per = DY.dim(2) * DY.dim(3), size = DX.dim(2) * DX.dim(3);
  const float *dy = DY.f32();
  const int64_t *idx = I.i64();
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t k = 0; k < per; ++k) {
      int64_t at = idx[pl * per + k];
      if (at < 0) // a window entirely in the padding: no input element
        continue;
      // The indices are data; a corrupted artifact must not write out of
      // bounds.
      if (at >= size)
        throw Error("max_pool2d_grad: index " + std::to_string(at) +
                    " is outside the " + std::to_string(size) +
                    "-element plane");
      dx[pl * size + at] += dy[pl * per + k];
    }
}

//===----------------------------------------------------------------------===//
// avg_pool2d: in [x], out [y]; avg_pool2d_grad: in [dy], out [dx]
//===----------------------------------------------------------------------===//

namespace {
/// One window of an average pool, clipped to the input, and its divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  float divisor;
};
} // namespace

static AvgWindow avgWindow(const Window2d &w, bool includePad, int64_t h,
                           int64_t wd, int64_t r, int64_t c) {
  AvgWindow aw;
  int64_t hs = r * w.sh - w.pt, ws = c * w.sw - w.pl;
  // As PyTorch: the window first ends at the end padding (which counts with
  // count_include_pad), then is clipped to the input.
  int64_t he = std::min(hs + w.kh, h + w.pb),
          we = std::min(ws + w.kw, wd + w.pr);
  int64_t padded = (he - hs) * (we - ws);
  aw.h0 = std::max<int64_t>(hs, 0), aw.w0 = std::max<int64_t>(ws, 0);
  aw.h1 = std::min(he, h), aw.w1 = std::min(we, wd);
  int64_t inside =
      std::max<int64_t>(aw.h1 - aw.h0, 0) * std::max<int64_t>(aw.w1 - aw.w0, 0);
  aw.divisor = static_cast<float>(includePad ? padded : inside);
  return aw;
}

void run_avg_pool2d(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const abi::AvgPool2dAttrs at = abi::attrs<KernelId::AvgPool2d>(a.instr);
  Window2d w = abi::poolWindow(at);
  bool includePad = at.countIncludePad;
  int64_t planes = X.dim(0) * X.dim(1), h = X.dim(2), wd = X.dim(3);
  int64_t oh = Y.dim(2), ow = Y.dim(3);
  const float *x = X.f32();
  float *y = Y.f32();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float *plane = x + pl * h * wd;
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t c = 0; c < ow; ++c) {
        AvgWindow aw = avgWindow(w, includePad, h, wd, r, c);
        float sum = 0.0f;
        for (int64_t ih = aw.h0; ih < aw.h1; ++ih)
          for (int64_t iw = aw.w0; iw < aw.w1; ++iw)
            sum += plane[ih * wd + iw];
        // An empty window (only possible with pads >= kernel) averages to 0.
        y[(pl * oh + r) * ow + c] = aw.divisor > 0 ? sum / aw.divisor : 0.0f;
      }
  }
}

void run_avg_pool2d_grad(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &DX = a.out[0];
  const abi::AvgPool2dAttrs at = abi::attrs<KernelId::AvgPool2dGrad>(a.instr);
  Window2d w = abi::poolWindow(at);
  bool includePad = at.countIncludePad;
  int64_t planes = DX.dim(0) * DX.dim(1), h = DX.dim(2), wd = DX.dim(3);
  int64_t oh = DY.dim(2), ow = DY.dim(3);
  const float *dy = DY.f32();
  float *dx = DX.f32();
  std::fill(dx, dx + DX.numel, 0.0f);
  for (int64_t pl = 0; pl < planes; ++pl) {
    float *plane = dx + pl * h * wd;
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t c = 0; c < ow; ++c) {
        AvgWindow aw = avgWindow(w, includePad, h, wd, r, c);
        if (aw.divisor <= 0)
          continue;
        float g = dy[(pl * oh + r) * ow + c] / aw.divisor;
        for (int64_t ih = aw.h0; ih < aw.h1; ++ih)
          for (int64_t iw = aw.w0; iw < aw.w1; ++iw)
            plane[ih * wd + iw] += g;
      }
  }
}

} // namespace tcc::rt::kernels
