//===- TrainSetup.cpp - Options, feeding, metrics and progress of a run ---===//
#include "runtime/train/TrainSetup.h"

#include "runtime/core/OffloadPlan.h"
#include "runtime/train/EvalDuringTraining.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

using namespace tcc::rt;
using namespace tcc::rt::detail;

const Program &detail::program(const Artifact &a, const std::string &name) {
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

std::vector<DataFeeder::Source>
detail::makeSources(const Artifact &a, const std::vector<int32_t> &inputs,
                    const std::vector<DataBinding> &data, int64_t &batch,
                    std::vector<DataIdentity> *ids, const std::string &flag) {
  std::vector<DataFeeder::Source> sources;
  batch = -1;
  for (int32_t id : inputs) {
    const TensorInfo &t = a.tensors[id];
    auto it = std::find_if(data.begin(), data.end(), [&](const DataBinding &b) {
      return b.name == t.name;
    });
    if (it == data.end())
      throw Error("the model needs data for input '" + t.name + "' " +
                  shapeString(t.shape) + ": pass " + flag + " " + t.name +
                  "=FILE");
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
      throw Error(flag + " " + b.name + "=...: the model has no input '" +
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

/// The vocabulary of a language model: the class axis of the forward
/// program's first output when it is [N, T, V] over the token input
/// [N, T]; 0 when the model says nothing about it.
static int64_t vocabularyOf(const Artifact &a, const TensorInfo &input) {
  const Program *fwd = a.findProgram("forward");
  if (!fwd || fwd->outputs.empty())
    return 0;
  const TensorInfo &out = a.tensors[fwd->outputs[0]];
  if (out.shape.size() != 3 || out.shape[0] != input.shape[0] ||
      out.shape[1] != input.shape[1])
    return 0;
  return out.shape[2];
}

TokenCorpus::Options detail::tokenOptions(const Artifact &a,
                                          const TensorInfo &input,
                                          const TrainOptions &opts) {
  TokenCorpus::Options o;
  o.tokenBytes = opts.tokenBytes;
  o.seqLen = input.shape[1];
  o.vocab = vocabularyOf(a, input);
  o.randomAccess = opts.shuffle;
  return o;
}

int32_t detail::tokenInput(const Artifact &a, const Program &prog,
                           int32_t *labelsOut, const std::string &flag) {
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
  bool withLabels = labelsOut != nullptr;
  if (input < 0 ||
      (withLabels && (labels < 0 || prog.inputs.size() != 2 ||
                      a.tensors[input].shape != a.tensors[labels].shape)))
    throw Error(flag + " needs a model with one int64 input [N, T]" +
                (withLabels ? " and cross-entropy labels [N, T]" : "") +
                "; use " + (flag == "--tokens" ? "--data" : "--eval-data") +
                " for this model");
  if (labelsOut)
    *labelsOut = labels;
  return input;
}

/// The token corpus feeding `prog`, whose inputs must be one int64 [N, T]
/// tensor and `labels` int64 [N, T]. Maps the shards and checks their
/// headers now, before any step.
static std::shared_ptr<const TokenCorpus>
tokenCorpus(const Artifact &a, const Program &prog, const TrainOptions &opts,
            std::vector<int32_t> &feedTargets, int64_t &batch,
            int64_t &numSamples, std::vector<DataIdentity> *ids) {
  int32_t labels = -1;
  int32_t input = tokenInput(a, prog, &labels, "--tokens");
  const TensorInfo &in = a.tensors[input];
  batch = in.shape[0];
  feedTargets = {input, labels};
  auto corpus = std::make_shared<const TokenCorpus>(opts.tokensPath,
                                                    tokenOptions(a, in, opts));
  numSamples = corpus->numWindows();
  if (ids) {
    // The corpus by its token count, windows and a sampled checksum: a
    // resumed run finds the same window at the same step.
    DataIdentity d;
    d.name = in.name;
    d.path = opts.tokensPath;
    d.dtype = "tokens " + corpus->tokenType();
    d.shape = {corpus->numTokens(), corpus->numWindows()};
    d.crc32 = corpus->fingerprint();
    ids->push_back(std::move(d));
  }
  return corpus;
}

detail::Progress::Progress(bool enabled, int64_t first, int64_t total)
    : enabled(enabled), first(first), total(total), tty(isatty(2)) {}

void detail::Progress::update(int64_t step, float loss, double samplesPerSec,
                              double elapsed) {
  if (!enabled)
    return;
  bool last = step == total;
  bool force = std::exchange(forceNext_, false);
  if (tty) {
    if (!last && !force && secondsSince(lastPrint) < 0.1)
      return;
  } else if (!last && !force && step % std::max<int64_t>(1, total / 10) != 0) {
    return;
  }
  lastPrint = Clock::now();
  double eta = step > first ? elapsed / (step - first) * (total - step) : 0;
  std::string ev = eval_.empty() ? "" : "  " + eval_;
  std::fprintf(stderr,
               "%sstep %lld/%lld  loss %.4f%s  %.1f samples/s  ETA %02d:%02d%s",
               tty ? "\r" : "", (long long)step, (long long)total, loss,
               ev.c_str(), samplesPerSec, (int)eta / 60, (int)eta % 60,
               tty ? (last ? "\n" : "  ") : "\n");
  std::fflush(stderr);
}

void detail::Progress::setEval(const std::string &summary) {
  eval_ = summary;
  forceNext_ = true;
}

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

int64_t detail::killAfterStepForTesting() {
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
void detail::checkFreshDir(const TrainOptions &o, const Checkpoint *resumed) {
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

TrainPlan detail::planTraining(const Artifact &a, const TrainOptions &opts,
                               int ranks) {
  TrainPlan t;
  t.step = &program(a, "train_step");
  if ((opts.steps < 0) == (opts.epochs < 0))
    throw Error("give exactly one of --steps and --epochs");
  checkCheckpointOptions(opts);
  // With gradient accumulation the data feeds the "accumulate" program, K
  // times per optimizer step, and "train_step" applies the update.
  t.micro = a.findProgram("accumulate");
  t.data = t.micro ? t.micro : t.step;
  t.offload = a.findProgram(kOptimizerProgram);
  t.gradAccum = t.micro ? gradAccumOf(a) : 1;
  bool wantIds = !opts.checkpointDir.empty() || !opts.resumeFrom.empty();
  std::vector<DataIdentity> *idsOut = wantIds ? &t.ids : nullptr;
  int64_t numSamples = 0;
  if (!opts.tokensPath.empty()) {
    if (!opts.data.empty())
      throw Error("give either --tokens or --data, not both");
    t.tokens = true;
    t.corpus = tokenCorpus(a, *t.data, opts, t.feedTargets, t.microBatch,
                           numSamples, idsOut);
  } else {
    t.sources = makeSources(a, t.data->inputs, opts.data, t.microBatch, idsOut);
    t.feedTargets = t.data->inputs;
    // The feeder checks that every source has this many samples.
    numSamples =
        t.sources[0].array.shape.empty() ? 0 : t.sources[0].array.shape[0];
  }
  t.batchSize = t.microBatch * t.gradAccum;
  // Every rank takes its share of one global micro-batch of ranks x the
  // artifact's micro-batch (DataFeeder.h).
  int64_t globalMicro = t.microBatch * ranks;
  t.perEpoch = numSamples / globalMicro / t.gradAccum;
  // Data of fewer samples than one micro-batch is not an epoch question:
  // the feeder says so, naming the file (and a scalar file as such).
  if (opts.epochs >= 0 && t.perEpoch == 0 && numSamples >= globalMicro)
    throw Error("an epoch of the data has fewer than " +
                std::to_string(t.gradAccum) + " micro-batches of " +
                (ranks > 1 ? std::to_string(ranks) + " ranks x " : "") +
                std::to_string(t.microBatch) + " samples");
  t.total = opts.steps >= 0 ? opts.steps : opts.epochs * t.perEpoch;
  if (t.data->outputs.empty() ||
      a.tensors[t.data->outputs[0]].dtype != DType::F32)
    throw Error(t.data->name + " has no f32 loss output");
  return t;
}

std::unique_ptr<DataFeeder> detail::startFeeder(TrainPlan &t,
                                                const TrainOptions &opts,
                                                int64_t startStep,
                                                DataShard shard) {
  // The feeder counts micro-batches.
  int64_t k = t.gradAccum;
  if (!t.tokens)
    return std::make_unique<DataFeeder>(std::move(t.sources), t.microBatch,
                                        opts.shuffle, opts.seed, t.total * k,
                                        opts.prefetch, startStep * k, shard);
  return std::make_unique<DataFeeder>(t.corpus, t.microBatch, opts.shuffle,
                                      opts.seed, t.total * k, opts.prefetch,
                                      startStep * k, shard);
}

LossScaling detail::lossScaling(const Artifact &a, const TrainOptions &opts) {
  // The step counts the steps it skipped in a state tensor; reading it
  // around each step tells whether this one was.
  LossScaling s;
  s.skippedId = lossScaleSkippedTensor(a);
  s.scaleId = s.skippedId >= 0 ? a.findTensor("loss_scale") : -1;
  if (s.scaleId >= 0 && (a.tensors[s.scaleId].kind != TensorKind::State ||
                         a.tensors[s.scaleId].dtype != DType::F32 ||
                         a.tensors[s.scaleId].numElements() != 1))
    s.scaleId = -1;
  if (opts.skipNonfinite && s.skippedId < 0)
    throw Error("--on-nonfinite skip needs fp16 loss scaling (compile with "
                "--precision fp16); use --on-nonfinite stop");
  return s;
}

LrSchedule detail::learningRateSchedule(const Artifact &a,
                                        const TrainOptions &opts,
                                        const TrainPlan &plan) {
  const LrSchedule &s = opts.lrSchedule;
  if (!s.isDefault() && learningRateTensor(a.tensors) < 0)
    throw Error("--lr and --lr-schedule need an artifact whose learning rate "
                "is a runtime value (an 'optimizer.lr' tensor); this one was "
                "compiled with the rate built in: recompile it with this tcc");
  return resolveLrSchedule(s, compiledLearningRate(a), plan.total);
}

CheckpointMeta detail::checkpointMeta(const Artifact &a,
                                      const TrainOptions &opts, TrainPlan &t,
                                      int64_t orderingThreads, int ranks) {
  CheckpointMeta meta;
  meta.ranks = ranks;
  meta.artifactCrc = artifactIdentity(a);
  auto source = a.meta.find("source");
  meta.artifactSource = source == a.meta.end() ? "" : source->second;
  meta.totalSteps = t.total;
  meta.epochs = opts.epochs;
  meta.batchSize = t.batchSize;
  meta.batchesPerEpoch = t.perEpoch;
  meta.blasThreads = orderingThreads;
  meta.seed = opts.seed;
  meta.shuffle = opts.shuffle;
  meta.data = std::move(t.ids);
  return meta;
}

std::function<void(const std::string &)>
detail::logOf(const TrainOptions &opts) {
  if (opts.log)
    return opts.log;
  return [](const std::string &m) { std::fprintf(stderr, "%s\n", m.c_str()); };
}

std::unique_ptr<std::ofstream>
detail::openMetrics(const TrainOptions &opts, bool resuming, int64_t startStep,
                    const std::function<void(const std::string &)> &log) {
  if (opts.metricsPath.empty())
    return nullptr;
  if (resuming)
    trimMetrics(opts.metricsPath, startStep, log);
  auto metrics = std::make_unique<std::ofstream>(
      opts.metricsPath, resuming ? std::ios::app : std::ios::trunc);
  if (!*metrics)
    throw Error(opts.metricsPath +
                ": cannot open for writing: " + std::strerror(errno));
  return metrics;
}

void detail::writeMetricsLine(std::ofstream &out, int64_t step, int64_t epoch,
                              float loss, int64_t batchSize, double stepSeconds,
                              bool scaling, bool skipped, float lossScale,
                              double lr, std::optional<float> gradNorm,
                              const EvalResult *eval) {
  nlohmann::json j;
  j["step"] = step;
  j["epoch"] = epoch;
  j["loss"] = loss;
  j["lr"] = lr;
  j["samples_per_sec"] = batchSize / std::max(stepSeconds, 1e-9);
  j["step_ms"] = stepSeconds * 1e3;
  if (scaling) {
    j["skipped"] = skipped;
    j["loss_scale"] = lossScale;
  }
  // Computed in the step only when compiled with --clip-grad-norm or
  // --track-grad-norm (it reads every gradient once more).
  if (gradNorm)
    j["grad_norm"] = *gradNorm;
  else
    j["grad_norm"] = nullptr;
  if (eval)
    addEvalFields(j, *eval);
  out << j.dump() << "\n";
  out.flush();
}

std::string detail::nonFiniteLossMessage(int64_t step, float loss) {
  return "step " + std::to_string(step) + ": the loss is " +
         (std::isnan(loss) ? "NaN"
          : loss > 0       ? "+Inf"
                           : "-Inf") +
         "; lower the learning rate or check the data";
}

void detail::noteResumed(TrainResult &r, const Checkpoint &c,
                         const TrainPlan &plan,
                         const std::function<void(const std::string &)> &log) {
  r.startStep = c.meta.step;
  r.resumedFrom = c.path;
  r.resumedLoss = c.meta.loss;
  int64_t perEpoch = plan.perEpoch;
  log("resuming from " + c.path + " at step " + std::to_string(r.startStep) +
      " of " + std::to_string(plan.total) + " (epoch " +
      std::to_string(perEpoch ? r.startStep / perEpoch : 0) + ", batch " +
      std::to_string(perEpoch ? r.startStep % perEpoch : 0) + ")");
}
