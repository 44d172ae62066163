//===- BenchCommand.cpp - tcc bench: eager vs compiled, one process -------===//
//
// Both sessions are built from the same artifact and fed the same synthetic
// batch; their steps alternate so that machine noise hits both alike. Step
// time is the median over the timed steps; memory is what each session's
// allocations peaked at (persistent tensors plus temporaries).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Session.h"
#include "runtime/train/TrainLoop.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::benchCmd));
static cl::opt<int64_t> steps("steps", cl::desc("Timed steps per mode"),
                              cl::init(20), cl::sub(tool::benchCmd));
static cl::opt<int64_t> warmup("warmup", cl::desc("Untimed steps per mode"),
                               cl::init(3), cl::sub(tool::benchCmd));
static cl::opt<bool> profile(
    "profile",
    cl::desc("Also print the compiled step's time per kernel (slowest first)"),
    cl::init(false), cl::sub(tool::benchCmd));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the synthetic data"),
                              cl::init(0), cl::sub(tool::benchCmd));

/// Random inputs: uniform floats, and integer labels drawn from the classes
/// of the forward output's last axis.
static void fillSynthetic(const rt::Artifact &a, rt::Session &s,
                          uint64_t seed) {
  const rt::Program *train = a.findProgram("train_step");
  const rt::Program *fwd = a.findProgram("forward");
  int64_t classes = 2;
  if (fwd && !fwd->outputs.empty() && !a.tensors[fwd->outputs[0]].shape.empty())
    classes = a.tensors[fwd->outputs[0]].shape.back();
  std::mt19937_64 rng(seed);
  for (int32_t id : train->inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    if (t.dtype == rt::DType::F32) {
      std::uniform_real_distribution<float> d(-1, 1);
      float *p = static_cast<float *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    } else {
      std::uniform_int_distribution<int64_t> d(0, classes - 1);
      int64_t *p = static_cast<int64_t *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    }
  }
}

static double timeStep(rt::Session &s) {
  auto t0 = std::chrono::steady_clock::now();
  s.run("train_step");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

int tool::runBench() {
  try {
    rt::Artifact a = rt::readArtifact(input);
    const rt::Program *train = a.findProgram("train_step");
    if (!train)
      throw rt::Error("the artifact has no train_step program");
    int64_t batch = a.tensors[train->inputs.at(0)].shape.at(0);
    rt::Session eager(a, rt::ExecMode::Eager);
    rt::Session compiled(a, rt::ExecMode::Compiled);
    fillSynthetic(a, eager, seed);
    fillSynthetic(a, compiled, seed);
    for (int64_t i = 0; i < warmup; ++i) {
      timeStep(eager);
      timeStep(compiled);
    }
    std::vector<double> te, tc;
    for (int64_t i = 0; i < steps; ++i) {
      te.push_back(timeStep(eager));
      tc.push_back(timeStep(compiled));
    }
    double me = rt::median(te) * 1e3, mc = rt::median(tc) * 1e3;
    rt::MemoryStats se = eager.memory(), sc = compiled.memory();
    std::printf("tcc bench %s: batch %lld, %lld timed steps per mode (median)\n",
                input.c_str(), (long long)batch, (long long)steps.getValue());
    std::printf("  %-9s %12s %14s %16s %16s\n", "mode", "step ms",
                "samples/s", "temp peak", "tensor peak");
    std::printf("  %-9s %12.3f %14.1f %16s %16s\n", "eager", me,
                batch / (me / 1e3), formatBytes(se.tempPeakBytes).c_str(),
                formatBytes(se.peakBytes).c_str());
    std::printf("  %-9s %12.3f %14.1f %16s %16s\n", "compiled", mc,
                batch / (mc / 1e3), formatBytes(sc.tempPeakBytes).c_str(),
                formatBytes(sc.peakBytes).c_str());
    std::printf("  compiled vs eager: %.2fx faster, %.2fx the tensor memory\n",
                me / mc, double(sc.peakBytes) / double(se.peakBytes));
    std::printf("  process peak RSS: %s\n", formatBytes(peakRssBytes()).c_str());
    if (profile) {
      compiled.setProfiling(true);
      for (int64_t i = 0; i < steps; ++i)
        timeStep(compiled);
      double total = 0;
      for (const auto &k : compiled.profile())
        total += k.seconds;
      std::printf("  compiled step by kernel (%lld steps):\n",
                  (long long)steps.getValue());
      std::printf("  %-28s %8s %12s %7s\n", "kernel", "calls/step",
                  "ms/step", "share");
      for (const auto &k : compiled.profile())
        std::printf("  %-28s %8.1f %12.3f %6.1f%%\n", k.kernel.c_str(),
                    double(k.calls) / steps, k.seconds * 1e3 / steps,
                    100 * k.seconds / total);
    }
  } catch (const rt::Error &e) {
    errs() << "tcc bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
