//===- WindowGeometry.h - Geometry of 2-D sliding windows -------*- C++ -*-===//
//
// The windows of the convolution and pooling kernels, read from their typed
// attributes: the checks re-derive the compiler's output-size rule
// (dialects/tcc/TccOpsConv.cpp) because artifacts are untrusted input, and
// the kernels walk the same geometry, so both include this one header.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_WINDOWGEOMETRY_H
#define TCC_RUNTIME_CORE_ABI_WINDOWGEOMETRY_H

#include "runtime/core/abi/KernelAttrs.h"
#include "runtime/core/abi/PoolWindow.h"

#include <cstdint>
#include <vector>

namespace tcc::rt::abi {

/// A 2-D window: kernel, strides, pads [top, left, bottom, right], dilations.
struct Window2d {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t dh = 1, dw = 1;
  bool ceil = false;
};

/// The output extent along one axis (< 1 when the window does not fit);
/// with `ceil`, a last window starting in the end padding is dropped.
inline int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t pb,
                         int64_t pe, int64_t d, bool ceil) {
  int64_t span = in + pb + pe - d * (k - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb)
    --out;
  return out;
}

/// A convolution's window; its kernel size is the weight's [kH, kW].
inline Window2d convWindow(const Conv2dAttrs &a, int64_t kh, int64_t kw) {
  Window2d w;
  w.kh = kh, w.kw = kw, w.sh = a.strideH, w.sw = a.strideW;
  w.pt = a.padTop, w.pl = a.padLeft, w.pb = a.padBottom, w.pr = a.padRight;
  w.dh = a.dilationH, w.dw = a.dilationW;
  return w;
}

/// A pooling's window.
/// The window as the pooling kernels of every backend walk it.
inline PoolGeom poolGeom(const Window2d &w) {
  return {w.kh, w.kw, w.sh, w.sw, w.pt, w.pl, w.pb, w.pr, w.dh, w.dw};
}

inline Window2d poolWindow(const Pool2dWindow &a) {
  Window2d w;
  w.kh = a.kernelH, w.kw = a.kernelW, w.sh = a.strideH, w.sw = a.strideW;
  w.pt = a.padTop, w.pl = a.padLeft, w.pb = a.padBottom, w.pr = a.padRight;
  w.dh = a.dilationH, w.dw = a.dilationW;
  w.ceil = a.ceilMode;
  return w;
}

/// One convolution's sizes, from x [N, C, H, W], w [O, C / groups, kH, kW]
/// and y [N, O, OH, OW] (conv2d's names; the gradients have the same three).
struct ConvGeom {
  Window2d w;
  int64_t n, c, h, wd, o, oh, ow, groups;
  int64_t cg, og; // channels per group, in and out
  int64_t k, p;   // unfolded rows (cg * kh * kw) and output pixels (oh * ow)
  int64_t np() const { return n * p; }
};

inline ConvGeom convGeom(const std::vector<int64_t> &x,
                         const std::vector<int64_t> &wt,
                         const std::vector<int64_t> &y, const Conv2dAttrs &a) {
  ConvGeom g;
  g.w = convWindow(a, wt[2], wt[3]);
  g.groups = a.groups;
  g.n = x[0], g.c = x[1], g.h = x[2], g.wd = x[3];
  g.o = wt[0], g.oh = y[2], g.ow = y[3];
  g.cg = g.c / g.groups, g.og = g.o / g.groups;
  g.k = g.cg * g.w.kh * g.w.kw;
  g.p = g.oh * g.ow;
  return g;
}

} // namespace tcc::rt::abi

#endif // TCC_RUNTIME_CORE_ABI_WINDOWGEOMETRY_H
