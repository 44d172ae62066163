//===- KernelCasesLogic.h - compare, logic, extrema cases -----------------===//
//
// compare (every predicate, f32 with NaN and i64, broadcast), logic (every
// kind), maximum/minimum (f32 with ties and NaN, bf16, i64, in place), mod
// (both sign rules, zero divisors, f32, bf16, i64),
// reduce_max/reduce_min over inner, outer and several axes, reduce_prod
// and its gradient likewise, cumsum in every mode, and arg_max/arg_min with
// ties both ways: all exact, so bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESLOGIC_H
#define TCC_TESTS_UNIT_KERNELCASESLOGIC_H

#include "KernelCases.h"

#include <cmath>
#include <limits>

namespace tcc::rt::test {

inline void compareLogicCases(std::vector<KernelCase> &cases) {
  KernelCase c{"compare_logic"};
  OneProgram &p = c.prog;
  int32_t a = p.floats(DType::F32, {3, 1}, {1, 2, NAN});
  int32_t b = p.floats(DType::F32, {4}, {3, 2, 1, NAN});
  int32_t ia = p.i64({2, 3}, {5, -1, 7, 0, 0, 9});
  int32_t ib = p.i64({3}, {5, 0, 8});
  for (int64_t pred = 0; pred < 5; ++pred) {
    c.outs.push_back(p.out(DType::I64, {3, 4}));
    p.instr("compare", {a, b}, {c.outs.back()}, {pred});
    c.outs.push_back(p.out(DType::I64, {2, 3}));
    p.instr("compare", {ia, ib}, {c.outs.back()}, {pred});
  }
  int32_t m = p.i64({2, 1, 4}, {1, 0, 0, 1, 0, 1, 1, 0});
  int32_t n = p.i64({3, 1}, {1, 0, 1});
  for (int64_t kind = 0; kind < 3; ++kind) {
    c.outs.push_back(p.out(DType::I64, {2, 3, 4}));
    p.instr("logic", {m, n}, {c.outs.back()}, {kind});
  }
  cases.push_back(std::move(c));
}

inline void extremumCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("extremum_") + dtypeName(t)};
    OneProgram &p = c.prog;
    int32_t a = p.random(t, {4, 33}), b = p.random(t, {33});
    int32_t ties = p.floats(t, {2, 3}, {1, NAN, 2, 0, 5, -1});
    int32_t other = p.floats(t, {3}, {1, 1, NAN});
    for (const char *k : {"maximum", "minimum"}) {
      c.outs.push_back(p.out(t, {4, 33}));
      p.instr(k, {a, b}, {c.outs.back()});
      c.outs.push_back(p.out(t, {2, 3}));
      p.instr(k, {ties, other}, {c.outs.back()});
    }
    // In place: the output aliases the left operand.
    int32_t inplace = p.random(t, {4, 33});
    p.instr("maximum", {inplace, b}, {inplace});
    c.outs.push_back(inplace);
    cases.push_back(std::move(c));
  }
  KernelCase c{"extremum_i64"};
  OneProgram &p = c.prog;
  int32_t a = p.i64({2, 2}, {3, -4, 5, 9}), b = p.i64({2}, {4, -4});
  for (const char *k : {"maximum", "minimum"}) {
    c.outs.push_back(p.out(DType::I64, {2, 2}));
    p.instr(k, {a, b}, {c.outs.back()});
  }
  cases.push_back(std::move(c));
}

/// mod both ways: f32 and bf16 with mixed signs, zeros, a zero divisor,
/// infinities and NaN, broadcast and in place; i64 with mixed signs,
/// divisors 0 and -1 and INT64_MIN. Remainders are exact: bit for bit.
inline void modCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("mod_") + dtypeName(t)};
    OneProgram &p = c.prog;
    int32_t a = p.random(t, {4, 33}, -9, 9), b = p.random(t, {33}, -3, 3);
    int32_t x = p.floats(t, {2, 4}, {5, -5, 0, -0.0f, INFINITY, 3, NAN, 7});
    int32_t y = p.floats(t, {4}, {-2, 0, INFINITY, -INFINITY});
    for (int64_t fmod : {0, 1}) {
      c.outs.push_back(p.out(t, {4, 33}));
      p.instr("mod", {a, b}, {c.outs.back()}, {fmod});
      c.outs.push_back(p.out(t, {2, 4}));
      p.instr("mod", {x, y}, {c.outs.back()}, {fmod});
    }
    int32_t inplace = p.random(t, {4, 33}, -9, 9);
    p.instr("mod", {inplace, b}, {inplace}, {1});
    c.outs.push_back(inplace);
    cases.push_back(std::move(c));
  }
  KernelCase c{"mod_i64"};
  OneProgram &p = c.prog;
  int64_t lo = std::numeric_limits<int64_t>::min();
  int32_t a = p.i64({2, 4}, {7, -7, 7, -7, 5, lo, lo, 0});
  int32_t b = p.i64({2, 4}, {3, 3, -3, -3, 0, -1, 7, -4});
  for (int64_t fmod : {0, 1}) {
    c.outs.push_back(p.out(DType::I64, {2, 4}));
    p.instr("mod", {a, b}, {c.outs.back()}, {fmod});
  }
  cases.push_back(std::move(c));
}

inline void reduceExtremumCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("reduce_extremum_") + dtypeName(t)};
    OneProgram &p = c.prog;
    int32_t x = p.random(t, {3, 5, 7});
    int32_t nan = p.floats(t, {2, 3}, {1, NAN, 2, -3, -3, 0});
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
        reductions = {{{2}, {3, 5}},
                      {{0}, {5, 7}},
                      {{1}, {3, 1, 7}},
                      {{0, 2}, {5}},
                      {{0, 1, 2}, {}}};
    for (const char *k : {"reduce_max", "reduce_min"}) {
      for (const auto &[axes, shape] : reductions) {
        c.outs.push_back(p.out(t, shape));
        p.instr(k, {x}, {c.outs.back()}, axes);
      }
      c.outs.push_back(p.out(t, {2}));
      p.instr(k, {nan}, {c.outs.back()}, {1});
    }
    cases.push_back(std::move(c));
  }
}

/// reduce_prod and its gradient over the extremum cases' axes (and a group
/// with zeros), cumsum along each axis in every mode.
inline void reduceProdCumSumCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("reduce_prod_cumsum_") + dtypeName(t)};
    OneProgram &p = c.prog;
    int32_t x = p.random(t, {3, 5, 7}, -1.5f, 1.5f);
    int32_t zeros = p.floats(t, {2, 3}, {1, 0, 2, 0, -3, 0});
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
        reductions = {{{2}, {3, 5}},
                      {{0}, {5, 7}},
                      {{1}, {3, 1, 7}},
                      {{0, 2}, {5}},
                      {{0, 1, 2}, {}}};
    for (const auto &[axes, shape] : reductions) {
      c.outs.push_back(p.out(t, shape));
      p.instr("reduce_prod", {x}, {c.outs.back()}, axes);
      int32_t dy = p.random(t, shape);
      c.outs.push_back(p.out(t, {3, 5, 7}));
      p.instr("reduce_prod_grad", {dy, x}, {c.outs.back()}, axes);
    }
    c.outs.push_back(p.out(t, {2, 3}));
    p.instr("reduce_prod_grad", {p.random(t, {2}), zeros}, {c.outs.back()},
            {1});
    for (int64_t axis : {0, 1, 2})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          c.outs.push_back(p.out(t, {3, 5, 7}));
          p.instr("cumsum", {x}, {c.outs.back()}, {axis, exclusive, reverse});
        }
    cases.push_back(std::move(c));
  }
}

inline void argExtremumCases(std::vector<KernelCase> &cases) {
  KernelCase c{"arg_extremum"};
  OneProgram &p = c.prog;
  int32_t x = p.random(DType::F32, {3, 5, 7});
  int32_t ties = p.floats(DType::F32, {2, 4}, {1, 3, 3, -1, NAN, 0, NAN, 0});
  int32_t ints = p.i64({2, 3}, {4, 4, 1, -2, 7, 7});
  for (const char *k : {"arg_max", "arg_min"})
    for (int64_t last : {0, 1}) {
      c.outs.push_back(p.out(DType::I64, {5, 7}));
      p.instr(k, {x}, {c.outs.back()}, {0, last});
      c.outs.push_back(p.out(DType::I64, {3, 7}));
      p.instr(k, {x}, {c.outs.back()}, {1, last});
      c.outs.push_back(p.out(DType::I64, {3, 5}));
      p.instr(k, {x}, {c.outs.back()}, {2, last});
      c.outs.push_back(p.out(DType::I64, {2}));
      p.instr(k, {ties}, {c.outs.back()}, {1, last});
      c.outs.push_back(p.out(DType::I64, {2}));
      p.instr(k, {ints}, {c.outs.back()}, {1, last});
    }
  cases.push_back(std::move(c));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESLOGIC_H
