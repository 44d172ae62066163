//===- MemoryPlanner.h - Static arena plan for a program's temps -*- C++ -*-===//
#ifndef TCC_COMPILER_CODEGEN_MEMORYPLANNER_H
#define TCC_COMPILER_CODEGEN_MEMORYPLANNER_H

#include "runtime/core/Artifact.h"

namespace tcc {

/// Gives every Temp tensor of `program` an offset in one arena so that
/// tensors whose lifetimes overlap never share bytes, and sets
/// `program.arenaBytes`. Returns the sum of all temp sizes (what an
/// allocator-per-tensor framework would hold if nothing were freed), for
/// reports.
int64_t planProgramMemory(rt::Artifact &artifact, rt::Program &program);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_MEMORYPLANNER_H
