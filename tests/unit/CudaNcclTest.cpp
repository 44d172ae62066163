//===- CudaNcclTest.cpp - NCCL's gradient buckets on the CUDA backend -----===//
//
// Without a GPU: the loader's errors (a missing library, one that is not
// NCCL), loading the toolkit's NCCL, TCC_NCCL, and the check that every
// bucket is started and joined in its program. With a GPU (skipped without
// one; tests/gpu/run.sh runs them): a step with two buckets, forced through
// NCCL on one rank (TCC_NCCL=force), leaves the same bits as the same step
// without NCCL, captured into a CUDA graph and replayed, and in eager mode.
// Two ranks on two GPUs are tested by tests/gpu/nccl.sh.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"
#include "OneProgram.h"

#include "runtime/cuda/CudaNccl.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// Sets (or unsets, with null) one variable while in scope.
class EnvScope {
public:
  EnvScope(const char *name, const char *value) : name_(name) {
    if (const char *v = std::getenv(name))
      saved_ = v;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvScope() {
    if (saved_)
      setenv(name_, saved_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> saved_;
};

std::string loadError(const std::vector<std::string> &candidates) {
  try {
    cuda::loadNcclFrom(candidates);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

Instr reduce(int64_t bucket, std::vector<int32_t> in = {0}) {
  return Instr{"all_reduce", std::move(in), {}, {bucket}, {}};
}
Instr join(int64_t bucket, std::vector<int32_t> in = {0}) {
  return Instr{"all_reduce_wait", std::move(in), {}, {bucket}, {}};
}

std::string pairError(const Program &p) {
  try {
    cuda::checkBucketPairs({&p});
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(CudaNcclLoader, MissingLibraryNamesWhereItLooked) {
  if (!cuda::ncclBuilt())
    GTEST_SKIP() << "this build has no NCCL";
  EnvScope lib("TCC_NCCL_LIBRARY", nullptr);
  std::string e = loadError({"/nonexistent/libnccl.so.2"});
  EXPECT_NE(e.find("cannot load NCCL"), std::string::npos) << e;
  EXPECT_NE(e.find("/nonexistent/libnccl.so.2: "), std::string::npos) << e;
  EXPECT_NE(e.find("LD_LIBRARY_PATH"), std::string::npos) << e;
  EXPECT_NE(e.find("TCC_NCCL_LIBRARY"), std::string::npos) << e;
}

TEST(CudaNcclLoader, ExplicitLibraryIsTheOnlyCandidate) {
  {
    EnvScope lib("TCC_NCCL_LIBRARY", "/opt/x/libnccl.so.2");
    EXPECT_EQ(cuda::ncclCandidates(),
              std::vector<std::string>{"/opt/x/libnccl.so.2"});
    if (cuda::ncclBuilt()) {
      std::string e = loadError(cuda::ncclCandidates());
      EXPECT_NE(e.find("/opt/x/libnccl.so.2: "), std::string::npos) << e;
      EXPECT_NE(e.find("TCC_NCCL_LIBRARY names the library to use"),
                std::string::npos)
          << e;
    }
  }
  EnvScope lib("TCC_NCCL_LIBRARY", nullptr);
  EXPECT_EQ(cuda::ncclCandidates().front(), "libnccl.so.2");
}

TEST(CudaNcclLoader, ALibraryThatIsNotNcclIsRefused) {
  if (!cuda::ncclBuilt())
    GTEST_SKIP() << "this build has no NCCL";
  EnvScope lib("TCC_NCCL_LIBRARY", nullptr);
  std::string e = loadError({"libm.so.6"});
  EXPECT_NE(e.find("libm.so.6: no function ncclGetVersion"), std::string::npos)
      << e;
}

// Opening NCCL needs no GPU: this is the toolkit's library the build found
// (or the loader's path), at least 2.10.
TEST(CudaNcclLoader, LoadsTheToolkitsNccl) {
  if (!cuda::ncclBuilt())
    GTEST_SKIP() << "this build has no NCCL";
  EnvScope lib("TCC_NCCL_LIBRARY", nullptr);
  int version = cuda::loadNcclFrom(cuda::ncclCandidates());
  EXPECT_GE(version, 21000);
  EXPECT_EQ(cuda::ncclDescription().rfind("NCCL 2.", 0), 0u)
      << cuda::ncclDescription();
}

TEST(CudaNcclLoader, TccNcclKnob) {
  {
    EnvScope v("TCC_NCCL", nullptr);
    EXPECT_EQ(cuda::ncclUseFromEnv(), cuda::NcclUse::Auto);
  }
  {
    EnvScope v("TCC_NCCL", "auto");
    EXPECT_EQ(cuda::ncclUseFromEnv(), cuda::NcclUse::Auto);
  }
  {
    EnvScope v("TCC_NCCL", "force");
    EXPECT_EQ(cuda::ncclUseFromEnv(), cuda::NcclUse::Force);
    EXPECT_TRUE(cuda::ncclWanted());
  }
  EnvScope v("TCC_NCCL", "on");
  try {
    cuda::ncclUseFromEnv();
    ADD_FAILURE() << "TCC_NCCL=on accepted";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "TCC_NCCL='on': expected 'auto' (NCCL when the run has "
              "several ranks) or 'force' (NCCL even with one rank)");
  }
}

TEST(CudaNcclBuckets, EveryBucketIsStartedAndJoinedOnce) {
  Program p;
  p.name = "train_step";
  p.instrs = {reduce(1), reduce(0), join(0), join(1)};
  EXPECT_EQ(cuda::checkBucketPairs({&p}), (std::vector<int64_t>{0, 1}));

  p.instrs = {reduce(0), join(1)};
  EXPECT_EQ(pairError(p), "program 'train_step' instr 1 (all_reduce_wait): "
                          "bucket 1 is waited for without being started "
                          "before");
  p.instrs = {reduce(0), join(0), reduce(0), join(0)};
  EXPECT_EQ(pairError(p), "program 'train_step' instr 2 (all_reduce): bucket "
                          "0 is started a second time in one run");
  p.instrs = {reduce(0), reduce(1), join(0)};
  EXPECT_EQ(pairError(p), "program 'train_step' instr 1 (all_reduce): bucket "
                          "1 is never waited for in its program");
}

namespace {

/// Three gradients made by the step, averaged in two buckets (one of two
/// buffers) while another kernel runs, then read: y = g0 + g1.
struct BucketStep {
  OneProgram p;
  int32_t y, z;
  BucketStep() {
    int32_t a = p.random(DType::F32, {1000}), b = p.random(DType::F32, {1000});
    int32_t c = p.random(DType::F32, {37});
    int32_t g0 = p.temp(DType::F32, {1000}), g1 = p.temp(DType::F32, {1000});
    int32_t h = p.temp(DType::F32, {37});
    p.instr("relu", {a}, {g0});
    p.instr("all_reduce", {g0}, {}, {0});
    p.instr("neg", {b}, {g1});
    p.instr("relu", {c}, {h});
    p.instr("all_reduce", {g1, h}, {}, {1});
    z = p.out(DType::F32, {1000});
    p.instr("neg", {a}, {z}); // runs beside the buckets
    p.instr("all_reduce_wait", {g0}, {}, {0});
    p.instr("all_reduce_wait", {g1, h}, {}, {1});
    y = p.out(DType::F32, {1000});
    p.instr("add", {g0, g1}, {y});
    p.internal(g0);
    p.internal(g1);
    p.internal(h);
  }
};

std::vector<std::vector<float>> runSteps(const BucketStep &s, ExecMode mode,
                                         bool graphs, int runs,
                                         std::string *status) {
  SessionOptions o;
  o.graphs = graphs;
  cuda::CudaSession session(s.p.artifact(), mode, o);
  std::vector<std::vector<float>> ys;
  for (int r = 0; r < runs; ++r) {
    session.run("p");
    std::vector<float> y(1000);
    session.download(s.y, y.data());
    ys.push_back(y);
  }
  session.synchronize();
  *status = session.graphStatus();
  return ys;
}

} // namespace

// The step itself, on the CPU (where one process's buckets are no-ops):
// valid, and y = relu(a) + (-b). The GPU test below checks against it.
TEST(CudaNcclBuckets, TheStepOnTheCpu) {
  BucketStep s;
  auto cpu = s.p.runOn("cpu", ExecMode::Compiled);
  auto ref = s.p.runCpu();
  EXPECT_EQ(cpu[s.y], ref[s.y]);
  std::vector<float> y(1000);
  std::memcpy(y.data(), cpu[s.y].data(), 4000);
  EXPECT_NE(y, std::vector<float>(1000, 0.f));
}

// One rank through NCCL (the mean over one rank is the value itself, bit
// for bit): the fork onto the communication stream and the join back are
// captured into the step's graph and replayed.
TEST(CudaNcclBuckets, ForcedOneRankMatchesNoNccl) {
  TCC_REQUIRE_GPU();
  if (!cuda::ncclBuilt())
    GTEST_FAIL() << "a CUDA build on a GPU machine without NCCL";
  BucketStep s;
  std::string plain, forced, eager;
  std::vector<std::vector<float>> want, got, got2;
  {
    EnvScope v("TCC_NCCL", nullptr);
    want = runSteps(s, ExecMode::Compiled, true, 5, &plain);
  }
  {
    EnvScope v("TCC_NCCL", "force");
    got = runSteps(s, ExecMode::Compiled, true, 5, &forced);
    got2 = runSteps(s, ExecMode::Eager, false, 2, &eager);
  }
  EXPECT_EQ(plain, "on: 1 graph, 4 replays");
  EXPECT_EQ(forced, "on: 1 graph, 4 replays"); // NCCL's launches captured
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(want[i], got[i]) << "run " << i;
  EXPECT_EQ(got2[0], want[0]);
  EXPECT_EQ(got2[1], want[1]);
  // And the values are the step's (relu and neg are exact on both).
  auto cpu = s.p.runOn("cpu", ExecMode::Compiled);
  std::vector<float> ref(1000);
  std::memcpy(ref.data(), cpu[s.y].data(), 4000);
  EXPECT_EQ(got.back(), ref);
  EXPECT_NE(cuda::ncclDescription(), "");
}
