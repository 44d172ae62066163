//===- KernelCasesLayout.h - Data movement and reductions -----------------===//
//
// Layout and data movement (transpose, broadcast_to, slice, gather,
// concat, copy: bit for bit) and the reductions, whose sums run in another
// order on each backend (row chunks, vectorized columns).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESLAYOUT_H
#define TCC_TESTS_UNIT_KERNELCASESLAYOUT_H

#include "KernelCases.h"

namespace tcc::rt::test {

inline void dataMovementCases(std::vector<KernelCase> &cases) {
  KernelCase c{"data_movement"};
  c.rtol = c.atol = 0;
  OneProgram &p = c.prog;
  auto op = [&](const char *k, std::vector<int32_t> in, DType t,
                std::vector<int64_t> shape, std::vector<int64_t> i = {}) {
    c.outs.push_back(p.out(t, shape));
    p.instr(k, in, {c.outs.back()}, i);
  };
  int32_t m = p.random(DType::F32, {37, 45});
  op("transpose", {m}, DType::F32, {45, 37}, {1, 0}); // tiled
  int32_t m3 = p.random(DType::F16, {3, 40, 33});
  op("transpose", {m3}, DType::F16, {3, 33, 40}, {0, 2, 1}); // tiled, batched
  int32_t m4 = p.random(DType::BF16, {2, 3, 4, 5});
  op("transpose", {m4}, DType::BF16, {2, 4, 3, 5}, {0, 2, 1, 3});
  op("transpose", {m4}, DType::BF16, {5, 2, 3, 4}, {3, 0, 1, 2});
  int32_t mi = p.i64({2, 3}, {1, 2, 3, 4, 5, 6});
  op("transpose", {mi}, DType::I64, {3, 2}, {1, 0});
  int32_t col = p.random(DType::F32, {3, 1});
  op("broadcast_to", {col}, DType::F32, {2, 3, 4});
  int32_t s = p.random(DType::F32, {5, 6});
  op("slice", {s}, DType::F32, {2, 3}, {1, 5, 2, -2});
  int32_t sp = p.random(DType::BF16, {5, 6}); // a prefix: one copy
  op("slice", {sp}, DType::BF16, {3, 6}, {0, 0, 1, 1});
  int32_t w = p.random(DType::F32, {2, 3});
  op("slice_grad", {w}, DType::F32, {5, 6}, {1, 5, 2, -2});
  // A prefix window (a padded vocabulary's weight gradient): one copy,
  // then zeros after it.
  int32_t wp = p.random(DType::F32, {3, 6});
  op("slice_grad", {wp}, DType::F32, {5, 6}, {0, 0, 1, 1});
  // A convolution weight's taps (tcc-trim-conv-taps), large enough for
  // the CPU to share the rows over its thread pool: the bottom-right 2x2
  // and the centre tap, and the centre's gradient written back.
  int32_t taps = p.random(DType::F32, {128, 160, 3, 3});
  op("slice", {taps}, DType::F32, {128, 160, 2, 2}, {0, 0, 1, 1, 1, 1, 1, 1});
  int32_t centre = p.random(DType::F32, {128, 160, 1, 1});
  op("slice_grad", {centre}, DType::F32, {128, 160, 3, 3},
     {0, 0, 1, 1, 1, 1, 1, 1});
  int32_t table = p.random(DType::F32, {10, 4});
  int32_t idx = p.i64({2, 3}, {0, 9, -1, 3, 3, 5});
  op("gather", {table, idx}, DType::F32, {2, 3, 4}, {0});
  int32_t idx1 = p.i64({2}, {3, -4});
  op("gather", {table, idx1}, DType::F32, {10, 2}, {1});
  op("concat", {m, m}, DType::F32, {37, 90}, {1});
  op("copy", {mi}, DType::I64, {2, 3});
  cases.push_back(std::move(c));

  KernelCase g{"gather_grad"}; // repeated indices: sums
  OneProgram &q = g.prog;
  int32_t dy = q.random(DType::F32, {2, 3, 4});
  int32_t gi = q.i64({2, 3}, {1, 1, 7, -3, 1, 0});
  g.outs.push_back(q.out(DType::F32, {10, 4}));
  q.instr("gather_grad", {dy, gi}, {g.outs.back()}, {0});
  int32_t dyh = q.random(DType::BF16, {2, 3, 4});
  g.outs.push_back(q.out(DType::BF16, {10, 4}));
  q.instr("gather_grad", {dyh, gi}, {g.outs.back()}, {0});
  cases.push_back(std::move(g));
}

inline void reductionCases(std::vector<KernelCase> &cases) {
  KernelCase c{"reductions"};
  c.rtol = 1e-4;
  c.atol = 2e-4;
  OneProgram &p = c.prog;
  int32_t x = p.random(DType::F32, {4, 5, 6});
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
      axes = {{{0}, {5, 6}}, {{1}, {4, 6}},   {{2}, {4, 5}},
              {{0, 2}, {5}}, {{0, 1, 2}, {}}, {{1, 2}, {4, 1, 1}}};
  for (const auto &[ax, shape] : axes)
    for (const char *k : {"reduce_sum", "reduce_mean"}) {
      c.outs.push_back(p.out(DType::F32, shape));
      p.instr(k, {x}, {c.outs.back()}, ax);
    }
  int32_t wide = p.random(DType::F32, {3, 5000}); // a block per row
  c.outs.push_back(p.out(DType::F32, {3}));
  p.instr("reduce_sum", {wide}, {c.outs.back()}, {1});
  int32_t many = p.random(DType::F32, {300, 7}); // a warp per row
  c.outs.push_back(p.out(DType::F32, {300}));
  p.instr("reduce_mean", {many}, {c.outs.back()}, {1});
  // Column sums over many rows (bias gradients): row chunks with partial
  // sums in the scratch, then added in chunk order; 2100 rows make 8
  // chunks of 263, the last one short.
  int32_t tall = p.random(DType::F32, {2100, 40});
  c.outs.push_back(p.out(DType::F32, {40}));
  p.instr("reduce_sum", {tall}, {c.outs.back()}, {0});
  int32_t tall3 = p.random(DType::F32, {3, 700, 5});
  c.outs.push_back(p.out(DType::F32, {5}));
  p.instr("reduce_mean", {tall3}, {c.outs.back()}, {0, 1});
  // 9000 rows: 35 chunks, whose final sums (sliceSum) take a thread's
  // four-deep loads once and then its tail.
  int32_t taller = p.random(DType::F32, {9000, 40});
  c.outs.push_back(p.out(DType::F32, {40}));
  p.instr("reduce_sum", {taller}, {c.outs.back()}, {0});

  // Leading axes over rows of whole 16-byte words: the vectorized column
  // sums (8 bf16 or 4 f32 columns a thread), with row chunks (2100 rows:
  // 8 of 263, each with a tail shorter than the four-deep loads) and
  // without (37 rows), 776 columns ending inside a block's 256.
  int32_t cols = p.random(DType::F32, {37, 1100});
  c.outs.push_back(p.out(DType::F32, {1100}));
  p.instr("reduce_mean", {cols}, {c.outs.back()}, {0});
  cases.push_back(std::move(c));

  KernelCase h{"reduce_bf16"}; // f32 sums, one rounding
  h.rtol = 1e-2;
  h.atol = 2e-2; // sums of hundreds of bf16 values, rounded to bf16
  int32_t xh = h.prog.random(DType::BF16, {6, 33});
  h.outs.push_back(h.prog.out(DType::BF16, {33}));
  h.prog.instr("reduce_sum", {xh}, {h.outs.back()}, {0});
  int32_t th = h.prog.random(DType::BF16, {2100, 776});
  h.outs.push_back(h.prog.out(DType::F32, {776}));
  h.prog.instr("reduce_sum", {th}, {h.outs.back()}, {0});
  int32_t t3 = h.prog.random(DType::BF16, {3, 700, 48});
  h.outs.push_back(h.prog.out(DType::BF16, {48}));
  h.prog.instr("reduce_mean", {t3}, {h.outs.back()}, {0, 1});
  cases.push_back(std::move(h));

  // The global norm of gradient clipping: inputs of several chunks and of
  // one element, bf16 and f16 ones, and more inputs than one CUDA launch
  // takes (48), so the partial sums of two launches meet in the scratch.
  KernelCase g{"global_norm"};
  g.rtol = 1e-6; // f64 sums on both: only the final rounding may differ
  g.atol = 0;
  std::vector<int32_t> parts = {
      g.prog.random(DType::F32, {3, 70000}), g.prog.random(DType::F32, {}),
      g.prog.random(DType::BF16, {4100}), g.prog.random(DType::F16, {33, 7})};
  for (int64_t i = 0; i < 55; ++i)
    parts.push_back(g.prog.random(DType::F32, {1 + (i * 37) % 300}));
  g.outs.push_back(g.prog.out(DType::F32, {}));
  g.prog.instr("global_norm", parts, {g.outs.back()});
  int32_t one = g.prog.random(DType::F32, {5});
  g.outs.push_back(g.prog.out(DType::F32, {}));
  g.prog.instr("global_norm", {one}, {g.outs.back()});
  cases.push_back(std::move(g));

  // A data-parallel bucket in a one-process run: started and waited for,
  // the gradients are what they were (with several ranks the kernels hand
  // them to the communicator, tests/mpi).
  KernelCase ar{"all_reduce"};
  int32_t ga = ar.prog.random(DType::F32, {3, 5});
  int32_t gb = ar.prog.random(DType::F32, {7});
  ar.prog.instr("all_reduce", {ga, gb}, {}, {4});
  ar.prog.instr("all_reduce_wait", {ga, gb}, {}, {4});
  ar.outs.push_back(ar.prog.out(DType::F32, {3, 5}));
  ar.prog.instr("copy", {ga}, {ar.outs.back()});
  ar.outs.push_back(ar.prog.out(DType::F32, {7}));
  ar.prog.instr("copy", {gb}, {ar.outs.back()});
  cases.push_back(std::move(ar));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESLAYOUT_H
