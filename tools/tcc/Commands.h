//===- Commands.h - The subcommands of the tcc tool -------------*- C++ -*-===//
#ifndef TCC_TOOLS_TCC_COMMANDS_H
#define TCC_TOOLS_TCC_COMMANDS_H

#include "compiler/Compiler.h"
#include "runtime/core/ProcessMemory.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace tcc::tool {

extern llvm::cl::SubCommand compileCmd;
extern llvm::cl::SubCommand inspectCmd;
extern llvm::cl::SubCommand trainCmd;
extern llvm::cl::SubCommand benchCmd;

int runCompile();
int runInspect();
int runTrain();
int runBench();

/// Fills `o` from the compile flags shared by `tcc compile` and `tcc bench`
/// (all but the input, -o and --emit). Prints an error naming `cmd` and
/// returns false on an invalid value.
bool compileOptionsFromFlags(CompileOptions &o, const char *cmd);

using rt::formatBytes; // "12.3 MiB" and friends
/// Peak resident set size of this process, in bytes (0 if unknown).
int64_t peakRssBytes();

} // namespace tcc::tool

#endif // TCC_TOOLS_TCC_COMMANDS_H
