//===- CudaSessionTest.cpp - The CUDA session: checks, memory, errors -----===//
//
// The first half runs anywhere: device detection, the registry, and every
// check CudaSession makes about an artifact before it touches the GPU. The
// second half needs a GPU and skips without one (tests/gpu/run.sh runs it
// on one).
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include "runtime/core/Initializer.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/CudaSessionInternal.h"
#include "runtime/cuda/CudnnConv.h"

#include <algorithm>
#include <set>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// Runs `f`, expecting an Error whose message contains `what`.
template <class F> void expectError(F &&f, const std::string &what) {
  try {
    f();
    ADD_FAILURE() << "no Error; expected one containing: " << what;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << what;
  }
}

/// A valid artifact: y = relu(x).
OneProgram reluProgram() {
  OneProgram p;
  int32_t x = p.random(DType::F32, {4, 8});
  int32_t y = p.out(DType::F32, {4, 8});
  p.instr("relu", {x}, {y});
  return p;
}

} // namespace

TEST(CudaSession, DeviceDetectionGivesAReason) {
  std::string why;
  if (cuda::deviceAvailable(&why)) {
    EXPECT_NE(cuda::deviceDescription().find("sm_"), std::string::npos);
  } else {
    EXPECT_FALSE(why.empty());
    expectError([] { cuda::deviceDescription(); }, why);
  }
  // Linking the module registered the backend, and the registry answers
  // with the same reason.
  ASSERT_TRUE(backends::loaded("cuda"));
  std::string registryWhy;
  EXPECT_EQ(backends::find("cuda")->available(&registryWhy),
            cuda::deviceAvailable());
  EXPECT_EQ(registryWhy, why);
}

// Without a GPU the session says why; with one it loads (no test skips on
// a GPU machine: tests/gpu/run.sh counts a skip as a failure there).
TEST(CudaSession, ConstructionNamesTheReasonWithoutGpu) {
  std::string why;
  OneProgram p = reluProgram();
  if (cuda::deviceAvailable(&why)) {
    cuda::CudaSession s(p.artifact(), ExecMode::Compiled);
    EXPECT_NE(s.deviceData(0), nullptr);
    return;
  }
  expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
              "cannot run on the GPU: " + why);
}

// The kernels tcc's schedules use (ScheduleBuilder) must all have CUDA
// kernels; each CUDA kernel must be a CPU kernel (the CPU is the reference).
TEST(CudaSession, RegistryCoversTheScheduleKernels) {
  const char *needed[] = {"matmul",
                          "fused",
                          "transpose",
                          "copy",
                          "adamw_update",
                          "reduce_sum",
                          "reduce_mean",
                          "slice",
                          "slice_grad",
                          "gather",
                          "gather_grad",
                          "gather_elements",
                          "scatter_elements",
                          "gather_nd",
                          "scatter_nd",
                          "top_k",
                          "cast",
                          "add",
                          "sub",
                          "mul",
                          "div",
                          "neg",
                          "relu",
                          "relu_grad",
                          "gelu",
                          "gelu_grad",
                          "exp",
                          "log",
                          "sqrt",
                          "tanh",
                          "sigmoid",
                          "erf",
                          "sqrt_grad",
                          "tanh_grad",
                          "sigmoid_grad",
                          "erf_grad",
                          "pow_scalar",
                          "pow_scalar_grad",
                          "broadcast_to",
                          "where",
                          "compare",
                          "increment",
                          "softmax",
                          "log_softmax",
                          "softmax_grad",
                          "log_softmax_grad",
                          "softmax_cross_entropy",
                          "softmax_cross_entropy_grad",
                          "mse_loss",
                          "mse_loss_grad",
                          "layer_norm",
                          "layer_norm_grad",
                          "layer_norm_param_grad",
                          "sgd_update",
                          "sgd_momentum_update",
                          "lion_update",
                          "adafactor_update",
                          "dropout",
                          "concat",
                          "pow",
                          "pow_grad",
                          "logic",
                          "maximum",
                          "minimum",
                          "reduce_max",
                          "reduce_min",
                          "arg_max",
                          "arg_min",
                          "reduce_prod",
                          "reduce_prod_grad",
                          "cumsum"};
  for (const char *k : needed)
    EXPECT_NE(cuda::findCudaKernel(k), nullptr) << k;
  std::vector<std::string> names = cuda::cudaKernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const std::string &k : names)
    EXPECT_NE(findKernel(k), nullptr) << k << " has no CPU kernel";
  // Every kernel the CPU runs runs on the GPU: no model is refused for its
  // device (the convolutions need cuDNN in the build).
  for (const std::string &k : kernelNames()) {
    bool conv = k.rfind("conv2d", 0) == 0;
    if (conv && !cuda::cudnnBuilt())
      EXPECT_EQ(cuda::findCudaKernel(k), nullptr) << k;
    else
      EXPECT_NE(cuda::findCudaKernel(k), nullptr) << k << " has no CUDA kernel";
  }
  EXPECT_EQ(cuda::findCudaKernel("no_such_kernel"), nullptr);
}

// Checks of the artifact come before the GPU is touched: these run (and
// give the same message) with or without one.
// A build without cuDNN refuses convolutions saying so; with it, what
// cuDNN's int descriptors cannot index is refused before the GPU is used.
TEST(CudaSession, ConvolutionsCuDnnCannotRunAreRefused) {
  OneProgram p;
  int32_t one = p.random(DType::F32, {1, 1, 1, 1});
  int32_t x = p.temp(DType::F32, {1024, 64, 256, 256}); // 2^32 elements
  int32_t w = p.random(DType::F32, {64, 64, 3, 3});
  int32_t y = p.temp(DType::F32, {1024, 64, 256, 256});
  p.instr("broadcast_to", {one}, {x});
  p.instr("conv2d", {x, w}, {y}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
              cuda::cudnnBuilt()
                  ? "program 'p' instr 1 (conv2d): the convolution's input "
                    "[1024,64,256,256] has more than 2^31 - 1 elements"
                  : "program 'p' instr 1 (conv2d): no CUDA kernel: this build "
                    "of the CUDA backend has no cuDNN");
}

TEST(CudaSession, UnknownKernelIsRefused) {
  OneProgram p;
  int32_t x = p.random(DType::F32, {4});
  int32_t y = p.out(DType::F32, {4});
  p.instr("frobnicate", {x}, {y});
  expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Eager); },
              "program 'p' instr 0 (frobnicate): unknown kernel 'frobnicate'");
}

TEST(CudaSession, UnsupportedCasesAreRefused) {
  {
    OneProgram p; // f32 x bf16: a GEMM takes one type for A and B
    int32_t a = p.random(DType::F32, {2, 3});
    int32_t b = p.random(DType::BF16, {3, 4});
    int32_t c = p.out(DType::F32, {2, 4});
    p.instr("matmul", {a, b}, {c}, {0, 0});
    expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
                "instr 0 (matmul): the GEMM's operands must share one element "
                "type; input 0 't0' is f32, input 1 't1' bf16");
  }
  {
    OneProgram p;
    std::vector<int64_t> shape(9, 1);
    int32_t a = p.random(DType::F32, shape);
    int32_t c = p.out(DType::F32, shape);
    p.instr("add", {a, a}, {c});
    expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
                "instr 0 (add): no CUDA kernel for rank 9 operands");
  }
  // matmul_epilogue: one type for the inputs and D (f32 D from 16-bit
  // inputs for the bias-gradient forms only), checked by checkInstr before
  // the CUDA kernel's own check (codes: runtime/core/abi/GemmEpilogue.h; 1 bias,
  // 6 gelu_tanh_aux, 9 bgrad_rhs).
  {
    OneProgram p;
    int32_t a = p.random(DType::BF16, {2, 3}), b = p.random(DType::BF16, {3, 4});
    int32_t bias = p.random(DType::F32, {4});
    int32_t d = p.out(DType::BF16, {2, 4});
    p.instr("matmul_epilogue", {a, b, bias}, {d}, {0, 0, 1});
    expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
                "instr 0 (matmul_epilogue): input 2 't2' is f32; the bias "
                "epilogue reads it in the operands' type bf16");
  }
  {
    OneProgram p;
    int32_t a = p.random(DType::BF16, {2, 3}), b = p.random(DType::BF16, {3, 8});
    int32_t d = p.out(DType::F32, {2, 8}), pre = p.out(DType::F32, {2, 8});
    p.instr("matmul_epilogue", {a, b}, {d, pre}, {0, 0, 6});
    expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
                "instr 0 (matmul_epilogue): output 0 't2' is f32; a bf16 GEMM "
                "with the gelu_tanh_aux epilogue writes bf16");
  }
  {
    OneProgram p;
    int32_t a = p.random(DType::F16, {5, 3}), b = p.random(DType::F16, {5, 8});
    int32_t d = p.out(DType::F16, {3, 8}), db = p.out(DType::BF16, {8});
    p.instr("matmul_epilogue", {a, b}, {d, db}, {1, 0, 9});
    expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
                "instr 0 (matmul_epilogue): output 1 't3' is bf16; a bias "
                "gradient has the operands' type f16 or f32");
  }
}

TEST(CudaSession, FusedInstrsNeedMatchingDeviceCode) {
  OneProgram p;
  int32_t x = p.random(DType::F32, {4, 8});
  int32_t y = p.out(DType::F32, {4, 8});
  p.instr("fused", {x}, {y}, {0});
  expectError([&] { cuda::CudaSession s(p.artifact(), ExecMode::Compiled); },
              "instr 0 (fused): the artifact has no GPU code for its "
              "generated kernels; compile it with tcc compile --target cuda");

  Artifact &a = p.artifact();
  std::vector<uint8_t> cubin(16, 0);
  a.device.arch = "sm_90a";
  a.device.offset = a.addBlob(cubin.data(), cubin.size());
  a.device.size = 16;
  DeviceKernel k;
  k.symbol = "k0";
  k.rows = 4;
  k.cols = 8;
  k.inputs = {{DType::F32, 32}};
  k.outputs = {{DType::F32, 16}};
  a.device.kernels = {k};
  expectError([&] { cuda::CudaSession s(a, ExecMode::Compiled); },
              "output 0 't1' is f32 [4,8]; generated kernel 0 was compiled "
              "for f32 with 16 elements");
  a.programs[0].instrs[0].iattrs = {1};
  expectError([&] { cuda::CudaSession s(a, ExecMode::Compiled); },
              "generated kernel 1 does not exist (the GPU code has 1)");
}

TEST(CudaSession, ArchitectureCompatibility) {
  std::string why;
  EXPECT_TRUE(cuda::archRunsOn("sm_90a", 9, 0, &why));
  EXPECT_TRUE(cuda::archRunsOn("sm_90", 9, 0, &why));
  EXPECT_TRUE(cuda::archRunsOn("sm_80", 8, 6, &why));
  EXPECT_TRUE(cuda::archRunsOn("sm_100f", 10, 3, &why));
  EXPECT_FALSE(cuda::archRunsOn("sm_86", 8, 0, &why));
  EXPECT_FALSE(cuda::archRunsOn("sm_90", 10, 0, &why));
  EXPECT_FALSE(cuda::archRunsOn("sm_90a", 8, 0, &why));
  EXPECT_NE(why.find("built for sm_90a, which does not run on this GPU "
                     "(sm_80); sm_90a code runs only on compute capability "
                     "9.0; recompile it for this GPU: tcc compile --target "
                     "cuda --gpu-arch sm_80"),
            std::string::npos)
      << why;
  EXPECT_FALSE(cuda::archRunsOn("sm_9x", 9, 0, &why));
  EXPECT_NE(why.find("not sm_NN, sm_NNa or sm_NNf"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// With a GPU
//===----------------------------------------------------------------------===//

// x -> matmul -> add bias -> gelu -> reduce_sum, through temporaries: the
// eager session (pool allocations) and the compiled one (arena) compute the
// same bits, and both agree with the CPU.
static OneProgram chain() {
  OneProgram p;
  int32_t x = p.random(DType::F32, {16, 32});
  int32_t w = p.random(DType::F32, {32, 24});
  int32_t b = p.random(DType::F32, {24});
  int32_t h = p.temp(DType::F32, {16, 24});
  int32_t hb = p.temp(DType::F32, {16, 24});
  int32_t g = p.temp(DType::F32, {16, 24});
  int32_t y = p.out(DType::F32, {24});
  p.instr("matmul", {x, w}, {h}, {0, 0});
  p.instr("add", {h, b}, {hb});
  p.instr("gelu", {hb}, {g}, {0});
  p.instr("reduce_sum", {g}, {y}, {0});
  return p;
}

TEST(CudaSession, EagerAndCompiledAgree) {
  TCC_REQUIRE_GPU();
  OneProgram p = chain();
  auto compiled = p.runGpu(ExecMode::Compiled, {}, 2);
  auto eager = p.runGpu(ExecMode::Eager, {}, 2);
  int32_t y = static_cast<int32_t>(p.artifact().tensors.size() - 1);
  EXPECT_EQ(compiled[y], eager[y]);
  expectClose(p, p.runCpu(), compiled, y, 1e-4, 1e-4);
}

// SessionOptions::rank reaches the dropout launches, graphs and eager
// alike: each rank draws the CPU session's masks of that rank.
TEST(CudaSession, DropoutDrawsAsTheSessionsRank) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  int32_t x = p.random(DType::F32, {4, 100});
  int32_t step = p.i64({}, {2});
  int32_t y = p.out(DType::F32, {4, 100}), mask = p.out(DType::F32, {4, 100});
  p.instr("dropout", {x, step}, {y, mask}, {3}, {0.5});
  for (int64_t rank : {0, 1}) {
    SessionOptions o;
    o.rank = rank;
    auto want = p.runOn("cpu", ExecMode::Compiled, o);
    for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
      auto got = p.runGpu(mode, o, 2);
      EXPECT_EQ(got[mask], want[mask]) << "rank " << rank;
      EXPECT_EQ(got[y], want[y]) << "rank " << rank;
    }
  }
}

TEST(CudaSession, MemoryAndProfile) {
  TCC_REQUIRE_GPU();
  OneProgram p = chain();
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    cuda::CudaSession s(p.artifact(), mode);
    s.setProfiling(true);
    s.run("p");
    s.synchronize();
    MemoryStats m = s.memory();
    EXPECT_EQ(m.persistentBytes, (16 * 32 + 32 * 24 + 24 + 24) * 4);
    EXPECT_GT(m.tempPeakBytes, 0);
    EXPECT_GE(m.measuredPeakBytes,
              m.peakBytes + cuda::CudaGemm::kWorkspaceBytes);
    auto prof = s.profile();
    EXPECT_EQ(prof.size(), 4u);
    for (const auto &k : prof) {
      EXPECT_EQ(k.calls, 1);
      EXPECT_GT(k.bytes, 0) << k.kernel;
      EXPECT_GT(k.seconds, 0) << k.kernel;
      EXPECT_EQ(k.flops, k.kernel == "matmul" ? 2.0 * 16 * 24 * 32 : 0.0)
          << k.kernel;
    }
    // By shape: the GEMM is listed under its problem, the rest as before.
    cuda::CudaSession byShape(p.artifact(), mode);
    byShape.setProfiling(true, /*byShape=*/true);
    byShape.run("p");
    byShape.synchronize();
    std::set<std::string> names;
    for (const auto &k : byShape.profile())
      names.insert(k.kernel);
    EXPECT_EQ(names.count("matmul [16x24] k32"), 1u);
    EXPECT_EQ(names.count("matmul"), 0u);
    EXPECT_EQ(names.size(), 4u);
  }
}

// The programs share one arena, the largest program's: after another
// program ran, a program's temps have no buffer; each program's CUDA graph
// is found again when the programs alternate, and what they compute is
// what each computes alone.
TEST(CudaSession, ProgramsShareOneArena) {
  TCC_REQUIRE_GPU();
  OneProgram p; // program "p": y = relu(-x) through one temp
  int32_t x = p.random(DType::F32, {64, 32});
  int32_t h = p.temp(DType::F32, {64, 32});
  int32_t y = p.out(DType::F32, {64, 32});
  p.instr("neg", {x}, {h});
  p.instr("relu", {h}, {y});
  p.program("q"); // z = -relu(x) + x through two temps: a larger arena
  int32_t g = p.temp(DType::F32, {64, 32});
  int32_t n = p.temp(DType::F32, {64, 32});
  int32_t z = p.out(DType::F32, {64, 32});
  p.instr("relu", {x}, {g});
  p.instr("neg", {g}, {n});
  p.instr("add", {n, x}, {z});
  const int64_t qArena = p.artifact().programs[1].arenaBytes;
  ASSERT_GT(qArena, p.artifact().programs[0].arenaBytes);

  cuda::CudaSession s(p.artifact(), ExecMode::Compiled);
  EXPECT_EQ(s.memory().tempPeakBytes, qArena);
  EXPECT_EQ(s.deviceData(h), nullptr); // no run yet
  s.run("p");
  char *base = static_cast<char *>(s.deviceData(h));
  ASSERT_NE(base, nullptr);
  s.run("q");
  EXPECT_EQ(s.deviceData(h), nullptr);
  EXPECT_EQ(static_cast<char *>(s.deviceData(g)), base);
  std::vector<float> xs(64 * 32), ys(64 * 32), zs(64 * 32);
  expectError([&] { s.download(h, ys.data()); }, "has no device buffer now");
  for (int i = 0; i < 4; ++i) {
    s.run("p");
    s.run("q");
  }
  s.synchronize();
  EXPECT_EQ(s.graphStatus().rfind("on: 2 graphs", 0), 0u) << s.graphStatus();

  s.download(x, xs.data());
  s.download(y, ys.data());
  s.download(z, zs.data());
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(ys[i], std::max(-xs[i], 0.0f)) << i;
    EXPECT_EQ(zs[i], -std::max(xs[i], 0.0f) + xs[i]) << i;
  }
}

TEST(CudaSession, UploadDownloadAndBindInput) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  int32_t x = p.tensor(DType::F32, {4}, {}, TensorKind::Input);
  int32_t y = p.out(DType::F32, {4});
  p.artifact().programs[0].inputs = {x};
  p.instr("neg", {x}, {y});
  cuda::CudaSession s(p.artifact(), ExecMode::Compiled);
  float in[4] = {1, -2, 3, -4}, out[4];
  s.upload(x, in);
  s.run("p");
  s.download(y, out);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[3], 4.0f);
  // A buffer of the caller's (the feeder's) replaces the input's.
  void *other = nullptr;
  ASSERT_EQ(cudaMalloc(&other, sizeof in), cudaSuccess);
  float in2[4] = {5, 6, 7, 8};
  ASSERT_EQ(cudaMemcpy(other, in2, sizeof in2, cudaMemcpyHostToDevice),
            cudaSuccess);
  s.bindInput(x, other);
  EXPECT_EQ(s.deviceData(x), other);
  s.run("p");
  s.download(y, out);
  EXPECT_EQ(out[1], -6.0f);
  expectError([&] { s.bindInput(y, other); }, "is a state, not an input");
  cudaFree(other);
}

TEST(CudaSession, LabelOutOfRangeIsReportedAtSynchronize) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  int32_t logits = p.random(DType::F32, {3, 5});
  int32_t labels = p.i64({3}, {1, 7, 2});
  int32_t loss = p.out(DType::F32, {});
  p.instr("softmax_cross_entropy", {logits, labels}, {loss}, {-100}, {0.0});
  cuda::CudaSession s(p.artifact(), ExecMode::Compiled);
  s.run("p");
  expectError([&] { s.synchronize(); },
              "program 'p' instr 0 (softmax_cross_entropy): label 7 at "
              "position 1 of 't1' is outside [0, 5)");
  s.synchronize(); // reported once
}

TEST(CudaSession, GatherIndexOutOfRangeIsReported) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  int32_t table = p.random(DType::F32, {4, 3});
  int32_t idx = p.i64({2, 2}, {0, 1, -5, 2});
  int32_t y = p.out(DType::F32, {2, 2, 3});
  p.instr("gather", {table, idx}, {y}, {0});
  cuda::CudaSession s(p.artifact(), ExecMode::Eager);
  s.run("p");
  expectError([&] { s.synchronize(); },
              "gather: index -5 at position [1,0] of the indices 't1' is "
              "outside [-4, 4) (axis 0 has size 4)");
}

TEST(CudaSession, SeededInitialValuesMatchTheCpu) {
  TCC_REQUIRE_GPU();
  OneProgram p;
  int32_t w = p.out(DType::F32, {64});
  TensorInfo &t = p.artifact().tensors[w];
  t.kind = TensorKind::Param;
  t.dataOffset = -1;
  t.init.kind = InitSpec::Kind::Normal;
  t.init.a = 0.0;
  t.init.b = 0.02;
  t.init.seed = 42;
  cuda::CudaSession s(p.artifact(), ExecMode::Compiled);
  std::vector<float> gpu(64), cpu(64);
  s.download(w, gpu.data());
  fillInitial(t, cpu.data());
  EXPECT_EQ(gpu, cpu);
}
