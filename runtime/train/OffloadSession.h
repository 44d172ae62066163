//===- OffloadSession.h - The optimizer update on the host ------*- C++ -*-===//
//
// An artifact compiled with `tcc compile --offload-optimizer` trains as two
// sessions behind one Session: the device session (any backend) opened on
// the artifact's device programs (train_step, accumulate, forward) holds
// the parameters, the inputs and everything the forward and backward read;
// a CPU session opened on optimizer_step alone holds the optimizer state,
// the master copy of the parameters and the gradients' landing buffers
// (runtime/core/OffloadPlan.h says which tensor is where). The training loop
// sees the artifact's whole tensor table and runs optimizer_step like any
// program; this class turns that run into:
//
//   device: readAsync of each offload.* gradient into the host session's
//           buffer (pinned with registerHost on CUDA), behind the backward
//   host:   waits for those copies, runs optimizer_step on the CPU kernels
//   device: writeAsync of each updated parameter (and 16-bit weight copy)
//           from the host's buffer, ahead of the next step's forward
//
// The next step's forward needs the new parameters, so the host update
// does not overlap the device's work of another step; what overlaps is the
// feeder's loading and staging of the next batches. Per-bucket streaming
// during the backward (ZeRO-Offload) would need copies inside the device
// program; not done. Everything above the backends is written against
// Session, so the CPU target exercises the whole orchestration (two CPU
// sessions).
//
// Tensor ids are the artifact's. A tensor both sides hold (a parameter) is
// read from the host's copy and written to both; hostData() is null for it,
// so that the loop's host mirror goes through upload and download.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_OFFLOADSESSION_H
#define TCC_RUNTIME_TRAIN_OFFLOADSESSION_H

#include "runtime/core/Backend.h"
#include "runtime/core/OffloadPlan.h"
#include "runtime/core/Session.h"

#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// Wall seconds the host spent per part of the update, summed over runs.
struct OffloadTimes {
  int64_t updates = 0;
  double copyWait = 0; // waiting for the gradients (and the backward)
  double update = 0;   // optimizer_step on the CPU
};

class OffloadSession final : public Session {
public:
  /// Opens the device programs of `a` on `backend` and optimizer_step on the
  /// CPU. `a` must outlive the session. Error when `a` is not offloaded or
  /// its programs do not split (offloadPlan).
  OffloadSession(const Artifact &a, const std::string &backend, ExecMode mode,
                 const SessionOptions &o);
  ~OffloadSession() override;

  Session &device() { return *dev_; }
  Session &host() { return *host_; }
  const OffloadPlan &plan() const { return plan_; }
  const OffloadTimes &times() const { return times_; }
  /// "optimizer offload: ..." for the end of a run: the device memory the
  /// host holds instead and the host's share of the step time.
  std::string summary() const;

  const char *backend() const override { return dev_->backend(); }
  std::string deviceDescription() const override;
  ExecMode mode() const override { return dev_->mode(); }
  const std::vector<TensorInfo> &tensors() const override { return tensors_; }
  SessionTraits traits() const override { return dev_->traits(); }
  int64_t orderingThreads() const override;

  void upload(int32_t id, const void *host) override;
  void download(int32_t id, void *host) override;
  void *hostData(int32_t id) override;
  void readAsync(int32_t id, void *host, size_t bytes) override;
  void writeAsync(int32_t id, const void *host, size_t bytes) override;
  std::unique_ptr<HostBuffer> allocateHost(size_t bytes) override {
    return dev_->allocateHost(bytes);
  }
  std::unique_ptr<InputSlots> inputSlots(const std::vector<int32_t> &targets,
                                         size_t count) override;

  /// optimizer_step: the copies and the host update above; any other
  /// program runs on the device.
  void run(const std::string &program) override;
  void synchronize() override { dev_->synchronize(); }
  std::unique_ptr<Event> createEvent() override { return dev_->createEvent(); }
  void record(Event &e) override { dev_->record(e); }
  void wait(Event &e) override { dev_->wait(e); }
  double seconds(Event &from, Event &to) override {
    return dev_->seconds(from, to);
  }
  bool anyNonFinite(const std::vector<int32_t> &ids) override;

  /// The device session's memory: what --offload-optimizer saves shows
  /// there. The host's is host().memory().
  MemoryStats memory() const override { return dev_->memory(); }
  void setProfiling(bool on, bool byShape = false) override;
  std::vector<KernelTime> profile() const override;
  std::string graphStatus() const override { return dev_->graphStatus(); }

private:
  /// Where tensor `id` is: its id in the device and host sessions (-1: not
  /// there). Error for an id out of range.
  std::pair<int32_t, int32_t> where(int32_t id) const;

  const Artifact &a_;
  std::vector<TensorInfo> tensors_;
  OffloadPlan plan_;
  Artifact devArtifact_, hostArtifact_;
  std::vector<int32_t> devId_, hostId_; // by artifact id, -1: absent
  std::unique_ptr<Session> dev_, host_;
  std::unique_ptr<Event> gradsCopied_;
  std::vector<void *> pinned_;
  OffloadTimes times_;
};

/// The session `tcc train` trains an artifact with on `backend`: an
/// OffloadSession when it was compiled with --offload-optimizer, else the
/// backend's own.
std::unique_ptr<Session> openTrainingSession(const std::string &backend,
                                             const Artifact &a, ExecMode mode,
                                             const SessionOptions &o);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_OFFLOADSESSION_H
