//===- Session.h - Executes an artifact's programs ------------------------===//
//
// A Session owns the buffers of one artifact: persistent tensors (params,
// optimizer state, inputs, constants) and the temporaries of each program.
// Compiled mode places temporaries at the compiler's static plan inside one
// arena that the programs share (they run one at a time; it is the largest
// program's size), allocated on the first run; Eager mode ignores the plan and
// allocates and frees each temporary around its uses, the way a framework
// does, which gives a baseline for memory and speed.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_SESSION_H
#define TCC_RUNTIME_CORE_SESSION_H

#include "runtime/core/Artifact.h"
#include "runtime/core/KernelCost.h"
#include "runtime/cpu/FusedLibrary.h"
#include "runtime/cpu/Kernels.h"

#include <chrono>
#include <cstdint>
#include <map>
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
  /// Measured: the most bytes the session's allocations (persistent buffers,
  /// arenas, eager temporaries, each as allocated: rounded up to 64 bytes)
  /// plus the kernels' scratch (kernelScratchBytes(), process-wide) held at
  /// once, sampled after every kernel call (eager) or run (compiled, whose
  /// allocations only grow).
  int64_t measuredPeakBytes = 0;
  int64_t scratchBytes = 0; // kernel scratch held now
};

/// Eager execution's temporaries of one program: every temp its instrs
/// touch, and per instr the temps to allocate before it runs (first write)
/// and to free after it (last read; program outputs survive the run).
/// Shared by the CPU and the CUDA session.
struct EagerLifetimes {
  std::vector<int32_t> temps;
  std::vector<std::vector<int32_t>> allocBefore, freeAfter;
};
EagerLifetimes eagerLifetimes(const Program &p,
                              const std::vector<TensorInfo> &tensors);

class Session {
public:
  /// Validates the artifact and every instr (unknown kernels, shapes, dtypes,
  /// aliasing) and allocates the persistent buffers. Throws Error. Reads
  /// TCC_NUM_THREADS to size OpenBLAS's thread pool.
  Session(const Artifact &artifact, ExecMode mode);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// The buffer of tensor `id` (throws Error if out of range). Temps have
  /// one only while it exists: after their program has run and until
  /// another program runs (compiled: the programs share one arena) or
  /// while live / for program outputs after a run (eager); else null.
  void *data(int32_t tensorId);
  const void *data(int32_t tensorId) const;
  /// Convenience: data() of the tensor named `name` (throws if none).
  void *data(const std::string &name);

  /// Runs every instr of `program` in order. Throws Error for an unknown
  /// program or a kernel error (e.g. a label out of range).
  void run(const std::string &program);

  MemoryStats memory() const;

  /// Per-kernel timing (off by default: it adds a clock read per call),
  /// with each call's bytes and FLOPs (runtime/core/KernelCost.h).
  /// `byShape`: GEMMs and attention are listed per problem shape
  /// (profileShape) as well as per kernel.
  using KernelTime = rt::KernelTime;
  void setProfiling(bool on, bool byShape = false) {
    profiling_ = on;
    profileByShape_ = byShape;
  }
  /// Accumulated time per kernel name since profiling was turned on,
  /// slowest first.
  std::vector<KernelTime> profile() const;
  ExecMode mode() const { return mode_; }
  const std::vector<TensorInfo> &tensors() const { return tensors_; }

private:
  struct Buffer; // 64-byte aligned heap block
  struct ProgramState;

  void *allocate(int64_t bytes, const std::string &what);
  ProgramState &state(const std::string &program);
  void runCompiled(ProgramState &ps);
  /// Compiled: gives the shared arena to `ps`'s temps (allocating it first).
  void useArena(ProgramState &ps);
  void runEager(ProgramState &ps);
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

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_SESSION_H
