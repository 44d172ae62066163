//===- KernelsShapeTest.cpp - Data-movement kernels vs naive references ---===//
//
// gather, gather_grad, concat, slice, slice_grad, where, equal, cast: each
// against an index-by-index reference, and each check_* against the
// malformed instructions an artifact could carry.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// Row-major flat index of `idx` in `shape`.
int64_t ravel(const std::vector<int64_t> &idx,
              const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + idx[d];
  return flat;
}

std::vector<int64_t> randomInts(int64_t n, uint32_t seed, int64_t lo,
                                int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<int64_t> v(n);
  for (int64_t &x : v)
    x = dist(rng);
  return v;
}

/// The message of the Error `f` throws, or "" when it throws none.
template <class F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(KernelsShape, Registered) {
  for (const char *k : {"gather", "gather_grad", "concat", "slice",
                        "slice_grad", "where", "compare", "cast"})
    EXPECT_NE(findKernel(k), nullptr) << k;
}

//===----------------------------------------------------------------------===//
// gather, gather_grad
//===----------------------------------------------------------------------===//

TEST(KernelsShape, GatherMatchesReference) {
  const std::vector<int64_t> data = {3, 5, 4}, idxShape = {2, 3};
  for (int64_t axis = 0; axis < 3; ++axis) {
    KernelHarness h;
    int64_t n = data[axis];
    std::vector<float> x = randomValues(numel(data), 1 + axis);
    std::vector<int64_t> idx = randomInts(6, 7 + axis, -n, n - 1);
    std::vector<int64_t> yShape(data.begin(), data.begin() + axis);
    yShape.insert(yShape.end(), idxShape.begin(), idxShape.end());
    yShape.insert(yShape.end(), data.begin() + axis + 1, data.end());
    int32_t X = h.f32(data, x), I = h.i64(idxShape, idx), Y = h.out(yShape);
    h.run("gather", {X, I}, {Y}, {axis});
    std::vector<float> y = h.get(Y);
    for (int64_t e = 0; e < numel(yShape); ++e) {
      std::vector<int64_t> yi = unravel(e, yShape), xi;
      xi.assign(yi.begin(), yi.begin() + axis);
      int64_t k = idx[ravel({yi[axis], yi[axis + 1]}, idxShape)];
      xi.push_back(k < 0 ? k + n : k);
      xi.insert(xi.end(), yi.begin() + axis + 2, yi.end());
      ASSERT_EQ(y[e], x[ravel(xi, data)]) << "axis " << axis << " at " << e;
    }
  }
}

TEST(KernelsShape, GatherI64AndScalarIndex) {
  KernelHarness h;
  int32_t X = h.i64({4, 2}, {10, 11, 20, 21, 30, 31, 40, 41});
  int32_t I = h.i64({}, {-1}), Y = h.out({2}, DType::I64);
  h.run("gather", {X, I}, {Y}, {0});
  EXPECT_EQ(h.getI64(Y), (std::vector<int64_t>{40, 41}));
}

TEST(KernelsShape, GatherRejectsOutOfRangeIndices) {
  KernelHarness h;
  int32_t X = h.f32({5, 2}, randomValues(10, 3));
  int32_t I = h.i64({2, 2}, {0, 4, 5, -1}), Y = h.out({2, 2, 2});
  EXPECT_EQ(errorOf([&] {
              h.run("gather", {X, I}, {Y}, {0});
            }),
            "gather: index 5 at position [1,0] of the indices is outside "
            "[-5, 5) (axis 0 has size 5)");
  int32_t J = h.i64({1}, {-6}), Z = h.out({1, 2});
  EXPECT_NE(errorOf([&] {
              h.run("gather", {X, J}, {Z}, {0});
            }).find("index -6 at position [0]"),
            std::string::npos);
  int32_t G = h.f32({1, 2}, {1, 2}), D = h.out({5, 2});
  EXPECT_NE(errorOf([&] {
              h.run("gather_grad", {G, J}, {D}, {0});
            }).find("index -6"),
            std::string::npos);
}

TEST(KernelsShape, GatherGradAccumulatesRepeats) {
  const std::vector<int64_t> table = {6, 3}, idxShape = {2, 4};
  KernelHarness h;
  std::vector<int64_t> idx = {0, 5, 5, -1, 2, 0, 3, 5}; // 5 four times
  std::vector<float> g = randomValues(8 * 3, 11);
  int32_t G = h.f32({2, 4, 3}, g), I = h.i64(idxShape, idx), D = h.out(table);
  h.run("gather_grad", {G, I}, {D}, {0});
  std::vector<float> ref(18, 0.0f);
  for (int64_t j = 0; j < 8; ++j)
    for (int64_t c = 0; c < 3; ++c)
      ref[((idx[j] + 6) % 6) * 3 + c] += g[j * 3 + c];
  std::vector<float> d = h.get(D);
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_FLOAT_EQ(d[i], ref[i]) << i;
}

TEST(KernelsShape, GatherGradInnerAxis) {
  KernelHarness h; // d/dx of x[:, [2, 0, 2]] for x [2, 3]
  int32_t G = h.f32({2, 3}, {1, 2, 3, 4, 5, 6}), I = h.i64({3}, {2, 0, 2});
  int32_t D = h.out({2, 3});
  h.run("gather_grad", {G, I}, {D}, {1});
  EXPECT_EQ(h.get(D), (std::vector<float>{2, 0, 4, 5, 0, 10}));
}

TEST(KernelsShape, GatherChecks) {
  KernelHarness h;
  int32_t X = h.f32({5, 2}, randomValues(10, 3));
  int32_t I = h.i64({3}, {0, 1, 2}), F = h.f32({3}, {0, 1, 2});
  EXPECT_NE(errorOf([&] {
              h.check("gather", {X, F}, {h.out({3, 2})}, {0});
            }).find("input 1 't2' is f32, expected i64"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("gather", {X, I}, {h.out({2, 3})}, {0});
            }).find("expected [3,2]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("gather", {X, I}, {h.out({3, 2})}, {2});
            }).find("axis 2 is out of range"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("gather", {X, I}, {h.out({3, 2}, DType::I64)}, {0});
            }).find("is i64, expected f32"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

TEST(KernelsShape, ConcatMatchesReference) {
  for (int64_t axis = 0; axis < 3; ++axis) {
    std::vector<std::vector<int64_t>> shapes(3, {2, 3, 4});
    shapes[0][axis] = 1;
    shapes[2][axis] = 2;
    std::vector<int64_t> yShape = {2, 3, 4};
    yShape[axis] = 1 + yShape[axis] + 2;
    KernelHarness h;
    std::vector<std::vector<float>> xs;
    std::vector<int32_t> ids;
    for (size_t i = 0; i < 3; ++i) {
      xs.push_back(randomValues(numel(shapes[i]), 20 + i));
      ids.push_back(h.f32(shapes[i], xs.back()));
    }
    int32_t Y = h.out(yShape);
    h.run("concat", ids, {Y}, {axis});
    std::vector<float> y = h.get(Y);
    for (int64_t e = 0; e < numel(yShape); ++e) {
      std::vector<int64_t> idx = unravel(e, yShape);
      size_t part = 0;
      while (idx[axis] >= shapes[part][axis])
        idx[axis] -= shapes[part++][axis];
      ASSERT_EQ(y[e], xs[part][ravel(idx, shapes[part])]) << e;
    }
  }
}

TEST(KernelsShape, ConcatI64AndChecks) {
  KernelHarness h;
  int32_t A = h.i64({2}, {1, 2}), B = h.i64({1}, {3}),
          Y = h.out({3}, DType::I64);
  h.run("concat", {A, B}, {Y}, {0});
  EXPECT_EQ(h.getI64(Y), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_NE(errorOf([&] {
              h.check("concat", {A, B}, {h.out({4}, DType::I64)}, {0});
            }).find("add up to 3"),
            std::string::npos);
  int32_t F = h.f32({1}, {3});
  EXPECT_NE(errorOf([&] {
              h.check("concat", {A, F}, {h.out({3}, DType::I64)}, {0});
            }).find("is f32, expected i64"),
            std::string::npos);
  int32_t M = h.f32({2, 2}, {1, 2, 3, 4}), N = h.f32({3, 1}, {1, 2, 3});
  EXPECT_NE(errorOf([&] {
              h.check("concat", {M, N}, {h.out({2, 3})}, {1});
            }).find("does not match the output shape [2,3] outside axis 1"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("concat", {}, {h.out({2})}, {0});
            }).find("at least 1 input"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// slice, slice_grad
//===----------------------------------------------------------------------===//

namespace {
struct Window {
  std::vector<int64_t> full, starts, sizes, steps;
};
} // namespace

static std::vector<int64_t> windowAttrs(const Window &w) {
  std::vector<int64_t> a = w.starts;
  a.insert(a.end(), w.steps.begin(), w.steps.end());
  return a;
}

static int64_t windowSource(const Window &w, int64_t e) {
  std::vector<int64_t> idx = unravel(e, w.sizes);
  for (size_t d = 0; d < idx.size(); ++d)
    idx[d] = w.starts[d] + idx[d] * w.steps[d];
  return ravel(idx, w.full);
}

TEST(KernelsShape, SliceAndGradMatchReference) {
  const std::vector<Window> windows = {
      {{4, 6, 5}, {1, 0, 0}, {2, 6, 5}, {1, 1, 1}},    // rows: memcpy path
      {{4, 6, 5}, {3, 5, 4}, {2, 3, 5}, {-2, -2, -1}}, // everything reversed
      {{4, 6, 5}, {0, 1, 2}, {4, 2, 1}, {1, 3, 1}},    // strided middle
      {{7}, {6}, {4}, {-2}},
      {{3, 4}, {0, 2}, {3, 0}, {1, 1}}, // empty
      {{2, 8, 16}, {0, 0, 0}, {2, 5, 10}, {1, 1, 1}}, // zero pad (pad-shapes)
      // Large enough to be shared over the thread pool by rows of the first
      // dim: convolution taps (tcc-trim-conv-taps), whose gradient zeroes
      // and scatters chunk by chunk, and a reversed first dim.
      {{128, 160, 3, 3}, {0, 0, 1, 1}, {128, 160, 2, 2}, {1, 1, 1, 1}},
      {{128, 160, 3, 3}, {0, 0, 1, 1}, {128, 160, 1, 1}, {1, 1, 1, 1}},
      {{300, 5, 50}, {299, 0, 3}, {300, 5, 45}, {-1, 1, 1}},
  };
  for (size_t c = 0; c < windows.size(); ++c) {
    const Window &w = windows[c];
    KernelHarness h;
    std::vector<float> x = randomValues(numel(w.full), 30 + c);
    int32_t X = h.f32(w.full, x), Y = h.out(w.sizes);
    h.run("slice", {X}, {Y}, windowAttrs(w));
    std::vector<float> y = h.get(Y);
    for (int64_t e = 0; e < numel(w.sizes); ++e)
      ASSERT_EQ(y[e], x[windowSource(w, e)]) << "case " << c << " at " << e;

    std::vector<float> g = randomValues(numel(w.sizes), 40 + c);
    int32_t G = h.f32(w.sizes, g), D = h.out(w.full);
    h.run("slice_grad", {G}, {D}, windowAttrs(w));
    std::vector<float> ref(numel(w.full), 0.0f);
    for (int64_t e = 0; e < numel(w.sizes); ++e)
      ref[windowSource(w, e)] = g[e];
    EXPECT_EQ(h.get(D), ref) << "case " << c;
  }
}

// A prefix slice (zero starts, unit steps, only the first axis cut) is the
// input's first bytes: the runtime runs it as a copy of those bytes, in any
// dtype, and as nothing where the output is the input's own bytes (the
// memory plan's view of a padded vocabulary's weight gradient).
TEST(KernelsShape, PrefixSlicesAreTheInputsFirstBytes) {
  auto instr = [](std::vector<int64_t> attrs) {
    return Instr{"slice", {0}, {1}, std::move(attrs), {}};
  };
  EXPECT_TRUE(isPrefixSlice(instr({0, 0, 1, 1}), {6, 4}, {3, 4}));
  EXPECT_TRUE(isPrefixSlice(instr({0, 0, 1, 1}), {6, 4}, {6, 4}));
  EXPECT_TRUE(isPrefixSlice(instr({0, 1}), {7}, {2}));
  EXPECT_FALSE(isPrefixSlice(instr({1, 0, 1, 1}), {6, 4}, {3, 4})); // start
  EXPECT_FALSE(isPrefixSlice(instr({0, 0, 2, 1}), {6, 4}, {3, 4})); // step
  EXPECT_FALSE(isPrefixSlice(instr({0, 0, 1, 1}), {6, 4}, {6, 3})); // column
  EXPECT_FALSE(isPrefixSlice(instr({0, 0, 1}), {6, 4}, {3, 4}));    // attrs
  EXPECT_FALSE(
      isPrefixSlice(Instr{"copy", {0}, {1}, {0, 0, 1, 1}, {}}, {6, 4}, {3, 4}));

  for (DType t : {DType::F32, DType::BF16}) {
    std::vector<TensorInfo> infos(2);
    infos[0].name = "x", infos[0].dtype = t, infos[0].shape = {6, 4};
    infos[1].name = "y", infos[1].dtype = t, infos[1].shape = {3, 4};
    std::vector<uint8_t> x(infos[0].byteSize()), y(infos[1].byteSize(), 0x7f);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<uint8_t>(i * 7 + 1);
    std::vector<uint8_t> before = x;
    Instr in = instr({0, 0, 1, 1});
    runKernel(in, infos, {x.data(), y.data()});
    EXPECT_TRUE(std::equal(y.begin(), y.end(), x.begin())) << dtypeName(t);
    runKernel(in, infos, {x.data(), x.data()}); // the view: nothing moves
    EXPECT_EQ(x, before) << dtypeName(t);
  }
}

TEST(KernelsShape, SliceI64) {
  KernelHarness h;
  int32_t X = h.i64({5}, {0, 1, 2, 3, 4}), Y = h.out({2}, DType::I64);
  h.run("slice", {X}, {Y}, {3, -2});
  EXPECT_EQ(h.getI64(Y), (std::vector<int64_t>{3, 1}));
}

TEST(KernelsShape, SliceChecksTheWindow) {
  KernelHarness h;
  int32_t X = h.f32({5}, randomValues(5, 1));
  EXPECT_NE(errorOf([&] {
              h.check("slice", {X}, {h.out({3})}, {3, 1});
            }).find("3 elements from 3 in steps of 1 do not fit in size 5"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("slice", {X}, {h.out({3})}, {1, -1});
            }).find("do not fit"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("slice", {X}, {h.out({2})}, {0, 0});
            }).find("do not fit"),
            std::string::npos);
  // Huge attributes must not overflow the check itself.
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_NE(errorOf([&] {
              h.check("slice", {X}, {h.out({2})}, {0, big});
            }).find("do not fit"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { h.check("slice", {X}, {h.out({2})}, {0}); })
                .find("expects an even number of integer attributes (starts... "
                      "++ steps...), got 1"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("slice", {X}, {h.out({1, 1})}, {0, 1});
            }).find("the window has rank 2"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("slice_grad", {X}, {h.out({4})}, {0, 1});
            }).find("5 elements from 0 in steps of 1 do not fit in size 4"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// where, equal, cast
//===----------------------------------------------------------------------===//

TEST(KernelsShape, WhereAndEqualBroadcast) {
  const std::vector<int64_t> c = {3, 1}, a = {1, 4}, b = {}, y = {3, 4};
  KernelHarness h;
  std::vector<int64_t> cond = {1, 0, 1};
  std::vector<float> av = randomValues(4, 5), bv = {-7.5f};
  int32_t C = h.i64(c, cond), A = h.f32(a, av), B = h.f32(b, bv), Y = h.out(y);
  h.run("where", {C, A, B}, {Y});
  std::vector<float> out = h.get(Y);
  for (int64_t e = 0; e < 12; ++e) {
    std::vector<int64_t> idx = unravel(e, y);
    float want =
        cond[broadcastIndex(idx, c)] ? av[broadcastIndex(idx, a)] : bv[0];
    ASSERT_EQ(out[e], want) << e;
  }

  std::vector<float> l = {1, 2, 3}, r = {2, 2, 3, 1, 3, 3, 1, 1};
  int32_t L = h.f32({3, 1, 1}, l), R = h.f32({1, 2, 4}, r);
  int32_t E = h.out({3, 2, 4}, DType::I64);
  h.run("compare", {L, R}, {E}, {0});
  std::vector<int64_t> eq = h.getI64(E);
  for (int64_t e = 0; e < 24; ++e) {
    std::vector<int64_t> idx = unravel(e, {3, 2, 4});
    ASSERT_EQ(eq[e], l[idx[0]] == r[idx[1] * 4 + idx[2]] ? 1 : 0) << e;
  }

  int32_t I = h.i64({4}, {5, 0, 5, 1}), P = h.i64({}, {5});
  int32_t M = h.out({4}, DType::I64), W = h.out({4}, DType::I64);
  h.run("compare", {I, P}, {M}, {0});
  EXPECT_EQ(h.getI64(M), (std::vector<int64_t>{1, 0, 1, 0}));
  h.run("where", {M, I, P}, {W}); // i64 branches
  EXPECT_EQ(h.getI64(W), (std::vector<int64_t>{5, 5, 5, 5}));
}

TEST(KernelsShape, WhereAndEqualChecks) {
  KernelHarness h;
  int32_t F = h.f32({2}, {1, 2}), I = h.i64({2}, {1, 0});
  EXPECT_NE(errorOf([&] {
              h.check("where", {F, F, F}, {h.out({2})});
            }).find("input 0 't0' is f32, expected i64"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("where", {I, F, I}, {h.out({2})});
            }).find("is i64, expected f32"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("where", {I, F, F}, {h.out({3})});
            }).find("does not broadcast to the output shape [3]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("compare", {F, I}, {h.out({2}, DType::I64)}, {0});
            }).find("is i64, expected f32"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("compare", {F, F}, {h.out({2})}, {0});
            }).find("is f32, expected i64"),
            std::string::npos);
}

TEST(KernelsShape, CastConvertsLikeOnnx) {
  KernelHarness h;
  const float inf = std::numeric_limits<float>::infinity();
  int32_t X = h.f32({7}, {1.9f, -1.9f, 0.0f, NAN, 3e30f, -inf, 0.25f});
  int32_t Y = h.out({7}, DType::I64), B = h.out({7}, DType::I64);
  h.run("cast", {X}, {Y}, {0});
  const int64_t hi = std::numeric_limits<int64_t>::max(),
                lo = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(h.getI64(Y), (std::vector<int64_t>{1, -1, 0, 0, hi, lo, 0}));
  h.run("cast", {X}, {B}, {1});
  EXPECT_EQ(h.getI64(B), (std::vector<int64_t>{1, 1, 0, 1, 1, 1, 1}));

  int32_t I = h.i64({3}, {-3, 0, 7}), F = h.out({3}),
          IB = h.out({3}, DType::I64);
  h.run("cast", {I}, {F}, {0});
  EXPECT_EQ(h.get(F), (std::vector<float>{-3, 0, 7}));
  h.run("cast", {I}, {IB}, {1});
  EXPECT_EQ(h.getI64(IB), (std::vector<int64_t>{1, 0, 1}));

  EXPECT_NE(errorOf([&] {
              h.check("cast", {I}, {h.out({3})}, {1});
            }).find("must be i64 (bools are stored as i64)"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("cast", {I}, {h.out({4})}, {0});
            }).find("expected 3 elements"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              h.check("cast", {I}, {h.out({3})}, {2});
            }).find("attribute 'to_bool' must be 0 or 1, got 2"),
            std::string::npos);
}
