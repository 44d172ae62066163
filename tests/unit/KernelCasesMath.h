//===- KernelCasesMath.h - Element-wise and math cases --------------------===//
//
// The element-wise kernels: unary math and its gradients in f32 and bf16
// (in place too), binary arithmetic under every broadcast in the three
// float types, pow_grad, and cast, where and equal (bit for bit).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESMATH_H
#define TCC_TESTS_UNIT_KERNELCASESMATH_H

#include "KernelCases.h"

#include "runtime/core/prelude/UnaryFn.h"

#include <limits>
#include <tuple>

namespace tcc::rt::test {

inline void unaryCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("unary_") + dtypeName(t)};
    OneProgram &p = c.prog;
    int32_t x = p.random(t, {3, 37}, 0.1f, 3.0f); // log and sqrt need > 0
    int32_t s = p.random(t, {3, 37}, -3.0f, 3.0f);
    int32_t dy = p.random(t, {3, 37});
    auto un = [&](const char *k, int32_t in, std::vector<int64_t> i = {},
                  std::vector<double> f = {}) {
      c.outs.push_back(p.out(t, {3, 37}));
      p.instr(k, {in}, {c.outs.back()}, i, f);
    };
    auto grad = [&](const char *k, int32_t v, std::vector<int64_t> i = {},
                    std::vector<double> f = {}) {
      c.outs.push_back(p.out(t, {3, 37}));
      p.instr(k, {dy, v}, {c.outs.back()}, i, f);
    };
    for (const char *k : {"neg", "relu", "exp", "tanh", "sigmoid", "erf"})
      un(k, s);
    for (const char *k : {"log", "sqrt"})
      un(k, x);
    un("gelu", s, {0});
    un("gelu", s, {1});
    for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.7})
      un("pow_scalar", x, {}, {e});
    for (const char *k : {"relu_grad", "erf_grad"})
      grad(k, s);
    for (const char *k : {"sqrt_grad", "tanh_grad", "sigmoid_grad"})
      grad(k, x);
    grad("gelu_grad", s, {0});
    grad("gelu_grad", s, {1});
    for (double e : {0.0, 2.0, 1.7})
      grad("pow_scalar_grad", x, {}, {e});
    // In place, as the compiler schedules updates: y aliases x.
    int32_t inplace = p.random(t, {3, 37});
    p.instr("relu", {inplace}, {inplace});
    c.outs.push_back(inplace);
    cases.push_back(std::move(c));
  }
}

/// unary_fn and unary_fn_grad: every function of UnaryFn.h's list over
/// random values and over its special points (halves for round, kinks,
/// softplus's threshold), in f32 and bf16, one call in place.
inline void unaryFnCases(std::vector<KernelCase> &cases) {
  const double inf = std::numeric_limits<double>::infinity();
  // (fn, alpha, beta): every code, with ONNX's default parameters.
  const std::vector<std::tuple<int64_t, double, double>> fns = {
      {TCC_UFN_ABS, 0, 0},
      {TCC_UFN_SIGN, 0, 0},
      {TCC_UFN_FLOOR, 0, 0},
      {TCC_UFN_CEIL, 0, 0},
      {TCC_UFN_ROUND, 0, 0},
      {TCC_UFN_SIN, 0, 0},
      {TCC_UFN_COS, 0, 0},
      {TCC_UFN_HARD_SWISH, 0, 0},
      {TCC_UFN_HARD_SIGMOID, 0.2, 0.5},
      {TCC_UFN_LEAKY_RELU, 0.01, 0},
      {TCC_UFN_ELU, 1.0, 0},
      {TCC_UFN_SELU, 1.6732632, 1.0507010},
      {TCC_UFN_SOFTPLUS, 0, 0},
      {TCC_UFN_MISH, 0, 0},
      {TCC_UFN_CLIP, -1.0, 2.0},
      {TCC_UFN_CLIP, -inf, 1.0},
      {TCC_UFN_TAN, 0, 0},
      {TCC_UFN_ASIN, 0, 0},
      {TCC_UFN_ACOS, 0, 0},
      {TCC_UFN_ATAN, 0, 0},
      {TCC_UFN_SINH, 0, 0},
      {TCC_UFN_COSH, 0, 0},
      {TCC_UFN_ASINH, 0, 0},
      {TCC_UFN_ACOSH, 0, 0},
      {TCC_UFN_ATANH, 0, 0},
      {TCC_UFN_SOFTSIGN, 0, 0},
      {TCC_UFN_SHRINK, 0.5, 0},
      {TCC_UFN_SHRINK, 1.5, 1.5},
      {TCC_UFN_CELU, 1.0, 0},
      {TCC_UFN_THRESHOLDED_RELU, 1.0, 0},
      {TCC_UFN_NORM_SQRT, 0, 0}};
  static_assert(TCC_UFN_COUNT == 29, "a new function needs a case here");
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("unary_fn_") + dtypeName(t)};
    OneProgram &p = c.prog;
    int32_t r = p.random(t, {3, 37}, -4.0f, 4.0f);
    int32_t s =
        p.floats(t, {2, 8},
                 {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 0.0f, -3.0f, 3.0f,
                  -1.0f, 1.0f, 25.0f, -25.0f, 2.0f, -0.75f, 21.0f});
    int32_t dyR = p.random(t, {3, 37}), dyS = p.random(t, {2, 8});
    for (auto [fn, alpha, beta] : fns) {
      for (auto [x, dy, shape] :
           {std::tuple{r, dyR, std::vector<int64_t>{3, 37}},
            std::tuple{s, dyS, std::vector<int64_t>{2, 8}}}) {
        c.outs.push_back(p.out(t, shape));
        p.instr("unary_fn", {x}, {c.outs.back()}, {fn}, {alpha, beta});
        c.outs.push_back(p.out(t, shape));
        p.instr("unary_fn_grad", {dy, x}, {c.outs.back()}, {fn}, {alpha, beta});
      }
    }
    int32_t inplace = p.random(t, {3, 37});
    p.instr("unary_fn", {inplace}, {inplace}, {TCC_UFN_ELU}, {1.0, 0.0});
    c.outs.push_back(inplace);
    cases.push_back(std::move(c));
  }
}

inline void binaryCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    KernelCase c{std::string("binary_") + dtypeName(t)};
    OneProgram &p = c.prog;
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
        shapes = {{{2, 3, 4}, {3, 1}},
                  {{4}, {2, 3, 4}},
                  {{2, 3, 4}, {}},
                  {{2, 3, 4}, {2, 3, 4}},
                  {{2, 1, 4}, {1, 3, 1}}};
    for (const auto &[sa, sb] : shapes) {
      int32_t a = p.random(t, sa, 0.5f, 2.0f), b = p.random(t, sb, 0.5f, 2.0f);
      std::vector<int64_t> sc = sa.size() >= sb.size() ? sa : sb;
      if (sa.size() == sb.size())
        for (size_t i = 0; i < sa.size(); ++i)
          sc[i] = std::max(sa[i], sb[i]);
      for (const char *k : {"add", "sub", "mul", "div", "pow"}) {
        c.outs.push_back(p.out(t, sc));
        p.instr(k, {a, b}, {c.outs.back()});
      }
    }
    cases.push_back(std::move(c));
  }
}

inline void castWhereEqualCases(std::vector<KernelCase> &cases) {
  KernelCase pg{"pow_grad"};
  {
    OneProgram &p = pg.prog;
    int32_t a = p.random(DType::F32, {5, 6}, 0.2f, 2.0f);
    int32_t b = p.random(DType::F32, {5, 6}, -1.0f, 2.0f);
    int32_t dy = p.random(DType::F32, {5, 6});
    pg.outs = {p.out(DType::F32, {5, 6}), p.out(DType::F32, {5, 6})};
    p.instr("pow_grad", {dy, a, b}, pg.outs);
  }
  cases.push_back(std::move(pg));

  KernelCase c{"cast_where_equal"};
  c.rtol = c.atol = 0;
  OneProgram &p = c.prog;
  int32_t f =
      p.floats(DType::F32, {6}, {-2.7f, -0.5f, 0.0f, 0.5f, 3.9f, 1e20f});
  int32_t i = p.i64({6}, {-3, 0, 1, 7, 1 << 20, -(1LL << 40)});
  auto cast = [&](int32_t x, DType to, int64_t toBool) {
    c.outs.push_back(p.out(to, {6}));
    p.instr("cast", {x}, {c.outs.back()}, {toBool});
  };
  cast(f, DType::I64, 0);
  cast(f, DType::I64, 1);
  cast(i, DType::F32, 0);
  cast(i, DType::I64, 1);
  cast(i, DType::BF16, 0);
  cast(f, DType::BF16, 0);
  cast(f, DType::F16, 0);
  int32_t h = p.random(DType::BF16, {6});
  cast(h, DType::F16, 0);
  cast(h, DType::F32, 0);
  cast(h, DType::I64, 0);
  int32_t cond = p.i64({2, 1, 4}, {1, 0, 0, 1, 0, 1, 1, 0});
  int32_t x = p.random(DType::F32, {3, 4}), z = p.random(DType::F32, {});
  c.outs.push_back(p.out(DType::F32, {2, 3, 4}));
  p.instr("where", {cond, x, z}, {c.outs.back()});
  int32_t xi = p.i64({4}, {1, 2, 3, 4});
  c.outs.push_back(p.out(DType::I64, {2, 1, 4}));
  p.instr("where", {cond, xi, cond}, {c.outs.back()});
  int32_t e1 = p.floats(DType::F32, {3, 1}, {1, 2, 3});
  int32_t e2 = p.floats(DType::F32, {4}, {3, 2, 1, 0});
  c.outs.push_back(p.out(DType::I64, {3, 4}));
  p.instr("compare", {e1, e2}, {c.outs.back()}, {0});
  c.outs.push_back(p.out(DType::I64, {2, 1, 4}));
  p.instr("compare", {cond, xi}, {c.outs.back()}, {0});
  cases.push_back(std::move(c));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESMATH_H
