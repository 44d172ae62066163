//===- CpuSession.h - Executes an artifact's programs on the CPU -*- C++ -*-===//
//
// The CPU backend's Session (runtime/core/Session.h): tensors in host
// memory, kernels from runtime/cpu/Kernels.h (OpenBLAS GEMMs, hand-written
// loops on the ThreadPool) and the artifact's generated host library
// (runtime/cpu/FusedLibrary.h). Synchronous: run() returns when the work is
// done, events are host timestamps, and a batch is written straight into
// the input tensors (one input slot).
//
// Compiled mode places temporaries at the compiler's static plan inside one
// arena that the programs share (the largest program's size), allocated on
// the first run; Eager mode allocates and frees each temporary around its
// uses.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_CPUSESSION_H
#define TCC_RUNTIME_CPU_CPUSESSION_H

#include "runtime/core/Session.h"
#include "runtime/cpu/FusedLibrary.h"
#include "runtime/cpu/Kernels.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::cpu {

class CpuSession final : public Session {
public:
  /// Validates the artifact and every instr (unknown kernels, shapes,
  /// dtypes, aliasing) and allocates the persistent buffers. Throws Error.
  /// Reads TCC_NUM_THREADS to size OpenBLAS's thread pool. `rank`: the
  /// data-parallel rank the kernels run as (SessionOptions::rank).
  CpuSession(const Artifact &artifact, ExecMode mode, int64_t rank = 0);
  ~CpuSession() override;

  /// The buffer of tensor `id` (throws Error if out of range). Temps have
  /// one only while it exists: after their program has run and until
  /// another program runs (compiled: the programs share one arena) or
  /// while live / for program outputs after a run (eager); else null.
  void *data(int32_t tensorId);
  const void *data(int32_t tensorId) const;
  /// Convenience: data() of the tensor named `name` (throws if none).
  void *data(const std::string &name);

  const char *backend() const override { return "cpu"; }
  std::string deviceDescription() const override { return "cpu"; }
  ExecMode mode() const override { return mode_; }
  const std::vector<TensorInfo> &tensors() const override { return tensors_; }
  SessionTraits traits() const override { return {}; }
  /// OpenBLAS's threads: its GEMMs sum in an order that depends on them.
  int64_t orderingThreads() const override;

  void upload(int32_t id, const void *host) override;
  void download(int32_t id, void *host) override;
  void *hostData(int32_t id) override { return data(id); }
  void readAsync(int32_t id, void *host, size_t bytes) override;
  void writeAsync(int32_t id, const void *host, size_t bytes) override;
  std::unique_ptr<InputSlots> inputSlots(const std::vector<int32_t> &targets,
                                         size_t count) override;

  void run(const std::string &program) override;
  void synchronize() override {}
  std::unique_ptr<Event> createEvent() override;
  void record(Event &e) override;
  void wait(Event &) override {}
  double seconds(Event &from, Event &to) override;

  MemoryStats memory() const override;
  void setProfiling(bool on, bool byShape = false) override {
    profiling_ = on;
    profileByShape_ = byShape;
  }
  std::vector<KernelTime> profile() const override;

private:
  struct Buffer; // 64-byte aligned heap block
  struct ProgramState;

  void *allocate(int64_t bytes, const std::string &what);
  /// data(id), or Error when the tensor has no buffer now.
  void *bufferOf(int32_t id, const char *what);
  ProgramState &state(const std::string &program);
  void runCompiled(ProgramState &ps);
  /// Compiled: gives the shared arena to `ps`'s temps (allocating it first).
  void useArena(ProgramState &ps);
  void runEager(ProgramState &ps);
  /// Compiled, with the trace on: each kernel timed (Trace.h).
  void runTraced(ProgramState &ps);
  void record(const std::string &kernel, const KernelCost &cost,
              std::chrono::steady_clock::time_point t0);

  ExecMode mode_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::unique_ptr<ProgramState>> programs_;
  /// Current buffer of each tensor (null for temps not live).
  std::vector<void *> buffers_;
  /// Persistent buffers and arenas, freed with the session.
  std::vector<std::unique_ptr<Buffer>> owned_;
  /// The artifact's generated kernels (null when it has none).
  std::unique_ptr<FusedLibrary> fused_;
  int64_t persistentBytes_ = 0;
  void *arena_ = nullptr;                    // Compiled: shared by the programs
  const ProgramState *arenaOwner_ = nullptr; // whose temps it holds now
  int64_t arenaBytes_ = 0;
  int64_t liveTempBytes_ = 0, peakTempBytes_ = 0;
  int64_t allocatedBytes_ = 0, measuredPeak_ = 0; // see MemoryStats
  void notePeak();
  bool profiling_ = false, profileByShape_ = false;
  std::map<std::string, KernelTime> profile_;
};

} // namespace tcc::rt::cpu

#endif // TCC_RUNTIME_CPU_CPUSESSION_H
