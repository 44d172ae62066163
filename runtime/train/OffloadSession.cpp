//===- OffloadSession.cpp - The optimizer update on the host --------------===//
#include "runtime/train/OffloadSession.h"

#include "runtime/core/Initializer.h"
#include "runtime/core/ProcessMemory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace tcc::rt;

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
} // namespace

OffloadSession::OffloadSession(const Artifact &a, const std::string &backend,
                               ExecMode mode, const SessionOptions &o)
    : a_(a), tensors_(a.tensors) {
  if (!isOffloaded(a))
    throw Error("the artifact has no optimizer_step program (compile it with "
                "tcc compile --offload-optimizer)");
  plan_ = offloadPlan(a);
  std::vector<std::string> devicePrograms;
  for (const Program &p : a.programs)
    if (p.name != kOptimizerProgram)
      devicePrograms.push_back(p.name);
  devArtifact_ = programSubset(a, devicePrograms, devId_);
  hostArtifact_ = programSubset(a, {kOptimizerProgram}, hostId_);
  dev_ = openSession(backend, devArtifact_, mode, o);
  host_ = openSession("cpu", hostArtifact_, mode, SessionOptions{});
  // The buffers the copies land in and leave from are the host session's
  // own tensors: pinned, they are copied by DMA without staging.
  for (const std::vector<int32_t> *ids : {&plan_.toHost, &plan_.toDevice})
    for (int32_t id : *ids) {
      void *p = host_->hostData(hostId_[id]);
      if (!p)
        throw Error("optimizer offload: the host session has no buffer for '" +
                    tensors_[id].name + "'");
      dev_->registerHost(p, static_cast<size_t>(tensors_[id].byteSize()));
      pinned_.push_back(p);
    }
  gradsCopied_ = dev_->createEvent();
}

OffloadSession::~OffloadSession() {
  // The device's copies may still read the host's buffers.
  try {
    dev_->synchronize();
  } catch (const Error &) {
  }
  for (void *p : pinned_) {
    try {
      dev_->unregisterHost(p);
    } catch (const Error &) {
    }
  }
}

std::pair<int32_t, int32_t> OffloadSession::where(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tensors_.size())
    throw Error("tensor id " + std::to_string(id) +
                " is out of range (the artifact has " +
                std::to_string(tensors_.size()) + " tensors)");
  return {devId_[id], hostId_[id]};
}

std::string OffloadSession::deviceDescription() const {
  return dev_->deviceDescription() + ", optimizer on the host CPU";
}

int64_t OffloadSession::orderingThreads() const {
  return std::max(dev_->orderingThreads(), host_->orderingThreads());
}

void OffloadSession::upload(int32_t id, const void *host) {
  auto [d, h] = where(id);
  if (d >= 0)
    dev_->upload(d, host);
  if (h >= 0)
    host_->upload(h, host);
}

void OffloadSession::download(int32_t id, void *host) {
  auto [d, h] = where(id);
  if (h >= 0)
    host_->download(h, host); // the master copy of a parameter
  else if (d >= 0)
    dev_->download(d, host);
  else // no program reads or writes it: its initial value throughout
    fillInitialValue(a_, id, host);
}

void *OffloadSession::hostData(int32_t id) {
  auto [d, h] = where(id);
  if (d >= 0 && h >= 0)
    return nullptr; // written through upload, so both copies change
  if (h >= 0)
    return host_->hostData(h);
  return d >= 0 ? dev_->hostData(d) : nullptr;
}

void OffloadSession::readAsync(int32_t id, void *host, size_t bytes) {
  auto [d, h] = where(id);
  if (d >= 0)
    dev_->readAsync(d, host, bytes);
  else if (h >= 0)
    host_->readAsync(h, host, bytes);
  else
    throw Error("read: tensor '" + tensors_[id].name +
                "' is read by no program");
}

void OffloadSession::writeAsync(int32_t id, const void *host, size_t bytes) {
  auto [d, h] = where(id);
  if (d < 0 && h < 0)
    throw Error("write: tensor '" + tensors_[id].name +
                "' is read by no program");
  // The host's runs are done when run() returns: its copy is written now,
  // before the next optimizer_step (the learning rate of the next step).
  if (h >= 0)
    host_->writeAsync(h, host, bytes);
  if (d >= 0)
    dev_->writeAsync(d, host, bytes);
}

std::unique_ptr<InputSlots>
OffloadSession::inputSlots(const std::vector<int32_t> &targets, size_t count) {
  std::vector<int32_t> dev;
  for (int32_t id : targets) {
    int32_t d = where(id).first;
    if (d < 0)
      throw Error("input slots: '" + tensors_[id].name +
                  "' is not an input of the device programs");
    dev.push_back(d);
  }
  return dev_->inputSlots(dev, count);
}

void OffloadSession::run(const std::string &program) {
  dev_->setTracer(tracer());
  host_->setTracer(tracer());
  if (program != kOptimizerProgram) {
    dev_->run(program);
    return;
  }
  // The gradients (as the step clipped and averaged them) into the host's
  // buffers, behind the backward that writes them.
  for (int32_t id : plan_.toHost)
    dev_->readAsync(devId_[id], host_->hostData(hostId_[id]),
                    static_cast<size_t>(tensors_[id].byteSize()));
  dev_->record(*gradsCopied_);
  Clock::time_point t0 = Clock::now();
  dev_->wait(*gradsCopied_);
  times_.copyWait += secondsSince(t0);
  t0 = Clock::now();
  host_->run(program);
  times_.update += secondsSince(t0);
  ++times_.updates;
  // The new parameters back, ahead of the next forward. The host's buffers
  // stay unchanged until the next update, which first waits for a later
  // event: so the copies are done before they change.
  for (int32_t id : plan_.toDevice)
    dev_->writeAsync(devId_[id], host_->hostData(hostId_[id]),
                     static_cast<size_t>(tensors_[id].byteSize()));
}

bool OffloadSession::anyNonFinite(const std::vector<int32_t> &ids) {
  std::vector<int32_t> dev, host;
  for (int32_t id : ids) {
    auto [d, h] = where(id);
    if (h >= 0)
      host.push_back(h);
    else if (d >= 0)
      dev.push_back(d);
  }
  return (!dev.empty() && dev_->anyNonFinite(dev)) ||
         (!host.empty() && host_->anyNonFinite(host));
}

void OffloadSession::setProfiling(bool on, bool byShape) {
  dev_->setProfiling(on, byShape);
  host_->setProfiling(on, byShape);
}

std::vector<Session::KernelTime> OffloadSession::profile() const {
  std::vector<KernelTime> all = dev_->profile();
  for (KernelTime k : host_->profile()) {
    k.kernel = "host " + k.kernel;
    all.push_back(std::move(k));
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const KernelTime &x, const KernelTime &y) {
                     return x.seconds > y.seconds;
                   });
  return all;
}

std::string OffloadSession::summary() const {
  char buf[512];
  double n = std::max<int64_t>(times_.updates, 1);
  std::snprintf(
      buf, sizeof buf,
      "optimizer offload: optimizer state %s in host memory (%zu tensors), "
      "not on the device (%s); per step %s of gradients to the host and %s "
      "of parameters back; host update %.3f ms, wait for the gradients "
      "%.3f ms (means over %lld updates); device persistent tensors %lld "
      "bytes",
      formatBytes(plan_.hostStateBytes).c_str(), plan_.hostState.size(),
      dev_->backend(), formatBytes(plan_.toHostBytes).c_str(),
      formatBytes(plan_.toDeviceBytes).c_str(), times_.update / n * 1e3,
      times_.copyWait / n * 1e3, (long long)times_.updates,
      (long long)dev_->memory().persistentBytes);
  return buf;
}

std::unique_ptr<Session>
tcc::rt::openTrainingSession(const std::string &backend, const Artifact &a,
                             ExecMode mode, const SessionOptions &o) {
  if (isOffloaded(a))
    return std::make_unique<OffloadSession>(a, backend, mode, o);
  return openSession(backend, a, mode, o);
}
