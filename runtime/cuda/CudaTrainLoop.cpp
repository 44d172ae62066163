//===- CudaTrainLoop.cpp - Training on the GPU, fed asynchronously --------===//
//
// The pipeline (see CudaTrainLoop.h). Micro-batch m (each run of the data
// program; K per optimizer step with --grad-accum K) uses slot m % P of P =
// opts.prefetch slots. Before micro-batch m runs, micro-batches up to
// m + P - 1 are filled: for micro-batch j the host waits for the slot's
// previous copy to have left its pinned buffer (event `copied`), takes the
// batch from the feeder, writes it into the pinned buffer, and the copy
// stream waits for the compute stream to be done with the slot (event
// `consumed`, recorded after micro-batch j - P ran) before copying it to the
// slot's device buffers. The compute stream waits for `copied` before the
// run, which reads the slot's device buffers through bindInput.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaTrainLoop.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaNonFinite.h"
#include "runtime/train/TrainSetup.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <memory>
#include <utility>

using namespace tcc::rt;
using namespace tcc::rt::detail;
using tcc::rt::cuda::CudaSession;

namespace {

/// A CUDA event; `timing` events can be measured with cudaEventElapsedTime.
class Event {
public:
  explicit Event(bool timing) {
    TCC_CUDA_CHECK(cudaEventCreateWithFlags(
        &e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  cudaEvent_t get() const { return e_; }

private:
  cudaEvent_t e_ = nullptr;
};

/// Pinned host memory (cudaHostAlloc): copies from and to it are DMA'd
/// without a staging copy and can run asynchronously.
class Pinned {
public:
  Pinned() = default;
  explicit Pinned(size_t bytes) {
    TCC_CUDA_CHECK(cudaHostAlloc(&p_, bytes ? bytes : 1, cudaHostAllocDefault));
  }
  ~Pinned() {
    if (p_)
      cudaFreeHost(p_);
  }
  Pinned(const Pinned &) = delete;
  Pinned &operator=(const Pinned &) = delete;
  uint8_t *get() const { return static_cast<uint8_t *>(p_); }

private:
  void *p_ = nullptr;
};

class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) {
    TCC_CUDA_CHECK(cudaMalloc(&p_, bytes ? bytes : 1));
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *get() const { return p_; }

private:
  void *p_ = nullptr;
};

/// A stream of its own (non-blocking: no implicit order with the legacy
/// default stream).
class Stream {
public:
  Stream() {
    TCC_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
  }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  cudaStream_t get() const { return s_; }

private:
  cudaStream_t s_ = nullptr;
};

double elapsedSeconds(const Event &from, const Event &to) {
  float ms = 0;
  TCC_CUDA_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return ms * 1e-3;
}

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

/// Host copies of every parameter and state tensor (pinned, allocated on
/// first use): what the non-finite scan reads and checkpoints are written
/// from and restored into.
class HostMirror {
public:
  explicit HostMirror(CudaSession &s) : s_(s) {}
  void download() {
    allocate();
    for (const auto &[id, off] : at_)
      s_.download(id, mem_->get() + off);
  }
  void upload() {
    allocate();
    for (const auto &[id, off] : at_)
      s_.upload(id, mem_->get() + off);
  }
  void *data(int32_t id) {
    allocate();
    if (id < 0 || id >= static_cast<int32_t>(offsetOf_.size()) ||
        offsetOf_[id] < 0)
      throw Error("tensor " + std::to_string(id) +
                  " is not a parameter or state tensor");
    return mem_->get() + offsetOf_[id];
  }

private:
  void allocate() {
    if (mem_)
      return;
    size_t bytes = 0;
    const std::vector<TensorInfo> &ts = s_.tensors();
    offsetOf_.assign(ts.size(), -1);
    for (size_t id = 0; id < ts.size(); ++id)
      if (isCheckpointed(ts[id].kind)) {
        at_.push_back({static_cast<int32_t>(id), bytes});
        offsetOf_[id] = static_cast<int64_t>(bytes);
        bytes += align64(static_cast<size_t>(ts[id].byteSize()));
      }
    mem_ = std::make_unique<Pinned>(bytes);
  }
  CudaSession &s_;
  std::vector<std::pair<int32_t, size_t>> at_; // tensor id, offset
  std::vector<int64_t> offsetOf_;              // by tensor id, -1: none
  std::unique_ptr<Pinned> mem_;
};

/// One input slot: the batch tensors in pinned host memory and on the
/// device, and the two events that order its reuse.
struct Slot {
  std::unique_ptr<Pinned> host; // all batch tensors, 64-byte aligned
  std::vector<std::unique_ptr<DeviceBuffer>> device; // one per tensor
  Event copied{false};   // its copy to the device is done (copy stream)
  Event consumed{false}; // the run that read it is done (compute stream)
  int64_t epoch = 0;     // of the batch it holds
};

/// What one optimizer step leaves to read back one step late.
struct StepRecord {
  int64_t step = 0, epoch = 0;
  float *readback = nullptr; // pinned: K losses, skipped count, loss scale
  std::vector<std::unique_ptr<Event>> waitStart, waitEnd; // per micro-batch
  std::unique_ptr<Event> done;
};

class GpuTrainer {
public:
  GpuTrainer(CudaSession &s, const Artifact &a, const TrainOptions &opts,
             const TrainPlan &plan, LossScaling scaling, HostMirror &mirror,
             CheckpointMeta &meta, TrainResult &r, DataFeeder &feeder)
      : s_(s), opts_(opts), plan_(plan), scaling_(scaling), mirror_(mirror),
        meta_(meta), r_(r), feeder_(feeder),
        compute_(static_cast<cudaStream_t>(s.stream())) {
    targets_ = plan.feedTargets;
    lossId_ = plan.data->outputs[0];
    size_t hostBytes = 0;
    for (int32_t id : targets_) {
      offsets_.push_back(hostBytes);
      sizes_.push_back(static_cast<size_t>(a.tensors[id].byteSize()));
      hostBytes += align64(sizes_.back());
      // Given back when the run ends, so the session's own buffers are
      // bound again (evaluation uploads into them).
      original_.push_back(s.deviceData(id));
    }
    for (size_t i = 0; i < opts.prefetch; ++i) {
      auto slot = std::make_unique<Slot>();
      slot->host = std::make_unique<Pinned>(hostBytes);
      for (size_t bytes : sizes_)
        slot->device.push_back(std::make_unique<DeviceBuffer>(bytes));
      slots_.push_back(std::move(slot));
    }
    // What the non-finite scan counts: findNonFinite's tensors.
    for (size_t id = 0; id < a.tensors.size(); ++id) {
      const TensorInfo &t = a.tensors[id];
      if ((t.kind == TensorKind::Param || t.kind == TensorKind::State) &&
          t.dtype == DType::F32)
        scanIds_.push_back(static_cast<int32_t>(id));
    }
    size_t countBytes = scanIds_.size() * sizeof(unsigned long long);
    counts_ = std::make_unique<DeviceBuffer>(countBytes);
    countsHost_ = std::make_unique<Pinned>(countBytes);
    int device = 0;
    TCC_CUDA_CHECK(cudaGetDevice(&device));
    TCC_CUDA_CHECK(cudaDeviceGetAttribute(
        &smCount_, cudaDevAttrMultiProcessorCount, device));
    int64_t k = plan.gradAccum;
    readback_ = std::make_unique<Pinned>(2 * (k + 2) * sizeof(float));
    for (int i = 0; i < 2; ++i) {
      StepRecord &rec = records_[i];
      rec.readback = reinterpret_cast<float *>(readback_->get()) + i * (k + 2);
      for (int64_t j = 0; j < k; ++j) {
        rec.waitStart.push_back(std::make_unique<Event>(true));
        rec.waitEnd.push_back(std::make_unique<Event>(true));
      }
      rec.done = std::make_unique<Event>(true);
    }
  }

  /// Lets every copy and step in flight finish (their buffers are freed
  /// next) and binds the session's own input buffers again. Errors are
  /// ignored here: the run already failed or was checked.
  ~GpuTrainer() {
    cudaStreamSynchronize(copy_.get());
    cudaStreamSynchronize(compute_);
    for (size_t i = 0; i < targets_.size(); ++i)
      if (original_[i]) {
        try {
          s_.bindInput(targets_[i], original_[i]);
        } catch (const Error &) {
        }
      }
  }

  void setMetrics(std::unique_ptr<std::ofstream> m) { metrics_ = std::move(m); }
  void run();

private:
  bool fillNext();
  bool enqueueStep(int64_t step, StepRecord &rec);
  void finish(StepRecord &rec);
  void checkFinite(int64_t step);
  bool anyNonFiniteOnDevice();
  void checkpoint(int64_t step, float loss);
  bool syncPoint(int64_t step) const {
    bool ckpt = !opts_.checkpointDir.empty() && opts_.checkpointEvery > 0 &&
                step % opts_.checkpointEvery == 0;
    bool scan =
        opts_.nonfiniteCheckEvery > 0 && step % opts_.nonfiniteCheckEvery == 0;
    return step == plan_.total || ckpt || scan;
  }

  CudaSession &s_;
  const TrainOptions &opts_;
  const TrainPlan &plan_;
  LossScaling scaling_;
  HostMirror &mirror_;
  CheckpointMeta &meta_;
  TrainResult &r_;
  DataFeeder &feeder_;
  cudaStream_t compute_;
  Stream copy_; // host-to-device copies of the batches

  std::vector<int32_t> targets_;
  std::vector<size_t> offsets_, sizes_; // of each batch tensor in a slot
  std::vector<void *> original_;
  int32_t lossId_ = -1;
  std::vector<std::unique_ptr<Slot>> slots_;
  int64_t filled_ = 0, nextMicro_ = 0; // micro-batches copied, enqueued
  bool exhausted_ = false;
  DataFeeder::Batch batch_;
  std::unique_ptr<Pinned> readback_;
  StepRecord records_[2];

  float prevSkipped_ = 0, lastLoss_ = 0;
  int64_t scannedStep_ = -1, checkpointedStep_ = -1, mirrorStep_ = -1;
  std::vector<int32_t> scanIds_;         // f32 parameters and state
  std::unique_ptr<DeviceBuffer> counts_; // one counter per scanned tensor
  std::unique_ptr<Pinned> countsHost_;
  int smCount_ = 1;
  int64_t killAfter_ = -1;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<std::ofstream> metrics_;
  Clock::time_point start_;
};

/// Copies micro-batch `filled_` into its slot; false when the feeder has no
/// more batches.
bool GpuTrainer::fillNext() {
  Slot &slot = *slots_[filled_ % slots_.size()];
  // The slot's previous copy must have left the pinned buffer.
  TCC_CUDA_CHECK(cudaEventSynchronize(slot.copied.get()));
  Clock::time_point t0 = Clock::now();
  bool fed = feeder_.next(batch_);
  r_.dataWaitSeconds += secondsSince(t0);
  if (!fed)
    return false;
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (batch_.tensors[i].size() != sizes_[i])
      throw Error("the feeder's batch for input " +
                  std::to_string(targets_[i]) + " has " +
                  std::to_string(batch_.tensors[i].size()) +
                  " bytes, the tensor " + std::to_string(sizes_[i]));
    std::memcpy(slot.host->get() + offsets_[i], batch_.tensors[i].data(),
                sizes_[i]);
  }
  // The device buffers may be overwritten once the run that read them (the
  // slot's previous micro-batch) is done.
  TCC_CUDA_CHECK(cudaStreamWaitEvent(copy_.get(), slot.consumed.get(), 0));
  for (size_t i = 0; i < targets_.size(); ++i)
    TCC_CUDA_CHECK(cudaMemcpyAsync(slot.device[i]->get(),
                                   slot.host->get() + offsets_[i], sizes_[i],
                                   cudaMemcpyHostToDevice, copy_.get()));
  TCC_CUDA_CHECK(cudaEventRecord(slot.copied.get(), copy_.get()));
  slot.epoch = batch_.epoch;
  ++filled_;
  return true;
}

/// Enqueues optimizer step `step` (K data-program runs, then train_step when
/// accumulating) and the copies of its results into rec.readback. False if
/// the data ran out.
bool GpuTrainer::enqueueStep(int64_t step, StepRecord &rec) {
  rec.step = step;
  int64_t k = plan_.gradAccum;
  size_t p = slots_.size();
  for (int64_t j = 0; j < k; ++j) {
    int64_t m = nextMicro_;
    while (!exhausted_ && filled_ < m + static_cast<int64_t>(p))
      exhausted_ = !fillNext();
    if (filled_ <= m)
      return false;
    Slot &slot = *slots_[m % p];
    for (size_t i = 0; i < targets_.size(); ++i)
      s_.bindInput(targets_[i], slot.device[i]->get());
    TCC_CUDA_CHECK(cudaEventRecord(rec.waitStart[j]->get(), compute_));
    TCC_CUDA_CHECK(cudaStreamWaitEvent(compute_, slot.copied.get(), 0));
    TCC_CUDA_CHECK(cudaEventRecord(rec.waitEnd[j]->get(), compute_));
    s_.run(plan_.data->name);
    void *loss = s_.deviceData(lossId_);
    if (!loss)
      throw Error(plan_.data->name + ": its loss output has no device buffer "
                                     "after the run");
    TCC_CUDA_CHECK(cudaMemcpyAsync(rec.readback + j, loss, sizeof(float),
                                   cudaMemcpyDeviceToHost, compute_));
    TCC_CUDA_CHECK(cudaEventRecord(slot.consumed.get(), compute_));
    rec.epoch = slot.epoch;
    ++nextMicro_;
  }
  if (plan_.micro)
    s_.run("train_step");
  if (scaling_.skippedId >= 0)
    TCC_CUDA_CHECK(
        cudaMemcpyAsync(rec.readback + k, s_.deviceData(scaling_.skippedId),
                        sizeof(float), cudaMemcpyDeviceToHost, compute_));
  if (scaling_.scaleId >= 0)
    TCC_CUDA_CHECK(
        cudaMemcpyAsync(rec.readback + k + 1, s_.deviceData(scaling_.scaleId),
                        sizeof(float), cudaMemcpyDeviceToHost, compute_));
  TCC_CUDA_CHECK(cudaEventRecord(rec.done->get(), compute_));
  return true;
}

/// Counts NaN/Inf of every scanned tensor on the device (one read of the
/// weights at memory speed, one word per tensor back): whether any is.
bool GpuTrainer::anyNonFiniteOnDevice() {
  size_t bytes = scanIds_.size() * sizeof(unsigned long long);
  if (!bytes)
    return false;
  auto *counts = static_cast<unsigned long long *>(counts_->get());
  TCC_CUDA_CHECK(cudaMemsetAsync(counts, 0, bytes, compute_));
  const std::vector<TensorInfo> &ts = s_.tensors();
  for (size_t i = 0; i < scanIds_.size(); ++i) {
    const TensorInfo &t = ts[scanIds_[i]];
    cuda::countNonFinite(TensorView{s_.deviceData(scanIds_[i]), t.dtype,
                                    &t.shape, t.numElements()},
                         counts + i, compute_, smCount_);
  }
  TCC_CUDA_CHECK(cudaMemcpyAsync(countsHost_->get(), counts, bytes,
                                 cudaMemcpyDeviceToHost, compute_));
  TCC_CUDA_CHECK(cudaStreamSynchronize(compute_));
  const auto *host =
      reinterpret_cast<const unsigned long long *>(countsHost_->get());
  for (size_t i = 0; i < scanIds_.size(); ++i)
    if (host[i])
      return true;
  return false;
}

/// Parameters and state are scanned for NaN/Inf every nonfiniteCheckEvery
/// steps, after the last one and always before a checkpoint: one with
/// non-finite weights is never written. The scan counts on the device; the
/// weights come to the host only when one is bad, to name it.
void GpuTrainer::checkFinite(int64_t step) {
  if (scannedStep_ == step)
    return;
  Clock::time_point t0 = Clock::now();
  s_.synchronize(); // a kernel's error first: it explains the values
  if (!anyNonFiniteOnDevice()) {
    r_.nonfiniteCheckSeconds += secondsSince(t0);
    scannedStep_ = step;
    return;
  }
  mirror_.download();
  mirrorStep_ = step;
  std::string bad =
      findNonFinite(s_.tensors(), [&](int32_t id) -> const void * {
        return mirror_.data(id);
      });
  r_.nonfiniteCheckSeconds += secondsSince(t0);
  scannedStep_ = step;
  if (bad.empty()) // the device counted what the host does not see
    bad = "a parameter or state tensor has non-finite values on the GPU "
          "but not in its downloaded copy";
  throw Error("step " + std::to_string(step) + ": " + bad +
              "; lower the learning rate or check the data" +
              (opts_.checkpointDir.empty()
                   ? ""
                   : " (no checkpoint written for this step)"));
}

void GpuTrainer::checkpoint(int64_t step, float loss) {
  checkFinite(step);
  if (mirrorStep_ != step) {
    mirror_.download(); // what the checkpoint writes
    mirrorStep_ = step;
  }
  checkpointedStep_ = step;
  Clock::time_point t0 = Clock::now();
  meta_.step = step;
  meta_.loss = loss;
  r_.lastCheckpoint =
      saveCheckpoint(opts_.checkpointDir, meta_,
                     persistentTensors(s_.tensors(),
                                       [&](int32_t id) -> const void * {
                                         return mirror_.data(id);
                                       }),
                     opts_.keepCheckpoints, logOf(opts_));
  ++r_.checkpointsWritten;
  r_.checkpointSeconds += secondsSince(t0);
}

/// Reads back step rec.step (waiting for it) and does what the CPU loop
/// does after a step: checks, metrics, checkpoint, progress.
void GpuTrainer::finish(StepRecord &rec) {
  TCC_CUDA_CHECK(cudaEventSynchronize(rec.done->get()));
  int64_t k = plan_.gradAccum, step = rec.step;
  double lossSum = 0, laterWaits = 0;
  for (int64_t j = 0; j < k; ++j) {
    lossSum += rec.readback[j];
    double w = elapsedSeconds(*rec.waitStart[j], *rec.waitEnd[j]);
    r_.copyWaitSeconds += w;
    if (j)
      laterWaits += w;
  }
  // GPU time from the first micro-batch's start to the step's end, less
  // the waits for input copies in between.
  double dt = elapsedSeconds(*rec.waitEnd[0], *rec.done) - laterWaits;
  // The mean of the micro-batch means is the mean over the whole batch.
  float loss = static_cast<float>(lossSum / k);
  bool skipped = false;
  if (scaling_.skippedId >= 0) {
    skipped = rec.readback[k] != prevSkipped_;
    prevSkipped_ = rec.readback[k];
  }
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
  double sps = r_.batchSize * (step - r_.startStep) / std::max(elapsed, 1e-9);
  if (metrics_)
    writeMetricsLine(*metrics_, step, rec.epoch, loss, r_.batchSize, dt,
                     scaling_.skippedId >= 0, skipped, r_.lossScale);
  // After the metrics line, so a resumed run never lacks a step's line.
  if (!opts_.checkpointDir.empty() &&
      (step == plan_.total ||
       (opts_.checkpointEvery > 0 && step % opts_.checkpointEvery == 0)))
    checkpoint(step, loss);
  progress_->update(step, loss, sps, elapsed);
  if (step == killAfter_)
    std::raise(SIGKILL);
}

void GpuTrainer::run() {
  if (scaling_.skippedId >= 0)
    s_.download(scaling_.skippedId, &prevSkipped_);
  killAfter_ = killAfterStepForTesting();
  progress_ =
      std::make_unique<Progress>(opts_.progress, r_.startStep, plan_.total);
  start_ = Clock::now();
  r_.steps = r_.startStep;
  StepRecord *pending = nullptr; // enqueued, not read back yet
  for (int64_t step = r_.startStep + 1; step <= plan_.total; ++step) {
    StepRecord &rec = records_[step % 2];
    if (!enqueueStep(step, rec))
      break;
    // Step N-1 is read back while step N runs.
    if (pending)
      finish(*std::exchange(pending, nullptr));
    // Polled between steps only: a step is never cut in half, and the
    // checkpoint below is of the last step enqueued.
    int sig = opts_.stopSignal ? opts_.stopSignal->load() : 0;
    if (sig || syncPoint(step))
      finish(rec);
    else
      pending = &rec;
    if (sig) {
      r_.interruptedBy = sig;
      if (!opts_.checkpointDir.empty() && checkpointedStep_ != step)
        checkpoint(step, lastLoss_);
      break;
    }
  }
  if (pending)
    finish(*pending);
  s_.synchronize();
  r_.totalSeconds = secondsSince(start_);
}

} // namespace

TrainResult tcc::rt::cuda::trainOnGpu(CudaSession &session, const Artifact &a,
                                      const TrainOptions &opts) {
  if (opts.prefetch < 1)
    throw Error("--prefetch must be at least 1, got 0");
  TrainPlan plan = planTraining(a, opts);
  std::function<void(const std::string &)> log = logOf(opts);
  bool checkpointing = !opts.checkpointDir.empty();
  bool resuming = !opts.resumeFrom.empty();
  TrainResult r;
  r.gradAccum = plan.gradAccum;
  r.batchSize = plan.batchSize;
  LossScaling scaling = lossScaling(a, opts);
  HostMirror mirror(session);
  CheckpointMeta meta;
  if (checkpointing || resuming)
    meta = checkpointMeta(a, opts, plan);
  if (resuming) {
    Checkpoint c = loadNewestCheckpoint(opts.resumeFrom, log);
    checkResumable(c, meta, log);
    checkFreshDir(opts, &c);
    restoreCheckpoint(
        session.tensors(), [&](int32_t id) { return mirror.data(id); }, c);
    mirror.upload();
    noteResumed(r, c, plan, log);
  } else {
    checkFreshDir(opts, nullptr);
  }
  std::unique_ptr<DataFeeder> feeder = startFeeder(plan, opts, r.startStep);
  GpuTrainer t(session, a, opts, plan, scaling, mirror, meta, r, *feeder);
  t.setMetrics(openMetrics(opts, resuming, r.startStep, log));
  t.run();
  return r;
}

EvalResult tcc::rt::cuda::evaluateOnGpu(CudaSession &session, const Artifact &a,
                                        const std::vector<DataBinding> &data) {
  const Program &p = program(a, "forward");
  std::vector<float> out;
  return evaluate(a, data, [&](const std::vector<std::vector<uint8_t>> &in) {
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (static_cast<int64_t>(in[i].size()) !=
          a.tensors[p.inputs[i]].byteSize())
        throw Error("evaluation batch for input '" +
                    a.tensors[p.inputs[i]].name + "' has the wrong size");
      session.upload(p.inputs[i], in[i].data());
    }
    session.run("forward");
    out.resize(a.tensors[p.outputs[0]].numElements());
    session.download(p.outputs[0], out.data());
    return out.data();
  });
}

double tcc::rt::cuda::timeRun(CudaSession &session,
                              const std::string &program) {
  Event from(true), to(true);
  cudaStream_t stream = static_cast<cudaStream_t>(session.stream());
  TCC_CUDA_CHECK(cudaEventRecord(from.get(), stream));
  session.run(program);
  TCC_CUDA_CHECK(cudaEventRecord(to.get(), stream));
  TCC_CUDA_CHECK(cudaEventSynchronize(to.get()));
  session.synchronize(); // a kernel's error, if any
  return elapsedSeconds(from, to);
}
