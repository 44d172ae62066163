//===- CudaKernelCases.h - Programs that exercise every CUDA kernel -------===//
//
// One list of small programs over random state tensors, run by two tests:
// CudaKernelsTest.cpp on a GPU (CudaSession) and CudaKernelEmuTest.cpp on
// the CPU threads of the emulator (no GPU needed). Both compare the listed
// outputs with the CPU kernels: data movement, casts and dropout masks bit
// for bit, arithmetic within a tolerance for the math functions' last bits,
// the order of reductions and 16-bit rounding. (matmul is cuBLASLt's and
// is tested on the GPU only, in CudaKernelsTest.cpp; matmul_epilogue's
// cases run its cuBLASLt epilogues there and its fallback in the emulator.)
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAKERNELCASES_H
#define TCC_TESTS_UNIT_CUDAKERNELCASES_H

#include "CudaTestUtil.h"

#include "runtime/core/AttentionColumnSums.h"
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/cuda/CudaAttention.h"

#include <algorithm>
#include <cstring>

namespace tcc::rt::test {

struct KernelCase {
  explicit KernelCase(std::string n) : name(std::move(n)) {}
  std::string name;
  OneProgram prog;
  std::vector<int32_t> outs;
  double rtol = -1, atol = -1; // < 0: by each output's dtype
  /// Outputs that are f32 sums of many 16-bit values (attention_grad's
  /// column sums): the GPU's and the CPU's 16-bit terms each differ by
  /// their roundings, so the sums differ by about sqrt(rows) of those.
  std::vector<int32_t> sumsOf16Bit;
  /// The tiled attention kernels' rows per warp for this case (16 or 32,
  /// as TCC_CUDA_ATTENTION_WARP_ROWS), 0: the environment's.
  int attentionWarpRows = 0;
  /// And how they copy tiles (TCC_CUDA_ATTENTION_COPY).
  cuda::TileCopies attentionCopies = cuda::TileCopies::Environment;
  /// And how they multiply them (TCC_CUDA_ATTENTION_MMA).
  cuda::TileProducts attentionProducts = cuda::TileProducts::Environment;
};

/// A test's choice for one of the tiled attention's settings while in
/// scope (`Set(value)`, then `Set(Unset)`: as the environment says again):
/// a case's setting, not the next one's.
template <class T, void (*Set)(T), T Unset> struct SettingScope {
  explicit SettingScope(T value) { Set(value); }
  ~SettingScope() { Set(Unset); }
  SettingScope(const SettingScope &) = delete;
  SettingScope &operator=(const SettingScope &) = delete;
};

/// Warps of `rows` rows (0: as the environment says).
using AttentionWarpRowsScope =
    SettingScope<int, cuda::setTiledAttentionWarpRows, 0>;
/// How the kernels copy their tiles.
using AttentionCopiesScope =
    SettingScope<cuda::TileCopies, cuda::setTiledAttentionCopies,
                 cuda::TileCopies::Environment>;

/// How the kernels multiply their tiles.
using AttentionProductsScope =
    SettingScope<cuda::TileProducts, cuda::setTiledAttentionProducts,
                 cuda::TileProducts::Environment>;

/// All of a case's settings.
struct CaseScope {
  explicit CaseScope(const KernelCase &c)
      : rows(c.attentionWarpRows), copies(c.attentionCopies),
        products(c.attentionProducts) {}
  AttentionWarpRowsScope rows;
  AttentionCopiesScope copies;
  AttentionProductsScope products;
};

inline double rtolFor(DType t) {
  return t == DType::BF16 ? 1e-2 : t == DType::F16 ? 2e-3 : 2e-5;
}
inline double atolFor(DType t) {
  return t == DType::BF16 ? 1e-2 : t == DType::F16 ? 2e-3 : 1e-5;
}

/// Compares the case's outputs in `got` with the CPU kernels' results.
inline void compareCase(const KernelCase &c,
                        const std::vector<std::vector<uint8_t>> &got) {
  auto cpu = c.prog.runCpu();
  for (int32_t id : c.outs) {
    DType t = c.prog.info(id).dtype;
    if (std::find(c.sumsOf16Bit.begin(), c.sumsOf16Bit.end(), id) !=
        c.sumsOf16Bit.end())
      expectClose(c.prog, cpu, got, id, 1e-2, 3e-2);
    else
      expectClose(c.prog, cpu, got, id, c.rtol >= 0 ? c.rtol : rtolFor(t),
                  c.atol >= 0 ? c.atol : atolFor(t));
  }
}

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
  p.instr("equal", {e1, e2}, {c.outs.back()});
  c.outs.push_back(p.out(DType::I64, {2, 1, 4}));
  p.instr("equal", {cond, xi}, {c.outs.back()});
  cases.push_back(std::move(c));
}

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
}

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
  p.instr("softmax_cross_entropy", {logits, labels}, {c.outs.back()});
  c.outs.push_back(p.out(DType::F32, {8, 11}));
  p.instr("softmax_cross_entropy_grad", {dloss, logits, labels},
          {c.outs.back()});
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

/// matmul_epilogue: every epilogue (runtime/core/abi/GemmEpilogue.h) per dtype.
/// On a GPU one cuBLASLt call each (a pre-activation row of 20 elements is
/// not one cuBLASLt takes: that one runs the fallback); in the emulator the
/// GEMM is the CPU's and the fallback kernels run emulated. 16-bit results
/// differ from the CPU's by the fallback's extra rounding of the product.
/// A weight-gradient GEMM with its bias gradient (epilogue `name`,
/// bgrad_lhs or bgrad_rhs) over `rows` rows of `ab` operands, f32 out:
/// [rows, 24]^T x [rows, 16] (bgrad_lhs: D [24, 16], sum [24]) or
/// [rows, 16]^T x [rows, 24] (bgrad_rhs: D [16, 24], sum [24]).
inline void weightGradGemm(OneProgram &p, DType ab, int64_t rows,
                           const char *name, std::vector<int32_t> &outs) {
  const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
  bool lhs = e.bgrad == GemmBiasGrad::Lhs;
  int32_t a = p.random(ab, {rows, lhs ? 24 : 16}, -1, 1);
  int32_t b = p.random(ab, {rows, lhs ? 16 : 24}, -1, 1);
  std::vector<int32_t> out{
      p.out(DType::F32,
            lhs ? std::vector<int64_t>{24, 16} : std::vector<int64_t>{16, 24}),
      p.out(DType::F32, {24})};
  p.instr("matmul_epilogue", {a, b}, out, {1, 0, e.code});
  outs.insert(outs.end(), out.begin(), out.end());
}

inline void gemmEpilogueCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    KernelCase c{std::string("matmul_epilogue_") + dtypeName(t)};
    if (t != DType::F32)
      c.rtol = c.atol = 3 * rtolFor(t);
    else
      c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    for (const GemmEpilogueInfo &e : kGemmEpilogues) {
      bool rows = e.rowsFlatten();
      for (int64_t n : {24, 20}) {
        if (n == 20 && !e.preactOut && e.act != GemmAct::DgeluTanh)
          continue;
        // Forward/dgelu: [2, 9, 13] x [n, 13]^T. Bias gradients: a weight
        // gradient [37, 16]^T x [37, n] (bgrad_rhs) or [37, n]^T x [37, 16]
        // (bgrad_lhs, whose D is [n, 16]).
        std::vector<int64_t> as = rows ? std::vector<int64_t>{2, 9, 13}
                                       : std::vector<int64_t>{37, 16};
        std::vector<int64_t> bs =
            rows ? std::vector<int64_t>{n, 13} : std::vector<int64_t>{37, n};
        if (e.bgrad == GemmBiasGrad::Lhs)
          std::swap(as, bs);
        std::vector<int64_t> ds = rows ? std::vector<int64_t>{2, 9, n}
                                  : e.bgrad == GemmBiasGrad::Lhs
                                      ? std::vector<int64_t>{n, 16}
                                      : std::vector<int64_t>{16, n};
        int32_t a = p.random(t, as, -1, 1), b = p.random(t, bs, -1, 1);
        std::vector<int32_t> in{a, b};
        if (e.bias)
          in.push_back(p.random(t, {n}));
        if (e.act == GemmAct::DgeluTanh)
          in.push_back(p.random(t, ds));
        std::vector<int32_t> out{p.out(t, ds)};
        if (e.preactOut)
          out.push_back(p.out(t, ds));
        else if (e.bgrad != GemmBiasGrad::None) // f32, as the compiler makes
          out.push_back(p.out(
              DType::F32, {e.bgrad == GemmBiasGrad::Lhs ? ds[0] : ds.back()}));
        p.instr("matmul_epilogue", in, out,
                {rows ? 0 : 1, rows ? 1 : 0, e.code});
        c.outs.insert(c.outs.end(), out.begin(), out.end());
      }
    }
    cases.push_back(std::move(c));
  }
  // Weight gradients in f32 from 16-bit operands (tcc-mixed-precision's):
  // D and the bias gradient f32. cuBLASLt's BGRAD epilogues or, where it
  // declines, a plain 16-bit-in f32-out GEMM and the sum of the operand. D
  // is the f32 accumulator on both sides, so the tolerance is f32's (no
  // 16-bit rounding of D).
  for (DType t : {DType::BF16, DType::F16}) {
    KernelCase c{std::string("matmul_epilogue_") + dtypeName(t) + "_f32out"};
    c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    for (const char *name : {"bgrad_lhs", "bgrad_rhs"})
      weightGradGemm(p, t, 37, name, c.outs);
    cases.push_back(std::move(c));
  }
  // Bias gradients that the GEMM sums by a line of ones (onesLineFor: the
  // summed operand is large beside the other one and D): D [300, n] and its
  // 300 sums by bgrad_lhs, D [n, 300] and 300 by bgrad_rhs, over 200 rows,
  // with the other operand as stored and transposed (the line is a column
  // of op(B) or a row of op(A): a row or a column of what is stored) and n
  // 8 or 5 (16-byte vectors, or words, in the copies), f32 and 16-bit in
  // (f32 out, as tcc-mixed-precision makes).
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("matmul_epilogue_ones_line_") + dtypeName(t)};
    c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    for (const char *name : {"bgrad_lhs", "bgrad_rhs"})
      for (auto [otherTransposed, n] :
           {std::pair<bool, int64_t>{false, 8}, {true, 8}, {false, 5}}) {
        const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
        bool lhs = e.bgrad == GemmBiasGrad::Lhs;
        // lhs: op(A) = A^T [300, 200] summed, op(B) [200, n];
        // rhs: op(A) [n, 200], op(B) = B [200, 300] summed.
        bool ta = lhs || otherTransposed, tb = lhs && otherTransposed;
        std::vector<int64_t> narrow = otherTransposed == lhs
                                          ? std::vector<int64_t>{n, 200}
                                          : std::vector<int64_t>{200, n};
        std::vector<int64_t> wide{200, 300};
        int32_t a = p.random(t, lhs ? wide : narrow, -1, 1),
                b = p.random(t, lhs ? narrow : wide, -1, 1);
        std::vector<int32_t> out{
            p.out(DType::F32, lhs ? std::vector<int64_t>{300, n}
                                  : std::vector<int64_t>{n, 300}),
            p.out(DType::F32, {300})};
        p.instr("matmul_epilogue", {a, b}, out,
                {ta ? 1 : 0, tb ? 1 : 0, e.code});
        c.outs.insert(c.outs.end(), out.begin(), out.end());
      }
    cases.push_back(std::move(c));
  }
  // Bias gradients over 600 rows: the column sum (the fallback's, and the
  // GPU's DGELU-then-sum) splits them into row chunks whose partial sums
  // live in the instr's scratch.
  KernelCase c{"matmul_epilogue_long_sums"};
  c.rtol = c.atol = 1e-4;
  OneProgram &p = c.prog;
  for (const char *name : {"dgelu_tanh_bgrad", "bgrad_lhs", "bgrad_rhs"}) {
    const GemmEpilogueInfo &e = *gemmEpilogueByName(name);
    if (e.bgrad == GemmBiasGrad::Out) { // [600, 13] x [24, 13]^T
      int32_t a = p.random(DType::F32, {600, 13}, -1, 1);
      int32_t b = p.random(DType::F32, {24, 13}, -1, 1);
      int32_t pre = p.random(DType::F32, {600, 24});
      std::vector<int32_t> out{p.out(DType::F32, {600, 24}),
                               p.out(DType::F32, {24})};
      p.instr("matmul_epilogue", {a, b, pre}, out, {0, 1, e.code});
      c.outs.insert(c.outs.end(), out.begin(), out.end());
      continue;
    }
    weightGradGemm(p, DType::F32, 600, name, c.outs);
  }
  cases.push_back(std::move(c));
}

/// attention -> attention_grad of q [batch.., tq, d], k [.., tk, d], v
/// [.., tk, dv] in type t (an f32 mask of shape `mask` unless empty, with
/// some -inf, never on key 0: no row is all -inf); appends out, lse, dq, dk, dv
/// to `outs`. heads > 0: sequence-major, q [batch.., tq, heads, d] and so on,
/// lse [batch.., heads, tq]. fusedQkv (heads > 0, tq = tk, d = dv): q, k
/// and v are one random [batch.., tq, 3 * heads, d] projection and the
/// gradient is one tensor of that shape; with columnSums, followed by its
/// column sums (f32 [3 * heads * d]).
inline void attentionPair(OneProgram &p, DType t, std::vector<int64_t> batch,
                          int64_t tq, int64_t tk, int64_t d, int64_t dv,
                          std::vector<int64_t> mask, bool causal,
                          std::vector<int32_t> &outs, int64_t heads = 0,
                          bool fusedQkv = false, bool columnSums = false) {
  auto sh = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> s = batch;
    if (heads > 0)
      s.insert(s.end(), {rows, heads, cols});
    else
      s.insert(s.end(), {rows, cols});
    return s;
  };
  std::vector<int32_t> in;
  if (fusedQkv) {
    std::vector<int64_t> s = batch;
    s.insert(s.end(), {tq, 3 * heads, d});
    in.assign(3, p.random(t, s, -1, 1));
  } else {
    in = {p.random(t, sh(tq, d), -1, 1), p.random(t, sh(tk, d), -1, 1),
          p.random(t, sh(tk, dv))};
  }
  int32_t dout = p.random(t, sh(tq, dv));
  int32_t m = -1;
  if (!mask.empty()) {
    int64_t n = 1;
    for (int64_t x : mask)
      n *= x;
    std::vector<float> v(static_cast<size_t>(n));
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < n; ++i)
      v[i] = mask.back() > 1 && i % 3 == 1 && i % mask.back() != 0
                 ? -INFINITY // never key 0, which every causal row sees
                 : u(rng);
    m = p.floats(DType::F32, mask, v);
  }
  std::vector<int64_t> lseShape = batch;
  if (heads > 0)
    lseShape.push_back(heads);
  lseShape.push_back(tq);
  int32_t out = p.out(t, sh(tq, dv)), lse = p.out(DType::F32, lseShape);
  // fused_qkv: one gradient, the projection's.
  std::vector<int32_t> grads =
      fusedQkv ? std::vector<int32_t>{p.out(t, p.info(in[0]).shape)}
               : std::vector<int32_t>{p.out(t, sh(tq, d)), p.out(t, sh(tk, d)),
                                      p.out(t, sh(tk, dv))};
  if (columnSums)
    grads.push_back(p.out(DType::F32, {3 * heads * d}));
  double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<int32_t> fin = in, gin = in;
  gin.insert(gin.end(), {out, lse, dout});
  if (m >= 0) {
    fin.push_back(m);
    gin.push_back(m);
  }
  std::vector<int64_t> attrs = {causal ? 1 : 0, heads > 0 ? 1 : 0,
                                fusedQkv ? 1 : 0};
  p.instr("attention", fin, {out, lse}, attrs, {scale});
  p.instr("attention_grad", gin, grads, attrs, {scale});
  outs.insert(outs.end(), {out, lse});
  outs.insert(outs.end(), grads.begin(), grads.end());
}

/// Expects the f32 column sums `sums` of a fused-QKV attention_grad to be
/// bit for bit runtime/core/AttentionColumnSums.h's sums of the bf16
/// gradient `g` ([outer.., T, 3H, D]) the same run wrote (`got`).
inline void
expectColumnSumsInOrder(const OneProgram &p,
                        const std::vector<std::vector<uint8_t>> &got, int32_t g,
                        int32_t sums) {
  const TensorInfo &gi = p.info(g);
  ASSERT_EQ(gi.dtype, DType::BF16);
  const int64_t tlen = gi.shape[gi.shape.size() - 3];
  const int64_t cols = gi.shape[gi.shape.size() - 2] * gi.shape.back();
  const int64_t outer = gi.numElements() / cols / tlen;
  const int64_t tiles = attentionSumTiles(tlen), slices = outer * tiles;
  const auto *bits = reinterpret_cast<const uint16_t *>(got[g].data());
  std::vector<float> parts(static_cast<size_t>(slices * cols));
  for (int64_t s = 0; s < slices; ++s) {
    int64_t b = s / tiles, i0 = (s % tiles) * kAttentionSumRows;
    int64_t n = std::min(kAttentionSumRows, tlen - i0);
    for (int64_t c = 0; c < cols; ++c)
      parts[s * cols + c] = attentionSliceSum(
          [&](int64_t r) {
            return bf16ToF32(bits[(b * tlen + i0 + r) * cols + c]);
          },
          n);
  }
  for (int64_t c = 0; c < cols; ++c) {
    float want = attentionSlicesTotal(
        [&](int64_t s) { return parts[s * cols + c]; }, slices);
    float have;
    std::memcpy(&have, got[sums].data() + c * sizeof(float), sizeof(float));
    EXPECT_EQ(std::memcmp(&have, &want, sizeof(float)), 0)
        << "tensor " << p.info(sums).name << " column " << c << ": " << have
        << " against " << want;
  }
}

/// attention and attention_grad (CudaAttention.h; in the emulator with a
/// host GEMM): no mask, causal with a shared mask, a rank-2 mask with
/// Tq < Tk, and rows of 300 keys (block rows) with a per-entry mask that
/// broadcasts over rows. 16-bit dS differs from the CPU's by the rounding
/// of the P it is computed from (the GPU keeps only the rounded P).
/// Sequence-major: nn.MultiheadAttention's [T, N * H, D] (no outer dims)
/// with a per-entry mask, and [B, T, H, D] causal with Tq < Tk.
inline void attentionCases(std::vector<KernelCase> &cases) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("attention_") + dtypeName(t)};
    if (t == DType::F32)
      c.rtol = c.atol = 1e-4; // f32 GEMMs and sums in another order
    OneProgram &p = c.prog;
    attentionPair(p, t, {2, 3}, 5, 7, 8, 6, {}, false, c.outs);
    attentionPair(p, t, {2, 3}, 7, 7, 8, 8, {1, 1, 7, 7}, true, c.outs);
    attentionPair(p, t, {4}, 5, 7, 4, 4, {5, 7}, true, c.outs);
    attentionPair(p, t, {2, 3}, 4, 300, 8, 8, {2, 3, 1, 300}, false, c.outs);
    cases.push_back(std::move(c));
  }
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c{std::string("attention_seq_major_") + dtypeName(t)};
    if (t == DType::F32)
      c.rtol = c.atol = 1e-4;
    OneProgram &p = c.prog;
    attentionPair(p, t, {}, 5, 7, 8, 6, {6, 5, 7}, false, c.outs, 6);
    attentionPair(p, t, {2}, 5, 9, 8, 4, {}, true, c.outs, 3);
    attentionPair(p, t, {2}, 4, 300, 8, 8, {2, 3, 1, 300}, false, c.outs, 3);
    attentionPair(p, t, {2}, 9, 9, 8, 8, {2, 3, 9, 9}, true, c.outs, 3, true);
    attentionPair(p, t, {3}, 70, 70, 8, 8, {}, true, c.outs, 2, true, true);
    if (t != DType::F32)
      c.sumsOf16Bit.push_back(c.outs.back());
    cases.push_back(std::move(c));
  }
  // The tiled kernels (16-bit, D 16, 32, 64, 80, 96 or 128): the tails of
  // 64-row tiles, whole tiles, causal tiles above and below the diagonal with
  // Tq < Tk and Tq > Tk, masks of each broadcast, both layouts; D 48 takes the
  // chunk loop. Each with warps of 16 rows (64-row blocks) and of 32 (128-row
  // blocks where the head dim has them: TCC_CUDA_ATTENTION_WARP_ROWS). And
  // with tensor copies (TCC_CUDA_ATTENTION_COPY=tma; the kernels of 16-row
  // warps, so with 32 rows those of the head dims that keep 16), and with
  // warpgroup products (TCC_CUDA_ATTENTION_MMA=wgmma: head dim 64, 16-row
  // warps; the rest as before), in both 16-bit types.
  for (int way : {0, 1, 2}) // cp.async, tensor copies, wgmma
    for (int rows : {16, 32})
      for (DType t : {DType::BF16, DType::F16}) {
        if ((way == 1 && t == DType::F16) || (way == 2 && rows == 32))
          continue; // the copies do not depend on the dtype
        KernelCase c{std::string("attention_tiled_") + dtypeName(t) +
                     (rows == 32 ? "_warp_rows_32" : "") +
                     (way == 1   ? "_tma"
                      : way == 2 ? "_wgmma"
                                 : "")};
        c.attentionWarpRows = rows;
        c.attentionCopies =
            way == 1 ? cuda::TileCopies::Tma : cuda::TileCopies::Async;
        c.attentionProducts =
            way == 2 ? cuda::TileProducts::Wgmma : cuda::TileProducts::Sync;
        OneProgram &p = c.prog;
        attentionPair(p, t, {2}, 70, 130, 32, 32, {}, true, c.outs);
        attentionPair(p, t, {3}, 130, 70, 16, 16, {3, 130, 70}, true, c.outs);
        attentionPair(p, t, {}, 65, 65, 64, 64, {1, 65}, false, c.outs, 2);
        attentionPair(p, t, {2}, 40, 20, 48, 48, {2, 3, 40, 1}, true, c.outs,
                      3);
        attentionPair(p, t, {1}, 20, 40, 128, 128, {20, 40}, false, c.outs);
        attentionPair(p, t, {2}, 70, 70, 80, 80, {}, true, c.outs);
        attentionPair(p, t, {}, 33, 90, 96, 96, {2, 1, 90}, false, c.outs, 2);
        // q, k and v inside one fused QKV projection (GPT-2's layout),
        // with and without the projection's column sums.
        attentionPair(p, t, {2}, 70, 70, 64, 64, {}, true, c.outs, 3, true,
                      true);
        c.sumsOf16Bit.push_back(c.outs.back());
        attentionPair(p, t, {}, 65, 65, 32, 32, {1, 65}, false, c.outs, 2,
                      true);
        attentionPair(p, t, {}, 130, 130, 16, 16, {}, true, c.outs, 2, true,
                      true);
        c.sumsOf16Bit.push_back(c.outs.back());
        // Whole tiles without a mask, below the diagonal or not causal: the
        // kernels' plain-score path (no per-score tests).
        attentionPair(p, t, {1}, 192, 192, 16, 16, {}, true, c.outs);
        attentionPair(p, t, {2}, 64, 128, 16, 16, {}, false, c.outs);
        // The tails of 128-row tiles: causal with a second block that ends
        // inside the last key step (200), Tq > Tk and Tq < Tk across 128-row
        // tiles, whole 128-row tiles on the plain path (256), the head dims
        // whose kernels take 32 rows a warp for some kernels only (80, 96),
        // and T < 128 with a mask per entry.
        attentionPair(p, t, {}, 200, 200, 64, 64, {}, true, c.outs, 2);
        attentionPair(p, t, {1}, 260, 150, 80, 80, {}, true, c.outs);
        attentionPair(p, t, {1}, 150, 260, 16, 16, {}, true, c.outs);
        attentionPair(p, t, {1}, 256, 256, 32, 32, {}, true, c.outs);
        attentionPair(p, t, {}, 130, 130, 96, 96, {1, 130}, false, c.outs, 2);
        attentionPair(p, t, {2}, 100, 90, 32, 32, {2, 100, 90}, false, c.outs);
        cases.push_back(std::move(c));
      }
}

/// A tiled attention launch of GPT-2 small's shape (12 heads of 64, T 1024,
/// q, k and v the thirds of one projection) over `batch` entries, its
/// operands 16-byte aligned (a static buffer; nothing is read): what the
/// launchers' choices of copies and products are asked about.
inline cuda::AttentionTiles gpt2AttentionTiles(long long batch = 24) {
  alignas(16) static unsigned short buf[64];
  cuda::AttentionTiles t;
  t.q = buf;
  t.k = buf + 8;
  t.v = buf + 16;
  t.dout = buf + 24;
  t.d = 64;
  t.heads = 12;
  t.batch = batch;
  t.tq = t.tk = 1024;
  t.inputPitch = 3 * 12 * 64;
  return t;
}

/// Every case above.
inline std::vector<KernelCase> kernelCases() {
  std::vector<KernelCase> cases;
  unaryCases(cases);
  binaryCases(cases);
  castWhereEqualCases(cases);
  dataMovementCases(cases);
  reductionCases(cases);
  softmaxLossCases(cases);
  layerNormCases(cases);
  optimizerCases(cases);
  gemmEpilogueCases(cases);
  attentionCases(cases);
  return cases;
}

/// The case names, for parameterized tests.
inline std::vector<std::string> kernelCaseNames() {
  std::vector<std::string> names;
  for (const KernelCase &c : kernelCases())
    names.push_back(c.name);
  return names;
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_CUDAKERNELCASES_H
