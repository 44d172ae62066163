//===- Session.h - An artifact on a device: the backend interface -*- C++ -*-===//
//
// A Session is one artifact loaded on one device by a backend
// (runtime/core/Backend.h): the tensors' buffers, the programs' kernels and a
// timeline of work. Everything above the backends -- the training loop, the
// evaluation, the benchmarks, checkpoints -- is written against this class,
// once; the CPU backend (runtime/cpu/CpuSession.h) and the CUDA backend
// (runtime/cuda/CudaSession.h) implement it.
//
// What differs between devices is stated as traits, not as a second loop:
//  - asynchronous: run() enqueues and returns (CUDA: a stream). Results are
//    read through readAsync into host memory and are valid once an Event
//    recorded behind them has been waited for, so a loop can read step N
//    while step N + 1 runs. A synchronous session (CPU) has done the work
//    when run() returns, and its events are host timestamps.
//  - inputSlots: how many batches can be staged ahead of the runs that read
//    them (InputSlots; CUDA: pinned buffers copied on a stream of their
//    own). 1: each batch is written where the run reads it, just before it.
// CUDA graphs, multi-tensor optimizer launches and the like stay inside the
// backend: a program is run by name, however the backend runs it.
//
// Compiled mode places temporaries at the compiler's static plan inside one
// arena that the programs share (they run one at a time); Eager mode ignores
// the plan and allocates and frees each temporary around its uses, the way
// a framework does, which gives a baseline for memory and speed.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_SESSION_H
#define TCC_RUNTIME_CORE_SESSION_H

#include "runtime/core/Artifact.h"
#include "runtime/core/KernelCost.h"
#include "runtime/core/Trace.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

enum class ExecMode { Compiled, Eager };

struct MemoryStats {
  /// Params, state, inputs and constants.
  int64_t persistentBytes = 0;
  /// Compiled: the shared arena once allocated (the largest program's).
  /// Eager: the peak of the bytes of live temporaries.
  int64_t tempPeakBytes = 0;
  int64_t peakBytes = 0; // persistent + temp peak
  /// Measured: the most bytes the session's allocations (persistent
  /// buffers, arenas, eager temporaries, each as allocated) plus the
  /// kernels' scratch held at once.
  int64_t measuredPeakBytes = 0;
  int64_t scratchBytes = 0; // kernel scratch held now
};

/// Eager execution's temporaries of one program: every temp its instrs
/// touch, and per instr the temps to allocate before it runs (first write)
/// and to free after it (last read; program outputs survive the run).
struct EagerLifetimes {
  std::vector<int32_t> temps;
  std::vector<std::vector<int32_t>> allocBefore, freeAfter;
};
EagerLifetimes eagerLifetimes(const Program &p,
                              const std::vector<TensorInfo> &tensors);

/// What a session's device offers the loops above it (see the file header).
struct SessionTraits {
  bool asynchronous = false;
  size_t inputSlots = 1;
};

/// A point on a session's timeline: after record(), the work enqueued
/// before it. Made by Session::createEvent.
class Event {
public:
  virtual ~Event() = default;
};

/// Host memory that a session copies from and to fastest (CUDA: pinned),
/// 64-byte aligned.
class HostBuffer {
public:
  virtual ~HostBuffer() = default;
  uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

protected:
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

/// Slots holding batches of a program's input tensors ahead of the runs
/// that read them (Session::inputSlots).
class InputSlots {
public:
  virtual ~InputSlots() = default;
  size_t count() const { return count_; }
  /// Writes one batch (`tensors`: one per target, in order, each exactly
  /// the target's byteSize()) into slot `s` and starts its way to where the
  /// runs read it. Waits while the slot's previous batch is still being
  /// copied; the copy follows the run that released the slot. Error when a
  /// tensor's size differs.
  virtual void stage(size_t s,
                     const std::vector<std::vector<uint8_t>> &tensors) = 0;
  /// The runs enqueued next read slot `s`'s batch (after its copy).
  virtual void use(size_t s) = 0;
  /// Enqueued after the last run that reads slot `s`: it may be refilled
  /// once that run is done.
  virtual void release(size_t s) = 0;

protected:
  size_t count_ = 1;
};

class Session {
public:
  using KernelTime = rt::KernelTime;

  virtual ~Session() = default;
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// The backend's name ("cpu", "cuda").
  virtual const char *backend() const = 0;
  /// The device in a user's words: "cpu", "NVIDIA H100 80GB HBM3 (sm_90,
  /// 79.1 GiB)".
  virtual std::string deviceDescription() const = 0;
  virtual ExecMode mode() const = 0;
  virtual const std::vector<TensorInfo> &tensors() const = 0;
  virtual SessionTraits traits() const = 0;
  /// Host threads the kernels split their work across where that decides
  /// the order of floating-point sums (the CPU's BLAS threads): a
  /// checkpoint records it, and a run resumed with another count is not
  /// bit-identical. 0 where results do not depend on it.
  virtual int64_t orderingThreads() const { return 0; }

  // --- Data -----------------------------------------------------------------
  /// Synchronous copies of tensor `id` (byteSize() bytes) from and to host
  /// memory; they wait for the work enqueued before them. Error for an id
  /// out of range or a temporary that has no buffer now.
  virtual void upload(int32_t id, const void *host) = 0;
  virtual void download(int32_t id, void *host) = 0;
  /// Tensor `id`'s bytes where the host addresses them directly (CPU), else
  /// null (also for a temporary that has no buffer now).
  virtual void *hostData(int32_t /*id*/) { return nullptr; }
  /// Enqueues a copy of tensor `id`'s first `bytes` bytes into `host` behind
  /// the work enqueued so far (done when run() returns on a synchronous
  /// session; on an asynchronous one `host` should come from allocateHost
  /// and is valid after an Event recorded later has been waited for).
  virtual void readAsync(int32_t id, void *host, size_t bytes) = 0;
  /// Enqueues a copy of `bytes` bytes from `host` into the start of tensor
  /// `id` behind the work enqueued so far: runs enqueued later see it, runs
  /// before do not. `host` must stay unchanged until an Event recorded
  /// later has been waited for (on a synchronous session the copy is done
  /// on return). How the train loop sets the learning rate of a step
  /// without waiting for the step before it.
  virtual void writeAsync(int32_t id, const void *host, size_t bytes) = 0;
  /// Host memory for batches and read-backs.
  virtual std::unique_ptr<HostBuffer> allocateHost(size_t bytes);
  /// Makes `bytes` bytes at `host`, memory this session did not allocate,
  /// as fast to copy from and to as allocateHost's (CUDA: pinned with
  /// cudaHostRegister; elsewhere nothing) until unregisterHost(host) or the
  /// session's end. How the optimizer offload copies gradients and
  /// parameters straight into and out of the host session's tensors.
  virtual void registerHost(void * /*host*/, size_t /*bytes*/) {}
  virtual void unregisterHost(void * /*host*/) {}
  /// `count` slots (at most traits().inputSlots) for the input tensors
  /// `targets`. While the slots exist, runs read the inputs from the slot
  /// last passed to use().
  virtual std::unique_ptr<InputSlots>
  inputSlots(const std::vector<int32_t> &targets, size_t count) = 0;

  // --- Running --------------------------------------------------------------
  /// Runs (or, asynchronous, enqueues) every instr of `program`. Error for
  /// an unknown program or a kernel's error (a label out of range: on an
  /// asynchronous session it may surface at the next synchronize()).
  virtual void run(const std::string &program) = 0;
  /// Waits for all enqueued work; Error for a kernel's error since the last
  /// synchronize.
  virtual void synchronize() = 0;
  virtual std::unique_ptr<Event> createEvent() = 0;
  /// Marks the work enqueued so far.
  virtual void record(Event &e) = 0;
  /// Waits on the host for the work before `e`'s last record().
  virtual void wait(Event &e) = 0;
  /// Seconds of device time between two recorded events (both waited for
  /// or followed by a wait for a later one).
  virtual double seconds(Event &from, Event &to) = 0;

  /// Whether any of the f32 tensors `ids` holds a NaN or an Inf (after the
  /// work enqueued so far). The default scans host copies.
  virtual bool anyNonFinite(const std::vector<int32_t> &ids);

  // --- Measuring ------------------------------------------------------------
  virtual MemoryStats memory() const = 0;
  /// Per-kernel timing (off by default: it adds work per call), with each
  /// call's bytes and FLOPs (runtime/core/KernelCost.h). `byShape`: GEMMs
  /// and attention are listed per problem shape as well.
  virtual void setProfiling(bool on, bool byShape = false) = 0;
  /// Accumulated time per kernel since profiling was turned on, slowest
  /// first.
  virtual std::vector<KernelTime> profile() const = 0;
  /// How compiled runs replay captured launches ("on: 2 graphs, 40
  /// replays", "off (eager mode)"); "" where the backend captures none.
  virtual std::string graphStatus() const { return ""; }
  /// Records program runs (each kernel), host copies and the memory
  /// timeline into `t` while it is detailed (runtime/core/Trace.h); null
  /// (the default) records nothing. The tracer must outlive its use.
  void setTracer(Tracer *t) { tracer_ = t; }
  Tracer *tracer() const { return tracer_; }

protected:
  Session() = default;
  /// Whether this run or copy is to be recorded: one branch when off.
  bool tracing() const { return tracer_ && tracer_->detailed(); }
  Tracer *tracer_ = nullptr;
};

/// Device seconds of one run of `program` (events around it; waits for it
/// and reports a kernel's error).
double timeRun(Session &s, const std::string &program);

/// `--trace` of the benchmarks: runs `step` (one training step on `s`)
/// `steps` times with a Tracer attached, each a step span, then writes the
/// trace to `path` (atomically) and returns the line to print, "trace: PATH
/// (...)". Run after the timed steps, so the timings never include it.
std::string traceSteps(Session &s, int64_t steps,
                       const std::function<void()> &step,
                       const std::string &path, const std::string &process);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_SESSION_H
