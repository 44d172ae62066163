//===- Commands.h - The subcommands of the tcc tool -------------*- C++ -*-===//
#ifndef TCC_TOOLS_TCC_COMMANDS_H
#define TCC_TOOLS_TCC_COMMANDS_H

#include "compiler/Compiler.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/ProcessMemory.h"

#include "llvm/Support/CommandLine.h"

#include <functional>
#include <optional>
#include <string>

namespace tcc::tool {

extern llvm::cl::SubCommand compileCmd;
extern llvm::cl::SubCommand inspectCmd;
extern llvm::cl::SubCommand trainCmd;
extern llvm::cl::SubCommand benchCmd;
extern llvm::cl::SubCommand predictCmd;
extern llvm::cl::SubCommand exportCmd;
extern llvm::cl::SubCommand tuneBatchCmd;

int runCompile();
int runInspect();
int runTrain();
int runBench();
int runPredict();
int runExport();
int runTuneBatch();
/// Adds the compile flags `tcc bench` shares with `tcc compile` (all but
/// --memory-budget) and those that choose the code and device (--target,
/// --gpu-arch, --cpu-isa, --weights, --lora...) to subcommand `to`; before
/// the command line is parsed.
void shareCompileFlags(llvm::cl::SubCommand &to);

/// Fills `o` from the compile flags shared by `tcc compile` and `tcc bench`
/// (all but the input, -o and --emit). Prints an error naming `cmd` and
/// returns false on an invalid value.
bool compileOptionsFromFlags(CompileOptions &o, const char *cmd);
/// Fills the flags only `tcc compile` (and `tcc tune-batch`) take: the
/// target, --gpu-arch, --cpu-isa, --weights and --lora. Prints an error
/// naming `cmd` and returns false on an invalid combination.
bool targetOptionsFromFlags(CompileOptions &o, const char *cmd);

/// Writes the artifact's ONNX model with the parameters and running
/// statistics in `data(id)` (state tensors named after an initializer; the
/// optimizer's state has no initializer and stays out): a CPU session's
/// buffer, a GPU tensor's download or a checkpoint's bytes. Throws
/// rt::Error. `tcc train --export` and `tcc export` (TrainCommand.cpp).
/// An artifact compiled with --lora gets its adapters merged into the
/// weights (`loraMerged`) or written beside the model.
void exportTrained(const rt::Artifact &a,
                   const std::function<const void *(int32_t)> &data,
                   const std::string &path, bool loraMerged);

/// "4000000", "4MB" (10^6), "4MiB" (2^20), "1.5GiB", "512KiB" -> bytes;
/// nullopt when `s` is not one.
std::optional<int64_t> parseBytes(llvm::StringRef s);

using rt::formatBytes; // "12.3 MiB" and friends
/// Peak resident set size of this process, in bytes (0 if unknown).
int64_t peakRssBytes();

} // namespace tcc::tool

#endif // TCC_TOOLS_TCC_COMMANDS_H
