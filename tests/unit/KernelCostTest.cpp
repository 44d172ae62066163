//===- KernelCostTest.cpp - Bytes and FLOPs a profile divides by ----------===//
#include "runtime/core/KernelCost.h"

#include <gtest/gtest.h>

using namespace tcc::rt;

namespace {
struct Tensors {
  std::vector<TensorInfo> t;
  int32_t add(std::vector<int64_t> shape, DType dt = DType::F32,
              TensorKind kind = TensorKind::Temp, int64_t offset = -1) {
    TensorInfo x;
    x.name = "t" + std::to_string(t.size());
    x.shape = std::move(shape);
    x.dtype = dt;
    x.kind = kind;
    if (kind == TensorKind::Temp) {
      x.program = "p";
      x.arenaOffset = offset;
    }
    t.push_back(x);
    return static_cast<int32_t>(t.size() - 1);
  }
};
} // namespace

TEST(KernelCost, GemmCountsTwoMnkPerProductAndEachOperandOnce) {
  Tensors s;
  // A [2, 8, 16] x B [16, 4]: 2 products of 8 x 4 over K = 16.
  int32_t a = s.add({2, 8, 16}), b = s.add({16, 4}), c = s.add({2, 8, 4});
  KernelCost k = kernelCost({"matmul", {a, b}, {c}, {0, 0}, {}}, s.t, true);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 2 * 8 * 4 * 16);
  EXPECT_EQ(k.bytes, (2 * 8 * 16 + 16 * 4 + 2 * 8 * 4) * 4);
  // Transposed A [K, M] = [16, 8]: K is its first axis; bf16 operands.
  int32_t at = s.add({16, 8}, DType::BF16), bt = s.add({16, 4}, DType::BF16);
  int32_t d = s.add({8, 4});
  k = kernelCost({"matmul", {at, bt}, {d}, {1, 0}, {}}, s.t, true);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 8 * 4 * 16);
  EXPECT_EQ(k.bytes, 16 * 8 * 2 + 16 * 4 * 2 + 8 * 4 * 4);
  // x * x^T reads x once.
  int32_t sq = s.add({8, 8});
  k = kernelCost({"matmul", {d, d}, {sq}, {0, 1}, {}}, s.t, true);
  EXPECT_EQ(k.bytes, (8 * 4 + 8 * 8) * 4);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 8 * 8 * 4);
  // A weight gradient with its bias gradient (bgrad epilogue, code 8): the
  // product is the first output.
  int32_t x = s.add({32, 16}), g = s.add({32, 4}), dw = s.add({16, 4}),
          db = s.add({4});
  k = kernelCost({"matmul_epilogue", {x, g}, {dw, db}, {1, 0, 8}, {}}, s.t,
                 true);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 16 * 4 * 32);
  EXPECT_EQ(k.bytes, (32 * 16 + 32 * 4 + 16 * 4 + 4) * 4);
}

TEST(KernelCost, AttentionCountsTheKeysACausalOneKeeps) {
  Tensors s;
  // Sequence-major [B 2, T 8, H 3, D 4]: 6 entries of 8 x 8 scores.
  int32_t q = s.add({2, 8, 3, 4}, DType::BF16),
          k = s.add({2, 8, 3, 4}, DType::BF16),
          v = s.add({2, 8, 3, 4}, DType::BF16),
          o = s.add({2, 8, 3, 4}, DType::BF16), lse = s.add({2, 3, 8});
  KernelCost full =
      kernelCost({"attention", {q, k, v}, {o, lse}, {0, 1}, {0.5}}, s.t, true);
  EXPECT_DOUBLE_EQ(full.flops, 2.0 * 6 * 8 * 8 * (4 + 4));
  KernelCost causal =
      kernelCost({"attention", {q, k, v}, {o, lse}, {1, 1}, {0.5}}, s.t, true);
  EXPECT_DOUBLE_EQ(causal.flops, 2.0 * 6 * (8 * 9 / 2) * (4 + 4));
  // The backward: S again, dP, dV, dQ, dK.
  int32_t dq = s.add({2, 8, 3, 4}, DType::BF16),
          dk = s.add({2, 8, 3, 4}, DType::BF16),
          dv = s.add({2, 8, 3, 4}, DType::BF16);
  KernelCost back = kernelCost(
      {"attention_grad", {q, k, v, o, lse, o}, {dq, dk, dv}, {1, 1}, {0.5}},
      s.t, true);
  EXPECT_DOUBLE_EQ(back.flops, 2.0 * 6 * (8 * 9 / 2) * (3 * 4 + 2 * 4));
  EXPECT_EQ(back.bytes, 7 * (2 * 8 * 3 * 4 * 2) + 2 * 3 * 8 * 4);
  // More queries than keys: the rows past the keys keep all of them.
  int32_t q2 = s.add({1, 6, 4}), k2 = s.add({1, 3, 4}), v2 = s.add({1, 3, 4}),
          o2 = s.add({1, 6, 4}), l2 = s.add({1, 6});
  KernelCost tall = kernelCost(
      {"attention", {q2, k2, v2}, {o2, l2}, {1, 0}, {0.5}}, s.t, true);
  EXPECT_DOUBLE_EQ(tall.flops, 2.0 * (1 + 2 + 3 + 3 + 3 + 3) * (4 + 4));
}

TEST(KernelCost, ConvolutionsCountTheirWindows) {
  Tensors s;
  // x [2, 6, 9, 9], w [4, 3, 3, 3] (2 groups), y [2, 4, 7, 7].
  int32_t x = s.add({2, 6, 9, 9}), w = s.add({4, 3, 3, 3}),
          y = s.add({2, 4, 7, 7});
  std::vector<int64_t> attrs = {1, 1, 0, 0, 0, 0, 1, 1, 2};
  double want = 2.0 * (2 * 4 * 7 * 7) * (3 * 3 * 3);
  EXPECT_DOUBLE_EQ(
      kernelCost({"conv2d", {x, w}, {y}, attrs, {}}, s.t, true).flops, want);
  EXPECT_DOUBLE_EQ(
      kernelCost({"conv2d_grad_input", {y, w}, {x}, attrs, {}}, s.t, true)
          .flops,
      want);
  EXPECT_DOUBLE_EQ(
      kernelCost({"conv2d_grad_weight", {y, x}, {w}, attrs, {}}, s.t, true)
          .flops,
      want);
}

TEST(KernelCost, ViewsMoveNothingWhenCompiled) {
  Tensors s;
  int32_t x = s.add({4, 8}, DType::F32, TensorKind::Temp, 128);
  int32_t view = s.add({32}, DType::F32, TensorKind::Temp, 128);
  int32_t moved = s.add({32}, DType::F32, TensorKind::Temp, 256);
  Instr onto{"copy", {x}, {view}, {}, {}};
  EXPECT_EQ(kernelCost(onto, s.t, true).bytes, 0);
  // Eager gives the result its own buffer: a real copy.
  EXPECT_EQ(kernelCost(onto, s.t, false).bytes, 2 * 32 * 4);
  EXPECT_EQ(kernelCost({"copy", {x}, {moved}, {}, {}}, s.t, true).bytes,
            2 * 32 * 4);
  // A prefix slice placed on its input.
  int32_t rows = s.add({2, 8}, DType::F32, TensorKind::Temp, 128);
  EXPECT_EQ(
      kernelCost({"slice", {x}, {rows}, {0, 0, 1, 1}, {}}, s.t, true).bytes, 0);
  // A parameter is never a view, whatever its (unused) offset.
  int32_t p = s.add({32}, DType::F32, TensorKind::Param);
  EXPECT_EQ(kernelCost({"copy", {p}, {moved}, {}, {}}, s.t, true).bytes,
            2 * 32 * 4);
}

TEST(KernelCost, InPlaceUpdatesCountTheirReadAndTheirWrite) {
  Tensors s;
  int32_t p = s.add({10}, DType::F32, TensorKind::Param), g = s.add({10}),
          m = s.add({10}, DType::F32, TensorKind::State),
          v = s.add({10}, DType::F32, TensorKind::State),
          step = s.add({}, DType::F32, TensorKind::State),
          lr = s.add({}, DType::F32, TensorKind::State);
  KernelCost k = kernelCost(
      {"adamw_update", {p, g, m, v, step, lr}, {p, m, v}, {0}, {}}, s.t, true);
  EXPECT_EQ(k.bytes, (4 * 10 + 2 + 3 * 10) * 4);
  EXPECT_EQ(k.flops, 0);
}

TEST(KernelCost, ProfileTableShowsRatesWhereThereAreCosts) {
  std::vector<KernelTime> prof = {
      {"matmul", 4, 0.002, 4'000'000'000, 2e12},
      {"relu", 2, 0.001, 1'000'000'000, 0},
      {"copy", 2, 0.0005, 0, 0},
  };
  std::string t = formatProfile(prof, 2);
  // Per step: 2 calls, 1 ms; 4 GB in 2 ms = 2000 GB/s; 2e12 in 2 ms.
  EXPECT_NE(t.find("matmul"), std::string::npos) << t;
  EXPECT_NE(t.find("2.0      1.000   57.1%    2000.0   1000.00"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("1000.0          \n"), std::string::npos) << t; // relu
  EXPECT_NE(t.find("(all kernels)"), std::string::npos) << t;
  EXPECT_NE(t.find("100.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("GB/s"), std::string::npos) << t;
}

// A profile lists GEMMs with an epilogue by epilogue (they run at different
// rates) and fused kernels by their name.
TEST(KernelCost, ProfileLabelsNameEpiloguesAndFusedKernels) {
  Instr bias{"matmul_epilogue", {0, 1, 2}, {3}, {0, 1, 1}, {}};
  EXPECT_EQ(profileLabel(bias, ""), "matmul_epilogue:bias");
  Instr dgelu{"matmul_epilogue", {0, 1, 2}, {3, 4}, {0, 1, 11}, {}};
  EXPECT_EQ(profileLabel(dgelu, ""), "matmul_epilogue:dgelu_tanh_bgrad");
  Instr unknown{"matmul_epilogue", {0, 1}, {2}, {0, 1, 999}, {}};
  EXPECT_EQ(profileLabel(unknown, ""), "matmul_epilogue");
  Instr fused{"fused", {0}, {1}, {0}, {}};
  EXPECT_EQ(profileLabel(fused, "add+relu"), "fused:add+relu");
  Instr plain{"matmul", {0, 1}, {2}, {0, 0}, {}};
  EXPECT_EQ(profileLabel(plain, ""), "matmul");
}

// A profile by shape tells a model's GEMMs apart by their product and K, and
// attention by its entries, lengths and head dim; other kernels have none.
TEST(KernelCost, ProfileShapesNameTheProblem) {
  Tensors s;
  int32_t a = s.add({2, 8, 16}), b = s.add({16, 4}), c = s.add({2, 8, 4});
  Instr mm{"matmul", {a, b}, {c}, {0, 0}, {}};
  EXPECT_EQ(profileShape(mm, s.t), "[2x8x4] k16");
  EXPECT_EQ(profileKey("matmul", profileShape(mm, s.t)), "matmul [2x8x4] k16");
  // A weight gradient: K is the transposed A's first axis.
  int32_t x = s.add({32, 16}), g = s.add({32, 4}), dw = s.add({16, 4}),
          db = s.add({4});
  Instr bgrad{"matmul_epilogue", {x, g}, {dw, db}, {1, 0, 8}, {}};
  EXPECT_EQ(profileShape(bgrad, s.t), "[16x4] k32");
  // Sequence-major [B 2, T 8, H 3, D 4]: 6 entries.
  int32_t q = s.add({2, 8, 3, 4}, DType::BF16),
          k = s.add({2, 8, 3, 4}, DType::BF16),
          v = s.add({2, 8, 3, 4}, DType::BF16),
          o = s.add({2, 8, 3, 4}, DType::BF16), lse = s.add({2, 3, 8});
  EXPECT_EQ(
      profileShape({"attention", {q, k, v}, {o, lse}, {1, 1}, {0.5}}, s.t),
      "b6 t8x8 d4 causal");
  EXPECT_EQ(
      profileShape({"attention", {q, k, v}, {o, lse}, {0, 1}, {0.5}}, s.t),
      "b6 t8x8 d4");
  int32_t v8 = s.add({1, 3, 8}), q1 = s.add({1, 6, 4}), k1 = s.add({1, 3, 4}),
          o8 = s.add({1, 6, 8}), l1 = s.add({1, 6});
  EXPECT_EQ(
      profileShape({"attention", {q1, k1, v8}, {o8, l1}, {0, 0}, {0.5}}, s.t),
      "b1 t6x3 d4 dv8");
  Instr relu{"relu", {a}, {c}, {}, {}};
  EXPECT_EQ(profileShape(relu, s.t), "");
  EXPECT_EQ(profileKey("relu", ""), "relu");
}
