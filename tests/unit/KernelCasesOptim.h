//===- KernelCasesOptim.h - Optimizer, dropout and step cases -------------===//
//
// The parameter updates (AdamW single and multi-tensor, with shadow
// copies and fp16 loss scaling; SGD with and without momentum), dropout's
// masks and the step counter.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESOPTIM_H
#define TCC_TESTS_UNIT_KERNELCASESOPTIM_H

#include "KernelCases.h"

namespace tcc::rt::test {

/// Three consecutive AdamW updates (the session makes them one multi-
/// tensor launch) of sizes spanning several blocks, one with other
/// hyper-parameters, SGD and SGD with momentum. Two of the AdamW updates
/// also write the new parameter in bf16 or f16 (tcc-shadow-weights), one
/// in the multi-tensor launch and one alone; the others do not.
inline void optimizerCases(std::vector<KernelCase> &cases) {
  KernelCase c{"optimizers"};
  c.rtol = 1e-6;
  c.atol = 1e-7;
  OneProgram &p = c.prog;
  int32_t step = p.floats(DType::F32, {}, {3.0f});
  for (int64_t n : {5000, 17, 9000, 100}) {
    int32_t w = p.random(DType::F32, {n}), g = p.random(DType::F32, {n});
    int32_t m = p.random(DType::F32, {n}, -0.1f, 0.1f);
    int32_t v = p.random(DType::F32, {n}, 0.0f, 0.1f);
    double lr = n == 100 ? 0.01 : 1e-3;
    std::vector<int32_t> outs{w, m, v};
    if (n == 5000 || n == 100)
      outs.push_back(p.out(n == 5000 ? DType::BF16 : DType::F16, {n}));
    p.instr("adamw_update", {w, g, m, v, step}, outs, {},
            {lr, 0.9, 0.999, 1e-8, 0.01});
    c.outs.insert(c.outs.end(), outs.begin(), outs.end());
  }
  // fp16 loss scaling inside AdamW: a finite step unscales its gradient (in
  // place, with an f16 copy), a skipped one changes nothing (out of place:
  // the old values; the copy is the old parameter's rounding).
  int32_t inv = p.floats(DType::F32, {}, {1.0f / 1024});
  for (int64_t ok : {1, 0}) {
    int32_t w = p.random(DType::F32, {300});
    int32_t g = p.random(DType::F32, {300}, -500.0f, 500.0f);
    int32_t m = p.random(DType::F32, {300}, -0.1f, 0.1f);
    int32_t v = p.random(DType::F32, {300}, 0.0f, 0.1f);
    std::vector<int32_t> outs{w, m, v};
    if (!ok)
      outs = {p.out(DType::F32, {300}), p.out(DType::F32, {300}),
              p.out(DType::F32, {300})};
    outs.push_back(p.out(ok ? DType::F16 : DType::BF16, {300}));
    p.instr("adamw_update", {w, g, m, v, step, inv, p.i64({}, {ok})}, outs, {},
            {1e-3, 0.9, 0.999, 1e-8, 0.01});
    c.outs.insert(c.outs.end(), outs.begin(), outs.end());
  }
  int32_t w = p.random(DType::F32, {50}), g = p.random(DType::F32, {50});
  int32_t buf = p.random(DType::F32, {50});
  p.instr("sgd_update", {w, g}, {w}, {}, {0.1, 0.01});
  p.instr("sgd_momentum_update", {w, g, buf}, {w, buf}, {}, {0.1, 0.9, 0.01});
  c.outs.insert(c.outs.end(), {w, buf});
  cases.push_back(std::move(c));

  KernelCase d{"dropout_increment"}; // masks bit for bit
  d.rtol = d.atol = 0;
  OneProgram &q = d.prog;
  int32_t x = q.random(DType::F32, {1000});
  int32_t st = q.i64({}, {7});
  int32_t y = q.out(DType::F32, {1000}), mask = q.out(DType::F32, {1000});
  q.instr("dropout", {x, st}, {y, mask}, {99}, {0.3});
  int32_t next = q.out(DType::I64, {});
  q.instr("increment", {st}, {next});
  d.outs = {y, mask, next};
  cases.push_back(std::move(d));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESOPTIM_H
