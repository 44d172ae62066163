//===- MemoryReport.h - Predicted memory anatomy of an artifact -*- C++ -*-===//
//
// What a compiled Session of an artifact will hold, by role, computed from
// the artifact alone (tensor kinds, the programs and their arena plans).
// `tcc compile --report` and `tcc inspect` print it; `tcc train` and
// `tcc bench` compare it with what the runtime measured. The definitions are
// in docs/ARCHITECTURE.md ("Memory planning and anatomy").
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_MEMORYREPORT_H
#define TCC_COMPILER_CODEGEN_MEMORYREPORT_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tcc {

struct MemoryReport {
  /// Persistent tensors of the artifact (shared by all programs), bytes.
  int64_t weights = 0;          // params
  int64_t weightCopies = 0;     // 16-bit copies kept by tcc-shadow-weights
  int64_t optimizerState = 0;   // state read/written by optimizer kernels
  int64_t gradAccumulators = 0; // state named *.grad_acc
  int64_t otherState = 0;       // running statistics, step counters
  int64_t inputs = 0, constants = 0;

  struct Program {
    std::string name;
    int64_t arena = 0;    // the planned arena
    int64_t livePeak = 0; // max bytes of temps live at one instruction
    int64_t peakInstr = 0, numInstrs = 0;
    int64_t sumOfTemps = 0; // every temp its own bytes (no planning)
    /// The temps live at the live peak, by role (sum = livePeak):
    /// gradients (values fed to an optimizer update or accumulator),
    /// activations (computed before the loss instr and read after it), and
    /// other temporaries.
    int64_t gradients = 0, activations = 0, temporaries = 0;
    /// Totals over the program: every activation (all are live across the
    /// loss instr) and every gradient value.
    int64_t savedActivations = 0, gradientTotal = 0;
    /// Largest unfold buffers of its convolutions (kernel scratch).
    int64_t convScratch = 0;
    /// With GPU code: the largest scratch of its attention instrs (the
    /// CUDA kernels': attentionScratchBytes, runtime/core/AttentionPlan.h).
    int64_t attentionScratch = 0;
  };
  std::vector<Program> programs;

  int64_t persistent() const {
    return weights + weightCopies + optimizerState + gradAccumulators +
           otherState + inputs + constants;
  }
  /// Kernel scratch outside the arenas, kept by the runtime for the process:
  /// the convolution unfold buffers sized for the largest convolution of
  /// the given programs, or for an artifact with GPU code the CUDA
  /// attention kernels' score chunks (whichever is larger).
  int64_t scratch(const std::vector<std::string> &programNames) const;
  /// The arena of a compiled session: the programs share one, the size of
  /// the largest program's (they run one at a time, and a temporary lives
  /// only within a run of its own program).
  int64_t sharedArena() const;
  /// Predicted peak of a compiled session that runs `programNames`:
  /// persistent + the shared arena + their scratch.
  int64_t predictedPeak(const std::vector<std::string> &programNames) const;
  /// The programs a training run executes each step: train_step, and
  /// accumulate when the artifact has it.
  std::vector<std::string> trainingPrograms() const;
  const Program *find(const std::string &name) const;
};

/// Analyzes `artifact` (which must be valid).
MemoryReport analyzeMemory(const rt::Artifact &artifact);

/// The report as text, one quantity per line with exact byte counts.
void printMemoryReport(const MemoryReport &r, std::ostream &os);

/// "12.3 MiB (12897484 bytes)".
std::string formatBytesExact(int64_t bytes);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_MEMORYREPORT_H
