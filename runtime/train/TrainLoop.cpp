//===- TrainLoop.cpp - Running training steps fed by the data feeder ------===//
#include "runtime/train/TrainLoop.h"

#include "runtime/feeder/DataFeeder.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainSetup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

using namespace tcc::rt;
using namespace tcc::rt::detail;

std::vector<DataBinding>
tcc::rt::parseDataBindings(const std::vector<std::string> &specs,
                           const std::string &flag) {
  std::vector<DataBinding> out;
  for (const std::string &s : specs) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw Error(flag + " '" + s +
                  "': expected NAME=FILE, e.g. x=train_x.npy");
    for (const DataBinding &b : out)
      if (b.name == s.substr(0, eq))
        throw Error(flag + ": input '" + b.name + "' is bound twice");
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
  return findNonFinite(s.tensors(),
                       [&](int32_t id) -> const void * { return s.data(id); });
}

std::string
tcc::rt::findNonFinite(const std::vector<TensorInfo> &tensors,
                       const std::function<const void *(int32_t)> &data) {
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if ((t.kind != TensorKind::Param && t.kind != TensorKind::State) ||
        t.dtype != DType::F32)
      continue;
    const float *p = static_cast<const float *>(data((int32_t)id));
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

TrainResult tcc::rt::train(Session &session, const Artifact &a,
                           const TrainOptions &opts) {
  TrainPlan plan = planTraining(a, opts);
  std::function<void(const std::string &)> log = logOf(opts);
  bool checkpointing = !opts.checkpointDir.empty();
  bool resuming = !opts.resumeFrom.empty();
  TrainResult r;
  const Program *micro = plan.micro;
  const Program &dataProg = *plan.data;
  r.gradAccum = plan.gradAccum;
  r.batchSize = plan.batchSize;
  int64_t total = plan.total;
  const std::vector<int32_t> &feedTargets = plan.feedTargets;

  LossScaling scaling = lossScaling(a, opts);
  int32_t skippedId = scaling.skippedId, scaleId = scaling.scaleId;
  auto scalarOf = [&](int32_t id) {
    return *static_cast<const float *>(session.data(id));
  };

  CheckpointMeta meta;
  if (checkpointing || resuming)
    meta = checkpointMeta(a, opts, plan);
  if (resuming) {
    Checkpoint c = loadNewestCheckpoint(opts.resumeFrom, log);
    checkResumable(c, meta, log);
    checkFreshDir(opts, &c);
    restoreCheckpoint(session, c);
    noteResumed(r, c, plan, log);
  } else {
    checkFreshDir(opts, nullptr);
  }
  std::unique_ptr<DataFeeder> feeder = startFeeder(plan, opts, r.startStep);
  std::unique_ptr<std::ofstream> metrics =
      openMetrics(opts, resuming, r.startStep, log);
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
      throw Error(nonFiniteLossMessage(step, loss));
    if (step == total ||
        (opts.nonfiniteCheckEvery > 0 && step % opts.nonfiniteCheckEvery == 0))
      checkFinite(step);
    r.losses.push_back(loss);
    r.stepSeconds.push_back(dt);
    r.steps = step;
    double elapsed = secondsSince(start);
    double sps = r.batchSize * (step - r.startStep) / std::max(elapsed, 1e-9);
    if (metrics)
      writeMetricsLine(*metrics, step, batch.epoch, loss, r.batchSize, dt,
                       skippedId >= 0, skipped, r.lossScale);
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
  return evaluate(a, data, [&](const std::vector<std::vector<uint8_t>> &in) {
    for (size_t i = 0; i < p.inputs.size(); ++i)
      std::memcpy(session.data(p.inputs[i]), in[i].data(), in[i].size());
    session.run("forward");
    return static_cast<const float *>(session.data(p.outputs[0]));
  });
}

EvalResult tcc::rt::evaluate(const Artifact &a,
                             const std::vector<DataBinding> &data,
                             const ForwardFn &forward) {
  const Program &p = program(a, "forward");
  if (p.outputs.empty())
    throw Error("the forward program has no output");
  const TensorInfo &out = a.tensors[p.outputs[0]];
  if (out.dtype != DType::F32 || out.shape.size() < 2)
    throw Error("evaluation needs a class axis on the model's output, which "
                "has shape " +
                formatShape(out.shape));
  int64_t batch;
  auto sources = makeSources(a, p.inputs, data, batch, nullptr, "--eval-data");
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
    const float *logits = forward(b.tensors);
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
