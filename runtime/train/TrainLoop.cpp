//===- TrainLoop.cpp - Running training steps fed by the data feeder ------===//
#include "runtime/train/TrainLoop.h"

#include "runtime/feeder/DataFeeder.h"
#include "runtime/train/Checkpoint.h"

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

using namespace tcc::rt;
using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<DataBinding>
tcc::rt::parseDataBindings(const std::vector<std::string> &specs) {
  std::vector<DataBinding> out;
  for (const std::string &s : specs) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw Error("--data '" + s + "': expected NAME=FILE, e.g. x=train_x.npy");
    for (const DataBinding &b : out)
      if (b.name == s.substr(0, eq))
        throw Error("--data: input '" + b.name + "' is bound twice");
    out.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return out;
}

double tcc::rt::median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const Program &program(const Artifact &a, const std::string &name) {
  const Program *p = a.findProgram(name);
  if (!p)
    throw Error("the artifact has no '" + name + "' program");
  return *p;
}

static std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

/// One feeder source per bound input of `inputs`, in that order. With `ids`,
/// also the identity of each source's data (for checkpoints).
static std::vector<DataFeeder::Source>
makeSources(const Artifact &a, const std::vector<int32_t> &inputs,
            const std::vector<DataBinding> &data, int64_t &batch,
            std::vector<DataIdentity> *ids = nullptr) {
  std::vector<DataFeeder::Source> sources;
  batch = -1;
  for (int32_t id : inputs) {
    const TensorInfo &t = a.tensors[id];
    auto it = std::find_if(data.begin(), data.end(), [&](const DataBinding &b) {
      return b.name == t.name;
    });
    if (it == data.end())
      throw Error("the model needs data for input '" + t.name + "' " +
                  shapeString(t.shape) + ": pass --data " + t.name + "=FILE");
    if (t.shape.empty())
      throw Error("input '" + t.name + "' has no batch dimension");
    if (isHalfDType(t.dtype))
      throw Error("input '" + t.name + "' is " + dtypeName(t.dtype) +
                  ": data inputs must be f32 or i64 (tcc --precision keeps "
                  "them f32)");
    if (batch >= 0 && t.shape[0] != batch)
      throw Error("inputs disagree on the batch size");
    batch = t.shape[0];
    DataFeeder::Source s;
    s.name = t.name;
    s.array = loadArray(it->path);
    s.target = t.dtype;
    s.sampleShape.assign(t.shape.begin() + 1, t.shape.end());
    if (ids)
      ids->push_back(dataIdentity(t.name, s.array));
    sources.push_back(std::move(s));
  }
  for (const DataBinding &b : data) {
    bool known = std::any_of(inputs.begin(), inputs.end(), [&](int32_t id) {
      return a.tensors[id].name == b.name;
    });
    if (!known && b.name != "labels") {
      std::string names;
      for (int32_t id : inputs)
        names += (names.empty() ? "" : ", ") + a.tensors[id].name;
      throw Error("--data " + b.name + "=...: the model has no input '" +
                  b.name + "' (inputs: " + names + ")");
    }
  }
  return sources;
}

/// K of an artifact compiled with --grad-accum K.
static int64_t gradAccumOf(const Artifact &a) {
  auto it = a.meta.find("grad_accum");
  int64_t k = it == a.meta.end() ? 1 : std::atoll(it->second.c_str());
  if (k < 1)
    throw Error("the artifact's grad_accum '" +
                (it == a.meta.end() ? std::string() : it->second) +
                "' is not a positive integer");
  return k;
}

/// The token corpus feeding `prog`, whose inputs must be one int64 [N, T]
/// tensor and `labels` int64 [N, T].
static DataFeeder::TokenSource
tokenSource(const Artifact &a, const Program &prog, const TrainOptions &opts,
            std::vector<int32_t> &feedTargets, int64_t &batch,
            int64_t &numSamples, std::vector<DataIdentity> *ids) {
  int32_t input = -1, labels = -1;
  for (int32_t id : prog.inputs) {
    const TensorInfo &t = a.tensors[id];
    bool tokenShaped = t.dtype == DType::I64 && t.shape.size() == 2;
    if (t.name == "labels" && tokenShaped)
      labels = id;
    else if (t.name != "labels" && tokenShaped && input < 0)
      input = id;
    else
      input = -2; // anything else: not a language model
  }
  if (input < 0 || labels < 0 || prog.inputs.size() != 2 ||
      a.tensors[input].shape != a.tensors[labels].shape)
    throw Error("--tokens needs a model with one int64 input [N, T] and "
                "cross-entropy labels [N, T]; use --data for this model");
  DataFeeder::TokenSource src;
  src.path = opts.tokensPath;
  src.tokenBytes = opts.tokenBytes;
  src.seqLen = a.tensors[input].shape[1];
  src.inputName = a.tensors[input].name;
  batch = a.tensors[input].shape[0];
  feedTargets = {input, labels};
  std::ifstream in(src.path, std::ios::binary);
  if (!in)
    throw Error(src.path + ": cannot open: " + std::strerror(errno));
  HostArray bytes;
  bytes.dtype = FileDType::U8;
  bytes.path = src.path;
  bytes.bytes.assign(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
  bytes.shape = {static_cast<int64_t>(bytes.bytes.size())};
  int64_t numTokens = bytes.shape[0] / std::max(1, opts.tokenBytes);
  numSamples = numTokens > 0 ? (numTokens - 1) / src.seqLen : 0;
  if (ids)
    ids->push_back(dataIdentity(src.inputName, bytes));
  return src;
}

namespace {
/// The live progress line: rewritten in place on a terminal, a line every
/// tenth of the run otherwise (logs stay readable).
class Progress {
public:
  Progress(bool enabled, int64_t first, int64_t total)
      : enabled(enabled), first(first), total(total), tty(isatty(2)) {}
  void update(int64_t step, float loss, double samplesPerSec, double elapsed) {
    if (!enabled)
      return;
    bool last = step == total;
    if (tty) {
      if (!last && secondsSince(lastPrint) < 0.1)
        return;
    } else if (!last && step % std::max<int64_t>(1, total / 10) != 0) {
      return;
    }
    lastPrint = Clock::now();
    double eta = step > first ? elapsed / (step - first) * (total - step) : 0;
    std::fprintf(
        stderr, "%sstep %lld/%lld  loss %.4f  %.1f samples/s  ETA %02d:%02d%s",
        tty ? "\r" : "", (long long)step, (long long)total, loss, samplesPerSec,
        (int)eta / 60, (int)eta % 60, tty ? (last ? "\n" : "  ") : "\n");
    std::fflush(stderr);
  }

private:
  bool enabled;
  int64_t first, total; // steps done before this run, steps in all
  bool tty;
  Clock::time_point lastPrint{};
};
} // namespace

/// Keeps the metrics lines of steps up to `step` and drops the rest (the
/// interrupted run may have gone past its last checkpoint, and a kill may
/// have cut the last line short). Rewritten atomically.
static void trimMetrics(const std::string &path, int64_t step,
                        const std::function<void(const std::string &)> &log) {
  std::ifstream in(path);
  if (!in)
    return; // nothing written yet: the file is created
  std::string line, kept;
  int64_t dropped = 0;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
        j["step"].get<int64_t>() <= step)
      kept += line + "\n";
    else if (!line.empty())
      ++dropped;
  }
  if (in.bad())
    throw Error(path + ": cannot read: " + std::strerror(errno));
  in.close();
  if (!dropped)
    return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kept;
    out.flush();
    if (!out)
      throw Error(tmp + ": cannot write: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(path + ": cannot replace it with " + tmp + ": " +
                std::strerror(errno));
  log(path + ": dropped " + std::to_string(dropped) + " line(s) past step " +
      std::to_string(step) + " left by the interrupted run");
}

/// Test hook for crash recovery: TCC_TEST_KILL_AFTER_STEP=N makes the
/// process SIGKILL itself right after step N (its metrics line and any
/// checkpoint due are written), a crash at a chosen point. -1 when unset.
static int64_t killAfterStepForTesting() {
  const char *env = std::getenv("TCC_TEST_KILL_AFTER_STEP");
  if (!env || !*env)
    return -1;
  char *end = nullptr;
  long long n = std::strtoll(env, &end, 10);
  if (*end != '\0' || n <= 0)
    throw Error(std::string("TCC_TEST_KILL_AFTER_STEP='") + env +
                "' is not a positive integer");
  return n;
}

/// Whether `p[0..n)` holds a NaN or an Inf: one whose exponent bits are all
/// ones. Adding 1 to the exponent field then carries into bit 31. Only
/// and/add/or, which vectorize with plain SSE2, keep the per-step scan
/// cheap (a compare or an unsigned max would need SSE4.1).
static bool hasNonFinite(const float *p, int64_t n) {
  uint32_t acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, p + i, sizeof b);
    acc |= (b & 0x7f800000u) + 0x00800000u;
  }
  return acc & 0x80000000u;
}

std::string tcc::rt::findNonFinite(Session &s) {
  const std::vector<TensorInfo> &tensors = s.tensors();
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if ((t.kind != TensorKind::Param && t.kind != TensorKind::State) ||
        t.dtype != DType::F32)
      continue;
    const float *p = static_cast<const float *>(s.data((int32_t)id));
    int64_t n = t.numElements();
    if (!hasNonFinite(p, n))
      continue;
    // Rare path: count them and name the first.
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i]) && bad++ == 0)
        first = i;
    float v = p[first];
    std::string what = std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    return std::string(t.kind == TensorKind::Param ? "parameter" : "state") +
           " '" + t.name + "' has " + std::to_string(bad) +
           " non-finite value" + (bad == 1 ? "" : "s") + " (first: " + what +
           " at index " + std::to_string(first) + ")";
  }
  return "";
}

static void checkCheckpointOptions(const TrainOptions &o) {
  if (o.checkpointEvery < 0)
    throw Error("--checkpoint-every must be positive, got " +
                std::to_string(o.checkpointEvery));
  if (o.checkpointEvery > 0 && o.checkpointDir.empty())
    throw Error("--checkpoint-every needs --checkpoint-dir");
  if (o.nonfiniteCheckEvery < 0)
    throw Error("the non-finite check interval must be >= 0, got " +
                std::to_string(o.nonfiniteCheckEvery));
  if (o.keepCheckpoints < 1)
    throw Error("--keep-checkpoints must be at least 1, got " +
                std::to_string(o.keepCheckpoints));
}

/// A fresh run must not mix its checkpoints with another run's: resume
/// would pick whichever has the higher step.
static void checkFreshDir(const TrainOptions &o, const Checkpoint *resumed) {
  if (o.checkpointDir.empty())
    return;
  makeCheckpointDir(o.checkpointDir); // fail now rather than after a step
  std::vector<CheckpointFile> there = listCheckpoints(o.checkpointDir);
  if (there.empty())
    return;
  if (resumed) {
    // Resuming into the directory the checkpoint came from is the point.
    std::string dir = resumed->path.substr(
        0, resumed->path.find_last_of('/') == std::string::npos
               ? 0
               : resumed->path.find_last_of('/'));
    struct stat a, b;
    if (::stat(dir.empty() ? "." : dir.c_str(), &a) == 0 &&
        ::stat(o.checkpointDir.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
      return;
  }
  throw Error("--checkpoint-dir " + o.checkpointDir +
              " already holds checkpoints (newest " + there.back().path +
              "); pass --resume " + o.checkpointDir +
              " to continue that run, or use an empty directory");
}

TrainResult tcc::rt::train(Session &session, const Artifact &a,
                           const TrainOptions &opts) {
  const Program &p = program(a, "train_step");
  if ((opts.steps < 0) == (opts.epochs < 0))
    throw Error("give exactly one of --steps and --epochs");
  checkCheckpointOptions(opts);
  std::function<void(const std::string &)> log = opts.log;
  if (!log)
    log = [](const std::string &m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  bool checkpointing = !opts.checkpointDir.empty();
  bool resuming = !opts.resumeFrom.empty();
  TrainResult r;
  // With gradient accumulation the data feeds the "accumulate" program, K
  // times per optimizer step, and "train_step" applies the update.
  const Program *micro = a.findProgram("accumulate");
  const Program &dataProg = micro ? *micro : p;
  r.gradAccum = micro ? gradAccumOf(a) : 1;
  std::vector<DataIdentity> ids;
  std::vector<DataIdentity> *idsOut =
      checkpointing || resuming ? &ids : nullptr;
  std::vector<DataFeeder::Source> sources;
  DataFeeder::TokenSource tokens;
  std::vector<int32_t> feedTargets; // program input of each batch tensor
  int64_t microBatch = 0, numSamples = 0;
  if (!opts.tokensPath.empty()) {
    if (!opts.data.empty())
      throw Error("give either --tokens or --data, not both");
    tokens = tokenSource(a, dataProg, opts, feedTargets, microBatch, numSamples,
                         idsOut);
  } else {
    sources = makeSources(a, dataProg.inputs, opts.data, microBatch, idsOut);
    feedTargets = dataProg.inputs;
    // The feeder checks that every source has this many samples.
    numSamples = sources[0].array.shape.empty() ? 0 : sources[0].array.shape[0];
  }
  r.batchSize = microBatch * r.gradAccum;
  int64_t perEpoch = numSamples / microBatch / r.gradAccum;
  if (opts.epochs >= 0 && perEpoch == 0)
    throw Error("an epoch of the data has fewer than " +
                std::to_string(r.gradAccum) + " micro-batches of " +
                std::to_string(microBatch) + " samples");
  int64_t total = opts.steps >= 0 ? opts.steps : opts.epochs * perEpoch;
  if (dataProg.outputs.empty() ||
      a.tensors[dataProg.outputs[0]].dtype != DType::F32)
    throw Error(dataProg.name + " has no f32 loss output");

  // fp16 loss scaling: the step counts the steps it skipped in a state
  // tensor; reading it around each step tells whether this one was.
  int32_t skippedId = lossScaleSkippedTensor(a);
  int32_t scaleId = skippedId >= 0 ? a.findTensor("loss_scale") : -1;
  if (scaleId >= 0 && (a.tensors[scaleId].kind != TensorKind::State ||
                       a.tensors[scaleId].dtype != DType::F32 ||
                       a.tensors[scaleId].numElements() != 1))
    scaleId = -1;
  if (opts.skipNonfinite && skippedId < 0)
    throw Error("--on-nonfinite skip needs fp16 loss scaling (compile with "
                "--precision fp16); use --on-nonfinite stop");
  auto scalarOf = [&](int32_t id) {
    return *static_cast<const float *>(session.data(id));
  };

  CheckpointMeta meta;
  if (checkpointing || resuming) {
    meta.artifactCrc = artifactIdentity(a);
    auto source = a.meta.find("source");
    meta.artifactSource = source == a.meta.end() ? "" : source->second;
    meta.totalSteps = total;
    meta.epochs = opts.epochs;
    meta.batchSize = r.batchSize;
    meta.batchesPerEpoch = perEpoch;
    meta.blasThreads = openblas_get_num_threads();
    meta.seed = opts.seed;
    meta.shuffle = opts.shuffle;
    meta.data = std::move(ids);
  }
  if (resuming) {
    Checkpoint c = loadNewestCheckpoint(opts.resumeFrom, log);
    checkResumable(c, meta, log);
    checkFreshDir(opts, &c);
    restoreCheckpoint(session, c);
    r.startStep = c.meta.step;
    r.resumedFrom = c.path;
    r.resumedLoss = c.meta.loss;
    log("resuming from " + c.path + " at step " + std::to_string(r.startStep) +
        " of " + std::to_string(total) + " (epoch " +
        std::to_string(perEpoch ? r.startStep / perEpoch : 0) + ", batch " +
        std::to_string(perEpoch ? r.startStep % perEpoch : 0) + ")");
  } else {
    checkFreshDir(opts, nullptr);
  }
  // The feeder counts micro-batches.
  std::unique_ptr<DataFeeder> feeder =
      opts.tokensPath.empty()
          ? std::make_unique<DataFeeder>(
                std::move(sources), microBatch, opts.shuffle, opts.seed,
                total * r.gradAccum, opts.prefetch, r.startStep * r.gradAccum)
          : std::make_unique<DataFeeder>(
                tokens, microBatch, opts.shuffle, opts.seed,
                total * r.gradAccum, opts.prefetch, r.startStep * r.gradAccum);

  std::unique_ptr<std::ofstream> metrics;
  if (!opts.metricsPath.empty()) {
    if (resuming)
      trimMetrics(opts.metricsPath, r.startStep, log);
    metrics = std::make_unique<std::ofstream>(
        opts.metricsPath, resuming ? std::ios::app : std::ios::trunc);
    if (!*metrics)
      throw Error(opts.metricsPath +
                  ": cannot open for writing: " + std::strerror(errno));
  }
  // Parameters and state are scanned for NaN/Inf every
  // nonfiniteCheckEvery steps, after the last one and always before a
  // checkpoint: one with non-finite weights is never written.
  int64_t scannedStep = -1;
  auto checkFinite = [&](int64_t step) {
    if (scannedStep == step)
      return;
    Clock::time_point t0 = Clock::now();
    std::string bad = findNonFinite(session);
    r.nonfiniteCheckSeconds += secondsSince(t0);
    scannedStep = step;
    if (!bad.empty())
      throw Error(
          "step " + std::to_string(step) + ": " + bad +
          "; lower the learning rate or check the data" +
          (checkpointing ? " (no checkpoint written for this step)" : ""));
  };
  int64_t checkpointedStep = -1;
  auto checkpoint = [&](int64_t step, float loss) {
    checkFinite(step);
    checkpointedStep = step;
    Clock::time_point t0 = Clock::now();
    meta.step = step;
    meta.loss = loss;
    r.lastCheckpoint =
        saveCheckpoint(opts.checkpointDir, meta, persistentTensors(session),
                       opts.keepCheckpoints, log);
    ++r.checkpointsWritten;
    r.checkpointSeconds += secondsSince(t0);
  };

  int64_t killAfter = killAfterStepForTesting();
  Progress progress(opts.progress, r.startStep, total);
  Clock::time_point start = Clock::now();
  DataFeeder::Batch batch;
  r.steps = r.startStep;
  for (int64_t step = r.startStep + 1; step <= total; ++step) {
    double dt = 0, lossSum = 0;
    float skippedBefore = skippedId >= 0 ? scalarOf(skippedId) : 0;
    bool fed = true;
    for (int64_t k = 0; k < r.gradAccum && fed; ++k) {
      Clock::time_point waitStart = Clock::now();
      fed = feeder->next(batch);
      r.dataWaitSeconds += secondsSince(waitStart);
      if (!fed)
        break;
      for (size_t i = 0; i < feedTargets.size(); ++i)
        std::memcpy(session.data(feedTargets[i]), batch.tensors[i].data(),
                    batch.tensors[i].size());
      Clock::time_point t0 = Clock::now();
      session.run(dataProg.name);
      dt += secondsSince(t0);
      lossSum += *static_cast<const float *>(session.data(dataProg.outputs[0]));
    }
    if (!fed)
      break;
    if (micro) {
      Clock::time_point t0 = Clock::now();
      session.run("train_step");
      dt += secondsSince(t0);
    }
    // The mean of the micro-batch means is the mean over the whole batch.
    float loss = static_cast<float>(lossSum / r.gradAccum);
    bool skipped = skippedId >= 0 && scalarOf(skippedId) != skippedBefore;
    r.skippedSteps += skipped;
    if (scaleId >= 0)
      r.lossScale = scalarOf(scaleId);
    if (!std::isfinite(loss) && !(skipped && opts.skipNonfinite))
      throw Error("step " + std::to_string(step) + ": the loss is " +
                  (std::isnan(loss) ? "NaN"
                   : loss > 0       ? "+Inf"
                                    : "-Inf") +
                  "; lower the learning rate or check the data");
    if (step == total ||
        (opts.nonfiniteCheckEvery > 0 && step % opts.nonfiniteCheckEvery == 0))
      checkFinite(step);
    r.losses.push_back(loss);
    r.stepSeconds.push_back(dt);
    r.steps = step;
    double elapsed = secondsSince(start);
    double sps = r.batchSize * (step - r.startStep) / std::max(elapsed, 1e-9);
    if (metrics) {
      nlohmann::json j;
      j["step"] = step;
      j["epoch"] = batch.epoch;
      j["loss"] = loss;
      j["samples_per_sec"] = r.batchSize / std::max(dt, 1e-9);
      j["step_ms"] = dt * 1e3;
      if (skippedId >= 0) {
        j["skipped"] = skipped;
        j["loss_scale"] = r.lossScale;
      }
      *metrics << j.dump() << "\n";
      metrics->flush();
    }
    // After the metrics line, so a resumed run never lacks a step's line.
    if (checkpointing && (step == total || (opts.checkpointEvery > 0 &&
                                            step % opts.checkpointEvery == 0)))
      checkpoint(step, loss);
    progress.update(step, loss, sps, elapsed);
    if (step == killAfter)
      std::raise(SIGKILL);
    // Polled between steps only: a step is never cut in half, and the
    // checkpoint below is of a whole step.
    if (int sig = opts.stopSignal ? opts.stopSignal->load() : 0) {
      r.interruptedBy = sig;
      if (checkpointing && checkpointedStep != step)
        checkpoint(step, loss);
      break;
    }
  }
  r.totalSeconds = secondsSince(start);
  return r;
}

int32_t tcc::rt::lossScaleSkippedTensor(const Artifact &a) {
  int32_t id = a.findTensor("loss_scale.skipped");
  if (id < 0 || a.tensors[id].kind != TensorKind::State ||
      a.tensors[id].dtype != DType::F32 || a.tensors[id].numElements() != 1)
    return -1;
  return id;
}

EvalResult tcc::rt::evaluate(Session &session, const Artifact &a,
                             const std::vector<DataBinding> &data) {
  const Program &p = program(a, "forward");
  if (p.outputs.empty())
    throw Error("the forward program has no output");
  const TensorInfo &out = a.tensors[p.outputs[0]];
  if (out.dtype != DType::F32 || out.shape.size() < 2)
    throw Error("evaluation needs a class axis on the model's output, which "
                "has shape " +
                shapeString(out.shape));
  int64_t batch;
  auto sources = makeSources(a, p.inputs, data, batch);
  auto lab = std::find_if(data.begin(), data.end(), [](const DataBinding &b) {
    return b.name == "labels";
  });
  if (lab == data.end())
    throw Error("evaluation needs --eval-data labels=FILE");
  DataFeeder::Source labels;
  labels.name = "labels";
  labels.array = loadArray(lab->path);
  labels.target = DType::I64;
  labels.sampleShape.assign(out.shape.begin() + 1, out.shape.end() - 1);
  sources.push_back(std::move(labels));
  int64_t batches =
      sources[0].array.shape.empty() ? 0 : sources[0].array.shape[0] / batch;
  DataFeeder feeder(std::move(sources), batch, false, 0, batches);

  int64_t classes = out.shape.back();
  int64_t positions = out.numElements() / classes;
  int64_t correct = 0, seen = 0;
  double lossSum = 0;
  DataFeeder::Batch b;
  while (feeder.next(b)) {
    for (size_t i = 0; i < p.inputs.size(); ++i)
      std::memcpy(session.data(p.inputs[i]), b.tensors[i].data(),
                  b.tensors[i].size());
    session.run("forward");
    const float *logits =
        static_cast<const float *>(session.data(p.outputs[0]));
    const int64_t *y =
        reinterpret_cast<const int64_t *>(b.tensors.back().data());
    for (int64_t i = 0; i < positions; ++i) {
      const float *row = logits + i * classes;
      int64_t best = std::max_element(row, row + classes) - row;
      correct += best == y[i];
      if (y[i] < 0 || y[i] >= classes)
        throw Error("evaluation label " + std::to_string(y[i]) +
                    " is outside [0, " + std::to_string(classes) + ")");
      double mx = row[best], sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(row[c] - mx);
      lossSum += mx + std::log(sum) - row[y[i]];
    }
    seen += positions;
  }
  EvalResult r;
  r.samples = batches * batch;
  r.accuracy = seen ? double(correct) / seen : 0;
  r.loss = seen ? lossSum / seen : 0;
  return r;
}
