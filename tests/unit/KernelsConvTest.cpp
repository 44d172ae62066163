//===- KernelsConvTest.cpp - Conv, pooling, batch norm vs naive loops -----===//
//
// Each kernel against a direct loop over the definition in double, over
// geometries that exercise strides, asymmetric pads, dilations, groups and
// ceil mode; plus the checks that reject inconsistent instrs.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// A convolution or pooling geometry (NCHW).
struct Geom {
  int64_t n, c, h, w; // input
  int64_t o;          // output channels (conv)
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  int64_t groups = 1;
  bool ceil = false;

  int64_t out(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1,
              int64_t d) const {
    int64_t span = in + p0 + p1 - d * (k - 1) - 1;
    int64_t o = ceil ? (span + s - 1) / s + 1 : span / s + 1;
    if (ceil && (o - 1) * s >= in + p0) // PyTorch: start inside the input
      --o;
    return o;
  }
  int64_t oh() const { return out(h, kh, sh, pt, pb, dh); }
  int64_t ow() const { return out(w, kw, sw, pl, pr, dw); }
  std::vector<int64_t> xShape() const { return {n, c, h, w}; }
  std::vector<int64_t> wShape() const { return {o, c / groups, kh, kw}; }
  std::vector<int64_t> yShape(int64_t channels) const {
    return {n, channels, oh(), ow()};
  }
  std::vector<int64_t> convAttrs() const {
    return {sh, sw, pt, pl, pb, pr, dh, dw, groups};
  }
  std::vector<int64_t> poolAttrs() const {
    return {kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, ceil ? 1 : 0};
  }
};

/// Calls f(n, o, r, q, c, i, j, ih, iw) for every in-range term of the
/// convolution sum (c is the input channel, i/j the kernel offsets).
template <class F> void forEachConvTerm(const Geom &g, F f) {
  int64_t cg = g.c / g.groups, og = g.o / g.groups;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t r = 0; r < g.oh(); ++r)
        for (int64_t q = 0; q < g.ow(); ++q)
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                int64_t ih = r * g.sh - g.pt + i * g.dh;
                int64_t iw = q * g.sw - g.pl + j * g.dw;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
                  continue;
                f(n, o, r, q, (o / og) * cg + c, c, i, j, ih, iw);
              }
}

int64_t at4(const std::vector<int64_t> &s, int64_t a, int64_t b, int64_t c,
            int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
}

class ConvKernels : public ::testing::TestWithParam<Geom> {};

TEST_P(ConvKernels, ForwardAndGradientsMatchTheDefinition) {
  const Geom &g = GetParam();
  auto xs = g.xShape(), ws = g.wShape(), ys = g.yShape(g.o);
  auto xv = randomValues(numel(xs), 1), wv = randomValues(numel(ws), 2);
  auto bv = randomValues(g.o, 3), dyv = randomValues(numel(ys), 4);

  std::vector<double> y(numel(ys)), dx(numel(xs)), dw(numel(ws));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t r = 0; r < g.oh(); ++r)
        for (int64_t q = 0; q < g.ow(); ++q)
          y[at4(ys, n, o, r, q)] = bv[o];
  forEachConvTerm(g, [&](int64_t n, int64_t o, int64_t r, int64_t q, int64_t ci,
                         int64_t c, int64_t i, int64_t j, int64_t ih,
                         int64_t iw) {
    double xval = xv[at4(xs, n, ci, ih, iw)], wval = wv[at4(ws, o, c, i, j)];
    double dyval = dyv[at4(ys, n, o, r, q)];
    y[at4(ys, n, o, r, q)] += xval * wval;
    dx[at4(xs, n, ci, ih, iw)] += dyval * wval;
    dw[at4(ws, o, c, i, j)] += dyval * xval;
  });

  KernelHarness h;
  int32_t x = h.f32(xs, xv), w = h.f32(ws, wv), b = h.f32({g.o}, bv);
  int32_t dy = h.f32(ys, dyv);
  int32_t yo = h.out(ys), ynb = h.out(ys), dxo = h.out(xs), dwo = h.out(ws);
  h.run("conv2d", {x, w, b}, {yo}, g.convAttrs());
  h.run("conv2d", {x, w}, {ynb}, g.convAttrs());
  h.run("conv2d_grad_input", {dy, w}, {dxo}, g.convAttrs());
  h.run("conv2d_grad_weight", {dy, x}, {dwo}, g.convAttrs());
  expectClose(h.get(yo), y, 1e-5);
  std::vector<float> noBias = h.get(ynb);
  for (size_t k = 0; k < noBias.size(); ++k)
    ASSERT_NEAR(noBias[k], y[k] - bv[(k / (g.oh() * g.ow())) % g.o],
                1e-5 * (1 + std::fabs(y[k])));
  expectClose(h.get(dxo), dx, 1e-5);
  expectClose(h.get(dwo), dw, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, ConvKernels,
    ::testing::Values(
        // n  c  h  w  o  kh kw sh sw pt pl pb pr dh dw groups
        Geom{2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   // 3x3 same
        Geom{2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 2},   // all odd
        Geom{3, 3, 9, 9, 5, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1},   // resnet stem
        Geom{2, 6, 5, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6},   // depthwise
        Geom{4, 8, 2, 2, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},   // 1x1 down
        Geom{1, 2, 4, 5, 3, 2, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1})); // pads > k

TEST(ConvKernels, ChecksRejectInconsistentInstrs) {
  Geom g{1, 4, 5, 5, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 2};
  KernelHarness h;
  int32_t x = h.f32(g.xShape(), randomValues(100, 1));
  int32_t w = h.f32(g.wShape(), randomValues(36, 2));
  int32_t y = h.out(g.yShape(2)), wrong = h.out({1, 2, 4, 4});
  EXPECT_NO_THROW(h.check("conv2d", {x, w}, {y}, g.convAttrs()));
  EXPECT_THROW(h.check("conv2d", {x, w}, {wrong}, g.convAttrs()), Error);
  auto bad = g.convAttrs();
  bad[8] = 3; // groups that do not divide the channels
  EXPECT_THROW(h.check("conv2d", {x, w}, {y}, bad), Error);
  bad = g.convAttrs();
  bad[0] = 0; // stride 0
  EXPECT_THROW(h.check("conv2d", {x, w}, {y}, bad), Error);
  int32_t b = h.f32({3}, {1, 2, 3}); // bias of the wrong size
  EXPECT_THROW(h.check("conv2d", {x, w, b}, {y}, g.convAttrs()), Error);
  EXPECT_THROW(h.check("conv2d", {x}, {y}, g.convAttrs()), Error);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

class PoolKernels : public ::testing::TestWithParam<Geom> {};

TEST_P(PoolKernels, MaxPoolAndItsGradientMatchTheDefinition) {
  Geom g = GetParam();
  auto xs = g.xShape(), ys = g.yShape(g.c);
  auto xv = randomValues(numel(xs), 5), dyv = randomValues(numel(ys), 6);
  std::vector<double> y(numel(ys)), dx(numel(xs), 0.0);
  std::vector<int64_t> idx(numel(ys));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t r = 0; r < g.oh(); ++r)
        for (int64_t q = 0; q < g.ow(); ++q) {
          double best = -INFINITY;
          int64_t arg = -1;
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j) {
              int64_t ih = r * g.sh - g.pt + i * g.dh;
              int64_t iw = q * g.sw - g.pl + j * g.dw;
              if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
                continue;
              double v = xv[at4(xs, n, c, ih, iw)];
              if (v > best) {
                best = v;
                arg = ih * g.w + iw;
              }
            }
          int64_t k = at4(ys, n, c, r, q);
          y[k] = best;
          idx[k] = arg;
          dx[(n * g.c + c) * g.h * g.w + arg] += dyv[k];
        }
  KernelHarness h;
  int32_t x = h.f32(xs, xv), dy = h.f32(ys, dyv);
  int32_t yo = h.out(ys), io = h.out(ys, DType::I64), dxo = h.out(xs);
  h.run("max_pool2d", {x}, {yo, io}, g.poolAttrs());
  h.run("max_pool2d_grad", {dy, io}, {dxo});
  expectClose(h.get(yo), y, 0);
  EXPECT_EQ(h.getI64(io), idx);
  expectClose(h.get(dxo), dx, 1e-6);
}

TEST_P(PoolKernels, AvgPoolAndItsGradientMatchTheDefinition) {
  Geom g = GetParam();
  g.dh = g.dw = 1;
  auto xs = g.xShape(), ys = g.yShape(g.c);
  auto xv = randomValues(numel(xs), 7), dyv = randomValues(numel(ys), 8);
  for (bool includePad : {false, true}) {
    std::vector<double> y(numel(ys)), dx(numel(xs), 0.0);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t r = 0; r < g.oh(); ++r)
          for (int64_t q = 0; q < g.ow(); ++q) {
            // PyTorch: the divisor counts the window clipped to the padded
            // input (with count_include_pad) or to the input.
            int64_t h0 = r * g.sh - g.pt, w0 = q * g.sw - g.pl;
            int64_t h1 = std::min(h0 + g.kh, g.h + g.pb);
            int64_t w1 = std::min(w0 + g.kw, g.w + g.pr);
            double padded = double((h1 - h0) * (w1 - w0));
            double sum = 0, count = 0;
            std::vector<int64_t> cells;
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw)
                if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) {
                  sum += xv[at4(xs, n, c, ih, iw)];
                  count += 1;
                  cells.push_back(at4(xs, n, c, ih, iw));
                }
            double div = includePad ? padded : count;
            int64_t k = at4(ys, n, c, r, q);
            y[k] = sum / div;
            for (int64_t cell : cells)
              dx[cell] += dyv[k] / div;
          }
    std::vector<int64_t> attrs = g.poolAttrs();
    attrs.push_back(includePad ? 1 : 0);
    KernelHarness h;
    int32_t x = h.f32(xs, xv), dy = h.f32(ys, dyv);
    int32_t yo = h.out(ys), dxo = h.out(xs);
    h.run("avg_pool2d", {x}, {yo}, attrs);
    h.run("avg_pool2d_grad", {dy}, {dxo}, attrs);
    SCOPED_TRACE(includePad ? "count_include_pad" : "exclude pad");
    expectClose(h.get(yo), y, 1e-6);
    expectClose(h.get(dxo), dx, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, PoolKernels,
    ::testing::Values(
        // n  c  h  w  o  kh kw sh sw pt pl pb pr dh dw groups ceil
        Geom{2, 3, 8, 8, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, false}, // resnet
        Geom{1, 2, 7, 6, 0, 2, 3, 2, 2, 0, 1, 1, 0, 1, 1, 1, true},  // ceil
        Geom{2, 2, 5, 5, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, true},  // ceil+pad
        Geom{1, 3, 9, 7, 0, 2, 2, 1, 2, 0, 0, 1, 1, 2, 2, 1, false}, // dilated
        Geom{2, 1, 4, 4, 0, 4, 4, 4, 4, 0, 0, 0, 0, 1, 1, 1, false}));

TEST(PoolKernels, MaxPoolFollowsPyTorchOnTiesAndNaN) {
  KernelHarness h;
  float nan = std::numeric_limits<float>::quiet_NaN();
  // One 2x2 window per plane: a tie (first wins) and a NaN (propagates).
  int32_t x = h.f32({1, 2, 2, 2}, {3, 3, 1, 3, 1, nan, 5, 2});
  int32_t y = h.out({1, 2, 1, 1}), i = h.out({1, 2, 1, 1}, DType::I64);
  h.run("max_pool2d", {x}, {y, i}, {2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 0});
  EXPECT_EQ(h.get(y)[0], 3.0f);
  EXPECT_TRUE(std::isnan(h.get(y)[1]));
  EXPECT_EQ(h.getI64(i), (std::vector<int64_t>{0, 1}));
}

TEST(PoolKernels, ChecksAndBadIndicesAreErrors) {
  KernelHarness h;
  int32_t x = h.f32({1, 1, 4, 4}, randomValues(16, 1));
  int32_t y = h.out({1, 1, 2, 2}), i = h.out({1, 1, 2, 2}, DType::I64);
  std::vector<int64_t> attrs = {2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 0};
  EXPECT_NO_THROW(h.check("max_pool2d", {x}, {y, i}, attrs));
  int32_t wrong = h.out({1, 1, 3, 3});
  EXPECT_THROW(h.check("max_pool2d", {x}, {wrong, i}, attrs), Error);
  EXPECT_THROW(h.check("max_pool2d", {x}, {y, y}, attrs), Error); // f32 idx
  attrs[10] = 2; // ceil_mode must be 0/1
  EXPECT_THROW(h.check("max_pool2d", {x}, {y, i}, attrs), Error);
  std::vector<int64_t> avg = {2, 2, 2, 2, 0, 0, 0, 0, 2, 1, 0, 0};
  EXPECT_THROW(h.check("avg_pool2d", {x}, {y}, avg), Error); // dilated avg
  // Indices are data: one outside its plane must not write out of bounds.
  int32_t dy = h.f32({1, 1, 2, 2}, {1, 1, 1, 1});
  int32_t bad = h.i64({1, 1, 2, 2}, {0, 3, 16, 5}), dx = h.out({1, 1, 4, 4});
  EXPECT_THROW(h.run("max_pool2d_grad", {dy, bad}, {dx}), Error);
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

TEST(BatchNormKernels, TrainingForwardAndBackwardMatchTheDefinition) {
  // The last shape is large enough for the kernels to share its channels
  // over the thread pool (KernelsBatchNorm.cpp).
  for (std::vector<int64_t> xs :
       {std::vector<int64_t>{4, 3, 5, 2}, std::vector<int64_t>{6, 5},
        std::vector<int64_t>{2, 4, 3}, std::vector<int64_t>{6, 45, 11, 13}}) {
    int64_t n = xs[0], c = xs[1], s = numel(xs) / (n * c), m = n * s;
    // An offset mean: the variance must not cancel catastrophically.
    auto xv = randomValues(numel(xs), 11, 9.0f, 11.0f);
    auto gv = randomValues(c, 12, 0.5f, 1.5f), bv = randomValues(c, 13);
    auto dyv = randomValues(numel(xs), 14);
    const double eps = 1e-5;
    std::vector<double> y(numel(xs)), dx(numel(xs)), mean(c, 0), var(c, 0),
        dg(c, 0), db(c, 0);
    auto at = [&](int64_t ni, int64_t ci, int64_t si) {
      return (ni * c + ci) * s + si;
    };
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t si = 0; si < s; ++si)
          mean[ci] += xv[at(ni, ci, si)] / double(m);
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t si = 0; si < s; ++si)
          var[ci] += std::pow(xv[at(ni, ci, si)] - mean[ci], 2) / double(m);
      double istd = 1 / std::sqrt(var[ci] + eps), mdy = 0, mdyx = 0;
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t si = 0; si < s; ++si) {
          double xhat = (xv[at(ni, ci, si)] - mean[ci]) * istd;
          y[at(ni, ci, si)] = xhat * gv[ci] + bv[ci];
          db[ci] += dyv[at(ni, ci, si)];
          dg[ci] += dyv[at(ni, ci, si)] * xhat;
        }
      mdy = db[ci] / m;
      mdyx = dg[ci] / m;
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t si = 0; si < s; ++si) {
          double xhat = (xv[at(ni, ci, si)] - mean[ci]) * istd;
          dx[at(ni, ci, si)] =
              gv[ci] * istd * (dyv[at(ni, ci, si)] - mdy - xhat * mdyx);
        }
    }
    KernelHarness h;
    int32_t x = h.f32(xs, xv), g = h.f32({c}, gv), b = h.f32({c}, bv);
    int32_t dy = h.f32(xs, dyv);
    int32_t yo = h.out(xs), mo = h.out({c}), vo = h.out({c});
    int32_t dxo = h.out(xs), dgo = h.out({c}), dbo = h.out({c});
    h.run("batch_norm_train", {x, g, b}, {yo, mo, vo}, {}, {eps});
    h.run("batch_norm_train_grad", {dy, x, g, mo, vo}, {dxo, dgo, dbo}, {},
          {eps});
    SCOPED_TRACE("shape " + formatShape(xs));
    expectClose(h.get(yo), y, 2e-5);
    expectClose(h.get(mo), mean, 1e-6);
    expectClose(h.get(vo), var, 1e-5);
    expectClose(h.get(dxo), dx, 1e-4);
    expectClose(h.get(dgo), dg, 1e-5);
    expectClose(h.get(dbo), db, 1e-5);
  }
}

TEST(BatchNormKernels, ChecksRejectInconsistentInstrs) {
  KernelHarness h;
  int32_t x = h.f32({2, 3, 2}, randomValues(12, 1));
  int32_t g = h.f32({3}, {1, 1, 1}), b = h.f32({3}, {0, 0, 0});
  int32_t y = h.out({2, 3, 2}), m = h.out({3}), v = h.out({3});
  EXPECT_NO_THROW(
      h.check("batch_norm_train", {x, g, b}, {y, m, v}, {}, {1e-5}));
  int32_t g4 = h.f32({4}, {1, 1, 1, 1});
  EXPECT_THROW(h.check("batch_norm_train", {x, g4, b}, {y, m, v}, {}, {1e-5}),
               Error);
  EXPECT_THROW(h.check("batch_norm_train", {x, g, b}, {y, m, v}, {}, {}),
               Error);
  EXPECT_THROW(h.check("batch_norm_train", {x, g, b}, {y, m, v}, {}, {-1.0}),
               Error);
  int32_t flat = h.f32({6}, randomValues(6, 2));
  EXPECT_THROW(h.check("batch_norm_train", {flat, g, b}, {y, m, v}, {}, {1e-5}),
               Error);
}

} // namespace
