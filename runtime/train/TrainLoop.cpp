//===- TrainLoop.cpp - Running training steps fed by the data feeder ------===//
#include "runtime/train/TrainLoop.h"

#include "runtime/core/Comm.h"
#include "runtime/core/NonFinite.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/feeder/DataFeeder.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/EvalDuringTraining.h"
#include "runtime/train/TrainSetup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <utility>

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

namespace {

/// Host copies of every parameter and state tensor: what the non-finite
/// scan names the bad value from and checkpoints are written from and
/// restored into. A session whose tensors the host addresses (CPU) is its
/// own mirror; otherwise they are downloaded into host memory of the
/// session's (pinned on CUDA).
class HostMirror {
public:
  explicit HostMirror(Session &s) : s_(s) {
    const std::vector<TensorInfo> &ts = s.tensors();
    offsetOf_.assign(ts.size(), -1);
    size_t bytes = 0;
    direct_ = true;
    for (size_t id = 0; id < ts.size(); ++id)
      if (isCheckpointed(ts[id].kind)) {
        ids_.push_back(static_cast<int32_t>(id));
        offsetOf_[id] = static_cast<int64_t>(bytes);
        bytes += (static_cast<size_t>(ts[id].byteSize()) + 63) / 64 * 64;
        direct_ = direct_ && s.hostData(static_cast<int32_t>(id));
      }
    bytes_ = bytes;
  }
  /// The session's values into the mirror (nothing to do when direct).
  void download() {
    if (direct_)
      return;
    allocate();
    for (int32_t id : ids_)
      s_.download(id, mem_->data() + offsetOf_[id]);
  }
  /// The mirror's values into the session.
  void upload() {
    if (direct_)
      return;
    allocate();
    for (int32_t id : ids_)
      s_.upload(id, mem_->data() + offsetOf_[id]);
  }
  /// Rank 0's values into every rank's session: the ranks of a
  /// data-parallel run start from the same weights and optimizer state
  /// (restored from a checkpoint only rank 0 read, or initialized), as the
  /// averaged gradients then keep them. Sharded state is each rank's own
  /// (see restoreShards) and is left alone.
  void broadcastFromRank0(Communicator &comm, const ZeroPlan &zero) {
    download();
    const std::vector<TensorInfo> &ts = s_.tensors();
    for (int32_t id : ids_)
      if (!zero.find(ts[id].name))
        comm.broadcast(data(id), ts[id].byteSize(), 0);
    upload();
  }
  void *data(int32_t id) {
    if (id < 0 || id >= static_cast<int32_t>(offsetOf_.size()) ||
        offsetOf_[id] < 0)
      throw Error("tensor " + std::to_string(id) +
                  " is not a parameter or state tensor");
    if (direct_)
      return s_.hostData(id);
    allocate();
    return mem_->data() + offsetOf_[id];
  }

private:
  void allocate() {
    if (!mem_)
      mem_ = s_.allocateHost(bytes_);
  }
  Session &s_;
  bool direct_ = true;
  std::vector<int32_t> ids_;
  std::vector<int64_t> offsetOf_; // by tensor id, -1: not checkpointed
  size_t bytes_ = 0;
  std::unique_ptr<HostBuffer> mem_;
};

/// One micro-batch's run: events around the wait for its batch's copy and
/// around the run itself.
struct MicroRun {
  std::unique_ptr<Event> waitStart, waitEnd, runEnd;
};

/// What one optimizer step leaves to read back, possibly a step late.
struct StepRecord {
  int64_t step = 0, epoch = 0;
  double lr = 0;             // the step's learning rate
  float *readback = nullptr; // K losses, skipped count, loss scale, grad_norm
  std::vector<MicroRun> micro;
  /// Around train_step when accumulating; `done` follows the read-backs.
  std::unique_ptr<Event> stepStart, stepEnd, done;
};

class Trainer {
public:
  Trainer(Session &s, const TrainOptions &opts, const TrainPlan &plan,
          LossScaling scaling, HostMirror &mirror, CheckpointMeta &meta,
          TrainResult &r, DataFeeder &feeder, Communicator *comm)
      : s_(s), opts_(opts), plan_(plan), scaling_(scaling), mirror_(mirror),
        meta_(meta), r_(r), feeder_(feeder), comm_(comm),
        lead_(!comm || comm->rank() == 0), async_(s.traits().asynchronous) {
    // A synchronous session offers one slot: the input tensors themselves.
    size_t slots = std::min(opts.prefetch, s.traits().inputSlots);
    slots_ = s.inputSlots(plan.feedTargets, std::max<size_t>(slots, 1));
    slotEpoch_.assign(slots_->count(), 0);
    lossId_ = plan.data->outputs[0];
    // tcc compile --clip-grad-norm / --track-grad-norm: the step's norm.
    for (int32_t id : plan.step->outputs)
      if (s.tensors()[id].name == "grad_norm")
        gradNormId_ = id;
    scanIds_ = nonFiniteScanned(s.tensors());
    int64_t k = plan.gradAccum;
    readback_ = s.allocateHost(2 * (k + 3) * sizeof(float));
    lrId_ = learningRateTensor(s.tensors());
    lrHost_ = s.allocateHost(2 * sizeof(float));
    for (int i = 0; i < 2; ++i) {
      StepRecord &rec = records_[i];
      rec.readback = reinterpret_cast<float *>(readback_->data()) + i * (k + 3);
      for (int64_t j = 0; j < k; ++j)
        rec.micro.push_back(
            {s.createEvent(), s.createEvent(), s.createEvent()});
      rec.stepStart = s.createEvent();
      rec.stepEnd = s.createEvent();
      rec.done = s.createEvent();
    }
  }

  void setMetrics(std::unique_ptr<std::ofstream> m) { metrics_ = std::move(m); }
  /// A sharded run's plan and its tensors as a checkpoint holds them
  /// (wholeStateTensors): every rank then joins each checkpoint.
  void setSharded(const ZeroPlan &zero, const std::vector<TensorInfo> &saved) {
    zero_ = &zero;
    saved_ = &saved;
  }
  void setEval(PeriodicEval *e) { eval_ = e; }
  void run();

private:
  bool fillNext();
  void setLearningRate(int64_t step, StepRecord &rec);
  bool enqueueStep(int64_t step, StepRecord &rec);
  void finish(StepRecord &rec);
  void checkFinite(int64_t step);
  void checkpoint(int64_t step, float loss);
  /// The step's loss, skipped flag and stop request, agreed by the ranks.
  void agree(float &loss, bool &skipped);
  /// The stop request the loop acts on: this process's signal, or in a
  /// data-parallel run the one the ranks agreed on at the last step.
  int stopRequested() const {
    if (comm_)
      return agreedStop_;
    return opts_.stopSignal ? opts_.stopSignal->load() : 0;
  }
  /// Whether this rank takes part in checkpoints: rank 0 writes them, and
  /// in a sharded run every rank gives its shards of the state.
  bool joinsCheckpoints() const {
    return !opts_.checkpointDir.empty() && (lead_ || (zero_ && comm_));
  }
  /// Steps whose state is read on the host before the next is enqueued.
  bool syncPoint(int64_t step) const {
    bool ckpt = !opts_.checkpointDir.empty() && opts_.checkpointEvery > 0 &&
                step % opts_.checkpointEvery == 0;
    bool scan =
        opts_.nonfiniteCheckEvery > 0 && step % opts_.nonfiniteCheckEvery == 0;
    // From the options, not eval_: only rank 0 evaluates, and every rank
    // must finish (and so agree on) its steps in the same pattern.
    bool eval = opts_.evalEvery > 0 && step % opts_.evalEvery == 0;
    return !async_ || step == plan_.total || ckpt || scan || eval;
  }

  Session &s_;
  const TrainOptions &opts_;
  const TrainPlan &plan_;
  LossScaling scaling_;
  HostMirror &mirror_;
  CheckpointMeta &meta_;
  TrainResult &r_;
  DataFeeder &feeder_;
  /// A data-parallel run's communicator (null for one process); lead_: this
  /// process writes what the run writes (rank 0).
  Communicator *comm_;
  bool lead_;
  int agreedStop_ = 0;
  bool async_;

  std::unique_ptr<InputSlots> slots_;
  std::vector<int64_t> slotEpoch_; // of the batch each slot holds
  int32_t lossId_ = -1, gradNormId_ = -1;
  int64_t filled_ = 0, nextMicro_ = 0; // micro-batches staged, enqueued
  bool exhausted_ = false;
  DataFeeder::Batch batch_;
  std::unique_ptr<HostBuffer> readback_;
  StepRecord records_[2];
  int32_t lrId_ = -1;
  /// The rate each record's step wrote (a step's copy may still be on its
  /// way while the next is enqueued), and the last value written.
  std::unique_ptr<HostBuffer> lrHost_;
  float lrWritten_ = std::nanf("");

  float prevSkipped_ = 0, lastLoss_ = 0;
  int64_t scannedStep_ = -1, checkpointedStep_ = -1, mirrorStep_ = -1;
  std::vector<int32_t> scanIds_; // f32 parameters and state
  int64_t killAfter_ = -1;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<std::ofstream> metrics_;
  PeriodicEval *eval_ = nullptr;
  Clock::time_point start_;
  const ZeroPlan *zero_ = nullptr;                 // null: not sharded
  const std::vector<TensorInfo> *saved_ = nullptr; // what a checkpoint holds
};

/// Stages micro-batch `filled_` into its slot; false when the feeder has no
/// more batches.
bool Trainer::fillNext() {
  size_t slot = static_cast<size_t>(filled_) % slots_->count();
  Clock::time_point t0 = Clock::now();
  bool fed = feeder_.next(batch_);
  r_.dataWaitSeconds += secondsSince(t0);
  if (opts_.tracer && opts_.tracer->detailed())
    opts_.tracer->span("feeder", "feeder wait", t0, Clock::now(),
                       {traceArg("batch", double(filled_))});
  if (!fed)
    return false;
  TraceScope stage(opts_.tracer, "copy");
  if (stage.active())
    stage.name("stage batch").arg(traceArg("slot", double(slot)));
  slots_->stage(slot, batch_.tensors);
  slotEpoch_[slot] = batch_.epoch;
  ++filled_;
  return true;
}

/// Writes step `step`'s learning rate into optimizer.lr ahead of its runs,
/// when it differs from the value there: the tensor is state, so a
/// checkpoint carries it, but after a resume the first step writes it
/// anyway (lrWritten_ starts as NaN).
void Trainer::setLearningRate(int64_t step, StepRecord &rec) {
  rec.lr = lrAt(r_.lrSchedule, step - 1);
  float lr = static_cast<float>(rec.lr);
  if (lrId_ < 0 || lr == lrWritten_)
    return;
  float *host = reinterpret_cast<float *>(lrHost_->data()) + step % 2;
  *host = lr;
  s_.writeAsync(lrId_, host, sizeof(float));
  lrWritten_ = lr;
}

/// Enqueues optimizer step `step` (K data-program runs, then train_step when
/// accumulating) and the copies of its results into rec.readback. False if
/// the data ran out.
bool Trainer::enqueueStep(int64_t step, StepRecord &rec) {
  rec.step = step;
  setLearningRate(step, rec);
  int64_t k = plan_.gradAccum;
  int64_t p = static_cast<int64_t>(slots_->count());
  for (int64_t j = 0; j < k; ++j) {
    int64_t m = nextMicro_;
    while (!exhausted_ && filled_ < m + p)
      exhausted_ = !fillNext();
    if (filled_ <= m)
      return false;
    size_t slot = static_cast<size_t>(m % p);
    MicroRun &mr = rec.micro[j];
    s_.record(*mr.waitStart);
    slots_->use(slot);
    s_.record(*mr.waitEnd);
    s_.run(plan_.data->name);
    s_.record(*mr.runEnd);
    s_.readAsync(lossId_, rec.readback + j, sizeof(float));
    slots_->release(slot);
    rec.epoch = slotEpoch_[slot];
    ++nextMicro_;
  }
  s_.record(*rec.stepStart);
  if (plan_.micro)
    s_.run("train_step");
  if (plan_.offload)
    s_.run(plan_.offload->name);
  s_.record(*rec.stepEnd);
  if (scaling_.skippedId >= 0)
    s_.readAsync(scaling_.skippedId, rec.readback + k, sizeof(float));
  if (scaling_.scaleId >= 0)
    s_.readAsync(scaling_.scaleId, rec.readback + k + 1, sizeof(float));
  if (gradNormId_ >= 0)
    s_.readAsync(gradNormId_, rec.readback + k + 2, sizeof(float));
  s_.record(*rec.done);
  return true;
}

// Parameters and state are scanned for NaN/Inf every nonfiniteCheckEvery
// steps, after the last one and always before a checkpoint: one with
// non-finite weights is never written. The session answers whether any is
// there (a GPU counts on the device); the values come to the host only to
// name the bad one.
void Trainer::checkFinite(int64_t step) {
  if (scannedStep_ == step)
    return;
  TraceScope span(opts_.tracer, "check", true);
  if (span.active())
    span.name("non-finite scan").arg(traceArg("step", double(step)));
  Clock::time_point t0 = Clock::now();
  s_.synchronize(); // a kernel's error first: it explains the values
  bool bad = s_.anyNonFinite(scanIds_);
  std::string what;
  if (bad) {
    mirror_.download();
    mirrorStep_ = step;
    what = findNonFinite(s_.tensors(), [&](int32_t id) -> const void * {
      return mirror_.data(id);
    });
    if (what.empty()) // the device counted what the host does not see
      what = "a parameter or state tensor has non-finite values on the "
             "device but not in its downloaded copy";
  }
  r_.nonfiniteCheckSeconds += secondsSince(t0);
  scannedStep_ = step;
  // A diverging "parameter" may be a constant the exporter stored as an
  // initializer (an exponent, a mask) that the compiler was not told about.
  std::string hint = what.rfind("parameter '", 0) == 0
                         ? ", or freeze it if it is a constant of the model "
                           "(tcc compile --report lists what trains)"
                         : "";
  if (bad)
    throw Error("step " + std::to_string(step) + ": " + what +
                "; lower the learning rate or check the data" + hint +
                (opts_.checkpointDir.empty()
                     ? ""
                     : " (no checkpoint written for this step)"));
}

void Trainer::checkpoint(int64_t step, float loss) {
  TraceScope span(opts_.tracer, "checkpoint", true);
  if (span.active())
    span.name("checkpoint step " + std::to_string(step))
        .arg(traceArg("step", double(step)))
        .arg(traceArg("dir", opts_.checkpointDir));
  checkFinite(step);
  if (mirrorStep_ != step) {
    mirror_.download(); // what the checkpoint writes
    mirrorStep_ = step;
  }
  checkpointedStep_ = step;
  Clock::time_point t0 = Clock::now();
  // A sharded run's state is split over its ranks: every rank joins each
  // sharded tensor (an all-gather, in the plan's order everywhere, one
  // tensor at a time) and rank 0 keeps the whole ones, so the checkpoint
  // is the one the run without sharding writes.
  std::map<int32_t, std::vector<float>> whole;
  if (zero_ && comm_)
    for (const ShardedState &st : zero_->states) {
      std::vector<float> v = gatherState(
          *comm_, st, static_cast<const float *>(mirror_.data(st.stateId)));
      if (lead_)
        whole[st.stateId] = std::move(v);
    }
  if (!lead_)
    return;
  meta_.step = step;
  meta_.loss = loss;
  r_.lastCheckpoint =
      saveCheckpoint(opts_.checkpointDir, meta_,
                     persistentTensors(saved_ ? *saved_ : s_.tensors(),
                                       [&](int32_t id) -> const void * {
                                         auto it = whole.find(id);
                                         return it != whole.end()
                                                    ? it->second.data()
                                                    : mirror_.data(id);
                                       }),
                     opts_.keepCheckpoints, logOf(opts_));
  ++r_.checkpointsWritten;
  r_.checkpointSeconds += secondsSince(t0);
}

/// Reads back step rec.step (waiting for it) and does what follows a step:
/// checks, metrics, checkpoint, progress.
void Trainer::finish(StepRecord &rec) {
  s_.wait(*rec.done);
  int64_t k = plan_.gradAccum, step = rec.step;
  double lossSum = 0, dt = 0;
  for (int64_t j = 0; j < k; ++j) {
    const MicroRun &mr = rec.micro[j];
    lossSum += rec.readback[j];
    r_.copyWaitSeconds += s_.seconds(*mr.waitStart, *mr.waitEnd);
    dt += s_.seconds(*mr.waitEnd, *mr.runEnd);
  }
  if (plan_.micro || plan_.offload)
    dt += s_.seconds(*rec.stepStart, *rec.stepEnd);
  // The mean of the micro-batch means is the mean over the whole batch.
  float loss = static_cast<float>(lossSum / k);
  bool skipped = false;
  if (scaling_.skippedId >= 0) {
    skipped = rec.readback[k] != prevSkipped_;
    prevSkipped_ = rec.readback[k];
  }
  if (comm_)
    agree(loss, skipped);
  r_.skippedSteps += skipped;
  if (scaling_.scaleId >= 0)
    r_.lossScale = rec.readback[k + 1];
  if (!std::isfinite(loss) && !(skipped && opts_.skipNonfinite)) {
    s_.synchronize(); // a kernel's error (a label out of range) first
    throw Error(nonFiniteLossMessage(step, loss));
  }
  if (step == plan_.total ||
      (opts_.nonfiniteCheckEvery > 0 && step % opts_.nonfiniteCheckEvery == 0))
    checkFinite(step);
  r_.losses.push_back(loss);
  r_.stepSeconds.push_back(dt);
  r_.steps = step;
  lastLoss_ = loss;
  double elapsed = secondsSince(start_);
  int64_t globalBatch = r_.batchSize * r_.ranks;
  double sps = globalBatch * (step - r_.startStep) / std::max(elapsed, 1e-9);
  // A sync point: nothing runs behind this step (EvalDuringTraining.h).
  const EvalResult *ev =
      eval_ && eval_->due(step) ? &eval_->run(s_, step, r_) : nullptr;
  if (ev)
    progress_->setEval(evalSummary(*ev));
  if (metrics_)
    writeMetricsLine(*metrics_, step, rec.epoch, loss, globalBatch, dt,
                     scaling_.skippedId >= 0, skipped, r_.lossScale, rec.lr,
                     gradNormId_ >= 0
                         ? std::optional<float>(rec.readback[k + 2])
                         : std::nullopt,
                     ev);
  // After the metrics line, so a resumed run never lacks a step's line.
  if (joinsCheckpoints() &&
      (step == plan_.total ||
       (opts_.checkpointEvery > 0 && step % opts_.checkpointEvery == 0)))
    checkpoint(step, loss);
  progress_->update(step, loss, sps, elapsed);
  if (step == killAfter_)
    std::raise(SIGKILL);
}

// One small host reduction per step: the mean loss (what every rank reports
// and checks, so a NaN on one rank stops all of them at the same step),
// whether any rank's step was skipped, and the highest stop signal, so a
// SIGINT/SIGTERM seen by one rank stops every rank after the same step.
void Trainer::agree(float &loss, bool &skipped) {
  double sum = loss;
  comm_->allReduce(&sum, 1, CommDType::F64, CommOp::Sum);
  loss = static_cast<float>(sum / comm_->size());
  int64_t flags[2] = {opts_.stopSignal ? opts_.stopSignal->load() : 0,
                      skipped ? 1 : 0};
  comm_->allReduce(flags, 2, CommDType::I64, CommOp::Max);
  agreedStop_ = static_cast<int>(flags[0]);
  skipped = flags[1] != 0;
}

void Trainer::run() {
  if (scaling_.skippedId >= 0)
    s_.download(scaling_.skippedId, &prevSkipped_);
  killAfter_ = killAfterStepForTesting();
  progress_ = std::make_unique<Progress>(opts_.progress && lead_, r_.startStep,
                                         plan_.total);
  start_ = Clock::now();
  r_.steps = r_.startStep;
  StepRecord *pending = nullptr; // enqueued, not read back yet
  Tracer *tracer = opts_.tracer;
  for (int64_t step = r_.startStep + 1; step <= plan_.total; ++step) {
    StepRecord &rec = records_[step % 2];
    // The step's span: its runs enqueued and, at a sync point (always on a
    // synchronous session), read back; else the read-back of the step
    // before, which runs meanwhile.
    if (tracer)
      tracer->beginStep(step);
    if (!enqueueStep(step, rec)) {
      if (tracer)
        tracer->endStep();
      break;
    }
    // Step N-1 is read back while step N runs.
    if (pending)
      finish(*std::exchange(pending, nullptr));
    if (syncPoint(step))
      finish(rec);
    else
      pending = &rec;
    if (tracer)
      tracer->endStep();
    // Polled between steps only: a step is never cut in half, and the
    // checkpoint below is of the last step enqueued.
    if (int sig = stopRequested()) {
      r_.interruptedBy = sig;
      if (pending)
        finish(*std::exchange(pending, nullptr));
      if (joinsCheckpoints() && checkpointedStep_ != r_.steps)
        checkpoint(r_.steps, lastLoss_);
      break;
    }
  }
  if (pending)
    finish(*pending);
  s_.synchronize();
  r_.totalSeconds = secondsSince(start_);
}

/// Each rank's shards of the sharded state of the checkpoint rank 0 read
/// (`c`, empty on the other ranks): rank 0 broadcasts each whole tensor in
/// the plan's order, one at a time, and every rank keeps its slice.
void restoreShards(Communicator &comm, const ZeroPlan &zero,
                   const Checkpoint &c, HostMirror &mirror) {
  bool lead = comm.rank() == 0;
  for (const ShardedState &st : zero.states) {
    std::vector<float> whole(static_cast<size_t>(st.numel));
    if (lead) {
      // restoreCheckpoint checked that it is there, f32, of the whole shape.
      auto it = std::find_if(
          c.tensors.begin(), c.tensors.end(),
          [&](const CheckpointTensor &t) { return t.name == st.state; });
      if (it == c.tensors.end() || it->size != whole.size() * sizeof(float))
        throw Error(c.path + ": has no whole state '" + st.state + "'");
      std::memcpy(whole.data(), c.data(*it), it->size);
    }
    comm.broadcast(whole.data(),
                   static_cast<int64_t>(whole.size() * sizeof(float)), 0);
    sliceShard(whole.data(), st.numel, zero.shards, comm.rank(),
               static_cast<float *>(mirror.data(st.stateId)));
  }
  mirror.upload();
}

} // namespace

TrainResult tcc::rt::train(Session &session, const Artifact &a,
                           const TrainOptions &opts) {
  if (opts.prefetch < 1)
    throw Error("--prefetch must be at least 1, got 0");
  // A data-parallel run (mpirun -np N, N > 1): this process is one rank.
  // Rank 0 alone reads the checkpoint it resumes from and writes metrics,
  // checkpoints and notes; every rank trains on its share of each batch.
  Communicator *comm = launchedAsRanks() ? &communicator() : nullptr;
  int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  bool lead = rank == 0;
  // Without the step's all_reduce kernels each rank would train its own
  // copy on its share of the data: a silently different run.
  if (comm) {
    auto dp = a.meta.find("data_parallel");
    if (dp == a.meta.end() || dp->second != "on")
      throw Error("this run has " + std::to_string(ranks) +
                  " ranks, but the artifact was compiled without "
                  "--data-parallel, so its step would not average the "
                  "gradients over them; recompile it with tcc compile "
                  "--data-parallel (--batch is each rank's share)");
  }
  TrainPlan plan = planTraining(a, opts, ranks);
  std::function<void(const std::string &)> log =
      lead ? logOf(opts) : [](const std::string &) {};
  bool checkpointing = !opts.checkpointDir.empty();
  bool resuming = !opts.resumeFrom.empty();
  TrainResult r;
  r.gradAccum = plan.gradAccum;
  r.batchSize = plan.batchSize;
  r.ranks = ranks;
  LossScaling scaling = lossScaling(a, opts);
  r.lrSchedule = learningRateSchedule(a, opts, plan);
  // A sharded run (--zero-shards N) needs its N ranks (checked here, before
  // a checkpoint is read, as its kernels would at the first step), and its
  // checkpoints hold the state whole, as the run without sharding has it.
  ZeroPlan zero = zeroPlan(a);
  if (zero.shards > 0)
    checkZeroRanks(zero.shards, comm ? *comm : communicator());
  std::vector<TensorInfo> saved;
  if (zero.shards > 0)
    saved = wholeStateTensors(session.tensors(), zero);
  HostMirror mirror(session);
  CheckpointMeta meta;
  if (checkpointing || resuming)
    meta = checkpointMeta(a, opts, plan, session.orderingThreads(), ranks);
  meta.lrSchedule = r.lrSchedule.describe();
  Checkpoint c; // rank 0's, while the shards are handed out
  if (resuming && lead) {
    c = loadNewestCheckpoint(opts.resumeFrom, log);
    checkResumable(c, meta, log);
    checkFreshDir(opts, &c);
    restoreCheckpoint(
        zero.shards ? saved : session.tensors(),
        [&](int32_t id) -> void * {
          return zero.find(session.tensors()[id].name) ? nullptr
                                                       : mirror.data(id);
        },
        c);
    mirror.upload();
    noteResumed(r, c, plan, log);
  } else if (lead) {
    checkFreshDir(opts, nullptr);
  }
  if (comm) {
    // Where the run continues, and the weights and state, as rank 0 has
    // them: the other ranks need no access to the checkpoint.
    int64_t start[2] = {r.startStep, 0};
    std::memcpy(&start[1], &r.resumedLoss, sizeof r.resumedLoss);
    comm->broadcast(start, sizeof start, 0);
    r.startStep = start[0];
    std::memcpy(&r.resumedLoss, &start[1], sizeof r.resumedLoss);
    mirror.broadcastFromRank0(*comm, zero);
    if (resuming && zero.shards > 0)
      restoreShards(*comm, zero, c, mirror);
  }
  c = Checkpoint(); // its file image is no longer needed
  // Evaluation during training is rank 0's: the others go on to the next
  // step, which waits for rank 0 in its gradient reduction.
  std::unique_ptr<PeriodicEval> eval =
      lead ? PeriodicEval::make(a, opts, plan.total) : nullptr;
  std::unique_ptr<DataFeeder> feeder =
      startFeeder(plan, opts, r.startStep, DataShard{rank, ranks});
  Trainer t(session, opts, plan, scaling, mirror, meta, r, *feeder, comm);
  if (zero.shards > 0)
    t.setSharded(zero, saved);
  if (lead)
    t.setMetrics(openMetrics(opts, resuming, r.startStep, log));
  t.setEval(eval.get());
  t.run();
  // An interrupted run ends every rank with the signal's status, which the
  // MPI module treats as a failure that ends the others: none may leave
  // before rank 0's checkpoint of the last step is complete.
  if (comm && r.interruptedBy)
    comm->barrier();
  return r;
}

int32_t tcc::rt::learningRateTensor(const std::vector<TensorInfo> &ts) {
  for (size_t id = 0; id < ts.size(); ++id) {
    const TensorInfo &t = ts[id];
    if (t.name == "optimizer.lr")
      return t.kind == TensorKind::State && t.dtype == DType::F32 &&
                     t.numElements() == 1
                 ? static_cast<int32_t>(id)
                 : -1;
  }
  return -1;
}

double tcc::rt::compiledLearningRate(const Artifact &a) {
  int32_t id = learningRateTensor(a.tensors);
  if (id >= 0) {
    const TensorInfo &t = a.tensors[id];
    if (t.init.kind == InitSpec::Kind::Constant)
      return t.init.a;
    if (t.init.kind == InitSpec::Kind::Blob && t.dataOffset >= 0) {
      float v = 0;
      std::memcpy(&v, a.blob.data() + t.dataOffset, sizeof v);
      return v;
    }
  }
  auto it = a.meta.find("optimizer.lr");
  return it == a.meta.end() ? 0.0 : std::strtod(it->second.c_str(), nullptr);
}

int32_t tcc::rt::lossScaleSkippedTensor(const Artifact &a) {
  int32_t id = a.findTensor("loss_scale.skipped");
  if (id < 0 || a.tensors[id].kind != TensorKind::State ||
      a.tensors[id].dtype != DType::F32 || a.tensors[id].numElements() != 1)
    return -1;
  return id;
}
