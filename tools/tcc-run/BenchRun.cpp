//===- BenchRun.cpp - tcc-run bench: eager vs compiled on one device ------===//
//
// One session runs the artifact eager (a fresh buffer per result, op by op,
// as a framework does) and one compiled (the static memory plan), on the
// chosen device. Both get the same synthetic batch: uniform floats, integer
// inputs drawn inside the range their consumers accept (the rows of the
// table a `gather` indexes, the classes of a cross-entropy), so every step
// is a valid one. Their steps alternate so machine noise hits both alike;
// the step time is the median, timed by the session's events around each
// run (the CPU's: the host clock; a GPU's: CUDA events on its stream).
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-run/Commands.h"

#include "runtime/core/Backend.h"
#include "runtime/core/DeviceSelect.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/core/Session.h"
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/core/abi/Kernels.h"
#include "runtime/train/TrainLoop.h"
#include "tools/tcc-run/Args.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>

using namespace tcc;

namespace {
/// The programs of one optimizer step: K runs of "accumulate" and
/// "train_step" with --grad-accum K, else "train_step".
struct StepShape {
  const rt::Program *data = nullptr; // the program the inputs feed
  int64_t accum = 1;
  bool hasMicro = false;
};

struct Run {
  const char *name;
  rt::ExecMode mode;
  std::unique_ptr<rt::Session> session;
  std::vector<double> times;
};
} // namespace

static StepShape stepShape(const rt::Artifact &a) {
  StepShape s;
  s.data = a.findProgram("train_step");
  if (!s.data)
    throw rt::Error("the artifact has no train_step program");
  if (const rt::Program *m = a.findProgram("accumulate")) {
    s.data = m;
    s.hasMicro = true;
    auto it = a.meta.find("grad_accum");
    s.accum = it == a.meta.end() ? 1 : std::atoll(it->second.c_str());
    if (s.accum < 1)
      throw rt::Error("the artifact's grad_accum '" +
                      (it == a.meta.end() ? std::string() : it->second) +
                      "' is not a positive integer");
  }
  if (s.data->inputs.empty())
    throw rt::Error(s.data->name + " has no inputs to feed");
  return s;
}

/// The exclusive upper bound of integer input `id`: the smallest of what its
/// consumers in `p` accept (following `copy`, which reshapes), else the
/// classes of the forward output's last axis, else 2.
static int64_t intRange(const rt::Artifact &a, const rt::Program &p,
                        int32_t id) {
  std::set<int32_t> names = {id};
  int64_t bound = -1;
  auto tighten = [&](int64_t b) {
    if (b > 0)
      bound = bound < 0 ? b : std::min(bound, b);
  };
  for (const rt::Instr &in : p.instrs) {
    auto reads = [&](size_t i) {
      return in.inputs.size() > i && names.count(in.inputs[i]);
    };
    if (rt::abi::is(in, rt::abi::KernelId::Copy) && reads(0) &&
        !in.outputs.empty())
      names.insert(in.outputs[0]);
    if (rt::abi::is(in, rt::abi::KernelId::Gather) && reads(1))
      if (auto g = rt::abi::tryAttrsOf<rt::abi::AxisAttrs>(in)) {
        const std::vector<int64_t> &shape = a.tensors[in.inputs[0]].shape;
        if (g->axis >= 0 && g->axis < (int64_t)shape.size())
          tighten(shape[g->axis]);
      }
    if (rt::abi::is(in, rt::abi::KernelId::SoftmaxCrossEntropy) && reads(1) &&
        !a.tensors[in.inputs[0]].shape.empty())
      tighten(a.tensors[in.inputs[0]].shape.back());
  }
  if (bound > 0)
    return bound;
  const rt::Program *fwd = a.findProgram("forward");
  if (fwd && !fwd->outputs.empty() && !a.tensors[fwd->outputs[0]].shape.empty())
    return std::max<int64_t>(1, a.tensors[fwd->outputs[0]].shape.back());
  return 2;
}

/// One synthetic batch: the bytes of each input of `p`, in its order.
static std::vector<std::vector<uint8_t>>
syntheticBatch(const rt::Artifact &a, const rt::Program &p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> out;
  for (int32_t id : p.inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    std::vector<uint8_t> bytes(static_cast<size_t>(t.byteSize()));
    int64_t n = t.numElements();
    if (t.dtype == rt::DType::I64) {
      std::uniform_int_distribution<int64_t> d(0, intRange(a, p, id) - 1);
      auto *v = reinterpret_cast<int64_t *>(bytes.data());
      for (int64_t i = 0; i < n; ++i)
        v[i] = d(rng);
    } else {
      std::uniform_real_distribution<float> d(-1, 1);
      std::vector<float> v(n);
      for (float &x : v)
        x = d(rng);
      if (t.dtype == rt::DType::F32)
        std::copy(v.begin(), v.end(), reinterpret_cast<float *>(bytes.data()));
      else // bf16/f16 inputs of hand-made artifacts
        rt::narrowFromF32(v.data(), t.dtype, bytes.data(), n);
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

/// Runs one optimizer step of `r`; returns its time in seconds.
static double timeStep(Run &r, const StepShape &s) {
  double t = 0;
  for (int64_t k = 0; k < s.accum; ++k)
    t += rt::timeRun(*r.session, s.data->name);
  if (s.hasMicro)
    t += rt::timeRun(*r.session, "train_step");
  return t;
}

/// Times each kernel of `steps` more steps of `r` and prints the profile
/// table (and with `json` one object: {"mode", "profile_steps", "profile":
/// [{kernel, calls, seconds, bytes, flops}]}, totals over the steps).
static void printProfile(Run &r, const StepShape &s, int64_t steps, bool json,
                         bool byShape) {
  r.session->setProfiling(true, byShape);
  for (int64_t i = 0; i < steps; ++i)
    timeStep(r, s);
  std::vector<rt::KernelTime> prof = r.session->profile();
  std::printf("  %s step by kernel (%lld steps%s):\n%s", r.name,
              (long long)steps,
              r.session->traits().asynchronous
                  ? ", each kernel between its own events"
                  : "",
              rt::formatProfile(prof, steps, "    ").c_str());
  if (!json)
    return;
  nlohmann::json j;
  j["mode"] = r.name;
  j["profile_steps"] = steps;
  j["profile"] = nlohmann::json::array();
  for (const rt::KernelTime &k : prof)
    j["profile"].push_back({{"kernel", k.kernel},
                            {"calls", k.calls},
                            {"seconds", k.seconds},
                            {"bytes", k.bytes},
                            {"flops", k.flops}});
  std::printf("%s\n", j.dump().c_str());
}

int run::runBench(int argc, char **argv) {
  std::string artifact, device = "auto", only;
  int64_t steps = 20, warmup = 3, seed = 0;
  bool tf32 = false, json = false, noGraphs = false, profile = false,
       profileShapes = false;
  std::string trace;
  int64_t traceSteps = 5;
  try {
    Args args("tcc-run bench", "tcc-run bench ART [options]",
              "Times eager and compiled training steps of the artifact ART on "
              "synthetic data, side by side on one device.");
    args.positional(&artifact, "the artifact to time");
    args.value("device", &device, "auto|cpu|cuda",
               "where to run (default auto, as for tcc-run train)");
    args.integer("steps", &steps, 1, "N", "timed steps per mode, default 20");
    args.integer("warmup", &warmup, 0, "N", "untimed steps first, default 3");
    args.flag("tf32", &tf32,
              "GPU: fp32 matrix products on TF32 tensor cores (ignored on "
              "the CPU)");
    args.flag("no-cuda-graphs", &noGraphs,
              "GPU: launch every kernel of a compiled step on its own "
              "instead of replaying the step as a CUDA graph");
    args.integer("seed", &seed, 0, "N", "seed of the synthetic data");
    args.value("only", &only, "eager|compiled",
               "time one mode only (its memory is then alone on the device)",
               {"eager", "compiled"});
    args.flag("json", &json,
              "also print one JSON object per mode (median_step_ms, "
              "samples_per_sec, tokens_per_sec, peak_bytes, device, ...)");
    args.flag("profile", &profile,
              "after the timed steps, time each kernel of --steps more "
              "steps per mode and print where a step goes: ms, share, GB/s "
              "and (GEMMs, attention) TFLOP/s per kernel; on a GPU those "
              "steps launch kernel by kernel, without CUDA graphs");
    args.flag("profile-shapes", &profileShapes,
              "--profile with each GEMM and attention call listed under its "
              "problem shape, \"matmul [32x1024x2304] k768\", \"attention "
              "b384 t1024x1024 d64 causal\": which shapes run below the "
              "others' rate");
    args.value("trace", &trace, "FILE",
               "after the timed steps (and --profile), run --trace-steps "
               "more steps of the last mode and write their timeline "
               "(kernels, copies, the arena's memory) as Chrome/Perfetto "
               "JSON");
    args.integer("trace-steps", &traceSteps, 1, "N",
                 "steps --trace records, default 5");
    if (!args.parse(argc, argv, 2))
      return 0;
    if (!trace.empty())
      rt::Tracer::checkWritable(trace);
    rt::DeviceRequest req = rt::parseDeviceRequest(device);
    rt::DeviceProbe probe;
    if (req == rt::DeviceRequest::Cuda) {
      probe = rt::probeDevices();
      rt::requireGpu(probe);
    }
    rt::Artifact a = rt::readArtifact(artifact);
    rt::DeviceChoice choice = req == rt::DeviceRequest::Cuda
                                  ? rt::selectDevice(req, a, artifact, probe)
                                  : rt::selectDevice(req, a, artifact);
    bool gpu = choice.device == rt::Device::Cuda;
    if (!choice.note.empty())
      std::fprintf(stderr, "tcc-run: %s\n", choice.note.c_str());
    StepShape shape = stepShape(a);
    std::vector<std::vector<uint8_t>> batch =
        syntheticBatch(a, *shape.data, static_cast<uint64_t>(seed));

    std::vector<Run> runs;
    if (only != "compiled")
      runs.push_back({"eager", rt::ExecMode::Eager, nullptr, {}});
    if (only != "eager")
      runs.push_back({"compiled", rt::ExecMode::Compiled, nullptr, {}});
    rt::resetPeakRss();
    int64_t rssBefore = rt::readProcessMemory().rssBytes;
    rt::SessionOptions so;
    so.tf32 = tf32;
    so.graphs = !noGraphs;
    for (Run &r : runs) {
      const std::vector<int32_t> &in = shape.data->inputs;
      r.session =
          rt::openSession(rt::deviceName(choice.device), a, r.mode, so);
      for (size_t i = 0; i < in.size(); ++i)
        r.session->upload(in[i], batch[i].data());
    }
    for (int64_t i = 0; i < warmup; ++i)
      for (Run &r : runs)
        timeStep(r, shape);
    for (int64_t i = 0; i < steps; ++i)
      for (Run &r : runs)
        r.times.push_back(timeStep(r, shape));

    const rt::TensorInfo &first = a.tensors[shape.data->inputs[0]];
    int64_t samples = first.shape.empty() ? 1 : first.shape[0] * shape.accum;
    int64_t tokens = 0;
    for (int32_t id : shape.data->inputs) {
      const rt::TensorInfo &t = a.tensors[id];
      if (t.name != "labels" && t.dtype == rt::DType::I64 &&
          t.shape.size() == 2)
        tokens = t.shape[0] * t.shape[1] * shape.accum;
    }
    std::string where = gpu ? "cuda, " +
                                  runs[0].session->deviceDescription() +
                                  (tf32 ? ", TF32" : "") + "; GPU events"
                            : std::string("cpu; host clock");
    std::printf("tcc-run bench %s on %s: batch %lld, %lld timed steps per "
                "mode (median)\n",
                artifact.c_str(), where.c_str(), (long long)samples,
                (long long)steps);
    std::printf("  %-9s %12s %14s %14s %12s %12s %14s\n", "mode", "step ms",
                "samples/s", "tokens/s", "temp peak", "tensor peak",
                "measured peak");
    for (Run &r : runs) {
      double ms = rt::median(r.times) * 1e3;
      rt::MemoryStats m = r.session->memory();
      std::string tps = tokens
                            ? std::to_string((long long)(tokens / (ms / 1e3)))
                            : std::string("-");
      std::printf("  %-9s %12.3f %14.1f %14s %12s %12s %14s\n", r.name, ms,
                  samples / (ms / 1e3), tps.c_str(),
                  formatBytes(m.tempPeakBytes).c_str(),
                  formatBytes(m.peakBytes).c_str(),
                  formatBytes(m.measuredPeakBytes).c_str());
    }
    if (json)
      for (Run &r : runs) {
        double ms = rt::median(r.times) * 1e3;
        rt::MemoryStats m = r.session->memory();
        nlohmann::json j;
        j["mode"] = r.name;
        j["device"] = r.session->deviceDescription();
        j["batch"] = samples;
        j["steps"] = steps;
        j["median_step_ms"] = ms;
        j["samples_per_sec"] = samples / (ms / 1e3);
        j["tokens_per_sec"] = tokens ? tokens / (ms / 1e3) : 0.0;
        j["peak_bytes"] = m.measuredPeakBytes;
        j["tensor_peak_bytes"] = m.peakBytes;
        j["persistent_bytes"] = m.persistentBytes;
        j["tf32"] = gpu && tf32;
        if (gpu)
          j["cuda_graphs"] = r.session->graphStatus();
        std::printf("%s\n", j.dump().c_str());
      }
    for (Run &r : runs)
      if (gpu && r.mode == rt::ExecMode::Compiled)
        std::printf("  CUDA graphs (compiled): %s\n",
                    r.session->graphStatus().c_str());
    if (runs.size() == 2) {
      double me = rt::median(runs[0].times), mc = rt::median(runs[1].times);
      rt::MemoryStats se = runs[0].session->memory();
      rt::MemoryStats sc = runs[1].session->memory();
      std::printf(
          "  compiled vs eager: %.2fx faster, %.2fx the tensor memory\n",
          me / mc, double(sc.peakBytes) / double(se.peakBytes));
    }
    std::printf(
        "  process peak RSS +%s since the sessions were built\n",
        formatBytes(rt::readProcessMemory().peakRssBytes - rssBefore).c_str());
    if (profile || profileShapes)
      for (Run &r : runs)
        printProfile(r, shape, steps, json, profileShapes);
    if (!trace.empty()) {
      Run &r = runs.back();
      std::printf("  %s\n",
                  rt::traceSteps(
                      *r.session, traceSteps, [&] { timeStep(r, shape); },
                      trace, std::string("tcc-run bench ") + r.name)
                      .c_str());
    }
  } catch (const rt::Error &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tcc-run bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
