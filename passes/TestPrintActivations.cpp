//===- TestPrintActivations.cpp - Print ActivationAnalysis for tests ------===//
//
// Test only (tests/lit/passes/test-print-activations.mlir): writes what
// analyzeActivations decides for each function to stderr, in the format of
// TestPrintActivationsPass's description in Passes.td. Changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/ActivationAnalysis.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tcc-test-print-activations"

namespace mlir::tcc {
#define GEN_PASS_DEF_TESTPRINTACTIVATIONSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

/// "%3 = tcc.gelu (tensor<4x8xf32>)": one result of its op, and its type.
static void printResult(raw_ostream &os, Value v, AsmState &state) {
  v.printAsOperand(os, state);
  os << " = " << v.getDefiningOp()->getName() << " (" << v.getType() << ")";
}

static void printFunction(raw_ostream &os, func::FuncOp fn) {
  os << "activations @" << fn.getSymName() << ": ";
  std::optional<ActivationInfo> info = analyzeActivations(fn);
  if (!info) {
    os << "no loss result\n";
    return;
  }
  AsmState state(fn);
  os << "loss ";
  if (info->lossOp->getNumResults())
    printResult(os, info->lossOp->getResult(0), state);
  else
    os << info->lossOp->getName();
  os << "\n";
  llvm::DenseMap<Value, int64_t> bytes;
  for (const Activation &a : info->activations)
    bytes[a.value] = a.bytes;
  for (Operation &op : fn.getBody().front()) {
    if (&op == info->lossOp)
      break;
    for (Value r : op.getResults()) {
      os << "  ";
      printResult(os, r, state);
      auto it = bytes.find(r);
      if (it == bytes.end())
        os << ": not an activation\n";
      else
        os << ": activation, " << it->second << " bytes ("
           << formatBytes(it->second) << ")\n";
    }
  }
  os << "  total: " << info->activations.size() << " activations, "
     << info->totalBytes << " bytes (" << formatBytes(info->totalBytes)
     << ")\n";
}

namespace {
struct TestPrintActivationsPass final
    : tcc::impl::TestPrintActivationsPassBase<TestPrintActivationsPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        printFunction(llvm::errs(), fn);
    markAllAnalysesPreserved();
  }
};

} // namespace
