//===- InspectCommand.cpp - tcc inspect -----------------------------------===//
#include "compiler/codegen/MemoryReport.h"
#include "compiler/codegen/SchedulePrinter.h"
#include "runtime/core/Artifact.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::inspectCmd));
static cl::opt<bool> schedule("schedule",
                              cl::desc("Also print every kernel call"),
                              cl::sub(tool::inspectCmd));

/// " seeded normal(mean 0.0001, std 0.02)" for a generated initial value,
/// "" for bytes in the blob.
static std::string initDescription(const rt::InitSpec &s) {
  std::ostringstream os;
  os << std::setprecision(4);
  switch (s.kind) {
  case rt::InitSpec::Kind::Blob:
    return "";
  case rt::InitSpec::Kind::Constant:
    os << " seeded constant(" << s.a << ")";
    break;
  case rt::InitSpec::Kind::Normal:
    os << " seeded normal(mean " << s.a << ", std " << s.b << ")";
    break;
  case rt::InitSpec::Kind::Uniform:
    os << " seeded uniform(" << s.a << ", " << s.b << ")";
    break;
  case rt::InitSpec::Kind::Cast:
    os << " cast of " << s.source;
    break;
  }
  return os.str();
}

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
  int64_t seeded = 0, seededBytes = 0, copies = 0, copyBytes = 0;
  for (const rt::TensorInfo &t : a.tensors) {
    byKind[t.kind].first += 1;
    byKind[t.kind].second += t.byteSize();
    if (t.init.kind == rt::InitSpec::Kind::Cast) {
      copies += 1;
      copyBytes += t.byteSize();
    } else if (t.init.kind != rt::InitSpec::Kind::Blob) {
      seeded += 1;
      seededBytes += t.byteSize();
    }
  }
  std::cout << "tensors:\n";
  for (const auto &[k, v] : byKind)
    std::cout << "  " << rt::tensorKindName(k) << ": " << v.first << " ("
              << tool::formatBytes(v.second) << ")\n";
  if (seeded)
    std::cout << "  seeded at load: " << seeded << " ("
              << tool::formatBytes(seededBytes) << ", not stored)\n";
  if (copies)
    std::cout << "  16-bit weight copies: " << copies << " ("
              << tool::formatBytes(copyBytes)
              << ", cast from their parameters at load, not stored)\n";
  std::cout << "parameters:\n";
  for (const rt::TensorInfo &t : a.tensors) {
    if (t.kind != rt::TensorKind::Param)
      continue;
    std::cout << "  " << t.name << " " << rt::dtypeName(t.dtype) << "[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      std::cout << (i ? "," : "") << t.shape[i];
    std::cout << "]" << initDescription(t.init) << "\n";
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
  auto target = a.meta.find("target");
  std::cout << "target: "
            << (target != a.meta.end() ? target->second : std::string("cpu"))
            << "\n";
  if (a.device.present()) {
    int64_t fins = 0, colFins = 0;
    for (const rt::DeviceKernel &k : a.device.kernels)
      (k.colSums ? colFins : fins) += !k.finSymbol.empty();
    std::cout << "device code: " << a.device.arch << ", "
              << a.device.kernels.size() << " kernels (+" << fins
              << " loss finalizers, +" << colFins
              << " column-sum finalizers), cubin "
              << tool::formatBytes(a.device.size) << ", "
              << (a.device.compiler.empty() ? "unknown compiler"
                                            : a.device.compiler)
              << "\n";
  }
  if (schedule)
    printSchedule(a, std::cout);
  return 0;
}
