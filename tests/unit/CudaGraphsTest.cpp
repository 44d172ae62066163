//===- CudaGraphsTest.cpp - Compiled steps replayed as CUDA graphs --------===//
//
// Needs a GPU (skips without one; tests/gpu/run.sh runs it): a program
// with a GEMM, element-wise kernels and a multi-tensor AdamW, run many
// times with graphs and without, with its input bound alternately to two
// buffers (as the feeder's slots are), must leave the same bits.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include <cuda_runtime_api.h>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

struct StepProgram {
  OneProgram p;
  int32_t x, w, b, y;
  StepProgram() {
    x = p.tensor(DType::F32, {8, 16}, {}, TensorKind::Input);
    w = p.random(DType::F32, {16, 32});
    b = p.random(DType::F32, {32});
    int32_t gw = p.random(DType::F32, {16, 32}),
            gb = p.random(DType::F32, {32});
    int32_t mw = p.floats(DType::F32, {16, 32}, std::vector<float>(512, 0.f));
    int32_t vw = p.floats(DType::F32, {16, 32}, std::vector<float>(512, 0.f));
    int32_t mb = p.floats(DType::F32, {32}, std::vector<float>(32, 0.f));
    int32_t vb = p.floats(DType::F32, {32}, std::vector<float>(32, 0.f));
    int32_t step = p.floats(DType::F32, {}, {1.0f});
    int32_t lr = p.floats(DType::F32, {}, {1e-3f});
    p.artifact().programs[0].inputs = {x};
    int32_t t = p.temp(DType::F32, {8, 32});
    p.instr("matmul", {x, w}, {t}, {0, 0});
    int32_t u = p.temp(DType::F32, {8, 32});
    p.instr("add", {t, b}, {u});
    y = p.out(DType::F32, {8, 32});
    p.instr("relu", {u}, {y});
    const std::vector<double> hyper = {0.9, 0.999, 1e-8, 0.01};
    p.instr("adamw_update", {w, gw, mw, vw, step, lr}, {w, mw, vw}, {0}, hyper);
    p.instr("adamw_update", {b, gb, mb, vb, step, lr}, {b, mb, vb}, {0}, hyper);
    p.artifact().programs[0].outputs = {y};
  }
};

/// y after each of `runs` runs, x bound alternately to two buffers; and the
/// session's graph status.
std::vector<std::vector<float>> runAlternating(StepProgram &sp, bool graphs,
                                               int runs, std::string *status) {
  SessionOptions o;
  o.graphs = graphs;
  cuda::CudaSession s(sp.p.artifact(), ExecMode::Compiled, o);
  std::vector<float> xa(128), xb(128);
  for (int i = 0; i < 128; ++i) {
    xa[i] = 0.01f * (i % 17) - 0.05f;
    xb[i] = 0.02f * (i % 13) - 0.1f;
  }
  void *da = nullptr, *db = nullptr;
  EXPECT_EQ(cudaMalloc(&da, 512), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&db, 512), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(da, xa.data(), 512, cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpy(db, xb.data(), 512, cudaMemcpyHostToDevice),
            cudaSuccess);
  std::vector<std::vector<float>> ys;
  for (int r = 0; r < runs; ++r) {
    s.bindInput(sp.x, r % 2 ? db : da);
    s.run("p");
    std::vector<float> y(256);
    s.download(sp.y, y.data());
    ys.push_back(y);
  }
  std::vector<float> w(512);
  s.download(sp.w, w.data());
  ys.push_back(w);
  *status = s.graphStatus();
  s.synchronize();
  cudaFree(da);
  cudaFree(db);
  return ys;
}

} // namespace

TEST(CudaGraphs, ReplaysGiveTheSameBits) {
  TCC_REQUIRE_GPU();
  StepProgram sp;
  std::string on, off;
  auto withGraphs = runAlternating(sp, true, 9, &on);
  auto without = runAlternating(sp, false, 9, &off);
  ASSERT_EQ(withGraphs.size(), without.size());
  for (size_t i = 0; i < without.size(); ++i)
    EXPECT_EQ(withGraphs[i], without[i]) << "run " << i;
  // Two buffers bound: two graphs, each captured on its key's second run
  // and replayed from its third: runs 3, 4 capture (and launch), 5..9
  // replay, so 7 graph launches.
  EXPECT_EQ(on, "on: 2 graphs, 7 replays");
  EXPECT_EQ(off, "off (not asked for)");
  // The weights moved: the updates ran in every run, replays included.
  EXPECT_NE(withGraphs.back(), std::vector<float>(512, 0.f));
}

TEST(CudaGraphs, EagerAndProfilingLaunchDirectly) {
  TCC_REQUIRE_GPU();
  StepProgram sp;
  cuda::CudaSession eager(sp.p.artifact(), ExecMode::Eager);
  eager.run("p");
  eager.synchronize();
  EXPECT_EQ(eager.graphStatus(), "off (eager mode)");
  cuda::CudaSession prof(sp.p.artifact(), ExecMode::Compiled);
  prof.setProfiling(true);
  for (int i = 0; i < 3; ++i)
    prof.run("p");
  EXPECT_EQ(prof.graphStatus(), "on: 0 graphs, 0 replays");
  EXPECT_EQ(prof.profile().size(), 4u); // matmul, add, relu, AdamW (one)
  // The multi-tensor AdamW's row counts both members' bytes: p, g, m, v
  // read, p, m, v written, and the step.
  int found = 0;
  for (const auto &k : prof.profile())
    if (k.kernel == "adamw_update (multi-tensor)") {
      ++found;
      EXPECT_EQ(k.calls, 3);
      EXPECT_EQ(k.bytes, 3 * (7 * (16 * 32 + 32) + 2) * 4);
    }
  EXPECT_EQ(found, 1);
}
