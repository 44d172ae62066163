//===- CudaTimeline.cpp - Events, pinned memory, input slots, read-backs --===//
//
// What the training loop (runtime/train/TrainLoop.cpp) asks of an
// asynchronous session, on CUDA:
//  - events are CUDA events on the compute stream;
//  - host buffers are pinned (cudaHostAlloc), so copies to and from them
//    run asynchronously;
//  - input slot k is a pinned host buffer holding every batch tensor and a
//    device buffer per tensor. stage() waits until the slot's previous
//    batch has left the pinned buffer (event `copied`), writes the batch,
//    and the copy stream waits for the compute stream to be done with the
//    slot (event `consumed`, recorded by release() after the runs that read
//    it) before copying it to the slot's device buffers. use() makes the
//    compute stream wait for `copied` and rebinds the session's inputs to
//    the slot's buffers (bindInput), so no device-to-device copy happens.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaNonFinite.h"
#include "runtime/cuda/CudaSessionInternal.h"

#include <algorithm>
#include <cstring>

namespace tcc::rt::cuda {
namespace {

class CudaEvent final : public Event {
public:
  CudaEvent() { TCC_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~CudaEvent() override { cudaEventDestroy(e_); }
  cudaEvent_t get() const { return e_; }

private:
  cudaEvent_t e_ = nullptr;
};

class PinnedBuffer final : public HostBuffer {
public:
  explicit PinnedBuffer(size_t bytes) {
    void *p = nullptr;
    TCC_CUDA_CHECK(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault));
    data_ = static_cast<uint8_t *>(p);
    size_ = bytes;
  }
  ~PinnedBuffer() override { cudaFreeHost(data_); }
};

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

class CudaInputSlots final : public InputSlots {
public:
  CudaInputSlots(CudaSession &s, std::vector<int32_t> targets, size_t count)
      : s_(s), targets_(std::move(targets)),
        compute_(static_cast<cudaStream_t>(s.stream())) {
    count_ = count;
    TCC_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    size_t hostBytes = 0;
    for (int32_t id : targets_) {
      const TensorInfo &t = s.tensors().at(id);
      offsets_.push_back(hostBytes);
      sizes_.push_back(static_cast<size_t>(t.byteSize()));
      hostBytes += align64(sizes_.back());
      // Bound again when the slots go, so evaluation uploads into the
      // session's own buffers.
      original_.push_back(s.deviceData(id));
    }
    for (size_t k = 0; k < count; ++k) {
      Slot slot;
      slot.host = std::make_unique<PinnedBuffer>(hostBytes);
      for (size_t bytes : sizes_) {
        void *p = nullptr;
        TCC_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
        slot.device.push_back(p);
      }
      TCC_CUDA_CHECK(
          cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming));
      TCC_CUDA_CHECK(
          cudaEventCreateWithFlags(&slot.consumed, cudaEventDisableTiming));
      slots_.push_back(std::move(slot));
    }
  }

  /// Lets every copy and run in flight finish (their buffers go next) and
  /// binds the session's own input buffers again. Errors are ignored: the
  /// run already failed or was checked.
  ~CudaInputSlots() override {
    cudaStreamSynchronize(copy_);
    cudaStreamSynchronize(compute_);
    for (size_t i = 0; i < targets_.size(); ++i)
      if (original_[i]) {
        try {
          s_.bindInput(targets_[i], original_[i]);
        } catch (const Error &) {
        }
      }
    for (Slot &slot : slots_) {
      for (void *p : slot.device)
        cudaFree(p);
      cudaEventDestroy(slot.copied);
      cudaEventDestroy(slot.consumed);
    }
    cudaStreamDestroy(copy_);
  }

  void stage(size_t k,
             const std::vector<std::vector<uint8_t>> &tensors) override {
    Slot &slot = slots_.at(k);
    if (tensors.size() != targets_.size())
      throw Error("a batch of " + std::to_string(tensors.size()) +
                  " tensors for " + std::to_string(targets_.size()) +
                  " inputs");
    // The slot's previous copy must have left the pinned buffer.
    TCC_CUDA_CHECK(cudaEventSynchronize(slot.copied));
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (tensors[i].size() != sizes_[i])
        throw Error("the batch for input '" + s_.tensors()[targets_[i]].name +
                    "' has " + std::to_string(tensors[i].size()) +
                    " bytes, the tensor " + std::to_string(sizes_[i]));
      std::memcpy(slot.host->data() + offsets_[i], tensors[i].data(),
                  sizes_[i]);
    }
    // The device buffers may be overwritten once the runs that read them
    // (the slot's previous batch) are done.
    TCC_CUDA_CHECK(cudaStreamWaitEvent(copy_, slot.consumed, 0));
    for (size_t i = 0; i < targets_.size(); ++i)
      TCC_CUDA_CHECK(cudaMemcpyAsync(slot.device[i],
                                     slot.host->data() + offsets_[i], sizes_[i],
                                     cudaMemcpyHostToDevice, copy_));
    TCC_CUDA_CHECK(cudaEventRecord(slot.copied, copy_));
  }

  void use(size_t k) override {
    Slot &slot = slots_.at(k);
    for (size_t i = 0; i < targets_.size(); ++i)
      s_.bindInput(targets_[i], slot.device[i]);
    TCC_CUDA_CHECK(cudaStreamWaitEvent(compute_, slot.copied, 0));
  }

  void release(size_t k) override {
    TCC_CUDA_CHECK(cudaEventRecord(slots_.at(k).consumed, compute_));
  }

private:
  struct Slot {
    std::unique_ptr<PinnedBuffer> host; // all batch tensors, 64-byte aligned
    std::vector<void *> device;         // one per tensor
    cudaEvent_t copied = nullptr, consumed = nullptr;
  };
  CudaSession &s_;
  std::vector<int32_t> targets_;
  cudaStream_t compute_, copy_ = nullptr;
  std::vector<size_t> offsets_, sizes_; // of each batch tensor in a slot
  std::vector<void *> original_;
  std::vector<Slot> slots_;
};

} // namespace

SessionTraits CudaSession::traits() const {
  SessionTraits t;
  t.asynchronous = true;
  t.inputSlots = 64; // each a device copy of a batch; the feeder bounds it
  return t;
}

std::unique_ptr<HostBuffer> CudaSession::allocateHost(size_t bytes) {
  return std::make_unique<PinnedBuffer>(bytes);
}

void CudaSession::registerHost(void *host, size_t bytes) {
  if (!host || bytes == 0)
    return;
  TCC_CUDA_CHECK(cudaHostRegister(host, bytes, cudaHostRegisterDefault));
  impl_->registeredHost.push_back(host);
}

void CudaSession::unregisterHost(void *host) {
  auto &r = impl_->registeredHost;
  auto it = std::find(r.begin(), r.end(), host);
  if (it == r.end())
    return;
  r.erase(it);
  TCC_CUDA_CHECK(cudaHostUnregister(host));
}

std::unique_ptr<InputSlots>
CudaSession::inputSlots(const std::vector<int32_t> &targets, size_t count) {
  if (count < 1 || count > traits().inputSlots)
    throw Error("input slots: " + std::to_string(count) +
                " asked for, the CUDA backend takes 1 to " +
                std::to_string(traits().inputSlots));
  for (int32_t id : targets)
    if (id < 0 || static_cast<size_t>(id) >= tensors().size() ||
        tensors()[id].kind != TensorKind::Input)
      throw Error("input slots: tensor " + std::to_string(id) +
                  " is not an input of the artifact");
  return std::make_unique<CudaInputSlots>(*this, targets, count);
}

// A copy's span on the trace (runtime/core/Trace.h): the host's enqueue of
// an asynchronous copy, or the whole of a synchronous one.
static void traceCopy(TraceScope &t, const char *what, const TensorInfo &info,
                      size_t bytes) {
  if (t.active())
    t.name(std::string(what) + " " + info.name)
        .arg(traceArg("bytes", double(bytes)))
        .arg(traceArg("tensor", info.name));
}

void CudaSession::readAsync(int32_t id, void *host, size_t bytes) {
  TraceScope t(tracer_, "copy");
  void *p = deviceData(id);
  if (!p)
    throw Error("read: tensor '" + tensors()[id].name +
                "' has no device buffer now (a temporary that is not live)");
  if (bytes > static_cast<size_t>(tensors()[id].byteSize()))
    throw Error("read: " + std::to_string(bytes) + " bytes of tensor '" +
                tensors()[id].name + "', which has " +
                std::to_string(tensors()[id].byteSize()));
  traceCopy(t, "read (enqueue)", tensors()[id], bytes);
  TCC_CUDA_CHECK(cudaMemcpyAsync(host, p, bytes, cudaMemcpyDeviceToHost,
                                 static_cast<cudaStream_t>(stream())));
}

void CudaSession::writeAsync(int32_t id, const void *host, size_t bytes) {
  TraceScope t(tracer_, "copy");
  void *p = deviceData(id);
  if (!p)
    throw Error("write: tensor '" + tensors()[id].name +
                "' has no device buffer now (a temporary that is not live)");
  if (bytes > static_cast<size_t>(tensors()[id].byteSize()))
    throw Error("write: " + std::to_string(bytes) + " bytes into tensor '" +
                tensors()[id].name + "', which has " +
                std::to_string(tensors()[id].byteSize()));
  traceCopy(t, "write (enqueue)", tensors()[id], bytes);
  TCC_CUDA_CHECK(cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice,
                                 static_cast<cudaStream_t>(stream())));
}

std::unique_ptr<Event> CudaSession::createEvent() {
  return std::make_unique<CudaEvent>();
}

void CudaSession::record(Event &e) {
  TCC_CUDA_CHECK(cudaEventRecord(static_cast<CudaEvent &>(e).get(),
                                 static_cast<cudaStream_t>(stream())));
}

void CudaSession::wait(Event &e) {
  TCC_CUDA_CHECK(cudaEventSynchronize(static_cast<CudaEvent &>(e).get()));
}

double CudaSession::seconds(Event &from, Event &to) {
  float ms = 0;
  TCC_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<CudaEvent &>(from).get(),
                                      static_cast<CudaEvent &>(to).get()));
  return ms * 1e-3;
}

bool CudaSession::anyNonFinite(const std::vector<int32_t> &ids) {
  size_t bytes = ids.size() * sizeof(unsigned long long);
  if (!bytes)
    return false;
  Impl &m = *impl_;
  if (m.nonFiniteCounts.size() < ids.size()) {
    if (m.nonFiniteDevice)
      cudaFree(m.nonFiniteDevice);
    m.nonFiniteDevice = nullptr;
    TCC_CUDA_CHECK(cudaMalloc(&m.nonFiniteDevice, bytes));
    m.nonFiniteCounts.resize(ids.size());
  }
  auto *counts = static_cast<unsigned long long *>(m.nonFiniteDevice);
  TCC_CUDA_CHECK(cudaMemsetAsync(counts, 0, bytes, m.stream));
  for (size_t i = 0; i < ids.size(); ++i) {
    const TensorInfo &t = m.tensors.at(ids[i]);
    countNonFinite(
        TensorView{deviceData(ids[i]), t.dtype, &t.shape, t.numElements()},
        counts + i, m.stream, m.smCount);
  }
  TCC_CUDA_CHECK(cudaMemcpyAsync(m.nonFiniteCounts.data(), counts, bytes,
                                 cudaMemcpyDeviceToHost, m.stream));
  TCC_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  for (size_t i = 0; i < ids.size(); ++i)
    if (m.nonFiniteCounts[i])
      return true;
  return false;
}

} // namespace tcc::rt::cuda
