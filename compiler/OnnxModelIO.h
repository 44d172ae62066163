//===- OnnxModelIO.h - Reading ONNX models and writing trained ones -*- C++ -*-===//
//
// The compiler keeps the original ONNX model in the artifact so a trained run
// can export the same graph with trained initializers. These helpers are the
// only places that read and write ModelProto bytes.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_ONNXMODELIO_H
#define TCC_COMPILER_ONNXMODELIO_H

#include "onnx/onnx_pb.h"

#include <map>
#include <string>
#include <vector>

namespace tcc {

/// Reads a binary .onnx model, or ONNX textual syntax when the path ends in
/// ".onnxtxt". On failure returns false and sets `error`.
bool readOnnxModel(const std::string &path, onnx::ModelProto &model,
                   std::string &error);

/// The float32 values of an initializer (raw_data or float_data). Returns
/// false with `error` set for other element types or external data.
bool initializerFloats(const onnx::TensorProto &t, std::vector<float> &out,
                       std::string &error);

/// Replaces the data of the named float initializers of `model` (serialized
/// bytes) and writes the result atomically (temporary file, then rename).
/// Every name in `values` must be an initializer of matching size; names in
/// `ifInitializer` (state tensors: running statistics are initializers,
/// optimizer state is not) are written only where the model has an
/// initializer of that name.
bool writeTrainedOnnx(
    const std::string &modelBytes,
    const std::map<std::string, std::vector<float>> &values,
    const std::string &path, std::string &error,
    const std::map<std::string, std::vector<float>> &ifInitializer = {});

} // namespace tcc

#endif // TCC_COMPILER_ONNXMODELIO_H
