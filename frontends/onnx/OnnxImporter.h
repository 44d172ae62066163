//===- OnnxImporter.h - ONNX model -> tcc dialect ---------------*- C++ -*-===//
//
// The ONNX frontend turns a ModelProto into one `func.func @forward` on
// statically shaped tensors in the tcc dialect:
//
//   module attributes {tcc.batch = N : i64} {
//     func.func @forward(<params/state>..., <inputs>...)
//         -> (<outputs>..., <state updates>...)
//   }
//
// Arguments are first every trainable parameter (each float32 initializer
// not frozen, in initializer order, `{tcc.kind = "param", tcc.name = ...}`;
// initializers an op updates as running state, such as BatchNormalization's
// statistics, are `{tcc.kind = "state"}` instead), then every graph input
// that is not an initializer (`{tcc.kind = "input", tcc.name = ...}`);
// results carry `{tcc.name = ...}`, and the new value of each updated state
// follows the outputs as `{tcc.kind = "update", tcc.name = <state>}`.
// Frozen and non-float
// initializers stay constants (`tcc.constant` where the graph uses them as
// tensors). Op locations are `NameLoc(node name or "<op_type>#<index>")`
// around a FileLineColLoc of the source file.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define TCC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "frontends/onnx/OnnxInitializerRoles.h"

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
  /// Glob patterns (llvm::GlobPattern) of initializers kept constant.
  std::vector<std::string> frozen;
  /// Glob patterns of the float initializers that train; empty: every one
  /// the gradient reaches (OnnxInitializerRoles.h).
  std::vector<std::string> trainable;
  /// --batchnorm=train: every BatchNormalization normalizes with the batch's
  /// statistics and updates its running ones, whatever mode the node is in.
  /// For exports that write a training-mode batch norm in inference mode
  /// (PyTorch's dynamo exporter does, see the README).
  bool batchNormTrain = false;
};

/// Why an import failed, for callers that must tell "tcc does not support
/// this (yet)" from "this model is wrong" (the ONNX backend test runner counts
/// the first as unsupported and the second as a failure). The diagnostics are
/// the same either way.
struct OnnxImportStatus {
  /// The import failed on an op, opset, attribute value or element type the
  /// importer does not implement, not on an invalid model.
  bool unsupported = false;
  /// What is missing, short and stable enough to count: "Conv" (op),
  /// "Add@6" (op at an opset outside its rows), "Constant (attribute
  /// sparse_value)", "input dtype UINT8".
  std::string feature;
  /// After a successful import: every initializer's role and why.
  std::vector<OnnxInitializerRole> initializers;
};

/// Reads a binary .onnx file, or ONNX textual syntax when the path ends in
/// ".onnxtxt". Emits MLIR diagnostics and returns failure on any error; when
/// `status` is given it says whether the failure is "unsupported".
FailureOr<OwningOpRef<ModuleOp>>
importOnnxFile(MLIRContext *ctx, llvm::StringRef path,
               const OnnxImportOptions &opts,
               OnnxImportStatus *status = nullptr);

/// Imports an in-memory model; `sourceName` names it in locations and errors.
FailureOr<OwningOpRef<ModuleOp>>
importOnnxModel(MLIRContext *ctx, const onnx::ModelProto &model,
                const OnnxImportOptions &opts, llvm::StringRef sourceName,
                OnnxImportStatus *status = nullptr);

/// The supported op_types (default domain), sorted, for errors and docs.
std::vector<std::string> supportedOnnxOps();

} // namespace mlir::tcc

#endif // TCC_FRONTENDS_ONNX_ONNXIMPORTER_H
