//===- KernelsTest.cpp - Layout and arithmetic kernels vs naive references ===//
//
// Losses, softmax and optimizers are in KernelsNumericTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

using namespace tcc::rt;
using namespace tcc::rt::test;

TEST(Kernels, RegistryListsEveryKernelSorted) {
  std::vector<std::string> names = kernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char *k : {"matmul",
                        "add",
                        "sub",
                        "mul",
                        "div",
                        "neg",
                        "relu",
                        "relu_grad",
                        "reduce_sum",
                        "reduce_mean",
                        "broadcast_to",
                        "copy",
                        "transpose",
                        "softmax",
                        "log_softmax",
                        "softmax_grad",
                        "log_softmax_grad",
                        "softmax_cross_entropy",
                        "softmax_cross_entropy_grad",
                        "mse_loss",
                        "mse_loss_grad",
                        "sgd_update",
                        "sgd_momentum_update",
                        "lion_update",
                        "adafactor_update",
                        "adamw_update",
                        "conv2d",
                        "conv2d_grad_input",
                        "conv2d_grad_weight",
                        "max_pool2d",
                        "max_pool2d_grad",
                        "avg_pool2d",
                        "avg_pool2d_grad",
                        "batch_norm_train",
                        "batch_norm_train_grad"}) {
    EXPECT_NE(findKernel(k), nullptr) << k;
    EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
  }
  EXPECT_EQ(findKernel("no_such_kernel"), nullptr);
  EXPECT_TRUE(kernelAllowsInPlace("add"));
  EXPECT_FALSE(kernelAllowsInPlace("matmul"));
}

namespace {
struct BinaryCase {
  std::vector<int64_t> a, b, c;
};
} // namespace

TEST(Kernels, BinaryBroadcastMatchesReference) {
  const std::vector<BinaryCase> cases = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{2, 3}, {3}, {2, 3}},
      {{2, 3}, {1, 3}, {2, 3}},
      {{2, 3}, {2, 1}, {2, 3}},
      {{}, {2, 3}, {2, 3}},
      {{2, 3}, {}, {2, 3}},
      {{4, 1, 3}, {2, 1}, {4, 2, 3}},
      {{3, 1, 5}, {1, 4, 1}, {3, 4, 5}},
      {{2, 1}, {}, {2, 3}},
      {{5, 7, 9}, {9}, {5, 7, 9}},
      {{1}, {1}, {1}},
      {{3, 1}, {1, 3}, {3, 3}},
  };
  const std::pair<const char *, std::function<float(float, float)>> ops[] = {
      {"add", std::plus<float>()},
      {"sub", std::minus<float>()},
      {"mul", std::multiplies<float>()},
      {"div", std::divides<float>()}};
  uint32_t seed = 1;
  for (const BinaryCase &c : cases) {
    for (const auto &[name, fn] : ops) {
      KernelHarness h;
      auto av = randomValues(numel(c.a), seed++);
      auto bv = randomValues(numel(c.b), seed++, 0.5f, 2.0f);
      int32_t a = h.f32(c.a, av), b = h.f32(c.b, bv), out = h.out(c.c);
      h.run(name, {a, b}, {out});
      auto got = h.get(out);
      for (int64_t i = 0; i < numel(c.c); ++i) {
        auto idx = unravel(i, c.c);
        float want =
            fn(av[broadcastIndex(idx, c.a)], bv[broadcastIndex(idx, c.b)]);
        ASSERT_EQ(got[i], want) << name << " case a=" << formatShape(c.a)
                                << " b=" << formatShape(c.b) << " i=" << i;
      }
    }
  }
}

TEST(Kernels, UnaryAndReluGrad) {
  KernelHarness h;
  std::vector<float> xv = {-2, -0.5f, 0, 0.5f, 3}, dyv = {1, 2, 3, 4, 5};
  int32_t x = h.f32({5}, xv), dy = h.f32({5}, dyv);
  int32_t n = h.out({5}), r = h.out({5}), g = h.out({5});
  h.run("neg", {x}, {n});
  h.run("relu", {x}, {r});
  h.run("relu_grad", {dy, x}, {g});
  EXPECT_EQ(h.get(n), (std::vector<float>{2, 0.5f, 0, -0.5f, -3}));
  EXPECT_EQ(h.get(r), (std::vector<float>{0, 0, 0, 0.5f, 3}));
  EXPECT_EQ(h.get(g), (std::vector<float>{0, 0, 0, 4, 5}));
}

static std::vector<float> refMatmul(const std::vector<float> &a,
                                    const std::vector<float> &b, int64_t m,
                                    int64_t n, int64_t k, bool ta, bool tb) {
  std::vector<float> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ta ? a[p * m + i] : a[i * k + p]) *
             (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

static void expectNear(const std::vector<float> &got,
                       const std::vector<float> &want, float tol,
                       const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

TEST(Kernels, MatmulAllTransposeCombos) {
  const int64_t m = 5, n = 7, k = 3;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      KernelHarness h;
      auto av = randomValues(m * k, 10 + ta), bv = randomValues(k * n, 20 + tb);
      int32_t a = h.f32(
          ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, av);
      int32_t b = h.f32(
          tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, bv);
      int32_t c = h.out({m, n});
      h.run("matmul", {a, b}, {c}, {ta, tb});
      expectNear(h.get(c), refMatmul(av, bv, m, n, k, ta, tb), 1e-5f,
                 "ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
}

/// Batched matmul against a per-batch reference, with batch broadcasting.
static void checkBatched(std::vector<int64_t> aShape,
                         std::vector<int64_t> bShape,
                         std::vector<int64_t> cShape, bool ta, bool tb,
                         float tol = 1e-5f) {
  KernelHarness h;
  auto av = randomValues(numel(aShape), 3), bv = randomValues(numel(bShape), 4);
  int32_t a = h.f32(aShape, av), b = h.f32(bShape, bv), c = h.out(cShape);
  h.run("matmul", {a, b}, {c}, {ta, tb});
  size_t r = cShape.size();
  int64_t m = cShape[r - 2], n = cShape[r - 1];
  int64_t k = ta ? aShape[aShape.size() - 2] : aShape.back();
  std::vector<int64_t> cb(cShape.begin(), cShape.end() - 2),
      ab(aShape.begin(), aShape.end() - 2),
      bb(bShape.begin(), bShape.end() - 2);
  auto got = h.get(c);
  for (int64_t i = 0; i < numel(cb); ++i) {
    auto idx = unravel(i, cb);
    int64_t ai = ab.empty() ? 0 : broadcastIndex(idx, ab);
    int64_t bi = bb.empty() ? 0 : broadcastIndex(idx, bb);
    std::vector<float> as(av.begin() + ai * m * k,
                          av.begin() + (ai + 1) * m * k);
    std::vector<float> bs(bv.begin() + bi * k * n,
                          bv.begin() + (bi + 1) * k * n);
    std::vector<float> gs(got.begin() + i * m * n,
                          got.begin() + (i + 1) * m * n);
    expectNear(gs, refMatmul(as, bs, m, n, k, ta, tb), tol,
               "batch " + std::to_string(i));
  }
}

TEST(Kernels, MatmulBatched) {
  checkBatched({2, 3, 4, 5}, {5, 6}, {2, 3, 4, 6}, false, false); // folded
  checkBatched({2, 5, 4}, {5, 6}, {2, 4, 6}, true, false);        // loop
  checkBatched({3, 4, 5}, {3, 6, 5}, {3, 4, 6}, false, true);
  checkBatched({2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}, false, false);
  checkBatched({4, 5}, {2, 5, 6}, {2, 4, 6}, false, false);
  checkBatched({2, 5, 4}, {2, 6, 5}, {2, 4, 6}, true, true);
  // Large enough for the pool: one product per task (3 threads, so the
  // batches of 8 and 6 split unevenly), and a single product split in rows.
  ThreadPool::setGlobalThreads(3);
  checkBatched({8, 64, 48}, {8, 48, 40}, {8, 64, 40}, false, false, 1e-4f);
  checkBatched({2, 1, 48, 64}, {3, 40, 48}, {2, 3, 64, 40}, true, true, 1e-4f);
  checkBatched({6, 70, 33}, {33, 90}, {6, 70, 90}, false, false,
               1e-4f); // folded
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
}

// AdamW in place on a tensor large enough to be split over the pool: the
// same bits on 1 thread and on 3 (each element is updated on its own).
TEST(Kernels, AdamwSameBitsOnAnyThreadCount) {
  const int64_t n = 100003;
  auto w0 = randomValues(n, 31), g0 = randomValues(n, 32),
       m0 = randomValues(n, 33), v0 = randomValues(n, 34);
  for (float &x : v0)
    x = x * x;
  std::vector<std::vector<float>> results;
  for (int threads : {1, 3}) {
    ThreadPool::setGlobalThreads(threads);
    KernelHarness h;
    int32_t w = h.f32({n}, w0), g = h.f32({n}, g0), m = h.f32({n}, m0),
            v = h.f32({n}, v0), step = h.f32({}, {2.0f}),
            lr = h.f32({}, {1e-3f});
    h.run("adamw_update", {w, g, m, v, step, lr}, {w, m, v}, {0},
          {0.9, 0.999, 1e-8, 0.01});
    std::vector<float> all = h.get(w), mv = h.get(m), vv = h.get(v);
    all.insert(all.end(), mv.begin(), mv.end());
    all.insert(all.end(), vv.begin(), vv.end());
    results.push_back(std::move(all));
  }
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
  ASSERT_EQ(results[0].size(), results[1].size());
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[1].data(),
                           results[0].size() * sizeof(float)));
  EXPECT_NE(results[0][0], w0[0]); // it did update
}

TEST(Kernels, MatmulWithEmptyInnerDimIsZero) {
  KernelHarness h;
  int32_t a = h.f32({3, 0}, {}), b = h.f32({0, 2}, {}), c = h.out({3, 2});
  h.run("matmul", {a, b}, {c}, {0, 0});
  EXPECT_EQ(h.get(c), std::vector<float>(6, 0.0f));
}

static std::vector<float> refReduce(const std::vector<float> &x,
                                    const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &axes,
                                    bool mean) {
  std::vector<int64_t> kept;
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end())
      kept.push_back(shape[d]);
    else
      count *= shape[d];
  std::vector<double> y(numel(kept), 0.0);
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    int64_t flat = 0;
    for (size_t d = 0, kd = 0; d < shape.size(); ++d)
      if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end())
        flat = flat * kept[kd++] + idx[d];
    y[flat] += x[i];
  }
  std::vector<float> out;
  for (double v : y)
    out.push_back(static_cast<float>(mean ? v / count : v));
  return out;
}

TEST(Kernels, ReduceSumAndMeanOverAxes) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
      cases = {{{2, 3, 4}, {}},     {{2, 3, 4}, {0}},       {{2, 3, 4}, {1}},
               {{2, 3, 4}, {2}},    {{2, 3, 4}, {0, 1}},    {{2, 3, 4}, {0, 2}},
               {{2, 3, 4}, {1, 2}}, {{2, 3, 4}, {0, 1, 2}}, {{3, 37}, {1}},
               {{64, 10}, {0}},     {{2, 1, 3}, {1}}};
  for (const auto &[shape, axes] : cases)
    for (bool mean : {false, true}) {
      KernelHarness h;
      auto xv = randomValues(numel(shape), 7);
      auto want = refReduce(xv, shape, axes, mean);
      int32_t x = h.f32(shape, xv), y = h.out({int64_t(want.size())});
      h.run(mean ? "reduce_mean" : "reduce_sum", {x}, {y}, axes);
      expectNear(h.get(y), want, 1e-5f,
                 formatShape(shape) + " axes " + formatShape(axes));
    }
}

// A sum over every leading axis (a bias gradient) adds in a fused region's
// column-sum order (kernels::ColumnSums): 8000 rows in 500 slices of 16,
// each in double in row order, then the slices in order, rounded once;
// the same bits on 1 thread and on 3.
TEST(Kernels, ReduceSumOverLeadingAxesInSlices) {
  const int64_t rows = 8000, cols = 37;
  ASSERT_EQ(columnSumSliceRows(rows), 16);
  // ceil(rows / 8) slices, at most 512, the rows spread over them.
  EXPECT_EQ(columnSumSliceRows(1), 1);
  EXPECT_EQ(columnSumSliceRows(8), 8);
  EXPECT_EQ(columnSumSliceRows(9), 5);
  EXPECT_EQ(columnSumSliceRows(1024), 8);
  EXPECT_EQ(columnSumSliceRows(4096), 8);
  EXPECT_EQ(columnSumSliceRows(4097), 9);
  EXPECT_EQ(columnSumSliceRows(65536), 128);
  // Past 4096 rows, 512 is a bound: 65537 rows in slices of 129 are 509.
  EXPECT_EQ(columnSumSliceRows(65537), 129);
  EXPECT_EQ(columnSumSlices(65537, columnSumSliceRows(65537)), 509);
  auto xv = randomValues(rows * cols, 11);
  std::vector<float> want(cols);
  for (int64_t j = 0; j < cols; ++j) {
    double total = 0;
    for (int64_t s = 0; s < 500; ++s) {
      double part = 0;
      for (int64_t r = s * 16; r < (s + 1) * 16; ++r)
        part += static_cast<double>(xv[r * cols + j]);
      total += part;
    }
    want[j] = static_cast<float>(total);
  }
  for (int threads : {1, 3}) {
    ThreadPool::setGlobalThreads(threads);
    KernelHarness h;
    int32_t x = h.f32({80, 100, cols}, xv), y = h.out({cols});
    h.run("reduce_sum", {x}, {y}, {0, 1});
    std::vector<float> got = h.get(y);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), cols * sizeof(float)))
        << threads << " threads";
  }
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
}

TEST(Kernels, BroadcastToAndCopy) {
  for (auto [from, to] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3}, {2, 3}},
           {{2, 1}, {2, 3}},
           {{}, {2, 2}},
           {{1, 3, 1}, {2, 3, 4}}}) {
    KernelHarness h;
    auto xv = randomValues(numel(from), 9);
    int32_t x = h.f32(from, xv), y = h.out(to);
    h.run("broadcast_to", {x}, {y});
    auto got = h.get(y);
    for (int64_t i = 0; i < numel(to); ++i)
      ASSERT_EQ(got[i], xv[broadcastIndex(unravel(i, to), from)]);
  }
  KernelHarness h;
  int32_t x = h.i64({2, 3}, {1, 2, 3, 4, 5, 6}), y = h.out({6}, DType::I64);
  h.run("copy", {x}, {y});
  EXPECT_EQ(h.getI64(y), h.getI64(x));
}

TEST(Kernels, TransposeAllPermutations) {
  std::vector<int64_t> shape = {2, 3, 4}, perm = {0, 1, 2};
  auto xv = randomValues(24, 11);
  do {
    KernelHarness h;
    std::vector<int64_t> outShape = {shape[perm[0]], shape[perm[1]],
                                     shape[perm[2]]};
    int32_t x = h.f32(shape, xv), y = h.out(outShape);
    h.run("transpose", {x}, {y}, perm);
    auto got = h.get(y);
    for (int64_t i = 0; i < 24; ++i) {
      auto idx = unravel(i, outShape);
      std::vector<int64_t> src(3);
      for (int d = 0; d < 3; ++d)
        src[perm[d]] = idx[d];
      ASSERT_EQ(got[i], xv[(src[0] * 3 + src[1]) * 4 + src[2]])
          << formatShape(perm);
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Kernels, TransposeLargeTiledAndI64) {
  KernelHarness h;
  const int64_t r = 70, c = 45;
  auto xv = randomValues(r * c, 12);
  int32_t x = h.f32({r, c}, xv), y = h.out({c, r});
  h.run("transpose", {x}, {y}, {1, 0});
  auto got = h.get(y);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      ASSERT_EQ(got[j * r + i], xv[i * c + j]);

  int32_t xi = h.i64({2, 3}, {1, 2, 3, 4, 5, 6}),
          yi = h.out({3, 2}, DType::I64);
  h.run("transpose", {xi}, {yi}, {1, 0});
  EXPECT_EQ(h.getI64(yi), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
}

TEST(Kernels, ElementwiseInPlace) {
  KernelHarness h;
  int32_t a = h.f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = h.f32({3}, {10, 20, 30});
  h.run("add", {a, b}, {a});
  EXPECT_EQ(h.get(a), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  int32_t c = h.f32({2, 3}, {1, 1, 1, 1, 1, 1});
  h.run("mul", {a, c}, {c});
  EXPECT_EQ(h.get(c), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  int32_t x = h.f32({4}, {-1, 2, -3, 4});
  h.run("relu", {x}, {x});
  EXPECT_EQ(h.get(x), (std::vector<float>{0, 2, 0, 4}));
  h.run("copy", {x}, {x});
  EXPECT_EQ(h.get(x), (std::vector<float>{0, 2, 0, 4}));
}

TEST(Kernels, CheckInstrRejectsBadInstrs) {
  KernelHarness h;
  int32_t a = h.f32({2, 3}, std::vector<float>(6)),
          b = h.f32({4, 5}, std::vector<float>(20));
  int32_t l = h.i64({2}, {0, 1}), o = h.out({2, 3});
  auto throwsWith = [&](const std::string &needle, auto fn) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected: " << needle;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << e.what();
    }
  };
  throwsWith("unknown kernel 'conv'", [&] { h.check("conv", {a}, {o}); });
  throwsWith("expects 2 inputs and 1 outputs",
             [&] { h.check("add", {a}, {o}); });
  throwsWith("does not broadcast", [&] { h.check("add", {a, b}, {o}); });
  throwsWith("do not agree", [&] { h.check("matmul", {a, b}, {o}, {0, 0}); });
  throwsWith("must be f32", [&] { h.check("relu", {l}, {o}); });
  throwsWith("not a permutation", [&] {
    h.check("transpose", {a}, {o}, {0, 0});
  });
  throwsWith("not sorted", [&] { h.check("reduce_sum", {a}, {o}, {1, 0}); });
  throwsWith("out of range", [&] { h.check("softmax", {a}, {o}, {2}); });
  throwsWith("tensor id 99", [&] { h.check("relu", {99}, {o}); });
  throwsWith("float attribute", [&] {
    h.check("sgd_update", {a, a}, {o}, {}, {0.1, 0.2});
  });
}
