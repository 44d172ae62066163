//===- InspectCommand.cpp - tcc inspect -----------------------------------===//
#include "compiler/codegen/MemoryReport.h"
#include "compiler/codegen/SchedulePrinter.h"
#include "runtime/core/Artifact.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <map>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::inspectCmd));
static cl::opt<bool> schedule("schedule",
                              cl::desc("Also print every kernel call"),
                              cl::sub(tool::inspectCmd));

int tool::runInspect() {
  rt::Artifact a;
  try {
    a = rt::readArtifact(input);
  } catch (const rt::Error &e) {
    errs() << "tcc inspect: error: " << e.what() << "\n";
    return 1;
  }
  std::cout << input << ": tcc artifact, format version "
            << rt::kArtifactVersion << "\n";
  for (const auto &[k, v] : a.meta)
    std::cout << "  " << k << ": " << v << "\n";

  std::map<rt::TensorKind, std::pair<int64_t, int64_t>> byKind;
  for (const rt::TensorInfo &t : a.tensors) {
    byKind[t.kind].first += 1;
    byKind[t.kind].second += t.byteSize();
  }
  std::cout << "tensors:\n";
  for (const auto &[k, v] : byKind)
    std::cout << "  " << rt::tensorKindName(k) << ": " << v.first << " ("
              << tool::formatBytes(v.second) << ")\n";
  std::cout << "parameters:\n";
  for (const rt::TensorInfo &t : a.tensors) {
    if (t.kind != rt::TensorKind::Param)
      continue;
    std::cout << "  " << t.name << " " << rt::dtypeName(t.dtype) << "[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      std::cout << (i ? "," : "") << t.shape[i];
    std::cout << "]\n";
  }
  std::cout << "programs:\n";
  for (const rt::Program &p : a.programs) {
    std::map<std::string, int> kernels;
    for (const rt::Instr &in : p.instrs)
      kernels[in.kernel]++;
    std::cout << "  " << p.name << ": " << p.instrs.size()
              << " kernel calls, arena " << tool::formatBytes(p.arenaBytes)
              << "\n    ";
    bool first = true;
    for (const auto &[k, n] : kernels) {
      std::cout << (first ? "" : ", ") << k << " x" << n;
      first = false;
    }
    std::cout << "\n";
  }
  printMemoryReport(analyzeMemory(a), std::cout);
  if (a.onnxOffset >= 0)
    std::cout << "onnx model: " << tool::formatBytes(a.onnxSize)
              << " (for export)\n";
  if (schedule)
    printSchedule(a, std::cout);
  return 0;
}
