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
#include <cstdlib>
#include <fstream>
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

/// A model with a float initializer "w" of `n` values 0, 1, ... in
/// raw_data, kept in `dir`/w.bin as external data when `external`.
std::string rawModel(int64_t n, bool external, const std::string &dir = "") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::TensorProto *t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(n);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = float(i);
  std::string raw(reinterpret_cast<const char *>(v.data()), n * 4);
  if (external) {
    std::ofstream(dir + "w.bin", std::ios::binary) << "pad!" << raw;
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, val] :
         {std::pair<std::string, std::string>{"location", "w.bin"},
          {"offset", "4"},
          {"length", std::to_string(n * 4)}}) {
      auto *e = t->add_external_data();
      e->set_key(k);
      e->set_value(val);
    }
  } else {
    t->set_raw_data(raw);
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

/// The folder of a fresh temporary directory, with a trailing slash.
std::string tempDir(const char *name) {
  std::string dir = tempPath(name) + "/";
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

TEST(OnnxModelIO, ExportPastTheSizeLimitWritesExternalData) {
  std::string dir = tempDir("limit"), path = dir + "big.onnx", err;
  std::vector<float> trained(512, 2.5f);
  tcc::ExportOptions opts;
  opts.inlineLimit = 1000; // 512 floats take 2 KiB
  ASSERT_TRUE(tcc::writeTrainedOnnx(rawModel(512, false), {{"w", trained}},
                                    path, err, {}, opts))
      << err;
  ASSERT_EQ(::access((path + ".data").c_str(), F_OK), 0);
  onnx::ModelProto m;
  std::vector<onnx::TensorProto *> external;
  ASSERT_TRUE(tcc::readOnnxModel(path, m, err, &external)) << err;
  ASSERT_EQ(external.size(), 1u);
  std::vector<float> got;
  ASSERT_TRUE(tcc::initializerFloats(*external[0], got, err)) << err;
  EXPECT_EQ(got, trained);
  // Under the limit the same export stays one file.
  std::string small = dir + "small.onnx";
  ASSERT_TRUE(
      tcc::writeTrainedOnnx(rawModel(512, false), {{"w", trained}}, small, err))
      << err;
  EXPECT_NE(::access((small + ".data").c_str(), F_OK), 0);
}

TEST(OnnxModelIO, ExternalDataTravelsThroughTheArtifactBlob) {
  std::string dir = tempDir("blob"), err;
  std::ofstream(dir + "m.onnx", std::ios::binary) << rawModel(8, true, dir);
  onnx::ModelProto m;
  std::vector<onnx::TensorProto *> external;
  ASSERT_TRUE(tcc::readOnnxModel(dir + "m.onnx", m, err, &external)) << err;
  ASSERT_EQ(external.size(), 1u);
  std::vector<float> got;
  ASSERT_TRUE(tcc::initializerFloats(*external[0], got, err)) << err;
  EXPECT_EQ(got, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));

  // Embedded: the data moves to the blob, the model only points at it.
  std::vector<uint8_t> blob(16, 0xee);
  std::string bytes;
  ASSERT_TRUE(tcc::embedOnnxModel(
      m, external,
      [&](const void *p, size_t n) {
        int64_t at = (int64_t)blob.size();
        blob.insert(blob.end(), (const uint8_t *)p, (const uint8_t *)p + n);
        return at;
      },
      bytes, err))
      << err;
  EXPECT_LT(bytes.size(), 100u);
  EXPECT_EQ(blob.size(), 16u + 32u);

  // Exported: external again, in the export's own data file.
  std::string out = dir + "out/trained.onnx";
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "out'").c_str()), 0);
  std::vector<float> trained(8, -1.f);
  ASSERT_TRUE(
      tcc::writeTrainedOnnx(tcc::EmbeddedOnnx(bytes, blob.data(), blob.size()),
                            {{"w", trained}}, out, err))
      << err;
  onnx::ModelProto back;
  external.clear();
  ASSERT_TRUE(tcc::readOnnxModel(out, back, err, &external)) << err;
  ASSERT_EQ(external.size(), 1u);
  ASSERT_TRUE(tcc::initializerFloats(*external[0], got, err)) << err;
  EXPECT_EQ(got, trained);

  // A blob reference outside the blob is refused, nothing written.
  std::string cut = dir + "out/cut.onnx";
  EXPECT_FALSE(tcc::writeTrainedOnnx(tcc::EmbeddedOnnx(bytes, blob.data(), 20),
                                     {{"w", trained}}, cut, err));
  EXPECT_NE(err.find("points outside the artifact's data"), std::string::npos)
      << err;
  EXPECT_NE(::access(cut.c_str(), F_OK), 0);
}

TEST(OnnxModelIO, ModelsOverTwoGiBAreRefusedBySize) {
  // A sparse file: mapped, never read, so the test costs no 2 GiB.
  std::string dir = tempDir("huge"), path = dir + "huge.onnx", err;
  { std::ofstream create(path); }
  ASSERT_EQ(::truncate(path.c_str(), (1ll << 31) + 8), 0);
  onnx::ModelProto m;
  EXPECT_FALSE(tcc::readOnnxModel(path, m, err));
  EXPECT_NE(err.find("protobuf cannot read a message over 2 GiB, so a model "
                     "this large must keep its weights in external data"),
            std::string::npos)
      << err;
}

} // namespace
