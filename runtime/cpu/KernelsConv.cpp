//===- KernelsConv.cpp - 2-D convolution and its gradients ----------------===//
//
// The kernels run on oneDNN where it takes the case (OneDnnConv.cpp, in the
// module CnnPath.h describes); these loops are the fallback and the
// reference (TCC_CPU_CONV=im2col).
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
#include "runtime/core/abi/WindowGeometry.h"
#include "runtime/cpu/CnnPath.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace tcc::rt::kernels {

using abi::ConvGeom;
using abi::convGeom;
using abi::Window2d;

/// Per-thread scratch, grown on demand and kept for the next call. It is
/// reallocated at exactly the size asked for (not vector's doubling), so its
/// size is predictable (compiler/codegen/MemoryReport.cpp), and counted in
/// kernelScratchBytes().
namespace {
struct ScratchBuffer {
  std::vector<float> v;
  ~ScratchBuffer() {
    noteKernelScratch(-(int64_t)(v.capacity() * sizeof(float)));
  }
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

static void conv2dIm2col(const KernelArgs &a) {
  const TensorView &X = a.in[0], &W = a.in[1], &Y = a.out[0];
  ConvGeom g = convGeom(*X.shape, *W.shape, *Y.shape,
                        abi::attrs<KernelId::Conv2d>(a.instr));
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

static void conv2dGradInputIm2col(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &W = a.in[1], &DX = a.out[0];
  ConvGeom g = convGeom(*DX.shape, *W.shape, *DY.shape,
                        abi::attrs<KernelId::Conv2dGradInput>(a.instr));
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

static void conv2dGradWeightIm2col(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &X = a.in[1], &DW = a.out[0];
  ConvGeom g = convGeom(*X.shape, *DW.shape, *DY.shape,
                        abi::attrs<KernelId::Conv2dGradWeight>(a.instr));
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

//===----------------------------------------------------------------------===//
// The kernels: oneDNN where it takes the case (CnnPath.h), else the loops.
//===----------------------------------------------------------------------===//

void run_conv2d(const KernelArgs &a) {
  const cpu::OneDnnKernels *k = cpu::oneDnnKernels();
  if (!k || !k->conv2d(a))
    conv2dIm2col(a);
}

void run_conv2d_grad_input(const KernelArgs &a) {
  const cpu::OneDnnKernels *k = cpu::oneDnnKernels();
  if (!k || !k->conv2dGradInput(a))
    conv2dGradInputIm2col(a);
}

void run_conv2d_grad_weight(const KernelArgs &a) {
  const cpu::OneDnnKernels *k = cpu::oneDnnKernels();
  if (!k || !k->conv2dGradWeight(a))
    conv2dGradWeightIm2col(a);
}

} // namespace tcc::rt::kernels
