//===- KernelCasesOptim.h - Optimizer, dropout and step cases -------------===//
//
// The parameter updates (AdamW single and multi-tensor, with shadow
// copies and fp16 loss scaling, and as Adam; SGD with and without
// momentum, Nesterov; Lion; Adafactor), dropout's masks and the step
// counter. The
// learning rate is an operand (an f32 scalar), as the compiler emits it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESOPTIM_H
#define TCC_TESTS_UNIT_KERNELCASESOPTIM_H

#include "KernelCases.h"

namespace tcc::rt::test {

/// Three consecutive AdamW updates (the session makes them one multi-
/// tensor launch) of sizes spanning several blocks, one with another
/// learning rate, SGD and SGD with momentum. Two of the AdamW updates
/// also write the new parameter in bf16 or f16 (tcc-shadow-weights), one
/// in the multi-tensor launch and one alone; the others do not.
inline void optimizerCases(std::vector<KernelCase> &cases) {
  KernelCase c{"optimizers"};
  c.rtol = 1e-6;
  c.atol = 1e-7;
  OneProgram &p = c.prog;
  int32_t step = p.floats(DType::F32, {}, {3.0f});
  int32_t lr3 = p.floats(DType::F32, {}, {1e-3f});
  int32_t lr2 = p.floats(DType::F32, {}, {1e-2f});
  for (int64_t n : {5000, 17, 9000, 100}) {
    int32_t w = p.random(DType::F32, {n}), g = p.random(DType::F32, {n});
    int32_t m = p.random(DType::F32, {n}, -0.1f, 0.1f);
    int32_t v = p.random(DType::F32, {n}, 0.0f, 0.1f);
    int32_t lr = n == 100 ? lr2 : lr3;
    std::vector<int32_t> outs{w, m, v};
    if (n == 5000 || n == 100)
      outs.push_back(p.out(n == 5000 ? DType::BF16 : DType::F16, {n}));
    p.instr("adamw_update", {w, g, m, v, step, lr}, outs, {0},
            {0.9, 0.999, 1e-8, 0.01});
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
    p.instr("adamw_update", {w, g, m, v, step, lr3, inv, p.i64({}, {ok})}, outs,
            {0}, {0.9, 0.999, 1e-8, 0.01});
    c.outs.insert(c.outs.end(), outs.begin(), outs.end());
  }
  // Adam (l2_decay: the decay joins the gradient), alone and two in a row
  // (a multi-tensor launch of their own).
  for (int64_t n : {70, 4500, 33}) {
    int32_t w = p.random(DType::F32, {n}), g = p.random(DType::F32, {n});
    int32_t m = p.random(DType::F32, {n}, -0.1f, 0.1f);
    int32_t v = p.random(DType::F32, {n}, 0.0f, 0.1f);
    p.instr("adamw_update", {w, g, m, v, step, lr2}, {w, m, v}, {1},
            {0.8, 0.99, 1e-6, 0.1});
    c.outs.insert(c.outs.end(), {w, m, v});
  }
  int32_t w = p.random(DType::F32, {50}), g = p.random(DType::F32, {50});
  int32_t buf = p.random(DType::F32, {50});
  int32_t lr1 = p.floats(DType::F32, {}, {0.1f});
  p.instr("sgd_update", {w, g, lr1}, {w}, {}, {0.01});
  p.instr("sgd_momentum_update", {w, g, buf, lr1}, {w, buf}, {0}, {0.9, 0.01});
  int32_t nbuf = p.random(DType::F32, {50});
  p.instr("sgd_momentum_update", {w, g, nbuf, lr1}, {w, nbuf}, {1},
          {0.9, 0.01});
  // Lion, in place and out of place (a zero gradient: the moment alone
  // gives the sign).
  int32_t lm = p.random(DType::F32, {50}, -0.1f, 0.1f);
  p.instr("lion_update", {w, g, lm, lr2}, {w, lm}, {}, {0.9, 0.99, 0.1});
  int32_t lw = p.out(DType::F32, {50}), lm2 = p.out(DType::F32, {50});
  p.instr("lion_update",
          {w, p.floats(DType::F32, {50}, std::vector<float>(50)), lm, lr3},
          {lw, lm2}, {}, {0.5, 0.75, 0.0});
  c.outs.insert(c.outs.end(), {w, buf, nbuf, lm, lw, lm2});
  cases.push_back(std::move(c));

  // Adafactor: factored second moments of a matrix and of a batch of
  // matrices (rank 3), a full one of a vector, in place and out of place,
  // at steps 1 (lerp weight 1) and 3 (weight 0.415: lerp's other branch).
  KernelCase af{"adafactor"};
  af.rtol = 1e-5; // norms and means are summed in another order on CUDA
  af.atol = 1e-7;
  OneProgram &qa = af.prog;
  int32_t lrA = qa.floats(DType::F32, {}, {1e-2f});
  for (float stepValue : {1.0f, 3.0f}) {
    int32_t st = qa.floats(DType::F32, {}, {stepValue});
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{40, 70}, {2, 3, 5}, {33}}) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      int32_t w = qa.random(DType::F32, shape),
              g = qa.random(DType::F32, shape);
      std::vector<int32_t> in = {w, g, st, lrA}, outs = {w};
      std::vector<std::vector<int64_t>> moments = {shape};
      if (shape.size() >= 2) {
        std::vector<int64_t> row = shape, col = shape;
        row.back() = 1;
        col[col.size() - 2] = 1;
        moments = {row, col};
      }
      for (const auto &m : moments) {
        in.push_back(qa.random(DType::F32, m, 0.0f, 0.01f));
        outs.push_back(stepValue == 1.0f ? in.back() : qa.out(DType::F32, m));
      }
      if (stepValue == 3.0f)
        outs[0] = qa.out(DType::F32, shape);
      qa.instr("adafactor_update", in, outs, {},
               {-0.8, 1.1920929e-07, 1e-3, 1.0, n == 33 ? 0.0 : 0.1});
      af.outs.insert(af.outs.end(), outs.begin(), outs.end());
    }
  }
  cases.push_back(std::move(af));

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

  // tcc.random: uniform and normal (Box-Muller in double; a GPU's log and
  // cos may differ from libm's in the last double bit, hence 1e-6).
  KernelCase r{"random"};
  r.rtol = r.atol = 1e-6;
  OneProgram &rp = r.prog;
  int32_t rs = rp.i64({}, {5});
  int32_t ru = rp.out(DType::F32, {3, 333}), rn = rp.out(DType::F32, {999});
  rp.instr("random", {rs}, {ru}, {-4, 0}, {-1.0, 2.0});
  rp.instr("random", {rs}, {rn}, {12, 1}, {0.5, 3.0});
  r.outs = {ru, rn};
  cases.push_back(std::move(r));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESOPTIM_H
