//===- CudaKernelsTest.cpp - Every CUDA kernel against the CPU kernel -----===//
//
// On a GPU: the programs of CudaKernelCases.h through CudaSession (the same
// ones the emulator runs in CudaKernelEmuTest.cpp), matmul on cuBLASLt in
// every type, transpose and batch layout, and the GEMM epilogues. All of
// them skip without a GPU.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelCases.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaGemm.h"

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// Runs `p` on both and compares the listed outputs.
void compare(const OneProgram &p, const std::vector<int32_t> &outs,
             double rtol = -1, double atol = -1) {
  auto cpu = p.runCpu();
  auto gpu = p.runGpu();
  for (int32_t id : outs) {
    DType t = p.info(id).dtype;
    expectClose(p, cpu, gpu, id, rtol >= 0 ? rtol : rtolFor(t),
                atol >= 0 ? atol : atolFor(t));
  }
}

class CudaKernelCase : public ::testing::TestWithParam<std::string> {};

} // namespace

TEST_P(CudaKernelCase, MatchesTheCpu) {
  TCC_REQUIRE_GPU();
  for (const KernelCase &c : kernelCases())
    if (c.name == GetParam()) {
      compareCase(c, c.prog.runGpu(ExecMode::Compiled));
      compareCase(c, c.prog.runGpu(ExecMode::Eager));
    }
}

INSTANTIATE_TEST_SUITE_P(CudaKernels, CudaKernelCase,
                         ::testing::ValuesIn(kernelCaseNames()),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                           return i.param;
                         });

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
  EXPECT_EQ(multi, 1);
  EXPECT_EQ(single, 1); // the one with other hyper-parameters
}

TEST(CudaKernels, MatmulTypesTransposesAndBatches) {
  TCC_REQUIRE_GPU();
  struct Case {
    std::vector<int64_t> a, b, c;
    int64_t ta, tb;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}, {5, 3}, 0, 0},
      {{7, 5}, {7, 3}, {5, 3}, 1, 0},
      {{5, 7}, {3, 7}, {5, 3}, 0, 1},
      {{7, 5}, {3, 7}, {5, 3}, 1, 1},
      {{4, 5, 7}, {7, 3}, {4, 5, 3}, 0, 0},          // batch folds into M
      {{4, 5, 7}, {4, 7, 3}, {4, 5, 3}, 0, 0},       // strided batch
      {{5, 7}, {4, 7, 3}, {4, 5, 3}, 0, 0},          // A repeated (stride 0)
      {{4, 7, 5}, {7, 3}, {4, 5, 3}, 1, 0},          // transA: no folding
      {{2, 1, 5, 7}, {3, 7, 3}, {2, 3, 5, 3}, 0, 0}, // loop of batches
      {{5, 0}, {0, 3}, {5, 3}, 0, 0},                // k = 0: zeros
  };
  for (auto [ab, c] :
       {std::pair{DType::F32, DType::F32}, std::pair{DType::BF16, DType::BF16},
        std::pair{DType::F16, DType::F16},
        std::pair{DType::BF16, DType::F32}}) {
    OneProgram p;
    std::vector<int32_t> outs;
    for (const Case &k : cases) {
      int32_t a = p.random(ab, k.a), b = p.random(ab, k.b);
      outs.push_back(p.out(c, k.c));
      p.instr("matmul", {a, b}, {outs.back()}, {k.ta, k.tb});
    }
    compare(p, outs, c == DType::F32 ? 1e-4 : rtolFor(c),
            c == DType::F32 ? 1e-4 : 2 * atolFor(c));
  }
  // TF32 rounds the inputs to 10-bit mantissas.
  OneProgram p;
  int32_t a = p.random(DType::F32, {64, 96}),
          b = p.random(DType::F32, {96, 32});
  int32_t c = p.out(DType::F32, {64, 32});
  p.instr("matmul", {a, b}, {c}, {0, 0});
  cuda::CudaOptions tf32;
  tf32.tf32 = true;
  expectClose(p, p.runCpu(), p.runGpu(ExecMode::Compiled, tf32), c, 1e-2, 5e-2);
}

// The epilogue API for a later compiler pass: bias, ReLU and GELU (tanh)
// fused into the GEMM agree with matmul + add + relu / gelu on the CPU.
TEST(CudaKernels, GemmEpilogues) {
  TCC_REQUIRE_GPU();
  using Ep = cuda::CudaGemm::Epilogue;
  for (Ep ep : {Ep::Bias, Ep::Relu, Ep::ReluBias, Ep::GeluBias}) {
    OneProgram p;
    int32_t a = p.random(DType::F32, {24, 40}),
            b = p.random(DType::F32, {40, 16});
    int32_t bias = p.random(DType::F32, {16});
    int32_t c = p.out(DType::F32, {24, 16}), cb = p.out(DType::F32, {24, 16});
    int32_t r = p.out(DType::F32, {24, 16});
    p.instr("matmul", {a, b}, {c}, {0, 0});
    bool withBias = ep != Ep::Relu;
    p.instr(withBias ? "add" : "copy",
            withBias ? std::vector<int32_t>{c, bias} : std::vector<int32_t>{c},
            {cb});
    if (ep == Ep::Bias)
      p.instr("copy", {cb}, {r});
    else if (ep == Ep::GeluBias)
      p.instr("gelu", {cb}, {r}, {1});
    else
      p.instr("relu", {cb}, {r});
    auto cpu = p.runCpu();

    auto init = p.initial();
    void *dA, *dB, *dBias, *dC;
    using Buf = std::pair<void **, int32_t>;
    for (auto [ptr, id] :
         {Buf{&dA, a}, Buf{&dB, b}, Buf{&dBias, bias}, Buf{&dC, c}}) {
      TCC_CUDA_CHECK(cudaMalloc(ptr, init[id].size()));
      TCC_CUDA_CHECK(cudaMemcpy(*ptr, init[id].data(), init[id].size(),
                                cudaMemcpyHostToDevice));
    }
    {
      cuda::CudaGemm gemm(nullptr, false);
      cuda::CudaGemm::Problem pr;
      pr.m = 24;
      pr.n = 16;
      pr.k = 40;
      gemm.gemm(pr, dA, dB, dC, ep, withBias ? dBias : nullptr);
      TCC_CUDA_CHECK(cudaDeviceSynchronize());
    }
    auto gpu = cpu;
    TCC_CUDA_CHECK(
        cudaMemcpy(gpu[r].data(), dC, gpu[r].size(), cudaMemcpyDeviceToHost));
    for (void *ptr : {dA, dB, dBias, dC})
      cudaFree(ptr);
    expectClose(p, cpu, gpu, r, 2e-3, 2e-3);
  }
}
