//===- TuneBatchCommand.cpp - tcc tune-batch: the batch that fits ---------===//
//
// Finds the largest batch whose predicted peak (compiler/codegen/
// MemoryReport.h: what a compiled session of the artifact holds) fits a
// memory budget, by planning the model at trial batches (the whole pipeline
// and memory plan, without generating code): no session is opened until
// the answer is known, so no trial runs out of memory. Then it
// measures training throughput over a range of batches up to that one and
// prints the curve.
//
// The predicted peak is close to linear in the batch (persistent tensors
// plus per-sample activations), so the search extrapolates a line through
// two trials (the fitting and failing ends once both are known) and bisects
// when a guess does not halve the interval.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"
#include "compiler/codegen/MemoryReport.h"
#include "runtime/core/Backend.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/core/abi/Kernels.h"
#include "runtime/train/TrainLoop.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

using namespace llvm;
using namespace tcc;

llvm::cl::SubCommand tcc::tool::tuneBatchCmd(
    "tune-batch",
    "Find the largest batch that fits in memory and measure throughput");

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx>"),
                                  cl::sub(tool::tuneBatchCmd));
static cl::opt<std::string> budgetFlag(
    "memory-budget",
    cl::desc("The predicted peak must fit in this many bytes (e.g. 8GiB, "
             "500MB; default: 90% of the device's free memory, the CPU's "
             "MemAvailable)"),
    cl::init(""), cl::value_desc("BYTES"), cl::sub(tool::tuneBatchCmd));
static cl::opt<int64_t> maxBatch("max-batch",
                                 cl::desc("Search no batch above this"),
                                 cl::init(1 << 20), cl::value_desc("N"),
                                 cl::sub(tool::tuneBatchCmd));
static cl::list<int64_t>
    measureBatches("batches",
                   cl::desc("Measure these batches (default: the powers of "
                            "two below the largest that fits, and it)"),
                   cl::CommaSeparated, cl::value_desc("N,..."),
                   cl::sub(tool::tuneBatchCmd));
static cl::opt<bool>
    noMeasure("no-measure",
              cl::desc("Only find the largest batch; run no training step"),
              cl::init(false), cl::sub(tool::tuneBatchCmd));
static cl::opt<int64_t> steps("steps",
                              cl::desc("Timed steps per measured batch"),
                              cl::init(5), cl::sub(tool::tuneBatchCmd));
static cl::opt<int64_t> warmup("warmup",
                               cl::desc("Untimed steps per measured batch"),
                               cl::init(2), cl::sub(tool::tuneBatchCmd));

namespace {

/// Plans the model at trial batches (no code is generated) and remembers
/// each one's predicted peak; compiles the batches to measure into a
/// temporary directory.
class Trials {
public:
  Trials(CompileOptions base, std::string dir)
      : base_(std::move(base)), dir_(std::move(dir)) {}

  /// The predicted peak of a compiled session training at `batch`.
  int64_t peak(int64_t batch) {
    auto it = peaks_.find(batch);
    if (it != peaks_.end())
      return it->second;
    CompileOptions o = base_;
    o.batch = batch;
    rt::Artifact a;
    if (planModel(o, a) != 0)
      throw rt::Error("compiling the model at batch " + std::to_string(batch) +
                      " failed (the compiler's error is above)");
    MemoryReport r = analyzeMemory(a);
    int64_t p = r.predictedPeak(r.trainingPrograms());
    peaks_[batch] = p;
    return p;
  }

  rt::Artifact compile(int64_t batch) {
    CompileOptions o = base_;
    o.batch = batch;
    SmallString<128> path(dir_);
    sys::path::append(path, "b" + std::to_string(batch) + ".tcc");
    o.output = std::string(path);
    if (compileModel(o) != 0)
      throw rt::Error("compiling the model at batch " + std::to_string(batch) +
                      " failed (the compiler's error is above)");
    rt::Artifact a = rt::readArtifact(o.output);
    sys::fs::remove(o.output);
    return a;
  }

  size_t plans() const { return peaks_.size(); }

private:
  CompileOptions base_;
  std::string dir_;
  std::map<int64_t, int64_t> peaks_;
};

struct Fit {
  int64_t batch;    // the largest batch that fits
  int64_t peak;     // its predicted peak
  int64_t nextPeak; // the predicted peak of batch + 1 (0: not compiled)
  double perSample; // bytes per sample between batch 1 and `batch`
};

} // namespace

/// The largest batch in [1, maxBatch] whose predicted peak is at most
/// `budget`, assuming the peak grows with the batch.
static Fit findLargest(Trials &t, int64_t budget) {
  int64_t p1 = t.peak(1);
  if (p1 > budget)
    throw rt::Error("even batch 1 does not fit: its predicted peak is " +
                    rt::formatBytes(p1) + ", over the budget of " +
                    rt::formatBytes(budget));
  // peak(lo) fits, hi does not (or is past the cap); `below` is the fitting
  // trial before lo, for the slope while no trial has failed.
  int64_t lo = 1, hi = maxBatch + 1, below = 0;
  bool halved = true;
  while (hi - lo > 1) {
    int64_t width = hi - lo, guess = lo + width / 2;
    if (below == 0) {
      guess = lo + 1;
    } else if (halved) {
      // Along the line through lo and hi (or below and lo, extrapolated);
      // where the peak bends (padding, a plan that changes shape) and a
      // guess does not halve the interval, the next one bisects.
      bool bracket = hi <= maxBatch;
      int64_t a = bracket ? hi : below;
      double slope = double(t.peak(a) - t.peak(lo)) / double(a - lo);
      if (slope > 0) {
        double room = double(budget - t.peak(lo)) / slope;
        guess = lo + (int64_t)std::min(room, double(width));
        guess = std::clamp(guess, lo + 1, hi - 1);
      }
    }
    if (t.peak(guess) <= budget) {
      below = lo;
      lo = guess;
    } else {
      hi = guess;
    }
    halved = 2 * (hi - lo) <= width;
  }
  Fit f;
  f.batch = lo;
  f.peak = t.peak(lo);
  f.nextPeak = hi <= maxBatch ? t.peak(hi) : 0;
  f.perSample = lo > 1 ? double(f.peak - p1) / double(lo - 1) : 0;
  return f;
}

/// Random inputs, as `tcc bench` makes them: uniform floats, and integers
/// drawn from the classes of the forward output's last axis.
static void fillSynthetic(const rt::Artifact &a, rt::Session &s) {
  const rt::Program *train = a.findProgram("train_step");
  const rt::Program *fwd = a.findProgram("forward");
  int64_t classes = 2;
  if (fwd && !fwd->outputs.empty() && !a.tensors[fwd->outputs[0]].shape.empty())
    classes = a.tensors[fwd->outputs[0]].shape.back();
  std::mt19937_64 rng(0);
  for (int32_t id : train->inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    std::vector<uint8_t> bytes(t.byteSize());
    if (t.dtype == rt::DType::F32 || rt::isHalfDType(t.dtype)) {
      std::uniform_real_distribution<float> d(-1, 1);
      std::vector<float> v(t.numElements());
      for (float &x : v)
        x = d(rng);
      if (t.dtype == rt::DType::F32)
        std::memcpy(bytes.data(), v.data(), bytes.size());
      else
        rt::narrowFromF32(v.data(), t.dtype, bytes.data(), t.numElements());
    } else if (t.dtype == rt::DType::I64) {
      std::uniform_int_distribution<int64_t> d(0, classes - 1);
      int64_t *p = reinterpret_cast<int64_t *>(bytes.data());
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    } // other dtypes: zeros
    s.upload(id, bytes.data());
  }
}

struct Point {
  int64_t batch;
  double ms;
  int64_t predicted, measured;
};

static Point measure(Trials &t, const rt::Backend &backend, int64_t batch) {
  rt::Artifact a = t.compile(batch);
  MemoryReport r = analyzeMemory(a);
  std::unique_ptr<rt::Session> s =
      backend.open(a, rt::ExecMode::Compiled, rt::SessionOptions{});
  fillSynthetic(a, *s);
  std::vector<double> times;
  for (int64_t i = 0; i < warmup + steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s->run("train_step");
    s->synchronize();
    double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (i >= warmup)
      times.push_back(sec);
  }
  return {batch, rt::median(times) * 1e3, r.predictedPeak(r.trainingPrograms()),
          s->memory().measuredPeakBytes};
}

/// The batches to measure: the powers of two below `largest`, and it.
static std::vector<int64_t> defaultBatches(int64_t largest) {
  std::vector<int64_t> v;
  for (int64_t b = 1; b < largest; b *= 2)
    v.push_back(b);
  v.push_back(largest);
  return v;
}

static int tuneBatch() {
  CompileOptions base;
  base.input = input;
  if (!tool::compileOptionsFromFlags(base, "tune-batch") ||
      !tool::targetOptionsFromFlags(base, "tune-batch"))
    return 1;
  const char *err = "tcc tune-batch: error: ";
  if (maxBatch < 1 || steps < 1 || warmup < 0) {
    errs() << err
           << (maxBatch < 1 ? "--max-batch must be at least 1"
               : steps < 1  ? "--steps must be at least 1"
                            : "--warmup must be at least 0")
           << "\n";
    return 1;
  }
  for (int64_t b : measureBatches)
    if (b < 1) {
      errs() << err << "--batches: a batch must be at least 1, got " << b
             << "\n";
      return 1;
    }
  std::string why;
  const rt::Backend *backend = rt::backends::find(base.target, &why);
  if (!backend) {
    errs() << err << why << "\n";
    return 1;
  }
  if (!noMeasure && !backend->available(&why)) {
    errs() << err << "the " << base.target << " device is not available ("
           << why << ") to measure on; --no-measure only finds the batch\n";
    return 1;
  }
  int64_t budget = 0;
  std::string budgetFrom;
  if (!budgetFlag.empty()) {
    std::optional<int64_t> b = tool::parseBytes(budgetFlag);
    if (!b || *b <= 0) {
      errs() << err << "--memory-budget must be a positive size such as "
             << "8GiB or 500MB, got '" << budgetFlag << "'\n";
      return 1;
    }
    budget = *b;
    budgetFrom = "--memory-budget";
  } else {
    if (!backend->available(&why)) { // with --no-measure
      errs() << err << "the " << base.target << " device is not available ("
             << why << "); give --memory-budget to find the batch without it\n";
      return 1;
    }
    int64_t free = backend->memoryBytes();
    if (free <= 0) {
      errs() << err << "the free memory of the " << base.target
             << " device is unknown here; give --memory-budget\n";
      return 1;
    }
    // The tenth left over is for what no plan covers: code, the BLAS's and
    // the driver's own buffers, the data feeder.
    budget = free / 10 * 9;
    budgetFrom =
        "90% of the free " + base.target + " memory, " + rt::formatBytes(free);
  }

  SmallString<128> dir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("tcc-tune", dir)) {
    errs() << err << "cannot create a temporary directory: " << ec.message()
           << "\n";
    return 1;
  }
  int rc = 0;
  try {
    Trials trials(base, std::string(dir));
    Fit fit = findLargest(trials, budget);
    std::printf("tcc tune-batch %s: budget %s, %lld bytes (%s)\n",
                input.c_str(), rt::formatBytes(budget).c_str(),
                (long long)budget, budgetFrom.c_str());
    std::printf("  largest batch that fits: %lld (predicted peak %s, %lld "
                "bytes",
                (long long)fit.batch, rt::formatBytes(fit.peak).c_str(),
                (long long)fit.peak);
    if (fit.nextPeak)
      std::printf("; batch %lld would need %lld bytes",
                  (long long)fit.batch + 1, (long long)fit.nextPeak);
    else
      std::printf("; --max-batch %lld stopped the search",
                  (long long)maxBatch.getValue());
    std::printf(")\n  predicted peak: batch 1 %s, %s per sample; %zu "
                "trial plans\n",
                rt::formatBytes(trials.peak(1)).c_str(),
                rt::formatBytes((int64_t)fit.perSample).c_str(),
                trials.plans());
    if (!noMeasure) {
      std::vector<int64_t> batches(measureBatches.begin(),
                                   measureBatches.end());
      if (batches.empty())
        batches = defaultBatches(fit.batch);
      std::printf("  %8s %11s %12s %16s %16s\n", "batch", "step ms",
                  "samples/s", "predicted peak", "measured peak");
      std::vector<Point> points;
      for (int64_t b : batches) {
        if (b > fit.batch)
          std::fprintf(stderr,
                       "tcc tune-batch: warning: batch %lld is predicted not "
                       "to fit (%s); measuring it anyway, as asked\n",
                       (long long)b, rt::formatBytes(trials.peak(b)).c_str());
        Point p = measure(trials, *backend, b);
        points.push_back(p);
        std::printf("  %8lld %11.3f %12.1f %16s %16s\n", (long long)p.batch,
                    p.ms, p.batch / (p.ms / 1e3),
                    rt::formatBytes(p.predicted).c_str(),
                    rt::formatBytes(p.measured).c_str());
        std::fflush(stdout);
      }
      const Point *best = &points[0];
      for (const Point &p : points)
        if (p.batch / p.ms > best->batch / best->ms)
          best = &p;
      std::printf("  highest throughput: batch %lld, %.1f samples/s\n",
                  (long long)best->batch, best->batch / (best->ms / 1e3));
    }
  } catch (const rt::Error &e) {
    errs() << err << e.what() << "\n";
    rc = 1;
  }
  sys::fs::remove_directories(dir);
  return rc;
}

void tool::shareCompileFlags(cl::SubCommand &to) {
  // The flags both `compile` and `bench` take are the compiler's; each is
  // re-registered with `to` added to its subcommands. --memory-budget is
  // tune-batch's own (the peak to fit), not the compiler's activation
  // budget.
  // Also the compile-only flags that decide the code and the device
  // (bench runs CPU artifacts only, so it has none of them).
  auto &compile = cl::getRegisteredOptions(compileCmd);
  std::vector<cl::Option *> shared;
  for (auto &e : cl::getRegisteredOptions(benchCmd)) {
    auto it = compile.find(e.first);
    if (e.first != "memory-budget" && it != compile.end() &&
        it->second == e.second)
      shared.push_back(e.second);
  }
  for (const char *name :
       {"target", "gpu-arch", "cpu-isa", "weights", "weights-seed", "lora",
        "lora-target", "lora-alpha", "lora-seed"}) {
    auto it = compile.find(name);
    if (it != compile.end() &&
        std::find(shared.begin(), shared.end(), it->second) == shared.end())
      shared.push_back(it->second);
  }
  for (cl::Option *o : shared) {
    o->removeArgument();
    o->addSubCommand(to);
    o->addArgument();
  }
}

int tool::runTuneBatch() { return tuneBatch(); }
