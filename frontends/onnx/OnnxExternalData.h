//===- OnnxExternalData.h - Data kept in other files --------*- C++ -*-===//
//
// ONNX keeps large weights outside the model's protobuf when the model would
// pass protobuf's 2 GiB message limit, and current exporters do it for any
// model (torch.onnx.export with dynamo=True writes MODEL.onnx.data): such a
// TensorProto has data_location EXTERNAL and key/value pairs naming a file
// (`location`, relative to the model's folder), a byte `offset` and a
// `length`. loadExternalData reads them into the tensors, so the importer
// and the compiler see ordinary tensors; the compiler remembers which ones
// they were, to embed and export them as external data again.
//
// No MLIR here: tcc-import's importer and the compiler's model reader
// (compiler/OnnxModelIO.cpp) both use it and report errors their own way.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXEXTERNALDATA_H
#define TCC_FRONTENDS_ONNX_ONNXEXTERNALDATA_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tcc {

/// Calls `fn` on every tensor of the model that can hold data: the graph's
/// initializers and the tensor attributes of its nodes (Constant's value),
/// in subgraphs too, in a fixed order. `what` names the tensor for errors
/// ("initializer 'w'", "attribute 'value' of node 'c'"). Stops when `fn`
/// returns false; returns false then.
bool forEachTensor(
    onnx::ModelProto &model,
    llvm::function_ref<bool(onnx::TensorProto &, const std::string &what)> fn);

/// The external_data pairs of a tensor. Keys tcc does not use (`checksum`,
/// a SHA-1 whose coverage the spec leaves open and no exporter writes, and
/// `basepath`) are ignored.
struct ExternalDataRef {
  std::string location;
  uint64_t offset = 0;
  /// Absent: the data runs to the end of the file.
  std::optional<uint64_t> length;
};

/// Reads the pairs; false with `error` (starting with `what`) when
/// `location` is missing or offset/length are not byte counts.
bool parseExternalData(const onnx::TensorProto &t, const std::string &what,
                       ExternalDataRef &ref, std::string &error);

/// The size in bytes of the tensor's data as raw_data holds it, from its
/// dims and element type (sub-byte types packed); nullopt for types without
/// a fixed width (STRING, unknown ones) or a shape that overflows.
std::optional<uint64_t> tensorDataBytes(const onnx::TensorProto &t);

/// Replaces the external data of every tensor of `model` by its bytes, read
/// from the file `location` names inside `modelDir`; those tensors then
/// read as ordinary raw_data tensors and `loaded`, when given, lists them.
/// Refuses (false, `error` naming the tensor) an absolute location, one that
/// climbs with `..` or whose real path (symbolic links resolved) leaves the
/// folder, a file that cannot be read, a range outside the file and a length
/// that is not what the tensor's shape and type take. The model is left
/// half-loaded on error; callers drop it.
bool loadExternalData(onnx::ModelProto &model, llvm::StringRef modelDir,
                      std::string &error,
                      std::vector<onnx::TensorProto *> *loaded = nullptr);

/// Parses a binary ModelProto. Protobuf reads no message over 2 GiB (its
/// sizes are `int`), so a larger file is refused with a message that says
/// to keep the weights in external data, where they have no such limit.
/// Recursion is protobuf's default (100 levels of nested messages).
bool parseOnnxBytes(llvm::StringRef bytes, onnx::ModelProto &model,
                    std::string &error);

} // namespace mlir::tcc

#endif // TCC_FRONTENDS_ONNX_ONNXEXTERNALDATA_H
