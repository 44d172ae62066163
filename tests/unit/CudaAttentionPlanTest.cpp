//===- CudaAttentionPlanTest.cpp - attention's CUDA plans and settings ----===//
//
// runtime/cuda/CudaAttention.cpp's choices, without running a kernel: the
// sizes of sequence-major shapes, the chunk policy (planAttention), which
// kernels run (tiled or the chunk loop) and the scratch they ask for, the
// TCC_CUDA_ATTENTION_* settings and their errors, and what prepare refuses.
// The emulated kernels themselves are tested in CudaAttentionEmuTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"
#include "KernelTestUtil.h"

#include "runtime/cuda/CudaAttention.h"

#include <cstdlib>
#include <string>

using namespace tcc::rt;
using namespace tcc::rt::test;
using cuda::AttentionPlan;

// The sizes of sequence-major shapes: entries (B..., H), numbered o * H +
// h; rows are dim -3.
TEST(CudaAttentionEmu, SequenceMajorPlan) {
  // nn.MultiheadAttention: [T, N * H, D] with N * H = 16, no outer dims.
  AttentionPlan p =
      attentionDims({1024, 16, 64}, {512, 16, 64}, {512, 16, 32}, true);
  EXPECT_EQ(p.heads, 16);
  EXPECT_EQ(p.batch, 16);
  EXPECT_EQ(p.tq, 1024);
  EXPECT_EQ(p.tk, 512);
  EXPECT_EQ(p.d, 64);
  EXPECT_EQ(p.dv, 32);
  // [B, T, H, D]; the same shape packed is [B, T] entries of [H, D].
  p = attentionDims({8, 1024, 12, 64}, {8, 256, 12, 64}, {8, 256, 12, 48},
                    true);
  EXPECT_EQ(p.heads, 12);
  EXPECT_EQ(p.batch, 96);
  EXPECT_EQ(p.tq, 1024);
  EXPECT_EQ(p.tk, 256);
  EXPECT_EQ(p.dv, 48);
  p = attentionDims({8, 1024, 12, 64}, {8, 1024, 12, 64}, {8, 1024, 12, 64},
                    false);
  EXPECT_EQ(p.heads, 1);
  EXPECT_EQ(p.batch, 8 * 1024);
  EXPECT_EQ(p.tq, 12);
  // Rank 5: B... = [2, 3].
  p = attentionDims({2, 3, 7, 4, 5}, {2, 3, 9, 4, 5}, {2, 3, 9, 4, 6}, true);
  EXPECT_EQ(p.heads, 4);
  EXPECT_EQ(p.batch, 24);
  EXPECT_EQ(p.tq, 7);
  EXPECT_EQ(p.tk, 9);
  // GPT-2 small at batch 8 as [B, T, H, D]: the budget holds 42 entries,
  // 3 chunks of 32 when packed; sequence-major rounds down to whole groups
  // of the 12 heads (2 groups, 24 entries, 4 chunks): each run is one full
  // GEMM of 12, and the scratch shrinks.
  p = cuda::planAttention({8, 1024, 12, 64}, {8, 1024, 12, 64},
                          {8, 1024, 12, 64}, DType::BF16, true);
  EXPECT_EQ(p.batch, 96);
  EXPECT_EQ(p.heads, 12);
  EXPECT_EQ(p.chunk, 24);
  EXPECT_EQ(p.scratchBytes, 24ll * 6 << 20);
  // As nn.MultiheadAttention exports it ([T, B*H, D]: 96 heads, one outer
  // index), a group does not fit: chunks as packed, each one GEMM.
  p = cuda::planAttention({1024, 96, 64}, {1024, 96, 64}, {1024, 96, 64},
                          DType::BF16, true);
  EXPECT_EQ(p.chunk, 32);
  EXPECT_EQ(p.scratchBytes, 32ll * 6 << 20);
  // A cap below the heads splits groups (the runs then straddle chunks).
  p = cuda::planAttention({2, 5, 4, 3}, {2, 5, 4, 3}, {2, 5, 4, 3}, DType::F32,
                          true, 3);
  EXPECT_EQ(p.chunk, 3);
  p = cuda::planAttention({2, 5, 4, 3}, {2, 5, 4, 3}, {2, 5, 4, 3}, DType::F32,
                          true, 5);
  EXPECT_EQ(p.chunk, 4);
  // No heads: no entries, no scratch.
  p = cuda::planAttention({5, 0, 3}, {5, 0, 3}, {5, 0, 2}, DType::F32, true);
  EXPECT_EQ(p.batch, 0);
  EXPECT_EQ(p.chunk, 0);
  EXPECT_EQ(p.scratchBytes, 0);
  // The row rule: heads `cols` apart, rows heads * cols apart, outer
  // indices rows * heads * cols apart.
  EXPECT_EQ(attentionRowOffset(0, 0, 4, 6, 5), 0);
  EXPECT_EQ(attentionRowOffset(1, 0, 4, 6, 5), 5);
  EXPECT_EQ(attentionRowOffset(0, 1, 4, 6, 5), 20);
  EXPECT_EQ(attentionRowOffset(4, 0, 4, 6, 5), 120);
  EXPECT_EQ(attentionRowOffset(7, 2, 1, 6, 5), 7 * 30 + 10);
}

// The chunk policy: as many entries as 256 MiB of S (f32) and P (q's type)
// hold, spread evenly; one entry even when it alone needs more.
TEST(CudaAttentionEmu, ChunkPlan) {
  // GPT-2 small at batch 8: 96 entries of 1024 x 1024, bf16: 6 MiB each,
  // 42 fit, 3 chunks of 32.
  AttentionPlan p = cuda::planAttention({8, 12, 1024, 64}, {8, 12, 1024, 64},
                                        {8, 12, 1024, 64}, DType::BF16, false);
  EXPECT_EQ(p.batch, 96);
  EXPECT_EQ(p.chunk, 32);
  EXPECT_EQ(p.entryStride, 1024 * 1024);
  EXPECT_EQ(p.pOffset, 32ll * 4 << 20);
  EXPECT_EQ(p.scratchBytes, 32ll * 6 << 20);
  // f32: 8 MiB an entry, 32 fit: 3 chunks of 32.
  p = cuda::planAttention({96, 1024, 64}, {96, 1024, 64}, {96, 1024, 64},
                          DType::F32, false);
  EXPECT_EQ(p.chunk, 32);
  EXPECT_EQ(p.scratchBytes, 256ll << 20);
  // 8192 x 8192 in bf16 is 384 MiB an entry: one at a time.
  p = cuda::planAttention({2, 8192, 64}, {2, 8192, 64}, {2, 8192, 64},
                          DType::BF16, false);
  EXPECT_EQ(p.chunk, 1);
  EXPECT_EQ(p.scratchBytes, 384ll << 20);
  // Small problems in one chunk; odd sizes padded to 128 elements an entry.
  p = cuda::planAttention({5, 7, 3}, {5, 9, 3}, {5, 9, 2}, DType::F16, false);
  EXPECT_EQ(p.chunk, 5);
  EXPECT_EQ(p.entryStride, 128);
  EXPECT_EQ(p.pOffset, 5 * 128 * 4);
  EXPECT_EQ(p.scratchBytes, 5 * 128 * 6);
  EXPECT_EQ(p.pOffset % 256, 0);
  // The cap: 5 entries, at most 2 a chunk: 3 chunks of 2 (the last 1).
  p = cuda::planAttention({5, 7, 3}, {5, 9, 3}, {5, 9, 2}, DType::F16, false,
                          2);
  EXPECT_EQ(p.chunk, 2);
  // Nothing to score: no scratch.
  p = cuda::planAttention({5, 7, 3}, {5, 0, 3}, {5, 0, 2}, DType::F32, false);
  EXPECT_EQ(p.scratchBytes, 0);
}

// Which kernels run: the tiled ones for 16-bit operands with D 16, 32, 64
// or 128, the chunk loop otherwise; prepare's scratch and the memory
// report's prediction follow the choice.
TEST(CudaAttentionEmu, TiledChoice) {
  auto fits = [](std::vector<int64_t> q, std::vector<int64_t> v, DType t) {
    return cuda::attentionTilesFit(attentionDims(q, q, v, false), t);
  };
  EXPECT_TRUE(fits({96, 1024, 64}, {96, 1024, 64}, DType::BF16));
  EXPECT_TRUE(fits({2, 5, 16}, {2, 5, 16}, DType::F16));
  EXPECT_TRUE(fits({2, 5, 128}, {2, 5, 128}, DType::BF16));
  EXPECT_FALSE(fits({96, 1024, 64}, {96, 1024, 64}, DType::F32));
  EXPECT_TRUE(fits({2, 5, 80}, {2, 5, 80}, DType::BF16));
  EXPECT_TRUE(fits({2, 5, 96}, {2, 5, 96}, DType::F16));
  EXPECT_FALSE(fits({2, 5, 48}, {2, 5, 48}, DType::BF16)); // no kernel
  EXPECT_FALSE(fits({2, 5, 256}, {2, 5, 256}, DType::BF16));
  EXPECT_FALSE(fits({2, 5, 64}, {2, 5, 32}, DType::BF16)); // D != Dv
  EXPECT_FALSE(fits({2, 0, 64}, {2, 0, 64}, DType::BF16)); // no rows
  // GPT-2 small at batch 8, sequence-major: D = rowsum(dO O), 4 bytes a
  // row, instead of 144 MiB of scores.
  std::vector<int64_t> gpt = {8, 1024, 12, 64};
  EXPECT_EQ(attentionScratchBytes(gpt, gpt, gpt, DType::BF16, true),
            96 * 1024 * 4);
  EXPECT_EQ(attentionScratchBytes(gpt, gpt, gpt, DType::F32, true),
            cuda::planAttention(gpt, gpt, gpt, DType::F32, true).scratchBytes);
  // Its fused-QKV backward's column sums after that: 8 sequences of 16
  // slices of 64 positions, 3 * 768 columns, f32.
  std::vector<int64_t> qkv = {8, 1024, 36, 64};
  AttentionDims fused = attentionDims(qkv, qkv, qkv, true, true);
  EXPECT_EQ(attentionSumSlices(fused), 8 * 16);
  EXPECT_EQ(attentionSumCols(fused), 2304);
  EXPECT_EQ(attentionScratchBytes(fused, DType::BF16, true),
            96 * 1024 * 4 + 8 * 16 * 2304 * 4);
  EXPECT_EQ(attentionTilesScratch(
                attentionDims({3, 5, 16}, {3, 5, 16}, {3, 5, 16}, false)),
            256); // rounded up to 256 bytes
  // prepare of the emulated GPU (compute capability 9.0).
  OneProgram p;
  int32_t q = p.random(DType::BF16, {3, 5, 16}),
          dout = p.random(DType::BF16, {3, 5, 16});
  int32_t out = p.out(DType::BF16, {3, 5, 16}), lse = p.out(DType::F32, {3, 5});
  std::vector<int32_t> grads = {p.out(DType::BF16, {3, 5, 16}),
                                p.out(DType::BF16, {3, 5, 16}),
                                p.out(DType::BF16, {3, 5, 16})};
  p.instr("attention", {q, q, q}, {out, lse}, {0, 0}, {0.25});
  p.instr("attention_grad", {q, q, q, out, lse, dout}, grads, {0, 0}, {0.25});
  const Artifact &a = p.artifact();
  const cuda::CudaKernelDef *k = cuda::findCudaKernel("attention");
  EXPECT_EQ(k->prepare(a.programs[0].instrs[0], a.tensors), 256);
  EXPECT_EQ(cuda::findCudaKernel("attention_grad")
                ->prepare(a.programs[0].instrs[1], a.tensors),
            256);
}

/// Each of `bad` makes `parse` throw an Error that says "<variable> is
/// '<bad>'; it takes <takes>".
template <class F>
static void expectRefused(F parse, std::initializer_list<std::string> bad,
                          const std::string &variable,
                          const std::string &takes) {
  for (const std::string &b : bad) {
    try {
      parse(b.c_str());
      ADD_FAILURE() << "no error for '" << b << "'";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(variable + " is '" + b +
                                           "'; it takes " + takes),
                std::string::npos)
          << e.what();
    }
  }
}

// TCC_CUDA_ATTENTION picks the kernels; a value it does not know is an
// error that names it.
TEST(CudaAttentionEmu, TiledAttentionSetting) {
  EXPECT_TRUE(cuda::tiledAttentionAllowed(nullptr));
  EXPECT_TRUE(cuda::tiledAttentionAllowed(""));
  EXPECT_TRUE(cuda::tiledAttentionAllowed("tiled"));
  EXPECT_FALSE(cuda::tiledAttentionAllowed("chunked"));
  expectRefused(cuda::tiledAttentionAllowed, {"flash", "Tiled"},
                "TCC_CUDA_ATTENTION", "'tiled' or 'chunked'");
}

// TCC_CUDA_ATTENTION_WARP_ROWS picks the tiled kernels' warps (16 or 32
// rows); a value it does not know is an error that names it and what it
// takes. The tests' override takes the same values and gives the
// environment's back with 0.
TEST(CudaAttentionEmu, TiledAttentionWarpRowsSetting) {
  EXPECT_EQ(cuda::attentionWarpRows(nullptr), 16);
  EXPECT_EQ(cuda::attentionWarpRows(""), 16);
  EXPECT_EQ(cuda::attentionWarpRows("16"), 16);
  EXPECT_EQ(cuda::attentionWarpRows("32"), 32);
  expectRefused(cuda::attentionWarpRows, {"64", "8", "032", "32 ", "two"},
                "TCC_CUDA_ATTENTION_WARP_ROWS", "'16' or '32'");
  int env = cuda::tiledAttentionWarpRows();
  cuda::setTiledAttentionWarpRows(32);
  EXPECT_EQ(cuda::tiledAttentionWarpRows(), 32);
  cuda::setTiledAttentionWarpRows(16);
  EXPECT_EQ(cuda::tiledAttentionWarpRows(), 16);
  EXPECT_THROW(cuda::setTiledAttentionWarpRows(64), Error);
  EXPECT_EQ(cuda::tiledAttentionWarpRows(), 16);
  cuda::setTiledAttentionWarpRows(0);
  EXPECT_EQ(cuda::tiledAttentionWarpRows(), env);
}

/// The tests' override of a setting: each of `values`, chosen, is what the
/// setting reads, and `unset` gives the environment's back.
template <class T>
static void expectOverride(T (*get)(), void (*set)(T),
                           std::initializer_list<T> values, T unset) {
  T env = get();
  for (T v : values) {
    set(v);
    EXPECT_EQ(get(), v);
  }
  set(unset);
  EXPECT_EQ(get(), env);
}

/// In a fresh process (a variable is read once): `variable`=`good` makes
/// `chosen()` true, and `variable`=`bad` fails the launch that reads it
/// with `message`.
static void expectFromEnvironment(const char *variable, const char *good,
                                  bool (*chosen)(), const char *bad, bool grad,
                                  const std::string &message) {
  EXPECT_EXIT(
      {
        setenv(variable, good, 1);
        std::exit(chosen() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        setenv(variable, bad, 1);
        try {
          if (grad)
            cuda::attentionTiledBackward(cuda::AttentionTiles{}, nullptr);
          else
            cuda::attentionTiledForward(cuda::AttentionTiles{}, nullptr);
        } catch (const Error &e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(2);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(2), message);
}

// The variable itself, in a fresh process (it is read once): 32 selects
// the wide warps, and a bad value fails the launch that reads it.
TEST(CudaAttentionEmuDeathTest, TiledAttentionWarpRowsFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  expectFromEnvironment(
      "TCC_CUDA_ATTENTION_WARP_ROWS", "32",
      [] { return cuda::tiledAttentionWarpRows() == 32; }, "24", false,
      "TCC_CUDA_ATTENTION_WARP_ROWS is '24'; it takes '16' or '32'");
}

// TCC_CUDA_ATTENTION_COPY picks how the tiled kernels copy tiles ('async'
// or 'tma'); a value it does not know is an error that names it and what
// it takes. The tests' override gives the environment's back with
// Environment.
TEST(CudaAttentionEmu, TiledAttentionCopySetting) {
  EXPECT_EQ(cuda::attentionTileCopies(nullptr), cuda::TileCopies::Tma);
  EXPECT_EQ(cuda::attentionTileCopies(""), cuda::TileCopies::Tma);
  EXPECT_EQ(cuda::attentionTileCopies("async"), cuda::TileCopies::Async);
  EXPECT_EQ(cuda::attentionTileCopies("tma"), cuda::TileCopies::Tma);
  expectRefused(cuda::attentionTileCopies, {"TMA", "bulk", "tma ", "1"},
                "TCC_CUDA_ATTENTION_COPY", "'tma' or 'async'");
  expectOverride(cuda::tiledAttentionCopies, cuda::setTiledAttentionCopies,
                 {cuda::TileCopies::Tma, cuda::TileCopies::Async},
                 cuda::TileCopies::Environment);
}

// The variable itself, in a fresh process (it is read once): 'tma'
// selects tensor copies, and a bad value fails the launch that reads it.
TEST(CudaAttentionEmuDeathTest, TiledAttentionCopyFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  expectFromEnvironment(
      "TCC_CUDA_ATTENTION_COPY", "tma",
      [] { return cuda::tiledAttentionCopies() == cuda::TileCopies::Tma; },
      "bulk", true,
      "TCC_CUDA_ATTENTION_COPY is 'bulk'; it takes 'tma' or 'async'");
}

// Tensor copies need compute capability 9.0, rows that start 16-byte
// aligned (operands and pitches) and coordinates of 32 bits; anything else
// keeps cp.async.
TEST(CudaAttentionEmu, TensorCopiesFit) {
  cuda::AttentionTiles t = gpt2AttentionTiles();
  EXPECT_TRUE(cuda::attentionTmaFits(t, true, 9));
  EXPECT_TRUE(cuda::attentionTmaFits(t, false, 10));
  EXPECT_FALSE(cuda::attentionTmaFits(t, true, 8));
  cuda::AttentionTiles u = t;
  u.k = static_cast<const unsigned short *>(t.q) + 4; // 8 bytes in
  EXPECT_FALSE(cuda::attentionTmaFits(u, false, 9));
  u = t;
  u.inputPitch = 3 * 12 * 64 + 4; // rows 8 bytes apart from 16-byte units
  EXPECT_FALSE(cuda::attentionTmaFits(u, false, 9));
  u = t;
  u.dout = static_cast<const unsigned short *>(t.q) + 1;
  EXPECT_TRUE(cuda::attentionTmaFits(u, false, 9)); // the forward reads no dO
  EXPECT_FALSE(cuda::attentionTmaFits(u, true, 9));
  u = t;
  u.tq = 1ll << 31;
  EXPECT_FALSE(cuda::attentionTmaFits(u, false, 9));
}

// TCC_CUDA_ATTENTION_MMA picks how the tiled kernels multiply ('sync' or
// 'wgmma'); a value it does not know is an error that names it and what it
// takes. The tests' override gives the environment's back with
// Environment.
TEST(CudaAttentionEmu, TiledAttentionProductsSetting) {
  EXPECT_EQ(cuda::attentionTileProducts(nullptr), cuda::TileProducts::Wgmma);
  EXPECT_EQ(cuda::attentionTileProducts(""), cuda::TileProducts::Wgmma);
  EXPECT_EQ(cuda::attentionTileProducts("sync"), cuda::TileProducts::Sync);
  EXPECT_EQ(cuda::attentionTileProducts("wgmma"), cuda::TileProducts::Wgmma);
  expectRefused(cuda::attentionTileProducts, {"WGMMA", "mma", "wgmma ", "tma"},
                "TCC_CUDA_ATTENTION_MMA", "'wgmma' or 'sync'");
  expectOverride(cuda::tiledAttentionProducts, cuda::setTiledAttentionProducts,
                 {cuda::TileProducts::Wgmma, cuda::TileProducts::Sync},
                 cuda::TileProducts::Environment);
}

// The variable itself, in a fresh process (it is read once): 'wgmma'
// selects warpgroup products, and a bad value fails the launch that reads
// it.
TEST(CudaAttentionEmuDeathTest, TiledAttentionProductsFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  expectFromEnvironment(
      "TCC_CUDA_ATTENTION_MMA", "wgmma",
      [] {
        return cuda::tiledAttentionProducts() == cuda::TileProducts::Wgmma;
      },
      "hmma", false,
      "TCC_CUDA_ATTENTION_MMA is 'hmma'; it takes 'wgmma' or 'sync'");
}

// Warpgroup products need sm_90a itself (compute capability 9.0, not 9.x
// or 10), head dim 64 and everything tensor copies need; anything else
// keeps mma.sync.
TEST(CudaAttentionEmu, WarpgroupProductsFit) {
  cuda::AttentionTiles t = gpt2AttentionTiles();
  EXPECT_TRUE(cuda::attentionWgmmaFits(t, true, 9, 0));
  EXPECT_FALSE(cuda::attentionWgmmaFits(t, true, 10, 0));
  EXPECT_FALSE(cuda::attentionWgmmaFits(t, true, 9, 1));
  EXPECT_FALSE(cuda::attentionWgmmaFits(t, true, 8, 0));
  cuda::AttentionTiles u = t;
  u.d = 32;
  u.inputPitch = 3 * 12 * 32;
  EXPECT_FALSE(cuda::attentionWgmmaFits(u, true, 9, 0));
  u = t;
  u.k = static_cast<const unsigned short *>(t.q) + 4; // tensor copies refuse
  EXPECT_FALSE(cuda::attentionWgmmaFits(u, false, 9, 0));
}

// prepare refuses what the kernels do not take, naming the operand.
TEST(CudaAttentionEmu, PrepareRejectsI64) {
  OneProgram p;
  int32_t q = p.i64({1, 2, 2}, {1, 2, 3, 4});
  int32_t out = p.out(DType::I64, {1, 2, 2}), lse = p.out(DType::F32, {1, 2});
  p.instr("attention", {q, q, q}, {out, lse}, {0, 0}, {1.0});
  const Artifact &a = p.artifact();
  try {
    cuda::findCudaKernel("attention")
        ->prepare(a.programs[0].instrs[0], a.tensors);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("i64 operands ('t0')"),
              std::string::npos)
        << e.what();
  }
}
