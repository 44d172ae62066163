//===- KernelCasesRows.h - Softmax, losses and layer norm cases -----------===//
//
// The row kernels (a block per row on the GPU): softmax and log_softmax
// with their gradients, the losses, and layer norm with both gradients,
// f32 and the 16-bit operands a bf16 model stores.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESROWS_H
#define TCC_TESTS_UNIT_KERNELCASESROWS_H

#include "KernelCases.h"

#include <tuple>

namespace tcc::rt::test {

inline void softmaxLossCases(std::vector<KernelCase> &cases) {
  KernelCase c{"softmax_losses"};
  c.rtol = 1e-5;
  c.atol = 1e-6;
  OneProgram &p = c.prog;
  for (auto [shape, axis] : {std::pair{std::vector<int64_t>{6, 37}, -1},
                             std::pair{std::vector<int64_t>{2, 5, 3}, 1}}) {
    int32_t x = p.random(DType::F32, shape, -4, 4);
    int32_t dy = p.random(DType::F32, shape);
    for (const char *k : {"softmax", "log_softmax"}) {
      int32_t y = p.out(DType::F32, shape);
      p.instr(k, {x}, {y}, {axis});
      int32_t dx = p.out(DType::F32, shape);
      p.instr(std::string(k) + "_grad", {dy, y}, {dx}, {axis});
      c.outs.insert(c.outs.end(), {y, dx});
    }
  }
  int32_t logits = p.random(DType::F32, {8, 11}, -5, 5);
  int32_t labels = p.i64({8}, {0, 10, 3, 3, 7, 1, 9, 5});
  int32_t dloss = p.floats(DType::F32, {}, {1.5f});
  c.outs.push_back(p.out(DType::F32, {}));
  p.instr("softmax_cross_entropy", {logits, labels}, {c.outs.back()}, {-100},
          {0.0});
  c.outs.push_back(p.out(DType::F32, {8, 11}));
  p.instr("softmax_cross_entropy_grad", {dloss, logits, labels},
          {c.outs.back()}, {-100}, {0.0});
  // Ignored positions (PyTorch's -100, then a class index) and label
  // smoothing; the last set has every label ignored (loss 0).
  int32_t padded = p.i64({8}, {0, -100, 3, -100, 7, 1, -100, 5});
  int32_t allIgnored = p.i64({8}, std::vector<int64_t>(8, 3));
  for (auto [lab, ignore, smoothing] :
       {std::tuple{padded, int64_t{-100}, 0.0},
        std::tuple{padded, int64_t{-100}, 0.1},
        std::tuple{labels, int64_t{3}, 1.0},
        std::tuple{allIgnored, int64_t{3}, 0.2}}) {
    c.outs.push_back(p.out(DType::F32, {}));
    p.instr("softmax_cross_entropy", {logits, lab}, {c.outs.back()}, {ignore},
            {smoothing});
    c.outs.push_back(p.out(DType::F32, {8, 11}));
    p.instr("softmax_cross_entropy_grad", {dloss, logits, lab}, {c.outs.back()},
            {ignore}, {smoothing});
  }
  int32_t pred = p.random(DType::F32, {7, 9});
  int32_t tgt = p.random(DType::F32, {63});
  c.outs.push_back(p.out(DType::F32, {}));
  p.instr("mse_loss", {pred, tgt}, {c.outs.back()});
  c.outs.push_back(p.out(DType::F32, {7, 9}));
  p.instr("mse_loss_grad", {dloss, pred, tgt}, {c.outs.back()});
  cases.push_back(std::move(c));
}

inline void layerNormCases(std::vector<KernelCase> &cases) {
  for (auto [shape, axis] : {std::pair{std::vector<int64_t>{4, 7, 33}, 2},
                             std::pair{std::vector<int64_t>{300, 20}, 1},
                             std::pair{std::vector<int64_t>{3, 4, 5}, 1}}) {
    KernelCase c{"layer_norm_" + std::to_string(shape.size()) + "d_axis" +
                 std::to_string(axis) + "_" + std::to_string(shape[0])};
    c.rtol = c.atol = 1e-5;
    OneProgram &p = c.prog;
    int64_t rows = 1, n = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      (d < axis ? rows : n) *= shape[d];
    int32_t x = p.random(DType::F32, shape, -3, 3);
    int32_t gamma = p.random(DType::F32, {n}), beta = p.random(DType::F32, {n});
    int32_t y = p.out(DType::F32, shape), mean = p.out(DType::F32, {rows}),
            rstd = p.out(DType::F32, {rows});
    p.instr("layer_norm", {x, gamma, beta}, {y, mean, rstd}, {axis}, {1e-5});
    int32_t dy = p.random(DType::F32, shape);
    int32_t dx = p.out(DType::F32, shape), dg = p.out(DType::F32, {n}),
            db = p.out(DType::F32, {n});
    p.instr("layer_norm_grad", {dy, x, gamma, mean, rstd}, {dx, dg, db},
            {axis});
    int32_t pg = p.out(DType::F32, {n}), pb = p.out(DType::F32, {n});
    p.instr("layer_norm_param_grad", {dy, x, mean, rstd}, {pg, pb}, {axis});
    c.outs = {y, mean, rstd, dx, dg, db, pg, pb};
    cases.push_back(std::move(c));
  }
  // The column sums alone from the 16-bit dy and x a bf16 model stores
  // (read directly on the GPU, widened on the CPU).
  KernelCase c{"layer_norm_param_grad_bf16"};
  c.rtol = c.atol = 1e-5;
  OneProgram &p = c.prog;
  // dy of type `tdy` and bf16 x, [rows, n], with f32 mean and rstd.
  auto paramGrad = [&](int64_t rows, int64_t n, DType tdy) {
    int32_t x = p.random(DType::BF16, {rows, n}, -3, 3);
    int32_t dy = p.random(tdy, {rows, n});
    int32_t mean = p.random(DType::F32, {rows}, -0.5f, 0.5f);
    int32_t rstd = p.random(DType::F32, {rows}, 0.5f, 2.0f);
    int32_t pg = p.out(DType::F32, {n}), pb = p.out(DType::F32, {n});
    p.instr("layer_norm_param_grad", {dy, x, mean, rstd}, {pg, pb}, {1});
    c.outs.push_back(pg);
    c.outs.push_back(pb);
  };
  paramGrad(300, 20, DType::BF16);
  // Rows of whole 16-byte words: 8 columns a thread (264: two blocks, the
  // second partial), 700 rows in 3 slices with odd tails, f16 dy.
  paramGrad(700, 264, DType::F16);
  // bf16 dy and x (GPT-2's), 2 slices of 261 and 260 rows: steps of four
  // rows a thread, then the rows left one at a time.
  paramGrad(521, 16, DType::BF16);
  // 7000 rows: 28 slices, whose final sums (sliceSum) take a thread's
  // four-deep loads once and then its tail.
  paramGrad(7000, 24, DType::BF16);
  cases.push_back(std::move(c));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESROWS_H
