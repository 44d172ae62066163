//===- BenchCommand.cpp - tcc bench: eager vs compiled, one process -------===//
//
// Given an artifact, one session runs it eager and one compiled. Given an
// ONNX model, the model is compiled several times — with every optimization
// pass, with each pass turned off in turn, and with none for the eager
// baseline — and each variant gets a session. Every session is fed the same
// synthetic batch and their steps alternate so that machine noise hits all
// alike. Step time is the median over the timed steps; memory is what each
// session's allocations peaked at (persistent tensors plus temporaries).
//
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"
#include "compiler/codegen/MemoryReport.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/train/TrainLoop.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc | model.onnx>"),
                                  cl::sub(tool::benchCmd));
static cl::opt<int64_t> steps("steps", cl::desc("Timed steps per mode"),
                              cl::init(20), cl::sub(tool::benchCmd));
static cl::opt<int64_t> warmup("warmup", cl::desc("Untimed steps per mode"),
                               cl::init(3), cl::sub(tool::benchCmd));
static cl::opt<bool> profile(
    "profile",
    cl::desc("Also print the compiled step's time per kernel (slowest "
             "first) with its achieved GB/s and, for GEMMs and attention, "
             "TFLOP/s"),
    cl::init(false), cl::sub(tool::benchCmd));
static cl::opt<bool> profileShapes(
    "profile-shapes",
    cl::desc("--profile with each GEMM and attention call listed under its "
             "problem shape (\"matmul [32x1024x2304] k768\")"),
    cl::init(false), cl::sub(tool::benchCmd));
static cl::opt<std::string> only(
    "only",
    cl::desc("With an artifact: run only 'eager' or only 'compiled' (so that "
             "the process peak RSS is that mode's)"),
    cl::init(""), cl::sub(tool::benchCmd));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the synthetic data"),
                              cl::init(0), cl::sub(tool::benchCmd));
static cl::opt<std::string> traceFile(
    "trace",
    cl::desc("After the timed steps, run --trace-steps more of the compiled "
             "step and write their timeline (kernels, copies, the arena's "
             "memory) as Chrome/Perfetto JSON"),
    cl::value_desc("trace.json"), cl::sub(tool::benchCmd));
static cl::opt<int64_t>
    traceSteps("trace-steps", cl::desc("Steps --trace records (default 5)"),
               cl::init(5), cl::sub(tool::benchCmd));

/// --trace: `steps` more steps of `s`, traced (runtime/core/Trace.h).
static void traceBench(rt::Session &s) {
  std::printf("  %s\n", rt::traceSteps(
                            s, traceSteps, [&] { s.run("train_step"); },
                            traceFile, "tcc bench")
                            .c_str());
}

/// Random inputs: uniform floats, and integer labels drawn from the classes
/// of the forward output's last axis.
static void fillSynthetic(const rt::Artifact &a, rt::cpu::CpuSession &s,
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
    } else if (rt::isHalfDType(t.dtype)) { // hand-made artifacts only
      std::uniform_real_distribution<float> d(-1, 1);
      std::vector<float> v(t.numElements());
      for (float &x : v)
        x = d(rng);
      rt::narrowFromF32(v.data(), t.dtype, s.data(id), t.numElements());
    } else {
      std::uniform_int_distribution<int64_t> d(0, classes - 1);
      int64_t *p = static_cast<int64_t *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    }
  }
}

/// The batch size of `a`'s train_step: the first dimension of its first
/// input (a hand-made artifact may have none to feed).
static int64_t batchOf(const rt::Artifact &a) {
  const rt::Program *train = a.findProgram("train_step");
  if (!train)
    throw rt::Error("the artifact has no train_step program");
  if (train->inputs.empty())
    throw rt::Error("train_step has no inputs to feed");
  const rt::TensorInfo &first = a.tensors[train->inputs[0]];
  return first.shape.empty() ? 1 : first.shape[0];
}

static double timeStep(rt::cpu::CpuSession &s) {
  auto t0 = std::chrono::steady_clock::now();
  s.run("train_step");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// Prints where the step of `s` spends its time, per kernel name, with the
/// bytes and FLOPs each moves per second (runtime/core/KernelCost.h).
static void printProfile(rt::cpu::CpuSession &s, const char *what) {
  s.setProfiling(true, profileShapes);
  for (int64_t i = 0; i < steps; ++i)
    timeStep(s);
  std::printf("  %s step by kernel (%lld steps):\n%s", what,
              (long long)steps.getValue(),
              rt::formatProfile(s.profile(), steps).c_str());
}

static int benchArtifact() {
  try {
    if (!only.empty() && only != "eager" && only != "compiled")
      throw rt::Error("--only must be 'eager' or 'compiled', got '" + only +
                      "'");
    rt::Artifact a = rt::readArtifact(input);
    int64_t batch = batchOf(a);
    struct Run {
      const char *name;
      std::unique_ptr<rt::cpu::CpuSession> session;
      std::vector<double> times;
    };
    std::vector<Run> runs;
    if (only != "compiled")
      runs.push_back({"eager", nullptr, {}});
    if (only != "eager")
      runs.push_back({"compiled", nullptr, {}});
    rt::resetPeakRss();
    int64_t rssBefore = rt::readProcessMemory().rssBytes;
    for (Run &r : runs) {
      r.session = std::make_unique<rt::cpu::CpuSession>(
          a, std::strcmp(r.name, "eager") == 0 ? rt::ExecMode::Eager
                                               : rt::ExecMode::Compiled);
      fillSynthetic(a, *r.session, seed);
    }
    for (int64_t i = 0; i < warmup; ++i)
      for (Run &r : runs)
        timeStep(*r.session);
    for (int64_t i = 0; i < steps; ++i)
      for (Run &r : runs)
        r.times.push_back(timeStep(*r.session));
    std::printf("tcc bench %s: batch %lld, %lld timed steps per mode (median)\n",
                input.c_str(), (long long)batch, (long long)steps.getValue());
    std::printf("  %-9s %12s %14s %16s %16s\n", "mode", "step ms",
                "samples/s", "temp peak", "tensor peak");
    for (Run &r : runs) {
      double ms = rt::median(r.times) * 1e3;
      rt::MemoryStats m = r.session->memory();
      std::printf("  %-9s %12.3f %14.1f %16s %16s\n", r.name, ms,
                  batch / (ms / 1e3), tool::formatBytes(m.tempPeakBytes).c_str(),
                  tool::formatBytes(m.peakBytes).c_str());
    }
    if (runs.size() == 2) {
      double me = rt::median(runs[0].times), mc = rt::median(runs[1].times);
      rt::MemoryStats se = runs[0].session->memory(),
                      sc = runs[1].session->memory();
      std::printf("  compiled vs eager: %.2fx faster, %.2fx the tensor memory\n",
                  me / mc, double(sc.peakBytes) / double(se.peakBytes));
    }
    std::printf("  process peak RSS: %s\n",
                tool::formatBytes(tool::peakRssBytes()).c_str());
    MemoryReport predicted = analyzeMemory(a);
    std::printf("  memory: predicted peak %s (compiled plan); measured peak",
                tool::formatBytes(
                    predicted.predictedPeak({"train_step"}))
                    .c_str());
    for (Run &r : runs)
      std::printf(" %s %s", r.name,
                  tool::formatBytes(r.session->memory().measuredPeakBytes)
                      .c_str());
    std::printf(" (allocations + kernel scratch); peak RSS +%s since the "
                "sessions were built\n",
                tool::formatBytes(rt::readProcessMemory().peakRssBytes -
                                  rssBefore)
                    .c_str());
    if (profile || profileShapes)
      printProfile(*runs.back().session, runs.back().name);
    if (!traceFile.empty())
      traceBench(*runs.back().session);
  } catch (const rt::Error &e) {
    errs() << "tcc bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

namespace {
/// One way of compiling and running the model.
struct Variant {
  std::string label;
  rt::ExecMode mode;
  std::function<void(CompileOptions &)> change;
  // Filled while benchmarking.
  rt::Artifact artifact;
  std::unique_ptr<rt::cpu::CpuSession> session;
  std::vector<double> times;
};
} // namespace

/// The variants of `tcc bench model.onnx`: the eager baseline with no
/// optimization pass (what a framework runs: library kernels op by op in the
/// order of the graph, a fresh buffer per result), everything the flags ask
/// for, and each pass toggled in turn. Precision and the memory budget are
/// the user's in every variant except their own toggle.
static std::vector<Variant> variants(const CompileOptions &base) {
  std::vector<Variant> v;
  v.push_back({"eager (no passes, op by op)", rt::ExecMode::Eager,
               [](CompileOptions &o) {
                 o.fuse = false;
                 o.planMemory = false;
                 o.padMultiple = 0;
                 o.memoryBudget = 0;
                 o.fuseAttention = false;
                 o.cutCrossEntropy = 0;
                 o.shadowWeights = false; // a framework casts every step
                 o.trimConvTaps = false;  // and runs every tap
               }});
  v.push_back({"compiled (all passes)", rt::ExecMode::Compiled,
               [](CompileOptions &) {}});
  v.push_back({"compiled --no-fuse", rt::ExecMode::Compiled,
               [](CompileOptions &o) { o.fuse = false; }});
  v.push_back({"compiled --no-plan-memory", rt::ExecMode::Compiled,
               [](CompileOptions &o) { o.planMemory = false; }});
  // Padding is off by default on the CPU (docs/ARCHITECTURE.md), so its
  // toggle turns it on.
  if (base.padMultiple <= 0)
    v.push_back({"compiled --pad-multiple=64", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.padMultiple = 64; }});
  else
    v.push_back({"compiled --pad-multiple=0", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.padMultiple = 0; }});
  // GEMM epilogues are on for cuda only (docs/ARCHITECTURE.md), and bench
  // runs on the CPU: its toggle turns them on unless the flags did.
  if (base.gemmEpilogue == 1)
    v.push_back({"compiled --gemm-epilogue=false", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.gemmEpilogue = 0; }});
  else
    v.push_back({"compiled --gemm-epilogue", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.gemmEpilogue = 1; }});
  if (base.fuseAttention)
    v.push_back({"compiled --fuse-attention=false", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.fuseAttention = false; }});
  else
    v.push_back({"compiled --fuse-attention", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.fuseAttention = true; }});
  // Cut cross-entropy is on for the CPU by default (bench runs there).
  if (base.cutCrossEntropy != 0)
    v.push_back({"compiled --no-cut-ce", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.cutCrossEntropy = 0; }});
  else
    v.push_back({"compiled --cut-cross-entropy", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.cutCrossEntropy = 1; }});
  if (base.memoryBudget > 0)
    v.push_back({"compiled, no --memory-budget", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.memoryBudget = 0; }});
  if (base.precision != "fp32" && base.optimizer == "adamw" &&
      base.shadowWeights)
    v.push_back({"compiled --shadow-weights=false", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.shadowWeights = false; }});
  if (base.precision != "fp32")
    v.push_back({"compiled --precision=fp32", rt::ExecMode::Compiled,
                 [](CompileOptions &o) { o.precision = "fp32"; }});
  return v;
}

static int benchModel() {
  CompileOptions base;
  base.input = input;
  if (!tool::compileOptionsFromFlags(base, "bench"))
    return 1;
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tcc-bench", dir)) {
    errs() << "tcc bench: error: cannot create a temporary directory: "
           << ec.message() << "\n";
    return 1;
  }
  std::vector<Variant> vs = variants(base);
  int rc = 0;
  try {
    for (size_t i = 0; i < vs.size(); ++i) {
      CompileOptions o = base;
      vs[i].change(o);
      llvm::SmallString<128> path(dir);
      llvm::sys::path::append(path, "v" + std::to_string(i) + ".tcc");
      o.output = std::string(path);
      if (compileModel(o) != 0)
        throw rt::Error("compiling the variant '" + vs[i].label + "' failed");
      vs[i].artifact = rt::readArtifact(o.output);
      llvm::sys::fs::remove(o.output);
      vs[i].session =
          std::make_unique<rt::cpu::CpuSession>(vs[i].artifact, vs[i].mode);
      fillSynthetic(vs[i].artifact, *vs[i].session, seed);
    }
    for (int64_t s = 0; s < warmup; ++s)
      for (Variant &v : vs)
        timeStep(*v.session);
    for (int64_t s = 0; s < steps; ++s)
      for (Variant &v : vs)
        v.times.push_back(timeStep(*v.session));

    int64_t batch = batchOf(vs[0].artifact);
    double eagerMs = rt::median(vs[0].times) * 1e3;
    std::printf("tcc bench %s: batch %lld, %lld timed steps per variant "
                "(median, interleaved)\n",
                input.c_str(), (long long)batch, (long long)steps.getValue());
    std::printf("  %-34s %10s %9s %12s %12s\n", "variant", "step ms",
                "vs eager", "temp peak", "tensor peak");
    for (Variant &v : vs) {
      double ms = rt::median(v.times) * 1e3;
      rt::MemoryStats m = v.session->memory();
      std::printf("  %-34s %10.3f %8.2fx %12s %12s\n", v.label.c_str(), ms,
                  eagerMs / ms, tool::formatBytes(m.tempPeakBytes).c_str(),
                  tool::formatBytes(m.peakBytes).c_str());
    }
    std::printf("  process peak RSS (all variants): %s\n",
                tool::formatBytes(tool::peakRssBytes()).c_str());
    if (!traceFile.empty()) // the compiled variant with every pass
      traceBench(*vs[1].session);
  } catch (const rt::Error &e) {
    errs() << "tcc bench: error: " << e.what() << "\n";
    rc = 1;
  }
  llvm::sys::fs::remove_directories(dir);
  return rc;
}

int tool::runBench() {
  // Steps are timed and their median printed: none would print "inf", as
  // tcc-run bench says too.
  if (!traceFile.empty()) {
    try {
      if (traceSteps < 1)
        throw rt::Error("--trace-steps must be at least 1, got " +
                        std::to_string(traceSteps));
      rt::Tracer::checkWritable(traceFile);
    } catch (const rt::Error &e) {
      errs() << "tcc bench: error: " << e.what() << "\n";
      return 1;
    }
  }
  if (steps < 1 || warmup < 0) {
    errs() << "tcc bench: error: "
           << (steps < 1
                   ? "--steps must be at least 1, got " + std::to_string(steps)
                   : "--warmup must be at least 0, got " +
                         std::to_string(warmup))
           << "\n";
    return 1;
  }
  llvm::StringRef in(input);
  if (in.ends_with(".onnx") || in.ends_with(".onnxtxt"))
    return benchModel();
  return benchArtifact();
}
