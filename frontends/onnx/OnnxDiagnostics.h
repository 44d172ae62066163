//===- OnnxDiagnostics.h - Printing diagnostics about ONNX models -*- C++ -*-===//
//
// ONNX has no source positions: a diagnostic is located by its file alone,
// and the messages name the node or tensor themselves. Shared by `tcc
// compile` and `tcc-import`, which differ only in where the severity goes.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXDIAGNOSTICS_H
#define TCC_FRONTENDS_ONNX_ONNXDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tcc {

/// Prints `diag` and its notes to stderr, one line each:
/// "PREFIX SEVERITY: FILE: message" when `prefix` is not empty (e.g.
/// "tcc compile:"), else "FILE: SEVERITY: message".
void printOnnxDiagnostic(Diagnostic &diag, llvm::StringRef prefix);

} // namespace mlir::tcc

#endif // TCC_FRONTENDS_ONNX_ONNXDIAGNOSTICS_H
