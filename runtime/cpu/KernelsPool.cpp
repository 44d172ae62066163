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
#include "runtime/core/ThreadPool.h"
#include "runtime/core/abi/WindowGeometry.h"
#include "runtime/cpu/IsaClone.h"
#include "runtime/cpu/KernelsInternal.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

// GCC 12 takes the intrinsics' undefined pass-through operands for
// uninitialized variables once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tcc::rt::kernels {

//===----------------------------------------------------------------------===//
// max_pool2d: in [x], out [y, indices (i64)]
//===----------------------------------------------------------------------===//

/// One output row of one plane: windows that lie inside the input take a
/// branch-free scan (the compare's outcome is data, and mispredicting it was
/// most of this kernel's time); windows that touch the padding take the
/// ABI's checked one. Both keep its rules: the first maximum wins, a NaN
/// propagates.
static void maxPoolRow(const abi::PoolGeom &g, const float *plane, int64_t h,
                       int64_t wd, int64_t r, int64_t ow, float *y,
                       int64_t *idx) {
  int64_t h0 = r * g.sh - g.pt;
  bool rowInside = h0 >= 0 && h0 + (g.kh - 1) * g.dh < h;
  for (int64_t c = 0; c < ow; ++c) {
    int64_t w0 = c * g.sw - g.pl;
    if (!rowInside || w0 < 0 || w0 + (g.kw - 1) * g.dw >= wd) {
      idx[c] = abi::maxPoolWindow(g, plane, h, wd, r, c, &y[c]);
      continue;
    }
    float m = -std::numeric_limits<float>::infinity();
    int64_t at = h0 * wd + w0;
    for (int64_t i = 0; i < g.kh; ++i) {
      int64_t base = (h0 + i * g.dh) * wd + w0;
      for (int64_t j = 0; j < g.kw; ++j) {
        int64_t k = base + j * g.dw;
        float v = plane[k];
        bool take = (v > m) | (v != v);
        m = take ? v : m;
        at = take ? k : at;
      }
    }
    y[c] = m;
    idx[c] = at;
  }
}

/// Where each output position of a plane starts its window: [oh * ow] rows
/// then [oh * ow] columns, the same for every plane.
static std::vector<int32_t> windowStarts(const abi::PoolGeom &g, int64_t oh,
                                         int64_t ow) {
  std::vector<int32_t> at(2 * oh * ow);
  for (int64_t r = 0; r < oh; ++r)
    for (int64_t c = 0; c < ow; ++c) {
      at[r * ow + c] = static_cast<int32_t>(r * g.sh - g.pt);
      at[oh * ow + r * ow + c] = static_cast<int32_t>(c * g.sw - g.pl);
    }
  return at;
}

/// Planes [p0, p1) sixteen output positions at a time: each lane gathers its
/// window's taps (a masked-off tap, in the padding, is never taken) and
/// keeps maxPoolRow's rules: the first valid tap starts the window, a
/// larger value or a NaN replaces the best. Positions run through the plane
/// in order, so a plane of 8 x 8 outputs fills four whole vectors.
TCC_AVX512_TARGET static void
maxPoolPlanesAvx512(const abi::PoolGeom &g, const float *x, int64_t h,
                    int64_t wd, int64_t per, const int32_t *starts, int64_t p0,
                    int64_t p1, float *y, int64_t *idx) {
  const __m512i vh = _mm512_set1_epi32(static_cast<int32_t>(h));
  const __m512i vw = _mm512_set1_epi32(static_cast<int32_t>(wd));
  const __m512i none = _mm512_set1_epi32(-1), zero = _mm512_setzero_si512();
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t pl = p0; pl < p1; ++pl) {
    const float *plane = x + pl * h * wd;
    float *yp = y + pl * per;
    int64_t *ip = idx + pl * per;
    for (int64_t q = 0; q < per; q += 16) {
      __mmask16 lanes = per - q >= 16 ? (__mmask16)0xFFFF
                                      : (__mmask16)((1u << (per - q)) - 1);
      __m512i h0 = _mm512_maskz_loadu_epi32(lanes, starts + q);
      __m512i w0 = _mm512_maskz_loadu_epi32(lanes, starts + per + q);
      __m512 m = ninf;
      __m512i at = none;
      for (int64_t i = 0; i < g.kh; ++i) {
        __m512i ih =
            _mm512_add_epi32(h0, _mm512_set1_epi32((int32_t)(i * g.dh)));
        __mmask16 rowOk = _mm512_mask_cmpge_epi32_mask(lanes, ih, zero);
        rowOk = _mm512_mask_cmplt_epi32_mask(rowOk, ih, vh);
        __m512i rowAt = _mm512_mullo_epi32(ih, vw);
        for (int64_t j = 0; j < g.kw; ++j) {
          __m512i iw =
              _mm512_add_epi32(w0, _mm512_set1_epi32((int32_t)(j * g.dw)));
          __mmask16 ok = _mm512_mask_cmpge_epi32_mask(rowOk, iw, zero);
          ok = _mm512_mask_cmplt_epi32_mask(ok, iw, vw);
          __m512i k = _mm512_add_epi32(rowAt, iw);
          __m512 v = _mm512_mask_i32gather_ps(ninf, ok, k, plane, 4);
          __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) |
                           _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) |
                           _mm512_cmpeq_epi32_mask(at, none);
          take &= ok;
          m = _mm512_mask_mov_ps(m, take, v);
          at = _mm512_mask_mov_epi32(at, take, k);
        }
      }
      _mm512_mask_storeu_ps(yp + q, lanes, m);
      _mm512_mask_storeu_epi64(
          ip + q, (__mmask8)lanes,
          _mm512_cvtepi32_epi64(_mm512_castsi512_si256(at)));
      _mm512_mask_storeu_epi64(
          ip + q + 8, (__mmask8)(lanes >> 8),
          _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(at, 1)));
    }
  }
}

/// The vector path's int32 lane arithmetic holds when every index it forms
/// (a tap's row or column, row * width + column) fits comfortably.
static bool maxPoolFitsInt32(const abi::PoolGeom &g, int64_t h, int64_t wd,
                             int64_t oh, int64_t ow) {
  constexpr int64_t kLimit = int64_t(1) << 30;
  int64_t rows = std::max<int64_t>(h, oh * g.sh + g.kh * g.dh) + g.pt;
  int64_t cols = std::max<int64_t>(wd, ow * g.sw + g.kw * g.dw) + g.pl;
  return rows < (1 << 20) && cols < (1 << 20) && rows * cols < kLimit;
}

void run_max_pool2d(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0], &I = a.out[1];
  abi::PoolGeom g =
      abi::poolGeom(abi::poolWindow(abi::attrs<KernelId::MaxPool2d>(a.instr)));
  int64_t planes = X.dim(0) * X.dim(1), h = X.dim(2), wd = X.dim(3);
  int64_t oh = Y.dim(2), ow = Y.dim(3);
  const float *x = X.f32();
  float *y = Y.f32();
  int64_t *idx = I.i64();
  bool avx512 = avx512Cpu();
  std::vector<int32_t> starts;
  if (avx512 && oh * ow > 0 && maxPoolFitsInt32(g, h, wd, oh, ow))
    starts = windowStarts(g, oh, ow);
  auto rows = [&](int64_t p0, int64_t p1) {
    if (!starts.empty())
      return maxPoolPlanesAvx512(g, x, h, wd, oh * ow, starts.data(), p0, p1, y,
                                 idx);
    for (int64_t pl = p0; pl < p1; ++pl)
      for (int64_t r = 0; r < oh; ++r) {
        int64_t o = (pl * oh + r) * ow;
        maxPoolRow(g, x + pl * h * wd, h, wd, r, ow, y + o, idx + o);
      }
  };
  // Planes in chunks on the pool when there is enough to share.
  ThreadPool &pool = ThreadPool::global();
  int64_t work = planes * oh * ow * g.kh * g.kw;
  int64_t chunks = std::min<int64_t>(planes, pool.size() * 4);
  if (work < (1 << 16) || chunks < 2)
    return rows(0, planes);
  pool.parallelFor(chunks, [&](int64_t c) {
    rows(planes * c / chunks, planes * (c + 1) / chunks);
  });
}

//===----------------------------------------------------------------------===//
// max_pool2d_grad: in [dy, indices], out [dx]
//===----------------------------------------------------------------------===//

void run_max_pool2d_grad(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &I = a.in[1], &DX = a.out[0];
  float *dx = DX.f32();
  int64_t planes = DY.dim(0) * DY.dim(1);
  int64_t per = DY.dim(2) * DY.dim(3), size = DX.dim(2) * DX.dim(3);
  const float *dy = DY.f32();
  const int64_t *idx = I.i64();
  // Each plane's gradients stay in its plane: chunks of planes zero and
  // scatter into their own part of dx, while it is in the cache. The first
  // bad index (the indices are data; a corrupted artifact must not write out
  // of bounds) is reported after the chunks.
  std::atomic<int64_t> bad{-1};
  auto run = [&](int64_t p0, int64_t p1) {
    std::fill(dx + p0 * size, dx + p1 * size, 0.0f);
    for (int64_t pl = p0; pl < p1; ++pl)
      for (int64_t k = 0; k < per; ++k) {
        int64_t at = idx[pl * per + k];
        if (at < 0) // a window entirely in the padding: no input element
          continue;
        if (at >= size) {
          int64_t none = -1;
          bad.compare_exchange_strong(none, at);
          continue;
        }
        dx[pl * size + at] += dy[pl * per + k];
      }
  };
  ThreadPool &pool = ThreadPool::global();
  int64_t chunks = std::min<int64_t>(planes, pool.size() * 4);
  if (planes * (per + size) < (1 << 16) || chunks < 2)
    run(0, planes);
  else
    pool.parallelFor(chunks, [&](int64_t c) {
      run(planes * c / chunks, planes * (c + 1) / chunks);
    });
  if (bad.load() >= 0)
    throw Error("max_pool2d_grad: index " + std::to_string(bad.load()) +
                " is outside the " + std::to_string(size) + "-element plane");
}

//===----------------------------------------------------------------------===//
// avg_pool2d: in [x], out [y]; avg_pool2d_grad: in [dy], out [dx]
//===----------------------------------------------------------------------===//

void run_avg_pool2d(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const abi::AvgPool2dAttrs at = abi::attrs<KernelId::AvgPool2d>(a.instr);
  abi::PoolGeom g = abi::poolGeom(abi::poolWindow(at));
  bool includePad = at.countIncludePad;
  int64_t planes = X.dim(0) * X.dim(1), h = X.dim(2), wd = X.dim(3);
  int64_t oh = Y.dim(2), ow = Y.dim(3);
  const float *x = X.f32();
  float *y = Y.f32();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float *plane = x + pl * h * wd;
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t c = 0; c < ow; ++c) {
        abi::AvgWindow aw = abi::avgPoolWindow(g, includePad, h, wd, r, c);
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
  abi::PoolGeom g = abi::poolGeom(abi::poolWindow(at));
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
        abi::AvgWindow aw = abi::avgPoolWindow(g, includePad, h, wd, r, c);
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
