//===- TestPrintMemory.cpp - Print MemoryModel's predictions for tests ----===//
//
// Test only (tests/lit/passes/test-print-memory.mlir): builds a FuncMemoryModel
// of each function and writes its dependences, update chains, temporaries
// and the anatomy `simulate` predicts for the block order to stderr, in the
// format of TestPrintMemoryPass's description in Passes.td. Changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryModel.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <numeric>

#define DEBUG_TYPE "tcc-test-print-memory"

namespace mlir::tcc {
#define GEN_PASS_DEF_TESTPRINTMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

/// "[#2, #5]".
static void printOps(raw_ostream &os, ArrayRef<int> ops) {
  os << "[";
  llvm::interleaveComma(ops, os, [&](int i) { os << "#" << i; });
  os << "]";
}

static void printFunction(raw_ostream &os, func::FuncOp fn) {
  AsmState state(fn);
  FuncMemoryModel m(fn);
  size_t n = m.numOps();
  os << "memory @" << fn.getSymName() << ": " << n << " ops, "
     << m.temps().size() << " temps\n";
  for (size_t i = 0; i < n; ++i) {
    Operation *op = m.op(i);
    os << "  #" << i << " ";
    llvm::interleaveComma(op->getResults(), os,
                          [&](Value r) { r.printAsOperand(os, state); });
    if (op->getNumResults())
      os << " = ";
    os << op->getName() << ": preds ";
    printOps(os, m.predecessors(i));
    if (m.producesUpdate(i)) {
      os << ", update, chain inputs ";
      printOps(os, m.chainInputs(i));
    } else if (m.feedsUpdateOnly(i)) {
      os << ", feeds update #" << m.chainProducer(i);
    }
    os << "\n";
  }
  for (auto [t, temp] : llvm::enumerate(m.temps())) {
    os << "  temp " << t << ": def #" << temp.def << ", " << temp.bytes
       << " bytes";
    if (temp.gradient)
      os << ", gradient";
    if (temp.liveToEnd)
      os << ", returned";
    os << ", users ";
    printOps(os, temp.users);
    // Block order: from the def to the last reader, or the end if returned.
    int last = temp.def;
    for (int u : temp.users)
      last = std::max(last, u);
    os << ", live #" << temp.def << "..";
    if (temp.liveToEnd)
      os << "end\n";
    else
      os << "#" << last << "\n";
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  MemoryAnatomy a;
  m.simulate(order, &a);
  os << "  persistent: weights " << a.weights << ", weight_copies "
     << a.weightCopies << ", optimizer_state " << a.optimizerState
     << ", grad_accumulators " << a.gradAccumulators << ", other_state "
     << a.otherState << ", inputs " << a.inputs << ", constants " << a.constants
     << " (total " << a.persistent() << ")\n";
  os << "  at the peak: activations " << a.activations << ", gradients "
     << a.gradients << ", temporaries " << a.temporaries << " (temp_peak "
     << a.tempPeak << ")\n";
  os << "  saved_activations " << a.savedActivations << "\n";
  os << "  peak " << a.peak() << "\n";
}

namespace {
struct TestPrintMemoryPass final
    : tcc::impl::TestPrintMemoryPassBase<TestPrintMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    // As tcc-plan-memory: functions of one block.
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        printFunction(llvm::errs(), fn);
    markAllAnalysesPreserved();
  }
};
} // namespace
