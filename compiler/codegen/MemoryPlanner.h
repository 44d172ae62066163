//===- MemoryPlanner.h - Static arena plan for a program's temps -*- C++
//-*-===//
#ifndef TCC_COMPILER_CODEGEN_MEMORYPLANNER_H
#define TCC_COMPILER_CODEGEN_MEMORYPLANNER_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <vector>

namespace tcc {

/// The temporaries of one program grouped into buffers: a buffer is one
/// temp, or a chain of temps where an in-place (element-wise) kernel writes
/// its result over an input of the same type that dies there.
struct ProgramLifetimes {
  struct Buffer {
    int64_t first, last, size; // instruction interval; 64-aligned bytes
    std::vector<int32_t> tensors;
  };
  std::vector<Buffer> buffers;
  /// Per tensor id of the artifact: its buffer, or -1 if not a temp of the
  /// program; and the instruction interval [first, last] of the temp (a
  /// program output lives to instrs.size()).
  std::vector<int32_t> bufferOf;
  std::vector<int64_t> first, last;
  /// Max over instructions of the bytes of buffers live there: a lower
  /// bound of any arena for these buffers.
  int64_t livePeak = 0;
  int64_t livePeakAt = 0; // the instruction where it is reached
};

/// Computes lifetimes; with `inPlace`, dying inputs of element-wise kernels
/// are reused for their outputs.
ProgramLifetimes analyzeLifetimes(const rt::Artifact &artifact,
                                  const rt::Program &program, bool inPlace);

/// Gives every Temp tensor of `program` an offset in one arena and sets
/// `program.arenaBytes`. With `reuse` (the default), temps whose lifetimes
/// do not overlap may share bytes and in-place kernels write over their
/// dying inputs; without it every temp gets its own bytes (the arena is the
/// sum of all temps), which shows what planning saves. Returns the sum of
/// all temp sizes.
int64_t planProgramMemory(rt::Artifact &artifact, rt::Program &program,
                          bool reuse = true);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_MEMORYPLANNER_H
