//===- KernelCasesLinearCrossEntropy.h - Cut cross-entropy cases -*- C++
//-*-===//
#ifndef TCC_TESTS_UNIT_KERNELCASESLINEARCROSSENTROPY_H
#define TCC_TESTS_UNIT_KERNELCASESLINEARCROSSENTROPY_H

#include "KernelCases.h"

#include <tuple>

namespace tcc::rt::test {

/// linear_cross_entropy and its gradient over 37 classes in blocks of 16
/// (three slices, the last partial), with a [V, D] and a [D, V] weight,
/// with and without a bias, ignored positions and label smoothing. The
/// GEMM and the sums' order differ between backends: a tolerance.
inline void linearCrossEntropyCases(std::vector<KernelCase> &cases) {
  KernelCase c{"linear_cross_entropy"};
  c.rtol = 1e-4;
  c.atol = 1e-5;
  OneProgram &p = c.prog;
  const int64_t d = 8, v = 37;
  int32_t hidden = p.random(DType::F32, {3, 4, d}, -2, 2);
  int32_t wVD = p.random(DType::F32, {v, d}),
          wDV = p.random(DType::F32, {d, v});
  int32_t bias = p.random(DType::F32, {v});
  int32_t padded =
      p.i64({3, 4}, {0, 36, 5, -100, 17, 16, 15, 32, -100, 1, 31, 2});
  int32_t plain = p.i64({3, 4}, {0, 36, 5, 5, 17, 16, 15, 32, 4, 1, 31, 2});
  int32_t dloss = p.floats(DType::F32, {}, {0.25f});
  for (auto [transposed, withBias, ignore, smoothing] :
       {std::tuple{1, true, int64_t{-100}, 0.0},
        std::tuple{1, false, int64_t{5}, 0.1},
        std::tuple{0, true, int64_t{-100}, 0.3},
        std::tuple{0, false, int64_t{-100}, 0.0}}) {
    int32_t w = transposed ? wVD : wDV;
    int32_t labels = ignore == -100 ? padded : plain;
    std::vector<int32_t> fwdIn{hidden, w, labels},
        bwdIn{dloss, hidden, w, labels};
    int32_t loss = p.out(DType::F32, {}), lse = p.out(DType::F32, {3, 4});
    if (withBias)
      fwdIn.push_back(bias);
    p.instr("linear_cross_entropy", fwdIn, {loss, lse},
            {transposed, ignore, 16}, {smoothing});
    bwdIn.push_back(lse);
    if (withBias)
      bwdIn.push_back(bias);
    std::vector<int32_t> grads{
        p.out(DType::F32, {3, 4, d}),
        p.out(DType::F32, transposed ? std::vector<int64_t>{v, d}
                                     : std::vector<int64_t>{d, v})};
    if (withBias)
      grads.push_back(p.out(DType::F32, {v}));
    p.instr("linear_cross_entropy_grad", bwdIn, grads, {transposed, ignore, 16},
            {smoothing});
    c.outs.insert(c.outs.end(), {loss, lse});
    c.outs.insert(c.outs.end(), grads.begin(), grads.end());
  }
  cases.push_back(std::move(c));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESLINEARCROSSENTROPY_H
