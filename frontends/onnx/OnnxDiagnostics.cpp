//===- OnnxDiagnostics.cpp - Printing diagnostics about ONNX models -------===//
#include "frontends/onnx/OnnxDiagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static StringRef severityName(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

static void printOne(Diagnostic &d, StringRef severity, StringRef prefix) {
  llvm::raw_ostream &os = llvm::errs();
  if (!prefix.empty())
    os << prefix << " " << severity << ": ";
  if (auto file = d.getLocation()->findInstanceOf<FileLineColLoc>()) {
    os << file.getFilename().getValue();
    if (file.getLine())
      os << ":" << file.getLine() << ":" << file.getColumn();
    os << ": ";
  }
  if (prefix.empty())
    os << severity << ": ";
  os << d.str() << "\n";
}

void mlir::tcc::printOnnxDiagnostic(Diagnostic &diag, StringRef prefix) {
  printOne(diag, severityName(diag.getSeverity()), prefix);
  for (Diagnostic &note : diag.getNotes())
    printOne(note, "note", prefix);
}
