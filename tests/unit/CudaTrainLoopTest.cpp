//===- CudaTrainLoopTest.cpp - The training loop on a GPU against the CPU -===//
//
// Trains one artifact compiled with --target cuda with the one training
// loop (rt::train) on a CUDA session and on a CPU session and compares: the
// loss
// curves, the same results for every number of input slots (the feeding
// pipeline never feeds a wrong or half-copied batch), checkpoints and
// resume, a stop signal, a non-finite loss, evaluation.
//
// Needs a GPU and the artifact: TCC_GPU_TEST_DIR names a directory with
// mlp.tcc (`tcc compile examples/mlp.onnx --batch 32 --target cuda`) and the
// digits data train_x.npy, train_y.npy (tests/gpu/run.sh sets it; see
// tests/gpu/README.md). Each test is skipped, saying why, otherwise.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuSession.h"
#include "runtime/cuda/CudaSession.h"
#include "runtime/feeder/HostArray.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainLoop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace tcc::rt;

namespace {

/// The test directory, or "" after GTEST_SKIP's reason is set in `why`.
std::string testDir(std::string &why) {
  std::string noGpu;
  if (!cuda::deviceAvailable(&noGpu)) {
    why = "no GPU: " + noGpu;
    return "";
  }
  const char *dir = std::getenv("TCC_GPU_TEST_DIR");
  if (!dir || !*dir) {
    why = "TCC_GPU_TEST_DIR is not set (tests/gpu/run.sh sets it)";
    return "";
  }
  struct stat st;
  std::string d = dir;
  if (::stat((d + "/mlp.tcc").c_str(), &st) != 0) {
    why = d + "/mlp.tcc is missing (see tests/gpu/README.md)";
    return "";
  }
  return d;
}

#define REQUIRE_GPU_ARTIFACT(dir)                                              \
  std::string why;                                                             \
  std::string dir = testDir(why);                                              \
  if (dir.empty())                                                             \
  GTEST_SKIP() << why

std::string tempDir(const std::string &name) {
  std::string d = ::testing::TempDir() + "tcc_gpu_" + name + "_" +
                  std::to_string(::getpid());
  std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return d;
}

TrainOptions options(const std::string &dir, int64_t steps) {
  TrainOptions o;
  o.data = {{"x", dir + "/train_x.npy"}, {"labels", dir + "/train_y.npy"}};
  o.steps = steps;
  o.progress = false;
  o.seed = 7;
  return o;
}

std::vector<float> cpuLosses(const Artifact &a, const TrainOptions &o) {
  cpu::CpuSession s(a, ExecMode::Compiled);
  return train(s, a, o).losses;
}

TrainResult gpuRun(const Artifact &a, const TrainOptions &o,
                   ExecMode mode = ExecMode::Compiled) {
  cuda::CudaSession s(a, mode);
  return train(s, a, o);
}

/// Each pair agrees to `rel` relative (and 1e-6 absolute) error.
void expectClose(const std::vector<float> &a, const std::vector<float> &b,
                 double rel, const char *what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-6 + rel * std::fabs(b[i]))
        << what << ": step " << i + 1;
}

} // namespace

TEST(CudaTrainLoop, LossCurveMatchesTheCpu) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  TrainOptions o = options(dir, 60);
  std::vector<float> cpu = cpuLosses(a, o);
  TrainResult gpu = gpuRun(a, o);
  // fp32 everywhere (no TF32); sums in another order than OpenBLAS's.
  expectClose(gpu.losses, cpu, 2e-3, "GPU vs CPU");
  EXPECT_LT(gpu.losses.back(), gpu.losses.front()); // it learns
  ASSERT_EQ(gpu.stepSeconds.size(), 60u);
  for (double t : gpu.stepSeconds)
    EXPECT_GT(t, 0);
  EXPECT_GE(gpu.copyWaitSeconds, 0);
  EXPECT_GE(gpu.dataWaitSeconds, 0);
  EXPECT_EQ(gpu.steps, 60);
  // Eager mode (temporaries from the stream-ordered pool) agrees too.
  TrainResult eager = gpuRun(a, o, ExecMode::Eager);
  expectClose(eager.losses, gpu.losses, 1e-5, "eager vs compiled");
}

// One slot serializes copy and step; more overlap them. A wrong slot, a
// batch overwritten before its step read it, or a step that ran before
// its copy landed would change the losses.
TEST(CudaTrainLoop, InputSlotsDoNotChangeTheResults) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  TrainOptions o = options(dir, 40);
  o.prefetch = 1;
  std::vector<float> one = gpuRun(a, o).losses;
  for (size_t p : {2, 3, 8}) {
    o.prefetch = p;
    expectClose(gpuRun(a, o).losses, one, 1e-5,
                ("prefetch " + std::to_string(p)).c_str());
  }
  // --epochs, shuffled: the batch order is the CPU loop's.
  o.steps = -1;
  o.epochs = 2;
  o.prefetch = 4;
  expectClose(gpuRun(a, o).losses, cpuLosses(a, o), 2e-3, "2 epochs");
}

TEST(CudaTrainLoop, MetricsAndCheckpointsResume) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  std::string tmp = tempDir("ckpt");
  TrainOptions o = options(dir, 20);
  o.checkpointDir = tmp + "/ck";
  o.checkpointEvery = 10;
  o.metricsPath = tmp + "/m.jsonl";
  TrainResult full = gpuRun(a, o);
  EXPECT_EQ(full.checkpointsWritten, 2);
  std::vector<CheckpointFile> files = listCheckpoints(o.checkpointDir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].step, 10);
  std::ifstream m(o.metricsPath);
  int lines = 0;
  for (std::string l; std::getline(m, l);)
    ++lines;
  EXPECT_EQ(lines, 20);

  // Resume at step 10 on the GPU: steps 11..20 again.
  TrainOptions r = o;
  r.resumeFrom = files[0].path;
  r.checkpointDir = tmp + "/ck2";
  r.log = [](const std::string &) {};
  TrainResult resumed = gpuRun(a, r);
  EXPECT_EQ(resumed.startStep, 10);
  std::vector<float> tail(full.losses.begin() + 10, full.losses.end());
  expectClose(resumed.losses, tail, 1e-5, "resumed on the GPU");
  // A GPU checkpoint resumes on the CPU as well.
  r.checkpointDir = tmp + "/ck3";
  cpu::CpuSession cpu(a, ExecMode::Compiled);
  expectClose(train(cpu, a, r).losses, tail, 2e-3, "resumed on the CPU");
}

TEST(CudaTrainLoop, StopSignalEndsAfterAWholeStepWithACheckpoint) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  std::string tmp = tempDir("stop");
  TrainOptions o = options(dir, 50);
  std::atomic<int> stop{SIGINT};
  o.stopSignal = &stop;
  o.checkpointDir = tmp + "/ck";
  TrainResult r = gpuRun(a, o);
  EXPECT_EQ(r.interruptedBy, SIGINT);
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.losses.size(), 1u);
  ASSERT_EQ(r.checkpointsWritten, 1);
  EXPECT_EQ(readCheckpoint(r.lastCheckpoint).meta.step, 1);
}

TEST(CudaTrainLoop, NonFiniteLossIsTheCpusError) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  // Inputs near FLT_MAX: the first layer's sums overflow.
  HostArray x = loadArray(dir + "/train_x.npy");
  ASSERT_EQ(x.dtype, FileDType::F32);
  std::string tmp = tempDir("nan");
  std::string path = tmp + "/x_huge.npy";
  {
    std::string shape;
    for (int64_t d : x.shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    std::string header = "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (" +
                         shape + (x.shape.size() == 1 ? ",)" : ")") + ", }";
    header.resize(((header.size() + 11) / 64 + 1) * 64 - 11, ' ');
    header += "\n";
    std::ofstream f(path, std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    uint16_t len = static_cast<uint16_t>(header.size());
    f.write(reinterpret_cast<const char *>(&len), 2);
    f << header;
    std::vector<float> big(x.bytes.size() / 4, 3e38f);
    f.write(reinterpret_cast<const char *>(big.data()), x.bytes.size());
  }
  TrainOptions o = options(dir, 5);
  o.data[0].path = path;
  std::string cpuError, gpuError;
  try {
    cpuLosses(a, o);
  } catch (const Error &e) {
    cpuError = e.what();
  }
  try {
    gpuRun(a, o);
  } catch (const Error &e) {
    gpuError = e.what();
  }
  EXPECT_EQ(cpuError.rfind("step 1: the loss is ", 0), 0u) << cpuError;
  EXPECT_EQ(gpuError.rfind("step 1: the loss is ", 0), 0u) << gpuError;
}

// Non-finite state with a finite loss: an Inf in one AdamW second moment
// leaves the updates finite (m / Inf = 0), so only the scan finds it. The
// GPU counts on the device and names the value as the CPU does.
TEST(CudaTrainLoop, NonFiniteStateIsTheCpusError) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  int32_t id = -1;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].kind == TensorKind::State &&
        a.tensors[i].name.find("exp_avg_sq") != std::string::npos &&
        a.tensors[i].numElements() > 3) {
      id = static_cast<int32_t>(i);
      break;
    }
  ASSERT_GE(id, 0) << "the MLP artifact has no AdamW second moment";
  TrainOptions o = options(dir, 4);
  o.nonfiniteCheckEvery = 2;
  std::string cpuError, gpuError;
  try {
    cpu::CpuSession s(a, ExecMode::Compiled);
    static_cast<float *>(s.data(id))[3] = INFINITY;
    train(s, a, o);
  } catch (const Error &e) {
    cpuError = e.what();
  }
  try {
    cuda::CudaSession s(a, ExecMode::Compiled);
    std::vector<float> v(static_cast<size_t>(a.tensors[id].numElements()));
    s.download(id, v.data());
    v[3] = INFINITY;
    s.upload(id, v.data());
    train(s, a, o);
  } catch (const Error &e) {
    gpuError = e.what();
  }
  std::string want = "step 2: state '" + a.tensors[id].name +
                     "' has 1 non-finite value (first: +Inf at index 3)";
  EXPECT_EQ(cpuError.rfind(want, 0), 0u) << cpuError;
  EXPECT_EQ(gpuError, cpuError);
}

TEST(CudaTrainLoop, EvaluationMatchesTheCpu) {
  REQUIRE_GPU_ARTIFACT(dir);
  Artifact a = readArtifact(dir + "/mlp.tcc");
  std::vector<DataBinding> data = {{"x", dir + "/train_x.npy"},
                                   {"labels", dir + "/train_y.npy"}};
  cpu::CpuSession cpu(a, ExecMode::Compiled);
  cuda::CudaSession gpu(a, ExecMode::Compiled);
  EvalResult c = evaluate(cpu, a, data), g = evaluate(gpu, a, data);
  EXPECT_EQ(g.samples, c.samples);
  EXPECT_NEAR(g.loss, c.loss, 1e-4 * std::fabs(c.loss));
  EXPECT_NEAR(g.accuracy, c.accuracy, 2.0 / c.samples); // a tie or two
  // After training, evaluation reads the trained weights.
  TrainOptions o = options(dir, 30);
  train(gpu, a, o);
  train(cpu, a, o);
  c = evaluate(cpu, a, data);
  g = evaluate(gpu, a, data);
  EXPECT_NEAR(g.loss, c.loss, 2e-3 * std::fabs(c.loss));
}
