//===- CudaKernelsTest.cpp - CUDA kernels beyond the conformance cases ----===//
//
// On a GPU, what the conformance cases (KernelCases.h, run on the CUDA
// backend by ConformanceTest.cpp) do not cover: matmul with TF32, the GEMM
// epilogues through CudaGemm::tryGemm (which one cuBLASLt declines) and
// with the epilogues off, attention at T 1024 in several chunks, packed
// and sequence-major, wgmma on sm_90, the multi-tensor AdamW launch, and
// the settings' parsing. Those that need a GPU skip without one.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"
#include "CudaWgmmaProbe.h"
#include "KernelCasesAttention.h"
#include "KernelCasesGemm.h"
#include "KernelCasesOptim.h"

#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaGemm.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// "" on a GPU of compute capability 9.0 (where sm_90a's wgmma runs), else
/// why the wgmma tests skip.
std::string notSm90() {
  int dev = 0, major = 0, minor = 0;
  TCC_CUDA_CHECK(cudaGetDevice(&dev));
  TCC_CUDA_CHECK(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  TCC_CUDA_CHECK(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major == 9 && minor == 0)
    return "";
  return "wgmma is sm_90a's; this GPU is " + std::to_string(major) + "." +
         std::to_string(minor);
}

} // namespace

// On an H100 (compute capability 9.0) with this runtime built for sm_90a,
// TCC_CUDA_ATTENTION_MMA=wgmma does pick warpgroup products for GPT-2's
// shapes, so the attention_tiled_*_wgmma cases test them and not mma.sync.
TEST(CudaKernels, WarpgroupProductsRunOnSm90) {
  TCC_REQUIRE_GPU();
  if (std::string why = notSm90(); !why.empty())
    GTEST_SKIP() << why;
  cuda::AttentionTiles t = gpt2AttentionTiles(384);
  AttentionProductsScope products(cuda::TileProducts::Wgmma);
  EXPECT_TRUE(cuda::tiledAttentionWgmma(t, false));
  EXPECT_TRUE(cuda::tiledAttentionWgmma(t, true));
}

// wgmma's layouts on the hardware (CudaWgmmaProbe.h; the emulator runs
// the same kernel in CudaWgmmaEmuTest.cpp): if the attention's wgmma cases
// fail on a GPU, this says which operand form the hardware reads otherwise
// than the emulator.
TEST(CudaKernels, WgmmaProbeGivesThePlainProducts) {
  TCC_REQUIRE_GPU();
  if (std::string why = notSm90(); !why.empty())
    GTEST_SKIP() << why;
  ProbeMatrix a(3), b(4);
  void *pa = nullptr, *pb = nullptr, *pout = nullptr;
  const size_t bytes = a.bits.size() * 2;
  TCC_CUDA_CHECK(cudaMalloc(&pa, bytes));
  TCC_CUDA_CHECK(cudaMalloc(&pb, bytes));
  TCC_CUDA_CHECK(cudaMalloc(&pout, kWgmmaProbeOut * sizeof(float)));
  auto *da = static_cast<unsigned short *>(pa),
       *db = static_cast<unsigned short *>(pb);
  auto *dout = static_cast<float *>(pout);
  TCC_CUDA_CHECK(cudaMemcpy(da, a.bits.data(), bytes, cudaMemcpyHostToDevice));
  TCC_CUDA_CHECK(cudaMemcpy(db, b.bits.data(), bytes, cudaMemcpyHostToDevice));
  for (WgmmaProbe probe : {WgmmaProbe::SharedAB, WgmmaProbe::RegisterA}) {
    std::vector<float> out(kWgmmaProbeOut);
    TCC_CUDA_CHECK(cudaMemset(dout, 0xff, kWgmmaProbeOut * sizeof(float)));
    runWgmmaProbe(probe, da, db, dout);
    TCC_CUDA_CHECK(cudaDeviceSynchronize());
    TCC_CUDA_CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(float),
                              cudaMemcpyDeviceToHost));
    expectWgmmaProbe(probe, a, b, out);
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
}

// Consecutive AdamW updates run as one launch.
TEST(CudaKernels, AdamWRunsAsOneMultiTensorLaunch) {
  TCC_REQUIRE_GPU();
  std::vector<KernelCase> cases;
  optimizerCases(cases);
  cuda::CudaSession s(cases[0].prog.artifact(), ExecMode::Compiled);
  s.setProfiling(true);
  s.run("p");
  int64_t multi = 0, single = 0;
  for (const auto &k : s.profile()) {
    if (k.kernel == "adamw_update (multi-tensor)")
      multi = k.calls;
    if (k.kernel == "adamw_update")
      single = k.calls;
  }
  // The three AdamW updates of one learning rate, and the three Adam ones.
  EXPECT_EQ(multi, 2);
  // Alone: the one with another learning rate, and the two loss-scaling
  // updates, which read different `finite` flags and so cannot share a
  // launch.
  EXPECT_EQ(single, 3);
}

// TCC_CUDA_DGELU_BGRAD picks how dgelu_tanh_bgrad runs; a value it does
// not know is an error that names it.
TEST(CudaKernels, DgeluBgradSetting) {
  EXPECT_TRUE(cuda::dgeluBgradSplit(nullptr));
  EXPECT_TRUE(cuda::dgeluBgradSplit(""));
  EXPECT_TRUE(cuda::dgeluBgradSplit("split"));
  EXPECT_FALSE(cuda::dgeluBgradSplit("fused"));
  try {
    cuda::dgeluBgradSplit("both");
    ADD_FAILURE() << "no error for 'both'";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("TCC_CUDA_DGELU_BGRAD is 'both'"),
              std::string::npos)
        << e.what();
  }
}

// TCC_CUDA_GEMM_AUTOTUNE_CACHE: a tuned run records its pick, and a later
// run with the cache alone takes it untimed: the same bits, the file as it
// was.
TEST(CudaKernels, GemmAutotuneCacheRepeatsPicks) {
  TCC_REQUIRE_GPU();
  std::string path =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
      "/tcc_gemm_algos_" + std::to_string(::getpid()) + ".json";
  std::remove(path.c_str());
  const int64_t m = 384, n = 256, k = 512;
  std::vector<uint16_t> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<uint16_t>(0x3c00 + (i * 7919) % 512); // f16 in [1, 2)
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint16_t>(0x3800 + (i * 104729) % 512);
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  TCC_CUDA_CHECK(cudaMalloc(&da, a.size() * 2));
  TCC_CUDA_CHECK(cudaMalloc(&db, b.size() * 2));
  TCC_CUDA_CHECK(cudaMalloc(&dc, m * n * 4));
  TCC_CUDA_CHECK(
      cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  TCC_CUDA_CHECK(
      cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  cuda::CudaGemm::Problem p;
  p.ab = DType::F16;
  p.c = DType::F32;
  p.m = m;
  p.n = n;
  p.k = k;
  auto run = [&] {
    std::vector<float> c(m * n);
    cuda::CudaGemm gemm(nullptr, false);
    gemm.gemm(p, da, db, dc);
    TCC_CUDA_CHECK(cudaDeviceSynchronize());
    TCC_CUDA_CHECK(
        cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost));
    return c;
  };
  setenv("TCC_CUDA_GEMM_AUTOTUNE_CACHE", path.c_str(), 1);
  setenv("TCC_CUDA_GEMM_AUTOTUNE", "8", 1);
  std::vector<float> tuned = run();
  unsetenv("TCC_CUDA_GEMM_AUTOTUNE");
  std::ifstream in(path);
  std::stringstream recorded;
  recorded << in.rdbuf();
  EXPECT_NE(recorded.str().find("tcc-gemm-algos"), std::string::npos);
  EXPECT_NE(recorded.str().find("cuBLASLt"), std::string::npos);
  std::vector<float> again = run();
  unsetenv("TCC_CUDA_GEMM_AUTOTUNE_CACHE");
  EXPECT_EQ(tuned, again);
  std::ifstream after(path);
  std::stringstream kept;
  kept << after.rdbuf();
  EXPECT_EQ(kept.str(), recorded.str());
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  std::remove(path.c_str());
}

TEST(CudaKernels, GemmAutotuneSetting) {
  EXPECT_EQ(cuda::gemmAutotuneCandidates(nullptr), 1);
  EXPECT_EQ(cuda::gemmAutotuneCandidates(""), 1);
  EXPECT_EQ(cuda::gemmAutotuneCandidates("0"), 1);
  EXPECT_EQ(cuda::gemmAutotuneCandidates("8"), 8);
  EXPECT_EQ(cuda::gemmAutotuneCandidates("16"), 16);
  for (const char *bad : {"17", "-1", "8x", "on"}) {
    try {
      cuda::gemmAutotuneCandidates(bad);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(
                    std::string("TCC_CUDA_GEMM_AUTOTUNE is '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

// attention / attention_grad at GPT-like sizes (T 1024, D 64: rows of
// 1024 keys, 128 threads each), f32 and bf16, causal and masked; then 36
// f32 entries of 1024 x 1024 (8 MiB of scratch each), which the 256 MiB
// budget splits into two chunks of 18. Compiled mode runs three times, so
// the CUDA graph of the chunk loop is captured and replayed.
TEST(CudaKernels, AttentionLongRowsAndChunks) {
  TCC_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    OneProgram p;
    std::vector<int32_t> outs;
    attentionPair(p, t, {2, 2}, 1024, 1024, 64, 64, {}, true, outs);
    attentionPair(p, t, {2, 2}, 1024, 1024, 64, 64, {1024, 1024}, false, outs);
    auto cpu = p.runCpu();
    double tol = t == DType::F32 ? 1e-4 : rtolFor(t);
    for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
      auto gpu = p.runGpu(mode, {}, mode == ExecMode::Compiled ? 3 : 1);
      for (int32_t id : outs)
        expectClose(p, cpu, gpu, id, tol, tol);
    }
  }
  OneProgram p;
  std::vector<int32_t> outs;
  attentionPair(p, DType::F32, {36}, 1024, 1024, 32, 32, {}, true, outs);
  const auto &q = p.info(p.artifact().programs[0].instrs[0].inputs[0]).shape;
  EXPECT_EQ(cuda::planAttention(q, q, q, DType::F32, false).chunk, 18);
  auto cpu = p.runCpu();
  auto gpu = p.runGpu(ExecMode::Compiled, {}, 2);
  for (int32_t id : outs)
    expectClose(p, cpu, gpu, id, 1e-4, 1e-4);
}

// Sequence-major attention at GPT-like sizes, GEMMs on the heads in place
// (leading dim H * D): nn.MultiheadAttention's [T, N * H, D] in bf16 (one
// outer index, a chunk is one run of heads), then [B, T, H, D] in f32 with
// 96 entries of 8 MiB, three chunks of 32 with 48 heads an outer index (a
// group of heads is more than a chunk holds), so runs of heads begin and
// end inside chunks.
TEST(CudaKernels, AttentionSequenceMajor) {
  TCC_REQUIRE_GPU();
  {
    OneProgram p;
    std::vector<int32_t> outs;
    attentionPair(p, DType::BF16, {}, 1024, 1024, 64, 64, {}, true, outs, 16);
    attentionPair(p, DType::BF16, {}, 512, 1024, 64, 32, {16, 1, 1024}, false,
                  outs, 16);
    auto cpu = p.runCpu();
    for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
      auto gpu = p.runGpu(mode, {}, mode == ExecMode::Compiled ? 3 : 1);
      for (int32_t id : outs)
        expectClose(p, cpu, gpu, id, rtolFor(DType::BF16),
                    rtolFor(DType::BF16));
    }
  }
  OneProgram p;
  std::vector<int32_t> outs;
  attentionPair(p, DType::F32, {2}, 1024, 1024, 32, 32, {}, true, outs, 48);
  const auto &q = p.info(p.artifact().programs[0].instrs[0].inputs[0]).shape;
  AttentionPlan plan = cuda::planAttention(q, q, q, DType::F32, true);
  EXPECT_EQ(plan.heads, 48);
  EXPECT_EQ(plan.chunk, 32);
  auto cpu = p.runCpu();
  auto gpu = p.runGpu(ExecMode::Compiled, {}, 2);
  for (int32_t id : outs)
    expectClose(p, cpu, gpu, id, 1e-4, 1e-4);
}

// The tiled kernels (CudaKernelsAttentionTiled.cu) at GPT-2 sizes: bf16
// and f16, [B, T, H, D] causal with D 64, packed and masked with D 128 and
// Tq < Tk, against the CPU, with warps of 16 and of 32 rows; a second run
// is the same bit for bit (no atomics: each backward kernel owns the rows
// it writes).
TEST(CudaKernels, AttentionTiled) {
  TCC_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16}) {
    OneProgram p;
    std::vector<int32_t> outs;
    attentionPair(p, t, {2}, 1024, 1024, 64, 64, {}, true, outs, 12);
    attentionPair(p, t, {3}, 200, 1000, 128, 128, {3, 200, 1000}, false, outs);
    auto cpu = p.runCpu();
    for (int warpRows : {16, 32}) {
      SCOPED_TRACE(std::to_string(warpRows) + " rows a warp");
      AttentionWarpRowsScope scope(warpRows);
      auto first = p.runGpu(ExecMode::Compiled, {}, 2);
      auto second = p.runGpu(ExecMode::Compiled, {}, 2);
      for (int32_t id : outs) {
        expectClose(p, cpu, first, id, rtolFor(t), rtolFor(t));
        EXPECT_EQ(first[id], second[id]) << "tensor " << id << " run to run";
      }
    }
  }
}

// GPT-2's fused-QKV backward with the projection's column sums (its QKV
// bias gradient) on the GPU: bit for bit runtime/core/AttentionColumnSums.h's
// sums of the gradient the same run wrote, with either warp shape and the
// default copies and products (warpgroup products on an H100), and the
// chunk loop (head dim 48); the same bits from run to run.
TEST(CudaKernels, AttentionColumnSums) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  std::vector<int32_t> outs;
  attentionPair(p, DType::BF16, {4}, 1024, 1024, 64, 64, {}, true, outs, 12,
                true, true);
  attentionPair(p, DType::BF16, {2}, 200, 200, 48, 48, {}, true, outs, 2, true,
                true);
  for (int warpRows : {16, 32}) {
    SCOPED_TRACE(std::to_string(warpRows) + " rows a warp");
    AttentionWarpRowsScope scope(warpRows);
    auto first = p.runGpu(ExecMode::Compiled, {}, 2);
    auto second = p.runGpu(ExecMode::Compiled, {}, 2);
    for (size_t i = 0; i + 3 < outs.size(); i += 4) {
      expectColumnSumsInOrder(p, first, outs[i + 2], outs[i + 3]);
      EXPECT_EQ(first[outs[i + 3]], second[outs[i + 3]]) << "run to run";
    }
  }
}

// A leading dim shorter than its row (rows that would overlap) is named
// before cuBLASLt sees the problem, for each of A, B and C.
TEST(CudaKernels, GemmRejectsShortLeadingDims) {
  TCC_REQUIRE_GPU();
  cuda::CudaGemm gemm(nullptr, false);
  for (int which = 0; which < 3; ++which) {
    cuda::CudaGemm::Problem p;
    p.m = 2;
    p.n = 4;
    p.k = 3;
    (which == 0 ? p.lda : which == 1 ? p.ldb : p.ldc) = 1;
    try {
      gemm.gemm(p, nullptr, nullptr, nullptr);
      ADD_FAILURE() << "no error for operand " << which;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("shorter than its rows"),
                std::string::npos)
          << e.what();
    }
  }
}

// TF32 rounds the inputs to 10-bit mantissas. (matmul's types, transposes
// and batches are conformance cases:
// Conformance/BackendCase.*/cuda_*_matmul_*.)
TEST(CudaKernels, MatmulTf32) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  int32_t a = p.random(DType::F32, {64, 96}),
          b = p.random(DType::F32, {96, 32});
  int32_t c = p.out(DType::F32, {64, 32});
  p.instr("matmul", {a, b}, {c}, {0, 0});
  SessionOptions tf32;
  tf32.tf32 = true;
  expectClose(p, p.runCpu(), p.runGpu(ExecMode::Compiled, tf32), c, 1e-2, 5e-2);
}

// Every cuBLASLt epilogue against the CPU's matmul_epilogue kernel, per
// dtype (and f32 or 16-bit bias gradients), through CudaGemm::tryGemm
// directly, so a decline is seen: the forward epilogues must run fused;
// which others cuBLASLt declined (they fall back) is printed. Both with
// the heuristic's first algorithm and with TCC_CUDA_GEMM_AUTOTUNE timing 8
// (whichever it keeps, the outputs are that algorithm's alone).
TEST(CudaKernels, GemmEpilogues) {
  TCC_REQUIRE_GPU();
  std::vector<KernelCase> cases;
  gemmEpilogueCases(cases);
  struct Autotune {
    explicit Autotune(const char *n) {
      if (n)
        setenv("TCC_CUDA_GEMM_AUTOTUNE", n, 1);
    }
    ~Autotune() { unsetenv("TCC_CUDA_GEMM_AUTOTUNE"); }
  };
  for (const char *tune : {static_cast<const char *>(nullptr), "8"})
    for (const KernelCase &c : cases) {
      SCOPED_TRACE(tune ? "TCC_CUDA_GEMM_AUTOTUNE=8" : "untuned");
      Autotune setting(tune);
      const Artifact &art = const_cast<OneProgram &>(c.prog).artifact();
      auto cpu = c.prog.runCpu();
      auto init = c.prog.initial();
      std::vector<void *> dev(art.tensors.size(), nullptr);
      for (size_t id = 0; id < art.tensors.size(); ++id) {
        TCC_CUDA_CHECK(cudaMalloc(&dev[id], init[id].size()));
        TCC_CUDA_CHECK(cudaMemcpy(dev[id], init[id].data(), init[id].size(),
                                  cudaMemcpyHostToDevice));
      }
      std::string declined;
      {
        cuda::CudaGemm gemm(nullptr, false);
        for (const Instr &in : art.programs[0].instrs) {
          const tcc::rt::abi::MatmulEpilogueAttrs at =
              tcc::rt::abi::attrs<tcc::rt::abi::KernelId::MatmulEpilogue>(in);
          const GemmEpilogueInfo &e = *gemmEpilogueByCode(at.epilogue);
          const TensorInfo &A = art.tensors[in.inputs[0]],
                           &D = art.tensors[in.outputs[0]];
          cuda::CudaGemm::Problem p;
          p.ab = A.dtype;
          p.c = D.dtype;
          p.transA = at.transA;
          p.transB = at.transB;
          p.n = D.shape.back();
          p.m = D.numElements() / p.n;
          p.k = p.transA ? A.shape[0] : A.shape.back();
          cuda::CudaGemm::EpilogueArgs args;
          args.biasType = D.dtype;
          if (e.bias)
            args.bias = dev[in.inputs[2]];
          if (e.act == GemmAct::DgeluTanh)
            args.aux = dev[in.inputs[2]];
          if (e.preactOut)
            args.aux = dev[in.outputs[1]];
          if (e.bgrad != GemmBiasGrad::None) {
            args.biasGrad = dev[in.outputs[1]];
            args.biasType = art.tensors[in.outputs[1]].dtype;
          }
          using Ep = cuda::CudaGemm::Epilogue;
          Ep ep =
              e.act == GemmAct::DgeluTanh
                  ? (e.bgrad == GemmBiasGrad::Out ? Ep::DgeluBgrad : Ep::Dgelu)
              : e.bgrad == GemmBiasGrad::Lhs ? Ep::BgradLhs
              : e.bgrad == GemmBiasGrad::Rhs ? Ep::BgradRhs
              : e.act == GemmAct::Relu ? (e.bias ? Ep::ReluBias : Ep::Relu)
              : e.act == GemmAct::GeluTanh
                  ? (e.preactOut ? (e.bias ? Ep::GeluAuxBias : Ep::GeluAux)
                                 : (e.bias ? Ep::GeluBias : Ep::Gelu))
                  : Ep::Bias;
          bool fused = gemm.tryGemm(p, dev[in.inputs[0]], dev[in.inputs[1]],
                                    dev[in.outputs[0]], ep, args);
          if (!fused) {
            declined +=
                std::string(" ") + e.name + "(n=" + std::to_string(p.n) + ")";
            // Keep the CPU's values: only the fused ones are compared.
            for (int32_t id : in.outputs)
              TCC_CUDA_CHECK(cudaMemcpy(dev[id], cpu[id].data(), cpu[id].size(),
                                        cudaMemcpyHostToDevice));
          }
          bool forward = e.act != GemmAct::DgeluTanh && !e.preactOut &&
                         e.bgrad == GemmBiasGrad::None;
          EXPECT_TRUE(fused || !forward)
              << c.name << ": cuBLASLt declined " << e.name;
          // A pre-activation row of 20 elements is not one cuBLASLt takes.
          if (e.preactOut || e.act == GemmAct::DgeluTanh) {
            EXPECT_TRUE(!fused || p.n % 8 == 0) << c.name << " " << e.name;
          }
        }
        TCC_CUDA_CHECK(cudaDeviceSynchronize());
      }
      auto gpu = cpu;
      for (int32_t id : c.outs)
        TCC_CUDA_CHECK(cudaMemcpy(gpu[id].data(), dev[id], gpu[id].size(),
                                  cudaMemcpyDeviceToHost));
      for (void *ptr : dev)
        cudaFree(ptr);
      std::printf("%s: cuBLASLt declined:%s\n", c.name.c_str(),
                  declined.empty() ? " none" : declined.c_str());
      compareCase(c, gpu);
    }
}

// matmul_epilogue through CudaSession with cuBLASLt's epilogues off: the
// plain GEMM and the element-wise kernels that run when cuBLASLt declines
// (the fused path runs in Conformance/BackendCase.*/cuda_*_matmul_epilogue_*).
TEST(CudaKernels, GemmEpilogueFallback) {
  TCC_REQUIRE_GPU();
  std::vector<KernelCase> cases;
  gemmEpilogueCases(cases);
  SessionOptions off;
  off.gemmEpilogues = false;
  for (const KernelCase &c : cases) {
    compareCase(c, c.prog.runGpu(ExecMode::Compiled, off));
    compareCase(c, c.prog.runGpu(ExecMode::Eager, off));
  }
}
