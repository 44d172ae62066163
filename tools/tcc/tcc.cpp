//===- tcc.cpp - The tcc command-line tool --------------------------------===//
//
//   tcc compile model.onnx -o model.tcc --batch 32 --loss cross_entropy ...
//   tcc inspect model.tcc
//   tcc train model.tcc --data x=x.npy --data labels=y.npy --epochs 10
//   tcc bench model.tcc
//   tcc predict model.tcc --checkpoint ckpts --data x=x.npy --out y.npy
//   tcc export model.tcc --checkpoint ckpts -o trained.onnx
//   tcc tune-batch model.onnx --memory-budget 8GiB
//
//===----------------------------------------------------------------------===//
#include "tools/tcc/Commands.h"

#include "runtime/core/ProcessMemory.h"
#include "runtime/cpu/BlasCore.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <sys/resource.h>

using namespace tcc::tool;

llvm::cl::SubCommand
    tcc::tool::compileCmd("compile",
                          "Compile an ONNX model into a training artifact");
llvm::cl::SubCommand tcc::tool::inspectCmd("inspect",
                                           "Summarize a training artifact");
llvm::cl::SubCommand tcc::tool::trainCmd("train",
                                         "Train an artifact on data files");
llvm::cl::SubCommand
    tcc::tool::benchCmd("bench",
                        "Time eager and compiled training steps side by side");
llvm::cl::SubCommand tcc::tool::predictCmd(
    "predict", "Run the forward program over data files, writing .npy");
llvm::cl::SubCommand
    tcc::tool::exportCmd("export",
                         "Write the ONNX model with a checkpoint's parameters");

int64_t tcc::tool::peakRssBytes() {
  // VmHWM belongs to this program's address space. getrusage's ru_maxrss
  // would also count the parent's peak when it forked us (Linux keeps it
  // across exec), e.g. a Python benchmark driver with PyTorch loaded.
  if (int64_t hwm = tcc::rt::readProcessMemory().peakRssBytes)
    return hwm;
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0)
    return 0;
  return (int64_t)u.ru_maxrss * 1024;
}

int main(int argc, char **argv) {
  tcc::rt::useRecognisedBlasCore(argv);
  llvm::InitLLVM init(argc, argv);
  shareCompileFlags(tuneBatchCmd);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "tcc: an ahead-of-time training compiler\n\n"
      "  tcc compile model.onnx -o model.tcc --batch N [--loss ...] "
      "[--optimizer ...]\n"
      "  tcc inspect model.tcc\n"
      "  tcc train model.tcc --data NAME=FILE ... (--steps N | --epochs E)\n"
      "  tcc bench model.tcc [--steps N]\n"
      "  tcc predict model.tcc [--checkpoint CKPT] --data NAME=FILE ... "
      "--out OUT.npy\n"
      "  tcc export model.tcc --checkpoint CKPT -o trained.onnx\n"
      "  tcc tune-batch model.onnx [--memory-budget B] [compile flags]\n");
  if (compileCmd)
    return runCompile();
  if (inspectCmd)
    return runInspect();
  if (trainCmd)
    return runTrain();
  if (benchCmd)
    return runBench();
  if (predictCmd)
    return runPredict();
  if (exportCmd)
    return runExport();
  if (tuneBatchCmd)
    return runTuneBatch();
  llvm::errs() << "tcc: error: no command given; run 'tcc --help'\n";
  return 2;
}
