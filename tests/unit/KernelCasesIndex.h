//===- KernelCasesIndex.h - gather_elements, scatters, gather_nd, top_k ---===//
//
// Bit for bit: the kernels only move values, and the reducing scatters
// combine repeats in index order on every backend.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESINDEX_H
#define TCC_TESTS_UNIT_KERNELCASESINDEX_H

#include "KernelCases.h"

namespace tcc::rt::test {

inline void indexCases(std::vector<KernelCase> &cases) {
  KernelCase c{"index_gather_scatter"};
  c.rtol = c.atol = 0;
  OneProgram &p = c.prog;
  auto op = [&](const char *k, std::vector<int32_t> in, DType t,
                std::vector<int64_t> shape, std::vector<int64_t> i = {}) {
    c.outs.push_back(p.out(t, shape));
    p.instr(k, in, {c.outs.back()}, i);
  };
  int32_t x = p.random(DType::F32, {3, 4, 5});
  // Off the axis the indices may be smaller than the data.
  int32_t ie = p.i64({2, 2, 3}, {0, -1, 2, 3, 1, 1, 2, 0, -4, 1, 3, 2});
  op("gather_elements", {x, ie}, DType::F32, {2, 2, 3}, {1});
  int32_t xh = p.random(DType::BF16, {3, 4, 5});
  op("gather_elements", {xh, ie}, DType::BF16, {2, 2, 3}, {1});
  int32_t xi = p.i64({2, 3}, {1, 2, 3, 4, 5, 6});
  int32_t ii = p.i64({2, 2}, {2, 0, -1, 1});
  op("gather_elements", {xi, ii}, DType::I64, {2, 2}, {1});
  // Repeated indices along axis 0 and 2, each reduction.
  int32_t u = p.random(DType::F32, {2, 2, 3});
  int32_t i0 = p.i64({2, 2, 3}, {1, 1, 2, 0, 0, 0, 1, -2, 2, 0, 0, 0});
  for (int64_t r = 0; r < 5; ++r) {
    op("scatter_elements", {x, i0, u}, DType::F32, {3, 4, 5}, {0, r});
    op("scatter_elements", {x, ie, u}, DType::F32, {3, 4, 5}, {2, r});
  }
  int32_t ui = p.i64({2, 2}, {7, 8, 9, 10});
  op("scatter_elements", {xi, ii, ui}, DType::I64, {2, 3}, {1, 3});
  // gather_nd: whole tuples, partial tuples, batch dims.
  int32_t t2 = p.i64({4, 2}, {0, 1, 2, -1, 1, 3, 0, 1});
  op("gather_nd", {x, t2}, DType::F32, {4, 5}, {0});
  int32_t t3 = p.i64({2, 3}, {2, 3, 4, 0, 0, -1});
  op("gather_nd", {x, t3}, DType::F32, {2}, {0});
  int32_t tb = p.i64({3, 2, 1}, {1, 3, 0, 0, 2, -1});
  op("gather_nd", {x, tb}, DType::F32, {3, 2, 5}, {1});
  op("gather_nd", {xh, t2}, DType::BF16, {4, 5}, {0});
  // scatter_nd, repeats in t2 ([0, 1] twice).
  int32_t un = p.random(DType::F32, {4, 5});
  for (int64_t r = 0; r < 5; ++r)
    op("scatter_nd", {x, t2, un}, DType::F32, {3, 4, 5}, {0, r});
  int32_t ub = p.random(DType::F32, {3, 2, 5});
  op("scatter_nd", {x, tb, ub}, DType::F32, {3, 4, 5}, {1, 1});
  cases.push_back(std::move(c));

  KernelCase k{"top_k"};
  k.rtol = k.atol = 0;
  OneProgram &q = k.prog;
  int32_t v = q.random(DType::F32, {4, 9, 3});
  for (int64_t axis = 0; axis < 3; ++axis)
    for (bool largest : {true, false}) {
      std::vector<int64_t> shape = {4, 9, 3};
      shape[axis] = axis == 1 ? 4 : 2;
      k.outs.push_back(q.out(DType::I64, shape));
      q.instr("top_k", {v}, {k.outs.back()}, {axis, largest});
    }
  // Ties go to the lower index; NaN is the largest.
  int32_t ties =
      q.floats(DType::F32, {2, 5}, {1, 3, 3, 1, 3, 2, NAN, 2, NAN, 0});
  for (bool largest : {true, false}) {
    k.outs.push_back(q.out(DType::I64, {2, 5}));
    q.instr("top_k", {ties}, {k.outs.back()}, {1, largest});
  }
  int32_t vi = q.i64({1, 6}, {5, -2, 5, 9, 0, 9});
  k.outs.push_back(q.out(DType::I64, {1, 3}));
  q.instr("top_k", {vi}, {k.outs.back()}, {1, 1});
  cases.push_back(std::move(k));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESINDEX_H
