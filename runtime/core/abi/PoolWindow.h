//===- PoolWindow.h - One pooling window, for the host and the GPU -*- C++
//-*-===//
//
// The max and average pooling kernels of every backend visit a window with
// these functions, so that the boundary rules (PyTorch's: padding never
// wins a max and counts in an average only with count_include_pad; a window
// first ends at the end padding, then is clipped to the input) are written
// once. Plain integer types and no std:: function: nvcc compiles this for
// the device (TCC_PRELUDE_FN is __host__ __device__ there).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_POOLWINDOW_H
#define TCC_RUNTIME_CORE_ABI_POOLWINDOW_H

#include "runtime/core/prelude/Config.h"

namespace tcc::rt::abi {

/// Kernel, strides, pads [top, left, bottom, right] and dilations of a 2-D
/// pooling window (Window2d without ceil mode, which only sizes the output).
struct PoolGeom {
  long long kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
};

/// The first maximum of the window of output (r, c) over an h x wd plane,
/// NaN winning (PyTorch's rule); its flat index in the plane, or -1 for a
/// window that lies entirely in the padding (then *best is -inf).
TCC_PRELUDE_FN long long maxPoolWindow(const PoolGeom &g, const float *plane,
                                       long long h, long long wd, long long r,
                                       long long c, float *best) {
  long long h0 = r * g.sh - g.pt, w0 = c * g.sw - g.pl, at = -1;
  float m = -__builtin_huge_valf();
  for (long long i = 0; i < g.kh; ++i) {
    long long ih = h0 + i * g.dh;
    if (ih < 0 || ih >= h)
      continue;
    for (long long j = 0; j < g.kw; ++j) {
      long long iw = w0 + j * g.dw;
      if (iw < 0 || iw >= wd)
        continue;
      float v = plane[ih * wd + iw];
      if (at < 0)
        at = ih * wd + iw;
      if (v > m || v != v) {
        m = v;
        at = ih * wd + iw;
      }
    }
  }
  *best = m;
  return at;
}

/// The input rectangle [h0, h1) x [w0, w1) an average window reads and the
/// count it divides by (0 for an empty window, which averages to 0).
struct AvgWindow {
  long long h0, h1, w0, w1;
  float divisor;
};

TCC_PRELUDE_FN AvgWindow avgPoolWindow(const PoolGeom &g, bool includePad,
                                       long long h, long long wd, long long r,
                                       long long c) {
  long long hs = r * g.sh - g.pt, ws = c * g.sw - g.pl;
  long long he = hs + g.kh < h + g.pb ? hs + g.kh : h + g.pb;
  long long we = ws + g.kw < wd + g.pr ? ws + g.kw : wd + g.pr;
  long long padded = (he - hs) * (we - ws);
  AvgWindow a;
  a.h0 = hs > 0 ? hs : 0;
  a.w0 = ws > 0 ? ws : 0;
  a.h1 = he < h ? he : h;
  a.w1 = we < wd ? we : wd;
  long long rows = a.h1 > a.h0 ? a.h1 - a.h0 : 0;
  long long cols = a.w1 > a.w0 ? a.w1 - a.w0 : 0;
  a.divisor = static_cast<float>(includePad ? padded : rows * cols);
  return a;
}

} // namespace tcc::rt::abi

#endif // TCC_RUNTIME_CORE_ABI_POOLWINDOW_H
