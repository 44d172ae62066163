//===- KernelsConv.cpp - 2-D convolution and its gradients ----------------===//
//
// im2col + one OpenBLAS sgemm per group over the whole batch: the unfolded
// input is `col[K, N*P]` (K = C/groups * kH * kW, P = OH * OW), so the small
// spatial sizes of late CNN layers still give the GEMM a wide N dimension.
// The GEMM's [O/groups, N*P] result is then scattered to NCHW (adding the
// bias). The backward computes the input gradient as W^T * dY followed by
// col2im (accumulating overlapping windows), and the weight gradient as
// dY * col^T with col recomputed from the input.
//
// The unfolded buffers are per-thread scratch that grows to the largest
// convolution seen; they are not part of the static memory plan.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsWindow.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace tcc::rt::kernels {

//===----------------------------------------------------------------------===//
// Window geometry shared with the pooling kernels
//===----------------------------------------------------------------------===//

Window2d readWindow(const KernelSig &s, size_t at) {
  const auto &a = s.instr.iattrs;
  Window2d w;
  w.sh = a[at];
  w.sw = a[at + 1];
  w.pt = a[at + 2];
  w.pl = a[at + 3];
  w.pb = a[at + 4];
  w.pr = a[at + 5];
  w.dh = a[at + 6];
  w.dw = a[at + 7];
  // Bounds keep every product of the geometry far from overflow.
  const int64_t big = int64_t(1) << 24;
  auto inRange = [&](int64_t v, int64_t lo) { return v >= lo && v <= big; };
  if (!inRange(w.sh, 1) || !inRange(w.sw, 1) || !inRange(w.dh, 1) ||
      !inRange(w.dw, 1))
    throw Error("strides and dilations must be in [1, 2^24], got " +
                formatShape({w.sh, w.sw}) + " and " +
                formatShape({w.dh, w.dw}));
  if (!inRange(w.pt, 0) || !inRange(w.pl, 0) || !inRange(w.pb, 0) ||
      !inRange(w.pr, 0))
    throw Error("pads must be in [0, 2^24], got " +
                formatShape({w.pt, w.pl, w.pb, w.pr}));
  return w;
}

void expectWindowShapes(const KernelSig &s, const Window2d &w, bool xIsInput,
                        size_t xi, bool yIsInput, size_t yi, int64_t channels) {
  const TensorInfo &x = xIsInput ? *s.in[xi] : *s.out[xi];
  const TensorInfo &y = yIsInput ? *s.in[yi] : *s.out[yi];
  if (x.shape.size() != 4)
    throw Error(operandName(s, xIsInput, xi) + " has shape " +
                formatShape(x.shape) + "; expected [N, C, H, W]");
  if (w.kh < 1 || w.kw < 1 || w.kh > (1 << 24) || w.kw > (1 << 24))
    throw Error("kernel size " + formatShape({w.kh, w.kw}) +
                " is out of range");
  int64_t oh = windowOut(x.shape[2], w.kh, w.sh, w.pt, w.pb, w.dh, w.ceil);
  int64_t ow = windowOut(x.shape[3], w.kw, w.sw, w.pl, w.pr, w.dw, w.ceil);
  if (oh < 1 || ow < 1)
    throw Error("the window " + formatShape({w.kh, w.kw}) + " does not fit " +
                operandName(s, xIsInput, xi) + " " + formatShape(x.shape));
  std::vector<int64_t> expected = {x.shape[0], channels, oh, ow};
  if (y.shape != expected)
    throw Error(operandName(s, yIsInput, yi) + " has shape " +
                formatShape(y.shape) + ", expected " + formatShape(expected));
}

//===----------------------------------------------------------------------===//
// Convolution geometry. iattrs: [sh, sw, pt, pl, pb, pr, dh, dw, groups].
//===----------------------------------------------------------------------===//

namespace {
struct ConvGeom {
  Window2d w;
  int64_t n, c, h, wd, o, oh, ow, groups;
  int64_t cg, og; // channels per group, in and out
  int64_t k, p;   // unfolded rows (cg * kh * kw) and output pixels (oh * ow)
  int64_t np() const { return n * p; }
};
} // namespace

static ConvGeom convGeom(const std::vector<int64_t> &x,
                         const std::vector<int64_t> &wt,
                         const std::vector<int64_t> &y,
                         const std::vector<int64_t> &a) {
  ConvGeom g;
  g.w.sh = a[0], g.w.sw = a[1], g.w.pt = a[2], g.w.pl = a[3];
  g.w.pb = a[4], g.w.pr = a[5], g.w.dh = a[6], g.w.dw = a[7];
  g.groups = a[8];
  g.w.kh = wt[2], g.w.kw = wt[3];
  g.n = x[0], g.c = x[1], g.h = x[2], g.wd = x[3];
  g.o = wt[0], g.oh = y[2], g.ow = y[3];
  g.cg = g.c / g.groups, g.og = g.o / g.groups;
  g.k = g.cg * g.w.kh * g.w.kw;
  g.p = g.oh * g.ow;
  return g;
}

/// Checks a convolution whose input, weight and output are the given
/// operands (by side and index).
static void checkConv(const KernelSig &s, bool xIn, size_t xi, bool wIn,
                      size_t wi, bool yIn, size_t yi) {
  expectAllF32(s);
  expectIAttrs(s, 9);
  Window2d w = readWindow(s, 0);
  int64_t groups = s.instr.iattrs[8];
  const TensorInfo &x = xIn ? *s.in[xi] : *s.out[xi];
  const TensorInfo &wt = wIn ? *s.in[wi] : *s.out[wi];
  if (wt.shape.size() != 4)
    throw Error(operandName(s, wIn, wi) + " has shape " +
                formatShape(wt.shape) + "; expected [O, C / groups, kH, kW]");
  if (x.shape.size() != 4)
    throw Error(operandName(s, xIn, xi) + " has shape " + formatShape(x.shape) +
                "; expected [N, C, H, W]");
  if (groups < 1 || x.shape[1] % groups || wt.shape[0] % groups ||
      wt.shape[1] * groups != x.shape[1])
    throw Error("groups = " + std::to_string(groups) + " does not fit " +
                operandName(s, xIn, xi) + " " + formatShape(x.shape) + " and " +
                operandName(s, wIn, wi) + " " + formatShape(wt.shape));
  w.kh = wt.shape[2];
  w.kw = wt.shape[3];
  expectWindowShapes(s, w, xIn, xi, yIn, yi, wt.shape[0]);
  const TensorInfo &y = yIn ? *s.in[yi] : *s.out[yi];
  ConvGeom g = convGeom(x.shape, wt.shape, y.shape, s.instr.iattrs);
  // OpenBLAS takes 32-bit sizes.
  for (int64_t d : {g.k, g.np(), g.og})
    if (d > INT_MAX)
      throw Error("convolution dimension " + std::to_string(d) +
                  " is too large for BLAS");
}

/// Per-thread scratch, grown on demand and kept for the next call. It is
/// reallocated at exactly the size asked for (not vector's doubling), so its
/// size is predictable (compiler/codegen/MemoryReport.cpp), and counted in
/// kernelScratchBytes().
namespace {
struct ScratchBuffer {
  std::vector<float> v;
  ~ScratchBuffer() { noteKernelScratch(-(int64_t)(v.capacity() * sizeof(float))); }
};
} // namespace

static float *scratch(int slot, int64_t n) {
  thread_local ScratchBuffer buffers[2];
  std::vector<float> &b = buffers[slot].v;
  if ((int64_t)b.size() < n) {
    noteKernelScratch(-(int64_t)(b.capacity() * sizeof(float)));
    std::vector<float>().swap(b);
    b.resize(n);
    noteKernelScratch((int64_t)(b.capacity() * sizeof(float)));
  }
  return b.data();
}

/// The output columns [lo, hi) whose input column `ow * sw + off` lies in
/// [0, W).
static void validCols(const ConvGeom &g, int64_t off, int64_t &lo,
                      int64_t &hi) {
  int64_t sw = g.w.sw;
  lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  hi = g.wd - 1 - off >= 0 ? (g.wd - 1 - off) / sw + 1 : 0;
  hi = std::min(hi, g.ow);
  lo = std::min(lo, hi);
}

/// col[K, N*P] from channels [c0, c0 + cg) of x; padding reads as zero.
static void im2col(const float *x, const ConvGeom &g, int64_t c0, float *col) {
  const Window2d &w = g.w;
  int64_t np = g.np();
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        float *row = col + ((c * w.kh + i) * w.kw + j) * np;
        int64_t off = j * w.dw - w.pl, lo, hi;
        validCols(g, off, lo, hi);
        for (int64_t n = 0; n < g.n; ++n) {
          const float *plane = x + (n * g.c + c0 + c) * g.h * g.wd;
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            float *dst = row + n * g.p + oh * g.ow;
            int64_t ih = oh * w.sh - w.pt + i * w.dh;
            if (ih < 0 || ih >= g.h) {
              std::fill(dst, dst + g.ow, 0.0f);
              continue;
            }
            const float *src = plane + ih * g.wd;
            std::fill(dst, dst + lo, 0.0f);
            if (w.sw == 1)
              std::memcpy(dst + lo, src + lo + off, (hi - lo) * sizeof(float));
            else
              for (int64_t ow = lo; ow < hi; ++ow)
                dst[ow] = src[ow * w.sw + off];
            std::fill(dst + hi, dst + g.ow, 0.0f);
          }
        }
      }
}

/// dx[channels c0..] += the columns of col[K, N*P] folded back (col2im).
static void col2im(const float *col, const ConvGeom &g, int64_t c0, float *dx) {
  const Window2d &w = g.w;
  int64_t np = g.np();
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        const float *row = col + ((c * w.kh + i) * w.kw + j) * np;
        int64_t off = j * w.dw - w.pl, lo, hi;
        validCols(g, off, lo, hi);
        for (int64_t n = 0; n < g.n; ++n) {
          float *plane = dx + (n * g.c + c0 + c) * g.h * g.wd;
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            int64_t ih = oh * w.sh - w.pt + i * w.dh;
            if (ih < 0 || ih >= g.h)
              continue;
            const float *src = row + n * g.p + oh * g.ow;
            float *dst = plane + ih * g.wd;
            if (w.sw == 1)
              for (int64_t ow = lo; ow < hi; ++ow)
                dst[ow + off] += src[ow];
            else
              for (int64_t ow = lo; ow < hi; ++ow)
                dst[ow * w.sw + off] += src[ow];
          }
        }
      }
}

/// dyT[Og, N*P] = the output channels of group `grp` of dy [N, O, P].
static void gatherGroup(const float *dy, const ConvGeom &g, int64_t grp,
                        float *dyT) {
  for (int64_t o = 0; o < g.og; ++o)
    for (int64_t n = 0; n < g.n; ++n)
      std::memcpy(dyT + o * g.np() + n * g.p,
                  dy + (n * g.o + grp * g.og + o) * g.p, g.p * sizeof(float));
}

static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  const float *a, int64_t lda, const float *b, int64_t ldb,
                  float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
              (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}

//===----------------------------------------------------------------------===//
// conv2d: in [x, w] or [x, w, bias], out [y]
//===----------------------------------------------------------------------===//

void check_conv2d(const KernelSig &s) {
  if (s.in.size() != 2 && s.in.size() != 3)
    throw Error("expects 2 or 3 inputs (x, w[, bias]), got " +
                std::to_string(s.in.size()));
  expectArity(s, s.in.size(), 1);
  checkConv(s, true, 0, true, 1, false, 0);
  if (s.in.size() == 3)
    expectNumel(s, true, 2, s.in[1]->shape[0]);
}

void run_conv2d(const KernelArgs &a) {
  const TensorView &X = a.in[0], &W = a.in[1], &Y = a.out[0];
  ConvGeom g = convGeom(*X.shape, *W.shape, *Y.shape, a.instr.iattrs);
  const float *bias = a.in.size() == 3 ? a.in[2].f32() : nullptr;
  float *y = Y.f32();
  if (Y.numel == 0)
    return;
  if (g.k == 0) { // no input channels: only the bias
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t o = 0; o < g.o; ++o)
        std::fill_n(y + (n * g.o + o) * g.p, g.p, bias ? bias[o] : 0.0f);
    return;
  }
  int64_t np = g.np();
  float *col = scratch(0, g.k * np), *tmp = scratch(1, g.og * np);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    im2col(X.f32(), g, grp * g.cg, col);
    sgemm(false, false, g.og, np, g.k, W.f32() + grp * g.og * g.k, g.k, col, np,
          tmp, np);
    for (int64_t o = 0; o < g.og; ++o) {
      int64_t oc = grp * g.og + o;
      float b = bias ? bias[oc] : 0.0f;
      for (int64_t n = 0; n < g.n; ++n) {
        const float *src = tmp + o * np + n * g.p;
        float *dst = y + (n * g.o + oc) * g.p;
        for (int64_t p = 0; p < g.p; ++p)
          dst[p] = src[p] + b;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// conv2d_grad_input: in [dy, w], out [dx]
//===----------------------------------------------------------------------===//

void check_conv2d_grad_input(const KernelSig &s) {
  expectArity(s, 2, 1);
  checkConv(s, false, 0, true, 1, true, 0);
}

void run_conv2d_grad_input(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &W = a.in[1], &DX = a.out[0];
  ConvGeom g = convGeom(*DX.shape, *W.shape, *DY.shape, a.instr.iattrs);
  float *dx = DX.f32();
  std::fill(dx, dx + DX.numel, 0.0f);
  if (DY.numel == 0 || g.k == 0)
    return;
  int64_t np = g.np();
  float *col = scratch(0, g.k * np), *dyT = scratch(1, g.og * np);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    gatherGroup(DY.f32(), g, grp, dyT);
    sgemm(true, false, g.k, np, g.og, W.f32() + grp * g.og * g.k, g.k, dyT, np,
          col, np);
    col2im(col, g, grp * g.cg, dx);
  }
}

//===----------------------------------------------------------------------===//
// conv2d_grad_weight: in [dy, x], out [dw]
//===----------------------------------------------------------------------===//

void check_conv2d_grad_weight(const KernelSig &s) {
  expectArity(s, 2, 1);
  checkConv(s, true, 1, false, 0, true, 0);
}

void run_conv2d_grad_weight(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &X = a.in[1], &DW = a.out[0];
  ConvGeom g = convGeom(*X.shape, *DW.shape, *DY.shape, a.instr.iattrs);
  float *dw = DW.f32();
  int64_t np = g.np();
  if (np == 0 || g.k == 0 || g.og == 0) { // nothing summed: zero gradient
    std::fill(dw, dw + DW.numel, 0.0f);
    return;
  }
  float *col = scratch(0, g.k * np), *dyT = scratch(1, g.og * np);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    gatherGroup(DY.f32(), g, grp, dyT);
    im2col(X.f32(), g, grp * g.cg, col);
    sgemm(false, true, g.og, g.k, np, dyT, np, col, np, dw + grp * g.og * g.k,
          g.k);
  }
}

} // namespace tcc::rt::kernels
