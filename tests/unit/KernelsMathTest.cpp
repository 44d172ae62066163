//===- KernelsMathTest.cpp - Math, GELU, layer norm, dropout kernels ------===//
//
// Each kernel against a naive reference computed in double, its special
// cases, in-place use where the registry allows it, and its checks. Dropout
// is checked against an independent implementation of the generator
// documented in dialects/tcc/TccOpsMath.td and for its statistics.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace tcc::rt;
using namespace tcc::rt::test;

static void expectClose(const std::vector<float> &got,
                        const std::vector<double> &want, double rtol,
                        double atol = 1e-7) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i]))
        << "at " << i;
}

template <class F>
static std::vector<double> mapRef(const std::vector<float> &x, F f) {
  std::vector<double> y;
  for (float v : x)
    y.push_back(f(double(v)));
  return y;
}

//===----------------------------------------------------------------------===//
// Unary functions and their gradients
//===----------------------------------------------------------------------===//

TEST(KernelsMath, UnaryFunctionsMatchReference) {
  using Fn = std::function<double(double)>;
  const std::vector<std::pair<const char *, Fn>> fns = {
      {"exp", [](double x) { return std::exp(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"erf", [](double x) { return std::erf(x); }},
  };
  std::vector<float> xv = randomValues(37, 3, 0.05f, 4.0f);
  std::vector<float> signed_ = randomValues(37, 4, -6.0f, 6.0f);
  for (const auto &[name, f] : fns) {
    bool positive = std::string(name) == "log" || std::string(name) == "sqrt";
    const std::vector<float> &in = positive ? xv : signed_;
    KernelHarness h;
    int32_t x = h.f32({37}, in), y = h.out({37});
    h.run(name, {x}, {y});
    SCOPED_TRACE(name);
    expectClose(h.get(y), mapRef(in, f), 2e-6);
    // In place, as the registry allows.
    EXPECT_TRUE(kernelAllowsInPlace(name));
    h.run(name, {x}, {x});
    EXPECT_EQ(h.get(x), h.get(y));
  }
}

TEST(KernelsMath, SigmoidSaturatesWithoutNaN) {
  KernelHarness h;
  int32_t x = h.f32({4}, {-200.0f, -90.0f, 90.0f, 200.0f}), y = h.out({4});
  h.run("sigmoid", {x}, {y});
  expectClose(h.get(y), {0.0, 0.0, 1.0, 1.0}, 0.0, 1e-30);
}

TEST(KernelsMath, UnaryGradientsMatchReference) {
  std::vector<float> dy = randomValues(21, 8),
                     v = randomValues(21, 9, 0.1f, 0.9f);
  using Fn = std::function<double(double, double)>;
  const std::vector<std::pair<const char *, Fn>> grads = {
      {"sqrt_grad", [](double g, double y) { return g / (2 * y); }},
      {"tanh_grad", [](double g, double y) { return g * (1 - y * y); }},
      {"sigmoid_grad", [](double g, double y) { return g * y * (1 - y); }},
      {"erf_grad",
       [](double g, double x) {
         return g * 2 / std::sqrt(M_PI) * std::exp(-x * x);
       }},
  };
  for (const auto &[name, f] : grads) {
    KernelHarness h;
    int32_t g = h.f32({3, 7}, dy), x = h.f32({3, 7}, v), dx = h.out({3, 7});
    h.run(name, {g, x}, {dx});
    std::vector<double> want;
    for (size_t i = 0; i < dy.size(); ++i)
      want.push_back(f(dy[i], v[i]));
    SCOPED_TRACE(name);
    expectClose(h.get(dx), want, 2e-6);
    h.run(name, {g, x}, {g}); // in place over dy
    EXPECT_EQ(h.get(g), h.get(dx));
  }
}

//===----------------------------------------------------------------------===//
// Powers
//===----------------------------------------------------------------------===//

TEST(KernelsMath, PowScalarSpecialAndGeneralExponents) {
  std::vector<float> xv = randomValues(16, 11, 0.2f, 3.0f);
  for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0, 2.5, -1.7}) {
    KernelHarness h;
    int32_t x = h.f32({4, 4}, xv), y = h.out({4, 4});
    h.run("pow_scalar", {x}, {y}, {}, {e});
    SCOPED_TRACE("exponent " + std::to_string(e));
    expectClose(h.get(y), mapRef(xv, [&](double v) { return std::pow(v, e); }),
                2e-6);
  }
  // x^2 and x^3 of negative bases are exact products, not pow's NaN path.
  KernelHarness h;
  int32_t x = h.f32({2}, {-1.5f, -2.0f}), y = h.out({2}), z = h.out({2});
  h.run("pow_scalar", {x}, {y}, {}, {2.0});
  h.run("pow_scalar", {x}, {z}, {}, {3.0});
  expectClose(h.get(y), {2.25, 4.0}, 0);
  expectClose(h.get(z), {-3.375, -8.0}, 0);
}

TEST(KernelsMath, PowScalarGradIncludingExponentZero) {
  std::vector<float> xv = randomValues(12, 12, 0.2f, 3.0f),
                     dy = randomValues(12, 13);
  for (double e : {2.0, 3.0, 0.5, -1.0, 2.5}) {
    KernelHarness h;
    int32_t g = h.f32({12}, dy), x = h.f32({12}, xv), dx = h.out({12});
    h.run("pow_scalar_grad", {g, x}, {dx}, {}, {e});
    std::vector<double> want;
    for (size_t i = 0; i < xv.size(); ++i)
      want.push_back(dy[i] * e * std::pow(double(xv[i]), e - 1));
    SCOPED_TRACE("exponent " + std::to_string(e));
    expectClose(h.get(dx), want, 5e-6);
  }
  // Exponent 0: zero, even at x = 0 where 0 * x^-1 would be NaN.
  KernelHarness h;
  int32_t g = h.f32({2}, {1.0f, 2.0f}), x = h.f32({2}, {0.0f, 3.0f});
  int32_t dx = h.out({2});
  h.run("pow_scalar_grad", {g, x}, {dx}, {}, {0.0});
  expectClose(h.get(dx), {0.0, 0.0}, 0);
}

TEST(KernelsMath, PowBroadcastsAndItsGradient) {
  std::vector<float> av = randomValues(12, 14, 0.2f, 2.0f),
                     bv = randomValues(4, 15);
  KernelHarness h;
  int32_t a = h.f32({3, 4}, av), b = h.f32({4}, bv), c = h.out({3, 4});
  h.run("pow", {a, b}, {c});
  std::vector<double> want;
  for (int i = 0; i < 12; ++i)
    want.push_back(std::pow(double(av[i]), double(bv[i % 4])));
  expectClose(h.get(c), want, 2e-6);

  // pow_grad on operands of one shape, including a zero base (0 where the
  // exponent is >= 0, as PyTorch) and a negative exponent there.
  std::vector<float> x = {0.5f, 2.0f, 0.0f, 0.0f},
                     e = {3.0f, -1.5f, 2.0f, 0.0f};
  std::vector<float> dy = {1.0f, 0.5f, 2.0f, 1.0f};
  int32_t g = h.f32({4}, dy), xa = h.f32({4}, x), ea = h.f32({4}, e);
  int32_t da = h.out({4}), db = h.out({4});
  h.run("pow_grad", {g, xa, ea}, {da, db});
  std::vector<float> gotA = h.get(da), gotB = h.get(db);
  for (int i = 0; i < 2; ++i) {
    double xd = x[i], ed = e[i];
    EXPECT_NEAR(gotA[i], dy[i] * ed * std::pow(xd, ed - 1), 1e-5) << i;
    EXPECT_NEAR(gotB[i], dy[i] * std::pow(xd, ed) * std::log(xd), 1e-5) << i;
  }
  EXPECT_EQ(gotA[2], 0.0f); // 2 * 0^1
  EXPECT_EQ(gotB[2], 0.0f);
  EXPECT_EQ(gotB[3], 0.0f);
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

static double geluRef(double x, bool tanhForm) {
  if (!tanhForm)
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  double k = std::sqrt(2 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

TEST(KernelsMath, GeluBothFormsAndGradients) {
  std::vector<float> xv = randomValues(40, 16, -5.0f, 5.0f),
                     dy = randomValues(40, 17);
  for (int tanhForm : {0, 1}) {
    KernelHarness h;
    int32_t x = h.f32({40}, xv), y = h.out({40});
    h.run("gelu", {x}, {y}, {tanhForm});
    SCOPED_TRACE(tanhForm ? "tanh" : "erf");
    expectClose(h.get(y),
                mapRef(xv, [&](double v) { return geluRef(v, tanhForm); }),
                2e-6, 1e-6);
    // The gradient against a central difference of the double reference.
    int32_t g = h.f32({40}, dy), dx = h.out({40});
    h.run("gelu_grad", {g, x}, {dx}, {tanhForm});
    std::vector<double> want;
    for (size_t i = 0; i < xv.size(); ++i) {
      double eps = 1e-6, v = xv[i];
      want.push_back(dy[i] *
                     (geluRef(v + eps, tanhForm) - geluRef(v - eps, tanhForm)) /
                     (2 * eps));
    }
    expectClose(h.get(dx), want, 1e-5, 1e-6);
  }
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

namespace {
struct LayerNormRef {
  std::vector<double> y, mean, rstd, dx, dscale, dbias;
};
} // namespace

/// Naive layer norm over [rows, n] and its backward, in double.
static LayerNormRef layerNormRef(const std::vector<float> &x,
                                 const std::vector<float> &scale,
                                 const std::vector<float> &bias,
                                 const std::vector<float> &dy, int64_t rows,
                                 int64_t n, double eps) {
  LayerNormRef r;
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.dscale.assign(n, 0);
  r.dbias.assign(n, 0);
  for (int64_t i = 0; i < rows; ++i) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mu += x[i * n + j];
    mu /= n;
    for (int64_t j = 0; j < n; ++j)
      var += (x[i * n + j] - mu) * (x[i * n + j] - mu);
    var /= n;
    double rs = 1 / std::sqrt(var + eps);
    r.mean.push_back(mu);
    r.rstd.push_back(rs);
    // dx_j = sum_k dy_k scale_k d xhat_k / d x_j, written out naively.
    for (int64_t j = 0; j < n; ++j) {
      double xhat = (x[i * n + j] - mu) * rs;
      r.y[i * n + j] = xhat * scale[j] + bias[j];
      r.dscale[j] += dy[i * n + j] * xhat;
      r.dbias[j] += dy[i * n + j];
      double d = 0;
      for (int64_t k = 0; k < n; ++k) {
        double xk = (x[i * n + k] - mu) * rs;
        double jac = rs * ((j == k) - 1.0 / n - xk * xhat / n);
        d += dy[i * n + k] * scale[k] * jac;
      }
      r.dx[i * n + j] = d;
    }
  }
  return r;
}

TEST(KernelsMath, LayerNormForwardAndBackwardEveryAxis) {
  std::vector<int64_t> shape = {2, 3, 5};
  std::vector<float> xv = randomValues(30, 18, -2.0f, 3.0f),
                     dyv = randomValues(30, 19);
  for (int64_t axis = 0; axis < 3; ++axis) {
    int64_t rows = 1, n = 1;
    for (int64_t d = 0; d < 3; ++d)
      (d < axis ? rows : n) *= shape[d];
    std::vector<int64_t> normShape(shape.begin() + axis, shape.end());
    std::vector<int64_t> statShape = shape;
    for (int64_t d = axis; d < 3; ++d)
      statShape[d] = 1;
    std::vector<float> sv = randomValues(n, 20, 0.5f, 1.5f),
                       bv = randomValues(n, 21);
    KernelHarness h;
    int32_t x = h.f32(shape, xv), s = h.f32(normShape, sv),
            b = h.f32(normShape, bv);
    int32_t y = h.out(shape), m = h.out(statShape), r = h.out(statShape);
    h.run("layer_norm", {x, s, b}, {y, m, r}, {axis}, {1e-5});
    LayerNormRef ref = layerNormRef(xv, sv, bv, dyv, rows, n, 1e-5);
    SCOPED_TRACE("axis " + std::to_string(axis));
    expectClose(h.get(y), ref.y, 1e-5, 1e-6);
    expectClose(h.get(m), ref.mean, 1e-6, 1e-7);
    expectClose(h.get(r), ref.rstd, 1e-6);

    int32_t dy = h.f32(shape, dyv), dx = h.out(shape);
    int32_t ds = h.out(normShape), db = h.out(normShape);
    h.run("layer_norm_grad", {dy, x, s, m, r}, {dx, ds, db}, {axis});
    expectClose(h.get(dx), ref.dx, 1e-4, 1e-5);
    expectClose(h.get(ds), ref.dscale, 1e-5, 1e-6);
    expectClose(h.get(db), ref.dbias, 1e-6, 1e-6);
    // The column sums alone (what tcc-fuse leaves outside a region): the
    // same sums in the same order.
    int32_t ps = h.out(normShape), pb = h.out(normShape);
    h.run("layer_norm_param_grad", {dy, x, m, r}, {ps, pb}, {axis});
    EXPECT_EQ(h.get(ps), h.get(ds));
    EXPECT_EQ(h.get(pb), h.get(db));
  }
}

// layer_norm_param_grad spreads blocks of 64 columns over the pool; each
// column is summed in row order, so the thread count changes nothing.
TEST(KernelsMath, LayerNormParamGradDoesNotDependOnThreads) {
  std::vector<int64_t> shape = {37, 150}; // three column blocks
  std::vector<float> xv = randomValues(37 * 150, 30, -2.0f, 3.0f),
                     dyv = randomValues(37 * 150, 31);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 3}) {
    ThreadPool::setGlobalThreads(threads);
    KernelHarness h;
    int32_t x = h.f32(shape, xv), dy = h.f32(shape, dyv);
    int32_t s = h.f32({150}, randomValues(150, 32, 0.5f, 1.5f));
    int32_t b = h.f32({150}, randomValues(150, 33));
    int32_t y = h.out(shape), m = h.out({37, 1}), r = h.out({37, 1});
    h.run("layer_norm", {x, s, b}, {y, m, r}, {1}, {1e-5});
    int32_t dx = h.out(shape), ds = h.out({150}), db = h.out({150});
    h.run("layer_norm_grad", {dy, x, s, m, r}, {dx, ds, db}, {1});
    int32_t ps = h.out({150}), pb = h.out({150});
    h.run("layer_norm_param_grad", {dy, x, m, r}, {ps, pb}, {1});
    EXPECT_EQ(h.get(ps), h.get(ds)) << threads << " threads";
    EXPECT_EQ(h.get(pb), h.get(db)) << threads << " threads";
    results.push_back(h.get(ps));
  }
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
  EXPECT_EQ(results[0], results[1]);
}

TEST(KernelsMath, LayerNormOfAConstantRowIsBias) {
  // Zero variance: rstd = 1/sqrt(eps), xhat = 0, y = bias exactly.
  KernelHarness h;
  int32_t x = h.f32({1, 4}, {3, 3, 3, 3}), s = h.f32({4}, {2, 2, 2, 2});
  int32_t b = h.f32({4}, {1, 2, 3, 4});
  int32_t y = h.out({1, 4}), m = h.out({1, 1}), r = h.out({1, 1});
  h.run("layer_norm", {x, s, b}, {y, m, r}, {1}, {1e-5});
  expectClose(h.get(y), {1, 2, 3, 4}, 0);
  expectClose(h.get(r), {1 / std::sqrt(1e-5)}, 1e-6);
}

//===----------------------------------------------------------------------===//
// Dropout and the step counter
//===----------------------------------------------------------------------===//

/// The generator as documented, written again from the description.
static bool referenceDrops(uint64_t seed, uint64_t step, uint64_t i,
                           double ratio) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t key = mix(seed ^ mix(step));
  uint64_t bits = mix(key + (i + 1) * 0x9E3779B97F4A7C15ull);
  return double(bits >> 32) < ratio * 4294967296.0;
}

/// Runs dropout on `n` ones and returns the mask and the output.
static std::pair<std::vector<float>, std::vector<float>>
dropout(int64_t n, int64_t step, int64_t seed, double ratio,
        const std::vector<float> *input = nullptr) {
  KernelHarness h;
  std::vector<float> ones(n, 1.0f);
  int32_t x = h.f32({n}, input ? *input : ones), s = h.i64({}, {step});
  int32_t y = h.out({n}), m = h.out({n});
  h.run("dropout", {x, s}, {y, m}, {seed}, {ratio});
  return {h.get(m), h.get(y)};
}

TEST(KernelsMath, DropoutFollowsTheDocumentedGenerator) {
  const double ratio = 0.3;
  auto [mask, y] = dropout(1000, 17, -42, ratio);
  const float keep = 1.0f / (1.0f - 0.3f);
  for (int64_t i = 0; i < 1000; ++i) {
    bool drop = referenceDrops(uint64_t(-42), 17, i, ratio);
    ASSERT_EQ(mask[i], drop ? 0.0f : keep) << i;
    ASSERT_EQ(y[i], mask[i]) << i; // y = x * mask with x = 1
  }
}

TEST(KernelsMath, DropoutIsReproducibleAndEveryStepDiffers) {
  auto a = dropout(4096, 5, 7, 0.5).first, b = dropout(4096, 5, 7, 0.5).first;
  EXPECT_EQ(a, b); // same (seed, step): same mask, never redrawn
  auto nextStep = dropout(4096, 6, 7, 0.5).first;
  auto otherSeed = dropout(4096, 5, 8, 0.5).first;
  auto agree = [&](const std::vector<float> &u) {
    int64_t same = 0;
    for (size_t i = 0; i < u.size(); ++i)
      same += u[i] == a[i];
    return double(same) / u.size();
  };
  // Independent masks agree on about half the elements.
  EXPECT_NEAR(agree(nextStep), 0.5, 0.05);
  EXPECT_NEAR(agree(otherSeed), 0.5, 0.05);
}

TEST(KernelsMath, DropoutStatistics) {
  const int64_t n = 200000;
  for (double p : {0.1, 0.5, 0.9}) {
    std::vector<float> xv = randomValues(n, 22);
    auto [mask, y] = dropout(n, 3, 11, p, &xv);
    const float keep = 1.0f / (1.0f - static_cast<float>(p));
    int64_t dropped = 0, runs = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(mask[i] == 0.0f || mask[i] == keep) << i;
      ASSERT_EQ(y[i], xv[i] * mask[i]) << i;
      dropped += mask[i] == 0.0f;
      runs += i > 0 && (mask[i] == 0.0f) != (mask[i - 1] == 0.0f);
    }
    // Within 5 standard deviations of the binomial mean.
    double sd = std::sqrt(n * p * (1 - p));
    SCOPED_TRACE("p = " + std::to_string(p));
    EXPECT_NEAR(double(dropped), n * p, 5 * sd);
    // Neighbours are independent: drop/keep changes as often as a fair
    // sequence of independent draws (2 p (1 - p) per step).
    EXPECT_NEAR(double(runs), (n - 1) * 2 * p * (1 - p),
                5 * std::sqrt(double(n)));
  }
}

TEST(KernelsMath, DropoutRatioZeroAndOne) {
  auto [keepAll, y0] = dropout(64, 1, 2, 0.0);
  for (float m : keepAll)
    EXPECT_EQ(m, 1.0f);
  auto [dropAll, y1] = dropout(64, 1, 2, 1.0);
  for (size_t i = 0; i < dropAll.size(); ++i) {
    EXPECT_EQ(dropAll[i], 0.0f);
    EXPECT_EQ(y1[i], 0.0f);
  }
}

TEST(KernelsMath, IncrementAdvancesInPlace) {
  KernelHarness h;
  int32_t s = h.i64({}, {41});
  h.run("increment", {s}, {s});
  EXPECT_EQ(h.getI64(s), std::vector<int64_t>{42});
  EXPECT_TRUE(kernelAllowsInPlace("increment"));
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

TEST(KernelsMath, ChecksRejectBadInstrs) {
  KernelHarness h;
  int32_t x = h.f32({2, 3}, std::vector<float>(6, 1.0f)), y = h.out({2, 3});
  int32_t s3 = h.f32({3}, {1, 1, 1}), s2 = h.f32({2}, {1, 1});
  int32_t st = h.out({2, 1}), stepF = h.f32({}, {0}), step = h.i64({}, {0});
  int32_t m = h.out({2, 3});
  auto message = [&](auto &&f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message([&] { h.check("gelu", {x}, {y}, {2}); }),
            "attribute 'approximate_tanh' must be 0 or 1, got 2");
  EXPECT_EQ(message([&] { h.check("pow_scalar", {x}, {y}); }),
            "expects 1 float attribute (exponent), got 0");
  EXPECT_EQ(message([&] {
              h.check("layer_norm", {x, s2, s3}, {y, st, st}, {1}, {1e-5});
            }),
            "input 1 't3' has shape [2] (2 elements), expected 3 elements");
  EXPECT_EQ(message([&] {
              h.check("layer_norm", {x, s3, s3}, {y, st, st}, {2}, {1e-5});
            }),
            "axis 2 is out of range for rank 2");
  EXPECT_EQ(message([&] {
              h.check("layer_norm", {x, s3, s3}, {y, st, st}, {1}, {-1.0});
            }),
            "epsilon must not be negative, got -1.000000");
  EXPECT_EQ(message([&] {
              h.check("dropout", {x, stepF}, {y, m}, {1}, {0.5});
            }),
            "input 1 't5' must be the step counter, one i64 element; it is "
            "f32 []");
  EXPECT_EQ(message([&] {
              h.check("dropout", {x, step}, {y, m}, {1}, {1.5});
            }),
            "ratio must be in [0, 1], got 1.500000");
  EXPECT_EQ(message([&] { h.check("increment", {stepF}, {stepF}); }),
            "operands must be one i64 element, got f32 []");
  EXPECT_EQ(message([&] {
              h.check("pow_grad", {x, x, s3}, {y, y});
            }),
            "input 2 't2' has shape [3] (3 elements), expected 6 elements");
  EXPECT_EQ(message([&] {
              h.check("sigmoid_grad", {x, s3}, {y});
            }),
            "input 1 't2' has shape [3] (3 elements), expected 6 elements");
}
