//===- OnnxModelIO.h - Reading ONNX and writing trained models -*- C++ -*-===//
//
// The compiler keeps the original ONNX model in the artifact so a trained run
// can export the same graph with trained initializers. These helpers are the
// only places that read and write ModelProto bytes.
//
// External data (frontends/onnx/OnnxExternalData.h) travels like this: the
// reader loads it into the tensors and lists them; the artifact embeds the
// model with those tensors' bytes in its blob, each tensor pointing there
// (location kArtifactBlobLocation), so the embedded model stays small and the
// artifact self-contained whatever the model's size; the export writes them
// to NAME.onnx.data again, as it does for any model past protobuf's 2 GiB.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_ONNXMODELIO_H
#define TCC_COMPILER_ONNXMODELIO_H

#include "onnx/onnx_pb.h"

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tcc {

/// Reads a binary .onnx model, or ONNX textual syntax when the path ends in
/// ".onnxtxt", with its external data (read from the model's folder). When
/// `external` is given it lists the tensors whose data came from there. On
/// failure returns false and sets `error`.
bool readOnnxModel(const std::string &path, onnx::ModelProto &model,
                   std::string &error,
                   std::vector<onnx::TensorProto *> *external = nullptr);

/// The float32 values of an initializer (raw_data or float_data). Returns
/// false with `error` set for other element types or external data that
/// was not loaded.
bool initializerFloats(const onnx::TensorProto &t, std::vector<float> &out,
                       std::string &error);

/// The `location` of an embedded model's tensor whose data is in the
/// artifact's blob, at its external_data `offset`.
inline constexpr const char *kArtifactBlobLocation = "tcc-artifact-blob";

/// Serializes `model` for the artifact into `bytes`. The data of the
/// `external` tensors (as readOnnxModel listed them; stripped ones, without
/// raw_data, are skipped) moves to the blob through `addBlob` (returns the
/// offset) and the tensors point at it. False when the rest of the model is
/// still too large for protobuf.
bool embedOnnxModel(onnx::ModelProto &model,
                    const std::vector<onnx::TensorProto *> &external,
                    const std::function<int64_t(const void *, size_t)> &addBlob,
                    std::string &bytes, std::string &error);

/// The artifact's model: its bytes and the blob its external tensors point
/// into.
struct EmbeddedOnnx {
  EmbeddedOnnx(std::string_view bytes, const uint8_t *blob = nullptr,
               size_t blobSize = 0)
      : bytes(bytes), blob(blob), blobSize(blobSize) {}
  EmbeddedOnnx(const std::string &bytes)
      : EmbeddedOnnx(std::string_view(bytes)) {}
  std::string_view bytes;
  const uint8_t *blob;
  size_t blobSize;
};

struct ExportOptions {
  /// Above this size (the model with all its data inline) the export writes
  /// external data even for a model that had none: protobuf writes no
  /// message over 2 GiB. Tests lower it.
  uint64_t inlineLimit = INT_MAX;
};

/// Replaces the data of the named float initializers of `model` and writes
/// the result atomically (temporary file, then rename). Every name in
/// `values` must be an initializer of matching size; names in
/// `ifInitializer` (state tensors: running statistics are initializers,
/// optimizer state is not) are written only where the model has an
/// initializer of that name. When the model had external data, or would
/// pass `opts.inlineLimit`, tensor data goes to `path + ".data"` (location
/// NAME.onnx.data, beside the model): the tensors that were external, and
/// past the limit every tensor of 1 KiB or more (onnx.save's default).
bool writeTrainedOnnx(
    const EmbeddedOnnx &model,
    const std::map<std::string, std::vector<float>> &values,
    const std::string &path, std::string &error,
    const std::map<std::string, std::vector<float>> &ifInitializer = {},
    const ExportOptions &opts = {});

} // namespace tcc

#endif // TCC_COMPILER_ONNXMODELIO_H
