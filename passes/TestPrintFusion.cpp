//===- TestPrintFusion.cpp - Print FusionModel's decisions for tests ------===//
//
// Test only (tests/lit/passes/test-print-fusion.mlir): writes what
// FusionModel.h decides about each op of a function, and about each
// producer-consumer pair of fusible ops, to stderr, in the format of
// TestPrintFusionPass's description in Passes.td. Only the model is asked:
// tcc-fuse's clustering (which regions it merges, its cycle and loss checks) is
// not run. Changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/FusionModel.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tcc-test-print-fusion"

namespace mlir::tcc {
#define GEN_PASS_DEF_TESTPRINTFUSIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fusion;

/// "%3 = tcc.gelu", "%4#0, %4#1 = tcc.layer_norm", or the name alone.
static void printOp(raw_ostream &os, Operation *op, AsmState &state) {
  llvm::interleaveComma(op->getResults(), os,
                        [&](Value r) { r.printAsOperand(os, state); });
  if (op->getNumResults())
    os << " = ";
  os << op->getName();
}

static StringRef kindName(OpKind k) {
  switch (k) {
  case OpKind::None:
    return "not fusible";
  case OpKind::Elementwise:
    return "elementwise";
  case OpKind::Row:
    return "row";
  }
  llvm_unreachable("unknown OpKind");
}

static StringRef layoutName(Layout l) {
  switch (l) {
  case Layout::Full:
    return "full";
  case Layout::Row:
    return "row";
  case Layout::Scalar:
    return "scalar";
  case Layout::Column:
    return "column";
  case Layout::Padded:
    return "padded";
  }
  llvm_unreachable("unknown Layout");
}

static void printDomain(raw_ostream &os, Domain d) {
  os << d.rows << "x" << d.cols;
}

/// "rows [4] strides [8] col 1; full, scale 8".
static void printView(raw_ostream &os, const View &v, Domain d) {
  os << "rows [";
  llvm::interleaveComma(v.rowShape, os);
  os << "] strides [";
  llvm::interleaveComma(v.rowStrides, os);
  os << "] col " << v.colStride << ";";
  if (v.isFullNative(d.cols))
    os << " full,";
  if (v.isRowNative())
    os << " row,";
  if (v.isConstant())
    os << " constant,";
  if (std::optional<int64_t> s = v.rowScale())
    os << " scale " << *s;
  else
    os << " no scale";
}

static void printOwn(raw_ostream &os, Operation *op, AsmState &state) {
  os << "  ";
  printOp(os, op, state);
  OpKind kind = classify(op);
  os << ": " << kindName(kind);
  if (kind == OpKind::None) {
    os << "\n";
    return;
  }
  Domain d = ownDomain(op);
  os << ", domain ";
  printDomain(os, d);
  if (isDataMovement(op))
    os << ", data movement";
  if (int64_t pad = padOf(op))
    os << ", pad " << pad;
  os << "\n";
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    os << "    operand " << i << ": ";
    FailureOr<View> v = operandView(op, i, d);
    if (failed(v))
      os << "does not fit";
    else
      printView(os, *v, d);
    os << "\n";
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    FailureOr<Layout> l = resultLayout(op, i, d);
    os << "    result " << i << ": "
       << (failed(l) ? StringRef("does not fit") : layoutName(*l)) << "\n";
  }
}

/// The pair `producer`, `consumer` (in block order) as one region.
static void printPair(raw_ostream &os, Operation *consumer, Value read,
                      AsmState &state) {
  Operation *producer = read.getDefiningOp();
  SmallVector<Operation *, 2> pair{producer, consumer};
  Domain d = regionDomain(pair);
  std::string why;
  bool legal = regionIsLegal(pair, d, &why);
  os << "  ";
  printOp(os, consumer, state);
  os << " reads ";
  read.printAsOperand(os, state);
  os << " = " << producer->getName() << ": " << (legal ? "joins" : "cut")
     << ", domain ";
  printDomain(os, d);
  if (!legal)
    os << ": " << why;
  os << "\n";
}

static void printFunction(raw_ostream &os, func::FuncOp fn) {
  AsmState state(fn);
  Block &body = fn.getBody().front();
  os << "fusion @" << fn.getSymName() << "\n";
  for (Operation &op : body.without_terminator())
    printOwn(os, &op, state);
  for (Operation &op : body.without_terminator()) {
    if (classify(&op) == OpKind::None)
      continue;
    SmallVector<Value> seen;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != &body || classify(def) == OpKind::None ||
          llvm::is_contained(seen, v))
        continue;
      seen.push_back(v);
      printPair(os, &op, v, state);
    }
  }
}

namespace {
struct TestPrintFusionPass final
    : tcc::impl::TestPrintFusionPassBase<TestPrintFusionPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        printFunction(llvm::errs(), fn);
    markAllAnalysesPreserved();
  }
};
} // namespace
