//===- SchedulePrinter.h - Readable dump of an artifact's programs -*- C++ -*-===//
#ifndef TCC_COMPILER_CODEGEN_SCHEDULEPRINTER_H
#define TCC_COMPILER_CODEGEN_SCHEDULEPRINTER_H

#include "runtime/core/Artifact.h"

#include <ostream>

namespace tcc {

/// Prints every program as one line per kernel call, e.g.
///   %7 = matmul(%5 "x", %0 "fc1.weight") i=[0,1] : f32[32,64] @arena+4096
/// followed by the arena size. This is what `--emit=schedule` shows and what
/// lit tests check.
void printSchedule(const rt::Artifact &a, std::ostream &os);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_SCHEDULEPRINTER_H
