//===- KernelsPoolNormTest.cpp - Max pooling and batch norm edge cases ----===//
//
// The vector paths of max_pool2d (AVX-512 gathers where the CPU has them)
// and batch norm (one pass of shifted sums, by row or by position) against
// references written here: PyTorch's max-pool rules over padding, ties, -inf
// and NaN on many geometries; statistics of data far from zero; and the
// same bits at one thread and at several.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"
#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tcc::rt::test {
namespace {

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  int64_t oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  std::vector<int64_t> attrs() const {
    return {kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, 0};
  }
};

/// PyTorch's max_pool2d on one window: the first valid tap starts it, a
/// larger value or a NaN replaces the best (so the last NaN wins).
void referenceMaxPool(const PoolCase &g, const std::vector<float> &x,
                      std::vector<float> &y, std::vector<int64_t> &idx) {
  int64_t oh = g.oh(), ow = g.ow();
  y.assign(g.n * g.c * oh * ow, 0.0f);
  idx.assign(y.size(), 0);
  for (int64_t p = 0; p < g.n * g.c; ++p)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q) {
        float m = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            int64_t ih = r * g.sh - g.pt + i * g.dh;
            int64_t iw = q * g.sw - g.pl + j * g.dw;
            if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
              continue;
            float v = x[p * g.h * g.w + ih * g.w + iw];
            if (at < 0)
              at = ih * g.w + iw;
            if (v > m || std::isnan(v)) {
              m = v;
              at = ih * g.w + iw;
            }
          }
        y[(p * oh + r) * ow + q] = m;
        idx[(p * oh + r) * ow + q] = at;
      }
}

/// Bit equality, NaN included (expectClose treats NaN as a mismatch).
void expectSameBits(const std::vector<float> &a, const std::vector<float> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    ASSERT_EQ(ua, ub) << "element " << i << ": " << a[i] << " vs " << b[i];
  }
}

/// Restores the pool's size when a test that changes it ends.
struct PoolThreads {
  int saved = ThreadPool::global().size();
  ~PoolThreads() { ThreadPool::setGlobalThreads(saved); }
};

TEST(MaxPoolEdges, RandomGeometriesFollowPyTorchOnPaddingTiesAndNaN) {
  std::mt19937 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int cases = 0;
  while (cases < 60) {
    PoolCase g{pick(1, 2), pick(1, 3), pick(1, 13), pick(1, 13), pick(1, 4),
               pick(1, 4), pick(1, 3), pick(1, 3),  0,           0,
               0,          0,          pick(1, 2),  pick(1, 2)};
    // PyTorch's limit: a pad at most half the (dilated) window.
    g.pt = pick(0, g.kh / 2);
    g.pb = pick(0, g.kh / 2);
    g.pl = pick(0, g.kw / 2);
    g.pr = pick(0, g.kw / 2);
    // The dilated window must fit the padded input.
    if (g.h + g.pt + g.pb < g.dh * (g.kh - 1) + 1 ||
        g.w + g.pl + g.pr < g.dw * (g.kw - 1) + 1)
      continue;
    ++cases;
    // Few distinct values (ties), -inf, and some NaN.
    std::vector<float> xv(g.n * g.c * g.h * g.w);
    for (float &v : xv) {
      int64_t k = pick(0, 40);
      v = k == 0   ? std::numeric_limits<float>::quiet_NaN()
          : k == 1 ? -std::numeric_limits<float>::infinity()
          : k == 2 ? -0.0f
                   : static_cast<float>(k % 7) - 3.0f;
    }
    std::vector<float> y;
    std::vector<int64_t> idx;
    referenceMaxPool(g, xv, y, idx);
    KernelHarness h;
    std::vector<int64_t> xs{g.n, g.c, g.h, g.w}, ys{g.n, g.c, g.oh(), g.ow()};
    int32_t x = h.f32(xs, xv), yo = h.out(ys), io = h.out(ys, DType::I64);
    h.run("max_pool2d", {x}, {yo, io}, g.attrs());
    SCOPED_TRACE("case " + std::to_string(cases) + ": x " + formatShape(xs) +
                 " window " + formatShape(g.attrs()));
    expectSameBits(h.get(yo), y);
    EXPECT_EQ(h.getI64(io), idx);
  }
}

TEST(MaxPoolEdges, ResNetStemIsTheSameAtOneThreadAndSeveral) {
  PoolThreads restore;
  std::vector<int64_t> xs{8, 32, 16, 16}, ys{8, 32, 8, 8};
  PoolCase g{8, 32, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  auto xv = randomValues(numel(xs), 21), dyv = randomValues(numel(ys), 22);
  xv[100] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y, dx(numel(xs), 0.0f);
  std::vector<int64_t> idx;
  referenceMaxPool(g, xv, y, idx);
  for (size_t k = 0; k < idx.size(); ++k) // one plane is 16 x 16, 8 x 8 out
    dx[(k / 64) * 256 + idx[k]] += dyv[k];
  for (int threads : {1, 3}) {
    ThreadPool::setGlobalThreads(threads);
    KernelHarness h;
    int32_t x = h.f32(xs, xv), yo = h.out(ys), io = h.out(ys, DType::I64);
    int32_t dy = h.f32(ys, dyv), dxo = h.out(xs);
    h.run("max_pool2d", {x}, {yo, io}, g.attrs());
    h.run("max_pool2d_grad", {dy, io}, {dxo});
    SCOPED_TRACE(std::to_string(threads) + " threads");
    expectSameBits(h.get(yo), y);
    EXPECT_EQ(h.getI64(io), idx);
    expectSameBits(h.get(dxo), dx);
    // An index outside its plane is an error on the pool too.
    std::vector<int64_t> bad = idx;
    bad[bad.size() / 2] = 256;
    int32_t bo = h.i64(ys, bad);
    EXPECT_THROW(h.run("max_pool2d_grad", {dy, bo}, {dxo}), Error);
  }
}

/// Batch norm's outputs for x, at the pool's current size.
std::vector<std::vector<float>> batchNorm(const std::vector<int64_t> &xs,
                                          const std::vector<float> &xv,
                                          const std::vector<float> &dyv) {
  int64_t c = xs[1];
  KernelHarness h;
  int32_t x = h.f32(xs, xv), g = h.f32({c}, randomValues(c, 31, 0.5f, 1.5f));
  int32_t b = h.f32({c}, randomValues(c, 32)), dy = h.f32(xs, dyv);
  int32_t y = h.out(xs), m = h.out({c}), v = h.out({c});
  int32_t dx = h.out(xs), dg = h.out({c}), db = h.out({c});
  h.run("batch_norm_train", {x, g, b}, {y, m, v}, {}, {1e-5});
  h.run("batch_norm_train_grad", {dy, x, g, m, v}, {dx, dg, db}, {}, {1e-5});
  return {h.get(y), h.get(m), h.get(v), h.get(dx), h.get(dg), h.get(db)};
}

TEST(BatchNormEdges, StatisticsOfDataFarFromZeroKeepTheirDigits) {
  // A mean 10^4 times the spread: sums of x and x^2 would lose the variance
  // to cancellation; the shifted sums must not. Rows by position (S < 16)
  // and by lanes (S >= 16, with a tail).
  for (std::vector<int64_t> xs :
       {std::vector<int64_t>{8, 5, 3}, std::vector<int64_t>{4, 3, 16},
        std::vector<int64_t>{4, 3, 37}}) {
    int64_t n = xs[0], c = xs[1], s = xs[2];
    auto xv = randomValues(numel(xs), 41, 999.9f, 1000.1f);
    for (int64_t ci = 0; ci < c; ++ci) {
      double mean = 0, var = 0;
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t si = 0; si < s; ++si)
          mean += xv[(ni * c + ci) * s + si];
      mean /= double(n * s);
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t si = 0; si < s; ++si)
          var += std::pow(xv[(ni * c + ci) * s + si] - mean, 2);
      var /= double(n * s);
      auto out = batchNorm(xs, xv, randomValues(numel(xs), 42));
      SCOPED_TRACE("shape " + formatShape(xs) + " channel " +
                   std::to_string(ci));
      EXPECT_NEAR(out[1][ci], mean, 1e-4);
      EXPECT_NEAR(out[2][ci], var, var * 1e-5);
    }
  }
}

TEST(BatchNormEdges, ResultsAreTheSameAtOneThreadAndSeveral) {
  PoolThreads restore;
  // Large enough to share channels over the pool: by position and by lanes.
  for (std::vector<int64_t> xs : {std::vector<int64_t>{64, 96, 2, 3},
                                  std::vector<int64_t>{8, 12, 19, 23}}) {
    auto xv = randomValues(numel(xs), 51, -2.0f, 3.0f);
    auto dyv = randomValues(numel(xs), 52);
    ThreadPool::setGlobalThreads(1);
    auto one = batchNorm(xs, xv, dyv);
    ThreadPool::setGlobalThreads(3);
    auto three = batchNorm(xs, xv, dyv);
    SCOPED_TRACE("shape " + formatShape(xs));
    for (size_t k = 0; k < one.size(); ++k)
      expectSameBits(one[k], three[k]);
  }
}

} // namespace
} // namespace tcc::rt::test
