//===- KernelsNumericTest.cpp - Softmax, losses, optimizers vs references -===//
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {
/// [outer, len, inner] decomposition of a shape around `axis`.
struct Axis {
  int64_t outer = 1, len = 1, inner = 1;
  Axis(const std::vector<int64_t> &shape, size_t axis) {
    for (size_t d = 0; d < shape.size(); ++d)
      (d < axis ? outer : d == axis ? len : inner) *= shape[d];
  }
  int64_t at(int64_t o, int64_t l, int64_t i) const {
    return (o * len + l) * inner + i;
  }
};
} // namespace

static std::vector<double> refSoftmax(const std::vector<float> &x,
                                      const Axis &ax, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < ax.outer; ++o)
    for (int64_t i = 0; i < ax.inner; ++i) {
      double mx = -INFINITY, sum = 0;
      for (int64_t l = 0; l < ax.len; ++l)
        mx = std::max(mx, double(x[ax.at(o, l, i)]));
      for (int64_t l = 0; l < ax.len; ++l)
        sum += std::exp(x[ax.at(o, l, i)] - mx);
      for (int64_t l = 0; l < ax.len; ++l) {
        double v = x[ax.at(o, l, i)] - mx;
        y[ax.at(o, l, i)] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

static void expectNear(const std::vector<float> &got,
                       const std::vector<double> &want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(KernelsNumeric, SoftmaxAndLogSoftmaxEveryAxis) {
  std::vector<int64_t> shape = {2, 3, 4};
  auto xv = randomValues(24, 5, -3.0f, 3.0f);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (bool log : {false, true}) {
      KernelHarness h;
      int32_t x = h.f32(shape, xv), y = h.out(shape);
      h.run(log ? "log_softmax" : "softmax", {x}, {y}, {axis});
      SCOPED_TRACE("axis " + std::to_string(axis));
      expectNear(h.get(y), refSoftmax(xv, Axis(shape, axis), log), 1e-6);
    }
}

TEST(KernelsNumeric, SoftmaxIsStableForLargeInputs) {
  KernelHarness h;
  int32_t x = h.f32({1, 2}, {1000.0f, 1001.0f}), y = h.out({1, 2});
  int32_t ly = h.out({1, 2});
  h.run("softmax", {x}, {y}, {-1});
  h.run("log_softmax", {x}, {ly}, {1});
  expectNear(h.get(y), {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-1.0))},
             1e-6);
  expectNear(h.get(ly),
             {-std::log1p(std::exp(1.0)), -std::log1p(std::exp(-1.0))}, 1e-5);
}

TEST(KernelsNumeric, SoftmaxGradsEveryAxis) {
  std::vector<int64_t> shape = {3, 2, 5};
  auto xv = randomValues(30, 6, -2.0f, 2.0f), dyv = randomValues(30, 7);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (bool log : {false, true}) {
      Axis ax(shape, axis);
      auto yd = refSoftmax(xv, ax, log);
      std::vector<float> yv(yd.begin(), yd.end());
      std::vector<double> want(30);
      for (int64_t o = 0; o < ax.outer; ++o)
        for (int64_t i = 0; i < ax.inner; ++i) {
          double s = 0;
          for (int64_t l = 0; l < ax.len; ++l) {
            int64_t k = ax.at(o, l, i);
            s += log ? dyv[k] : double(dyv[k]) * yv[k];
          }
          for (int64_t l = 0; l < ax.len; ++l) {
            int64_t k = ax.at(o, l, i);
            want[k] = log ? dyv[k] - std::exp(double(yv[k])) * s
                          : yv[k] * (dyv[k] - s);
          }
        }
      KernelHarness h;
      int32_t dy = h.f32(shape, dyv), y = h.f32(shape, yv), dx = h.out(shape);
      h.run(log ? "log_softmax_grad" : "softmax_grad", {dy, y}, {dx}, {axis});
      SCOPED_TRACE("axis " + std::to_string(axis) + (log ? " log" : ""));
      expectNear(h.get(dx), want, 1e-5);
    }
}

// CrossEntropyAttrs: PyTorch's defaults, ignore_index -100, no smoothing.
static const std::vector<int64_t> kCe = {-100};
static const std::vector<double> kCeF = {0.0};

TEST(KernelsNumeric, CrossEntropyHandComputed) {
  KernelHarness h;
  int32_t logits = h.f32({2, 3}, {1, 2, 3, 1, 1, 1});
  int32_t labels = h.i64({2}, {2, 0}), loss = h.out({});
  h.run("softmax_cross_entropy", {logits, labels}, {loss}, kCe, kCeF);
  // (log(e+e^2+e^3) - 3 + log 3) / 2
  EXPECT_NEAR(h.get(loss)[0], 0.7531091f, 1e-6f);

  // The gradient's scalar is per position (the rule divides dloss by 2).
  int32_t dloss = h.f32({}, {1.0f}), dlogits = h.out({2, 3});
  h.run("softmax_cross_entropy_grad", {dloss, logits, labels}, {dlogits}, kCe,
        kCeF);
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  std::vector<double> want = {
      std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z - 1,
      1.0 / 3 - 1,       1.0 / 3,           1.0 / 3};
  expectNear(h.get(dlogits), want, 1e-6);
}

/// PyTorch's CrossEntropyLoss(ignore_index=-100, label_smoothing=0.3) of
/// the rows below, the second ignored: (1 - 0.3) * nll + 0.3 * mean_c(-log
/// p_c) over the rows that count, and the gradient per counted row
/// softmax - 0.7 * onehot - 0.1 (0 on the ignored row).
TEST(KernelsNumeric, CrossEntropyIgnoreIndexAndSmoothing) {
  KernelHarness h;
  int32_t logits = h.f32({3, 3}, {1, 2, 3, 5, -1, 0, 0, 0, 2});
  int32_t labels = h.i64({3}, {2, -100, 0}), loss = h.out({});
  h.run("softmax_cross_entropy", {logits, labels}, {loss}, {-100}, {0.3});
  auto logp = [](std::vector<double> x, int c) {
    double z = 0;
    for (double v : x)
      z += std::exp(v);
    return x[c] - std::log(z);
  };
  std::vector<std::vector<double>> rows = {{1, 2, 3}, {0, 0, 2}};
  std::vector<int> ys = {2, 0};
  double want = 0;
  for (int r = 0; r < 2; ++r) {
    double uniform = 0;
    for (int c = 0; c < 3; ++c)
      uniform -= logp(rows[r], c) / 3;
    want += 0.7 * -logp(rows[r], ys[r]) + 0.3 * uniform;
  }
  EXPECT_NEAR(h.get(loss)[0], want / 2, 1e-6);

  int32_t dloss = h.f32({}, {0.5f}), dlogits = h.out({3, 3});
  h.run("softmax_cross_entropy_grad", {dloss, logits, labels}, {dlogits},
        {-100}, {0.3});
  std::vector<double> wantGrad(9, 0.0);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      wantGrad[(r ? 6 : 0) + c] =
          0.5 * (std::exp(logp(rows[r], c)) - (c == ys[r] ? 0.7 : 0.0) - 0.1);
  expectNear(h.get(dlogits), wantGrad, 1e-6);
}

/// Every label ignored: loss 0 (PyTorch's 0/0 would be NaN) and no
/// gradient; an ignore_index inside the classes is never out of range.
TEST(KernelsNumeric, CrossEntropyAllIgnored) {
  KernelHarness h;
  int32_t logits = h.f32({2, 3}, {1, 2, 3, 4, 5, 6});
  int32_t labels = h.i64({2}, {1, 1}), loss = h.out({});
  h.run("softmax_cross_entropy", {logits, labels}, {loss}, {1}, {0.0});
  EXPECT_EQ(h.get(loss)[0], 0.0f);
  int32_t dloss = h.f32({}, {1.0f}), dlogits = h.out({2, 3});
  h.run("softmax_cross_entropy_grad", {dloss, logits, labels}, {dlogits}, {1},
        {0.0});
  expectNear(h.get(dlogits), std::vector<double>(6, 0.0), 0);
}

TEST(KernelsNumeric, CrossEntropyGradMatchesFiniteDifferences) {
  std::vector<int64_t> shape = {2, 2, 3};
  auto lv = randomValues(12, 8, -2.0f, 2.0f);
  std::vector<int64_t> lab = {0, 2, 1, 1};
  auto lossAt = [&](const std::vector<float> &v) {
    KernelHarness h;
    int32_t l = h.f32(shape, v), y = h.i64({2, 2}, lab), o = h.out({});
    h.run("softmax_cross_entropy", {l, y}, {o}, kCe, kCeF);
    return double(h.get(o)[0]);
  };
  KernelHarness h;
  // d loss / d loss = 1, over 4 positions.
  int32_t dloss = h.f32({}, {0.25f}), l = h.f32(shape, lv);
  int32_t y = h.i64({2, 2}, lab), dl = h.out(shape);
  h.run("softmax_cross_entropy_grad", {dloss, l, y}, {dl}, kCe, kCeF);
  auto grad = h.get(dl);
  for (size_t i = 0; i < lv.size(); ++i) {
    auto plus = lv, minus = lv;
    plus[i] += 1e-2f;
    minus[i] -= 1e-2f;
    double fd = (lossAt(plus) - lossAt(minus)) / (double(plus[i]) - minus[i]);
    EXPECT_NEAR(grad[i], fd, 2e-4) << i;
  }
}

TEST(KernelsNumeric, CrossEntropyRejectsBadLabel) {
  KernelHarness h;
  int32_t logits = h.f32({4, 10}, std::vector<float>(40, 0.0f));
  int32_t labels = h.i64({4}, {0, 1, 2, 12}), loss = h.out({});
  try {
    h.run("softmax_cross_entropy", {logits, labels}, {loss}, kCe, kCeF);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "label 12 at position 3 is outside [0, 10)");
  }
}

TEST(KernelsNumeric, MseLossAndGrad) {
  KernelHarness h;
  int32_t p = h.f32({3}, {1, 2, 3}), t = h.f32({3}, {1.5f, 2, 1});
  int32_t loss = h.out({}), dloss = h.f32({}, {1.0f}), dp = h.out({3});
  h.run("mse_loss", {p, t}, {loss});
  EXPECT_NEAR(h.get(loss)[0], 4.25f / 3, 1e-6f);
  h.run("mse_loss_grad", {dloss, p, t}, {dp});
  expectNear(h.get(dp), {-1.0 / 3, 0, 4.0 / 3}, 1e-6);
}

TEST(KernelsNumeric, SgdUpdateInPlace) {
  KernelHarness h;
  int32_t p = h.f32({2}, {1, 2}), g = h.f32({2}, {0.5f, -1});
  int32_t lr = h.f32({}, {0.1f});
  h.run("sgd_update", {p, g, lr}, {p}, {}, {0.01});
  expectNear(h.get(p), {0.949, 2.098}, 1e-6);
}

TEST(KernelsNumeric, SgdMomentumTwoSteps) {
  KernelHarness h;
  int32_t p = h.f32({2}, {1, 2}), buf = h.f32({2}, {0, 0});
  int32_t g1 = h.f32({2}, {0.5f, -1}), g2 = h.f32({2}, {0.25f, 0.5f});
  int32_t lr = h.f32({}, {0.1f});
  h.run("sgd_momentum_update", {p, g1, buf, lr}, {p, buf}, {0}, {0.9, 0.0});
  h.run("sgd_momentum_update", {p, g2, buf, lr}, {p, buf}, {0}, {0.9, 0.0});
  // buf1 = g1, p1 = p - 0.1 g1; buf2 = 0.9 g1 + g2, p2 = p1 - 0.1 buf2.
  expectNear(h.get(buf), {0.9 * 0.5 + 0.25, 0.9 * -1 + 0.5}, 1e-6);
  expectNear(h.get(p), {1 - 0.05 - 0.1 * 0.7, 2 + 0.1 - 0.1 * -0.4}, 1e-6);
}

TEST(KernelsNumeric, AdamWTwoStepsMatchHandUnrolled) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  std::vector<float> p0 = {0.5f, -1.0f, 2.0f};
  std::vector<std::vector<float>> grads = {{0.1f, 0.2f, -0.3f},
                                           {-0.2f, 0.05f, 0.4f}};
  KernelHarness h;
  int32_t p = h.f32({3}, p0), m = h.f32({3}, {0, 0, 0}),
          v = h.f32({3}, {0, 0, 0});
  int32_t g1 = h.f32({3}, grads[0]), g2 = h.f32({3}, grads[1]);
  int32_t s1 = h.f32({}, {1.0f}), s2 = h.f32({}, {2.0f});
  int32_t lrT = h.f32({}, {static_cast<float>(lr)});
  h.run("adamw_update", {p, g1, m, v, s1, lrT}, {p, m, v}, {0},
        {b1, b2, eps, wd});
  h.run("adamw_update", {p, g2, m, v, s2, lrT}, {p, m, v}, {0},
        {b1, b2, eps, wd});

  std::vector<double> want;
  for (size_t i = 0; i < 3; ++i) {
    double pi = p0[i], mi = 0, vi = 0;
    // step 1
    double g = grads[0][i];
    pi *= 1 - lr * wd;
    mi = b1 * mi + (1 - b1) * g;
    vi = b2 * vi + (1 - b2) * g * g;
    pi -= lr / (1 - b1) * mi / (std::sqrt(vi) / std::sqrt(1 - b2) + eps);
    // step 2
    g = grads[1][i];
    pi *= 1 - lr * wd;
    mi = b1 * mi + (1 - b1) * g;
    vi = b2 * vi + (1 - b2) * g * g;
    pi -= lr / (1 - b1 * b1) * mi /
          (std::sqrt(vi) / std::sqrt(1 - b2 * b2) + eps);
    want.push_back(pi);
  }
  expectNear(h.get(p), want, 1e-6);
}

TEST(KernelsNumeric, AdamWOutOfPlaceMatchesInPlace) {
  auto pv = randomValues(37, 1), gv = randomValues(37, 2);
  auto mv = randomValues(37, 3), vv = randomValues(37, 4, 0.0f, 1.0f);
  std::vector<double> f = {0.8, 0.99, 1e-6, 0.1}; // beta1 0.8: lerp's other
                                                  // branch too
  KernelHarness h;
  int32_t p = h.f32({37}, pv), g = h.f32({37}, gv), m = h.f32({37}, mv),
          v = h.f32({37}, vv), s = h.f32({}, {3.0f}), lr = h.f32({}, {1e-3f});
  int32_t p2 = h.out({37}), m2 = h.out({37}), v2 = h.out({37});
  h.run("adamw_update", {p, g, m, v, s, lr}, {p2, m2, v2}, {0}, f);
  h.run("adamw_update", {p, g, m, v, s, lr}, {p, m, v}, {0}, f);
  EXPECT_EQ(h.get(p2), h.get(p));
  EXPECT_EQ(h.get(m2), h.get(m));
  EXPECT_EQ(h.get(v2), h.get(v));
  EXPECT_NE(h.get(p), pv);
}

// tcc-shadow-weights: a fourth output receives the new parameter rounded to
// bf16 or f16, exactly the `cast` kernel's rounding of p', in place and out
// of place; p', m', v' are those of the three-output update.
TEST(KernelsNumeric, AdamWWritesTheSixteenBitCopy) {
  auto pv = randomValues(37, 1), gv = randomValues(37, 2);
  auto mv = randomValues(37, 3), vv = randomValues(37, 4, 0.0f, 1.0f);
  std::vector<double> f = {0.9, 0.999, 1e-8, 0.01};
  for (DType low : {DType::BF16, DType::F16}) {
    for (bool inPlace : {true, false}) {
      KernelHarness h;
      int32_t p = h.f32({37}, pv), g = h.f32({37}, gv), m = h.f32({37}, mv),
              v = h.f32({37}, vv), s = h.f32({}, {2.0f}),
              lr = h.f32({}, {1e-2f});
      int32_t p3 = h.f32({37}, pv), m3 = h.f32({37}, mv), v3 = h.f32({37}, vv);
      h.run("adamw_update", {p3, g, m3, v3, s, lr}, {p3, m3, v3}, {0}, f);
      int32_t l = h.out({37}, low), c = h.out({37}, low);
      std::vector<int32_t> outs = {p, m, v, l};
      if (!inPlace)
        outs = {h.out({37}), h.out({37}), h.out({37}), l};
      h.run("adamw_update", {p, g, m, v, s, lr}, outs, {0}, f);
      EXPECT_EQ(h.get(outs[0]), h.get(p3));
      EXPECT_EQ(h.get(outs[1]), h.get(m3));
      EXPECT_EQ(h.get(outs[2]), h.get(v3));
      h.run("cast", {outs[0]}, {c}, {0});
      EXPECT_EQ(h.getU16(l), h.getU16(c)) << dtypeName(low) << inPlace;
      EXPECT_NE(h.getU16(l), std::vector<uint16_t>(37, 0x7f7f));
    }
  }
}

// fp16 loss scaling inside AdamW: with finite 1 the update equals AdamW of
// the gradient multiplied by the inverse scale first (a `mul` kernel), bit
// for bit; with finite 0 every output is its old value, in place and out of
// place, and the 16-bit copy is the old parameter's rounding.
TEST(KernelsNumeric, AdamWUnscalesAndSkips) {
  auto pv = randomValues(37, 5), gv = randomValues(37, 6, -900.0f, 900.0f);
  auto mv = randomValues(37, 7), vv = randomValues(37, 8, 0.0f, 1.0f);
  std::vector<double> f = {0.9, 0.999, 1e-8, 0.01};
  for (bool inPlace : {true, false}) {
    KernelHarness h;
    int32_t s = h.f32({}, {3.0f}), inv = h.f32({}, {1.0f / 2048});
    int32_t lr = h.f32({}, {1e-2f});
    int32_t yes = h.i64({}, {1}), no = h.i64({}, {0});
    int32_t g = h.f32({37}, gv), gu = h.out({37});
    h.run("mul", {g, inv}, {gu});
    int32_t p3 = h.f32({37}, pv), m3 = h.f32({37}, mv), v3 = h.f32({37}, vv);
    h.run("adamw_update", {p3, gu, m3, v3, s, lr}, {p3, m3, v3}, {0}, f);
    for (int32_t ok : {yes, no}) {
      int32_t p = h.f32({37}, pv), m = h.f32({37}, mv), v = h.f32({37}, vv);
      int32_t l = h.out({37}, DType::F16), c = h.out({37}, DType::F16);
      std::vector<int32_t> outs = {p, m, v, l};
      if (!inPlace)
        outs = {h.out({37}), h.out({37}), h.out({37}), l};
      h.run("adamw_update", {p, g, m, v, s, lr, inv, ok}, outs, {0}, f);
      EXPECT_EQ(h.get(outs[0]), ok == yes ? h.get(p3) : pv) << inPlace;
      EXPECT_EQ(h.get(outs[1]), ok == yes ? h.get(m3) : mv) << inPlace;
      EXPECT_EQ(h.get(outs[2]), ok == yes ? h.get(v3) : vv) << inPlace;
      h.run("cast", {outs[0]}, {c}, {0});
      EXPECT_EQ(h.getU16(l), h.getU16(c)) << inPlace;
    }
  }
  // The two inputs: an f32 scale and a bool (i64) flag, one element each.
  KernelHarness h;
  int32_t p = h.out({4}), s = h.f32({}, {1.0f});
  std::vector<double> f2 = {0.9, 0.999, 1e-8, 0.01};
  int32_t flag = h.i64({}, {1}), wide = h.i64({2}, {1, 1});
  try {
    h.check("adamw_update", {p, p, p, p, s, s, flag, flag}, {p, p, p}, {0}, f2);
    ADD_FAILURE() << "an i64 inverse scale was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("input 6"), std::string::npos)
        << e.what();
  }
  try {
    h.check("adamw_update", {p, p, p, p, s, s, s, wide}, {p, p, p}, {0}, f2);
    ADD_FAILURE() << "a flag of two elements was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("input 7"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(
      h.check("adamw_update", {p, p, p, p, s, s, s, flag}, {p, p, p}, {0}, f2));
}

TEST(KernelsNumeric, AdamWSixteenBitCopyIsChecked) {
  KernelHarness h;
  int32_t p = h.out({4}), s = h.f32({}, {1.0f});
  std::vector<double> f = {0.9, 0.999, 1e-8, 0.01};
  auto message = [&](int32_t low) {
    try {
      h.check("adamw_update", {p, p, p, p, s, s}, {p, p, p, low}, {0}, f);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  int32_t f32 = h.out({4}), short_ = h.out({3}, DType::BF16);
  EXPECT_EQ(message(f32), "output 3 't" + std::to_string(f32) +
                              "' (the 16-bit copy of the new parameter) "
                              "must be bf16 or f16, is f32");
  EXPECT_EQ(message(short_), "output 3 't" + std::to_string(short_) +
                                 "' has shape [3] (3 elements), expected 4 "
                                 "elements");
  EXPECT_EQ(message(h.out({4}, DType::F16)), "no error");
}

// Gradient clipping's norm: f64 sums over every input, in a fixed order
// (the same bits on every thread count), 16-bit inputs widened.
TEST(KernelsNumeric, GlobalNormOfSeveralInputs) {
  KernelHarness h;
  int32_t a = h.f32({2}, {3, 4}), b = h.f32({}, {12});
  int32_t n = h.out({});
  h.run("global_norm", {a, b}, {n});
  EXPECT_EQ(h.get(n)[0], 13.0f);
  // Many pieces of many inputs: against a long-double reference, and
  // repeatable.
  std::vector<int32_t> in;
  long double ref = 0;
  for (int64_t k : {200000, 1, 70001, 3}) {
    std::vector<float> v = randomValues(k, static_cast<uint32_t>(k));
    for (float x : v)
      ref += static_cast<long double>(x) * x;
    in.push_back(h.f32({k}, v));
  }
  h.run("global_norm", in, {n});
  float first = h.get(n)[0];
  EXPECT_EQ(first, static_cast<float>(std::sqrt(ref)));
  h.run("global_norm", in, {n});
  EXPECT_EQ(h.get(n)[0], first);
  // Non-finite gradients give a non-finite norm (fp16 loss scaling reads
  // the step's finiteness off it).
  int32_t inf = h.f32({2}, {1, INFINITY}), nan = h.f32({1}, {NAN});
  h.run("global_norm", {a, inf}, {n});
  EXPECT_TRUE(std::isinf(h.get(n)[0]));
  h.run("global_norm", {nan, a}, {n});
  EXPECT_TRUE(std::isnan(h.get(n)[0]));
}

TEST(KernelsNumeric, GlobalNormTakesSixteenBitInputs) {
  DTypeTensors t;
  int32_t a = t.add(DType::BF16, {3}, {1.5f, -2, 0.25f});
  int32_t b = t.add(DType::F16, {2}, {3, 0.5f});
  int32_t n = t.add(DType::F32, {});
  t.run("global_norm", {a, b}, {n});
  EXPECT_FLOAT_EQ(t.get(n)[0],
                  std::sqrt(1.5f * 1.5f + 4 + 0.0625f + 9 + 0.25f));
}

TEST(KernelsNumeric, GlobalNormIsChecked) {
  KernelHarness h;
  int32_t a = h.f32({2}, {3, 4}), v = h.out({2});
  EXPECT_THROW(h.check("global_norm", {}, {h.out({})}), Error);
  EXPECT_THROW(h.check("global_norm", {a}, {v}), Error);
}

// The learning rate is an operand read at each run: the same instr with
// the lr tensor changed in between updates by the new rate (what the train
// loop's schedules rely on), for every optimizer kernel.
TEST(KernelsNumeric, OptimizersReadTheLearningRateEachRun) {
  struct Case {
    const char *kernel;
    int states; // besides p and g: moments/buffers, then (AdamW) the step
    std::vector<int64_t> i;
    std::vector<double> f;
  };
  const Case cases[] = {{"sgd_update", 0, {}, {0.01}},
                        {"sgd_momentum_update", 1, {1}, {0.9, 0.01}},
                        {"lion_update", 1, {}, {0.9, 0.99, 0.1}},
                        {"adamw_update", 2, {0}, {0.9, 0.999, 1e-8, 0.01}},
                        {"adamw_update", 2, {1}, {0.9, 0.999, 1e-8, 0.01}}};
  for (const Case &c : cases) {
    std::vector<std::vector<float>> ps;
    for (float rate : {0.1f, 0.1f, 0.025f}) {
      KernelHarness h;
      int32_t p = h.f32({3}, {0.5f, -1.0f, 2.0f});
      int32_t g = h.f32({3}, {0.1f, 0.2f, -0.3f});
      int32_t lr = h.f32({}, {0.1f});
      std::vector<int32_t> in = {p, g}, out = {p};
      for (int k = 0; k < c.states; ++k) {
        in.push_back(h.f32({3}, {0, 0, 0}));
        out.push_back(in.back());
      }
      if (std::string(c.kernel) == "adamw_update")
        in.push_back(h.f32({}, {1.0f}));
      in.push_back(lr);
      h.run(c.kernel, in, out, c.i, c.f);
      h.setF32(lr, {rate}); // a schedule's next value
      h.run(c.kernel, in, out, c.i, c.f);
      ps.push_back(h.get(p));
    }
    EXPECT_EQ(ps[0], ps[1]) << c.kernel; // deterministic
    // The second step at a quarter of the rate ends elsewhere.
    for (size_t k = 0; k < 3; ++k)
      EXPECT_NE(ps[0][k], ps[2][k]) << c.kernel << " element " << k;
  }
}

// torch.optim.SGD(nesterov=True): buf = m*buf + d; p -= lr * (d + m*buf).
TEST(KernelsNumeric, SgdNesterovTwoSteps) {
  KernelHarness h;
  int32_t p = h.f32({2}, {1, 2}), buf = h.f32({2}, {0, 0});
  int32_t g1 = h.f32({2}, {0.5f, -1}), g2 = h.f32({2}, {0.25f, 0.5f});
  int32_t lr = h.f32({}, {0.1f});
  h.run("sgd_momentum_update", {p, g1, buf, lr}, {p, buf}, {1}, {0.9, 0.0});
  h.run("sgd_momentum_update", {p, g2, buf, lr}, {p, buf}, {1}, {0.9, 0.0});
  double want[2];
  const double p0[2] = {1, 2}, ga[2] = {0.5, -1}, gb[2] = {0.25, 0.5};
  for (int i = 0; i < 2; ++i) {
    double b = ga[i], pi = p0[i] - 0.1 * (ga[i] + 0.9 * b);
    b = 0.9 * b + gb[i];
    want[i] = pi - 0.1 * (gb[i] + 0.9 * b);
  }
  expectNear(h.get(p), {want[0], want[1]}, 1e-6);
}

// Lion: u = sign(b1 m + (1-b1) g); p = p (1 - lr wd) - lr u;
// m = b2 m + (1-b2) g.
TEST(KernelsNumeric, LionTwoSteps) {
  KernelHarness h;
  int32_t p = h.f32({3}, {0.5f, -1, 2}), m = h.f32({3}, {0, 0, 0});
  int32_t g1 = h.f32({3}, {0.1f, -0.2f, 0}), g2 = h.f32({3}, {-0.3f, 0.1f, 0});
  int32_t lr = h.f32({}, {0.01f});
  const double b1 = 0.9, b2 = 0.99, wd = 0.5;
  h.run("lion_update", {p, g1, m, lr}, {p, m}, {}, {b1, b2, wd});
  h.run("lion_update", {p, g2, m, lr}, {p, m}, {}, {b1, b2, wd});
  const double p0[3] = {0.5, -1, 2}, ga[3] = {0.1, -0.2, 0},
               gb[3] = {-0.3, 0.1, 0};
  std::vector<double> wantP, wantM;
  for (int i = 0; i < 3; ++i) {
    double pi = p0[i], mi = 0;
    for (double g : {ga[i], gb[i]}) {
      double c = b1 * mi + (1 - b1) * g;
      pi = pi * (1 - 0.01 * wd) - 0.01 * ((c > 0) - (c < 0));
      mi = b2 * mi + (1 - b2) * g;
    }
    wantP.push_back(pi);
    wantM.push_back(mi);
  }
  expectNear(h.get(p), wantP, 1e-6);
  expectNear(h.get(m), wantM, 1e-7);
}

// torch.optim.Adam: the decay is added to the gradient, no decoupled decay.
TEST(KernelsNumeric, AdamL2DecayOneStep) {
  KernelHarness h;
  int32_t p = h.f32({2}, {0.5f, -1}), g = h.f32({2}, {0.1f, 0.2f});
  int32_t m = h.f32({2}, {0, 0}), v = h.f32({2}, {0, 0});
  int32_t s = h.f32({}, {1.0f}), lr = h.f32({}, {0.01f});
  h.run("adamw_update", {p, g, m, v, s, lr}, {p, m, v}, {1},
        {0.9, 0.999, 1e-8, 0.5});
  std::vector<double> want;
  for (double pi : {0.5, -1.0}) {
    double gi = (pi == 0.5 ? 0.1 : 0.2) + 0.5 * pi;
    double mi = 0.1 * gi, vi = 0.001 * gi * gi;
    want.push_back(pi - 0.01 / 0.1 * mi / (std::sqrt(vi / 0.001) + 1e-8));
  }
  expectNear(h.get(p), want, 1e-6);
}
