//===- OnnxModelIO.cpp - Reading ONNX models and writing trained ones -----===//
#include "compiler/OnnxModelIO.h"

#include "onnx/defs/parser.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace tcc;

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool tcc::readOnnxModel(const std::string &path, onnx::ModelProto &model,
                        std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string bytes = buf.str();
  if (endsWith(path, ".onnxtxt")) {
    try {
      onnx::OnnxParser parser(bytes.c_str());
      auto status = parser.Parse(model);
      if (!status.IsOK()) {
        error = path + ": ONNX text parse error: " + status.ErrorMessage();
        return false;
      }
    } catch (const std::exception &e) {
      error = path + ": ONNX text parse error: " + e.what();
      return false;
    }
    return true;
  }
  if (!model.ParseFromString(bytes)) {
    error = path + ": not a valid ONNX model (protobuf parse failed)";
    return false;
  }
  return true;
}

bool tcc::initializerFloats(const onnx::TensorProto &t, std::vector<float> &out,
                            std::string &error) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "initializer '" + t.name() +
            "' keeps its data in an external file, which is not supported";
    return false;
  }
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    error = "initializer '" + t.name() + "' is not float32";
    return false;
  }
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  if (t.has_raw_data()) {
    if ((int64_t)t.raw_data().size() != n * 4) {
      error = "initializer '" + t.name() + "' has " +
              std::to_string(t.raw_data().size()) + " bytes of data, expected " +
              std::to_string(n * 4);
      return false;
    }
    out.resize(n);
    std::memcpy(out.data(), t.raw_data().data(), n * 4);
    return true;
  }
  if (t.float_data_size() != n) {
    error = "initializer '" + t.name() + "' has " +
            std::to_string(t.float_data_size()) + " values, expected " +
            std::to_string(n);
    return false;
  }
  out.assign(t.float_data().begin(), t.float_data().end());
  return true;
}

bool tcc::writeTrainedOnnx(
    const std::string &modelBytes,
    const std::map<std::string, std::vector<float>> &values,
    const std::string &path, std::string &error,
    const std::map<std::string, std::vector<float>> &ifInitializer) {
  onnx::ModelProto model;
  if (!model.ParseFromString(modelBytes)) {
    error = "the artifact's ONNX model does not parse";
    return false;
  }
  size_t replaced = 0;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    auto it = values.find(t.name());
    bool required = it != values.end();
    if (!required && (it = ifInitializer.find(t.name())) == ifInitializer.end())
      continue;
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (t.data_type() != onnx::TensorProto::FLOAT ||
        n != (int64_t)it->second.size()) {
      error = "initializer '" + t.name() + "' does not match its trained tensor";
      return false;
    }
    t.clear_float_data();
    t.set_raw_data(it->second.data(), it->second.size() * sizeof(float));
    replaced += required;
  }
  if (replaced != values.size()) {
    error = "the artifact's ONNX model lacks " +
            std::to_string(values.size() - replaced) + " trained initializers";
    return false;
  }
  // A model compiled with --weights seeded travels without the data of the
  // generated initializers; each must have been written above.
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (t.data_type() == onnx::TensorProto::FLOAT && n > 0 &&
        !t.has_raw_data() && t.float_data_size() == 0 &&
        t.data_location() != onnx::TensorProto::EXTERNAL) {
      error = "initializer '" + t.name() +
              "' has no data in the artifact's ONNX model (--weights seeded) "
              "and no trained tensor to take it from";
      return false;
    }
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out) || !out.flush()) {
      error = path + ": cannot write: " + std::strerror(errno);
      out.close();
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot rename into place: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}
