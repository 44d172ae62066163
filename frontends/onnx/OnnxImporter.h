//===- OnnxImporter.h - ONNX model -> tcc dialect ---------------*- C++ -*-===//
//
// The ONNX frontend turns a ModelProto into one `func.func @forward` on
// statically shaped tensors in the tcc dialect:
//
//   module attributes {tcc.batch = N : i64} {
//     func.func @forward(<params>..., <inputs>...) -> (<outputs>...)
//   }
//
// Arguments are first every trainable parameter (each float32 initializer
// not frozen, in initializer order, `{tcc.kind = "param", tcc.name = ...}`),
// then every graph input that is not an initializer (`{tcc.kind = "input",
// tcc.name = ...}`); results carry `{tcc.name = ...}`. Frozen and non-float
// initializers stay constants (`tcc.constant` where the graph uses them as
// tensors). Op locations are `NameLoc(node name or "<op_type>#<index>")`
// around a FileLineColLoc of the source file.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define TCC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace mlir::tcc {

struct OnnxImportOptions {
  /// Fixes a symbolic first dimension of graph inputs; -1 keeps the model's.
  int64_t batch = -1;
  /// Float initializers kept as constants instead of trained parameters.
  std::vector<std::string> frozen;
};

/// Reads a binary .onnx file, or ONNX textual syntax when the path ends in
/// ".onnxtxt". Emits MLIR diagnostics and returns failure on any error.
FailureOr<OwningOpRef<ModuleOp>> importOnnxFile(MLIRContext *ctx,
                                                llvm::StringRef path,
                                                const OnnxImportOptions &opts);

/// Imports an in-memory model; `sourceName` names it in locations and errors.
FailureOr<OwningOpRef<ModuleOp>> importOnnxModel(MLIRContext *ctx,
                                                 const onnx::ModelProto &model,
                                                 const OnnxImportOptions &opts,
                                                 llvm::StringRef sourceName);

/// The supported op_types (default domain), sorted, for errors and docs.
std::vector<std::string> supportedOnnxOps();

} // namespace mlir::tcc

#endif // TCC_FRONTENDS_ONNX_ONNXIMPORTER_H
