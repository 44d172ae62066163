//===- OnnxModelIOTest.cpp - Exporting trained values into the model -----===//
//
// With --weights seeded the artifact keeps the ONNX model without the data
// of the generated initializers; writeTrainedOnnx must fill every one of
// them from the trained tensors and refuse to write a model that would
// still miss some.
//
//===----------------------------------------------------------------------===//
#include "compiler/OnnxModelIO.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

namespace {

/// A model with two float initializers, "w" [2,3] and "b" [3], both without
/// data when `stripped`.
std::string modelBytes(bool stripped) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto *g = m.mutable_graph();
  g->set_name("g");
  for (auto [name, dims] :
       {std::pair<const char *, std::vector<int64_t>>{"w", {2, 3}},
        {"b", {3}}}) {
    onnx::TensorProto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    if (!stripped)
      for (int64_t i = 0; i < n; ++i)
        t->add_float_data(0.5f);
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "tcc_onnxio_" + std::to_string(::getpid()) +
         "_" + name;
}

TEST(OnnxModelIO, StrippedInitializersGetTheTrainedValues) {
  std::string path = tempPath("ok.onnx"), err;
  std::map<std::string, std::vector<float>> values = {{"w", {1, 2, 3, 4, 5, 6}},
                                                      {"b", {7, 8, 9}}};
  ASSERT_TRUE(tcc::writeTrainedOnnx(modelBytes(true), values, path, err))
      << err;
  onnx::ModelProto m;
  std::string readErr;
  ASSERT_TRUE(tcc::readOnnxModel(path, m, readErr)) << readErr;
  std::remove(path.c_str());
  for (const onnx::TensorProto &t : m.graph().initializer()) {
    std::vector<float> got;
    ASSERT_TRUE(tcc::initializerFloats(t, got, readErr)) << readErr;
    EXPECT_EQ(got, values.at(t.name()));
  }
}

TEST(OnnxModelIO, StrippedInitializerWithoutTrainedValueIsRefused) {
  std::string path = tempPath("missing.onnx"), err;
  // Only "w" trained; "b" has no data and nothing to take it from.
  EXPECT_FALSE(tcc::writeTrainedOnnx(modelBytes(true),
                                     {{"w", {1, 2, 3, 4, 5, 6}}}, path, err));
  EXPECT_EQ(err, "initializer 'b' has no data in the artifact's ONNX model "
                 "(--weights seeded) and no trained tensor to take it from");
  EXPECT_NE(::access(path.c_str(), F_OK), 0); // nothing written
  // The same with data for "b" in the model (--weights onnx) is fine.
  EXPECT_TRUE(tcc::writeTrainedOnnx(modelBytes(false),
                                    {{"w", {1, 2, 3, 4, 5, 6}}}, path, err))
      << err;
  std::remove(path.c_str());
}

} // namespace
