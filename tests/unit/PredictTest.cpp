//===- PredictTest.cpp - Prediction's batching, files and forward runs ----===//
#include "runtime/train/Predict.h"
#include "runtime/core/Backend.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/feeder/DataFeeder.h"
#include "runtime/feeder/Npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace tcc::rt;

namespace {

std::string tempDir() {
  std::string d = ::testing::TempDir() + "tcc_predict_XXXXXX";
  EXPECT_NE(::mkdtemp(d.data()), nullptr);
  return d;
}

bool exists(const std::string &path) {
  return ::access(path.c_str(), F_OK) == 0;
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// forward(x [batch, 3] f32) = copy of x: a prediction must give back
/// exactly the samples it was fed, in order, however they are batched.
Artifact copyModel(int64_t batch) {
  Artifact a;
  TensorInfo x;
  x.name = "x";
  x.kind = TensorKind::Input;
  x.shape = {batch, 3};
  TensorInfo y;
  y.name = "forward.t1";
  y.kind = TensorKind::Temp;
  y.shape = {batch, 3};
  y.program = "forward";
  y.arenaOffset = 0;
  a.tensors = {x, y};
  Program p;
  p.name = "forward";
  p.inputs = {0};
  p.outputs = {1};
  p.instrs.push_back(Instr{"copy", {0}, {1}, {}, {}});
  p.arenaBytes = (y.byteSize() + 63) / 64 * 64;
  a.programs.push_back(p);
  a.meta["outputs"] = "y";
  return a;
}

} // namespace

TEST(PredictTest, PaddedBatchesRepeatTheLastSample) {
  // 5 samples of 2 bytes in batches of 3: {0,1,2}, then {3,4} and 4 again.
  std::vector<uint8_t> s = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
  EXPECT_EQ(paddedBatchCount(5, 3), 2);
  EXPECT_EQ(paddedBatchCount(6, 3), 2);
  EXPECT_EQ(paddedBatchCount(1, 8), 1);
  std::vector<uint8_t> out(6);
  EXPECT_EQ(gatherPaddedBatch(s.data(), 2, 5, 3, 0, out.data()), 3);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(gatherPaddedBatch(s.data(), 2, 5, 3, 1, out.data()), 2);
  EXPECT_EQ(out, (std::vector<uint8_t>{3, 3, 4, 4, 4, 4}));
  // Fewer samples than one batch: all padding but the first.
  EXPECT_EQ(gatherPaddedBatch(s.data(), 2, 1, 3, 0, out.data()), 1);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0}));
  EXPECT_THROW(gatherPaddedBatch(s.data(), 2, 5, 3, 2, out.data()), Error);
  EXPECT_THROW(gatherPaddedBatch(s.data(), 2, 0, 3, 0, out.data()), Error);
}

TEST(PredictTest, NpyFilesReadBack) {
  std::string dir = tempDir();
  std::vector<float> f = {1.5f, -2, 3, 4, 5, 6};
  writeNpy(dir + "/f.npy", "<f4", {2, 3}, f.data(), f.size() * 4);
  EXPECT_FALSE(exists(dir + "/f.npy.tmp"));
  HostArray a = loadNpy(dir + "/f.npy");
  EXPECT_EQ(a.dtype, FileDType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.at(0), 1.5);
  EXPECT_EQ(a.at(1), -2);
  std::vector<int64_t> i = {7, -8, 9};
  writeNpy(dir + "/i.npy", "<i8", {3}, i.data(), 24);
  HostArray b = loadNpy(dir + "/i.npy");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(b.at(1), -8);
  // NumPy's alignment: the data starts at a multiple of 64.
  EXPECT_EQ(readFile(dir + "/i.npy").size() % 64, 24u);
  // The bytes must hold the shape, and the directory must exist.
  EXPECT_THROW(encodeNpy("<f4", {2, 3}, f.data(), 20), Error);
  EXPECT_THROW(writeNpy(dir + "/no/f.npy", "<f4", {6}, f.data(), 24), Error);
}

TEST(PredictTest, OutputsAreWrittenInTheDeclaredType) {
  std::string dir = tempDir();
  Prediction p;
  p.dtype = DType::F32;
  p.shape = {2};
  std::vector<float> v = {0.1f, 1.0f / 3};
  p.bytes.assign(reinterpret_cast<uint8_t *>(v.data()),
                 reinterpret_cast<uint8_t *>(v.data()) + 8);
  // An ONNX DOUBLE output, computed in f32: f64, exactly the f32 values.
  p.hostDType = HostDType::F64;
  writePrediction(p, dir + "/d.npy");
  HostArray d = loadNpy(dir + "/d.npy");
  EXPECT_EQ(d.dtype, FileDType::F64);
  EXPECT_EQ(d.at(0), (double)0.1f);
  EXPECT_EQ(d.at(1), (double)(1.0f / 3));
  // BFLOAT16, which NumPy lacks: f32 holding the rounded values.
  p.hostDType = HostDType::BF16;
  writePrediction(p, dir + "/b.npy");
  HostArray b = loadNpy(dir + "/b.npy");
  EXPECT_EQ(b.dtype, FileDType::F32);
  EXPECT_EQ(b.at(1), bf16ToF32(f32ToBf16(1.0f / 3)));
  EXPECT_NE(b.at(1), (double)(1.0f / 3));
}

TEST(PredictTest, OutputPaths) {
  EXPECT_EQ(predictionPaths("o/p.npy", {"logits"}),
            (std::vector<std::string>{"o/p.npy"}));
  EXPECT_EQ(predictionPaths("o/p.npy", {"logits", "a/b c"}),
            (std::vector<std::string>{"o/p_logits.npy", "o/p_a_b_c.npy"}));
  EXPECT_EQ(predictionPaths("p", {"x", "y"}),
            (std::vector<std::string>{"p_x.npy", "p_y.npy"}));
  EXPECT_THROW(predictionPaths("p.npy", {"a/b", "a_b"}), Error);
}

TEST(PredictTest, OutputNamesFallBackToPositions) {
  Artifact a = copyModel(4);
  EXPECT_EQ(forwardOutputNames(a), (std::vector<std::string>{"y"}));
  a.meta.erase("outputs");
  EXPECT_EQ(forwardOutputNames(a), (std::vector<std::string>{"output0"}));
  a.programs[0].name = "other";
  EXPECT_THROW(forwardProgram(a), Error);
}

TEST(PredictTest, EverySampleComesBackOnceInOrder) {
  std::string dir = tempDir();
  for (int64_t n : {1, 4, 6, 9}) {
    std::vector<float> x(n * 3);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i) + 0.25f;
    std::string path = dir + "/x" + std::to_string(n) + ".npy";
    writeNpy(path, "<f4", {n, 3}, x.data(), x.size() * 4);
    Artifact a = copyModel(4);
    auto s = openSession("cpu", a, ExecMode::Compiled);
    std::vector<Prediction> out = predict(*s, a, {{"x", path}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].name, "y");
    EXPECT_EQ(out[0].shape, (std::vector<int64_t>{n, 3}));
    ASSERT_EQ(out[0].bytes.size(), x.size() * 4);
    EXPECT_EQ(std::memcmp(out[0].bytes.data(), x.data(), x.size() * 4), 0)
        << n << " samples";
  }
  Artifact a = copyModel(4);
  auto s = openSession("cpu", a, ExecMode::Compiled);
  // A wrong sample shape, an unknown input, no samples.
  std::vector<float> w(8);
  writeNpy(dir + "/w.npy", "<f4", {2, 4}, w.data(), 32);
  writeNpy(dir + "/e.npy", "<f4", {0, 3}, w.data(), 0);
  EXPECT_THROW(predict(*s, a, {{"x", dir + "/w.npy"}}), Error);
  EXPECT_THROW(predict(*s, a, {{"x", dir + "/x4.npy"}, {"z", "f"}}), Error);
  EXPECT_THROW(predict(*s, a, {{"x", dir + "/e.npy"}}), Error);
  EXPECT_THROW(predict(*s, a, {}), Error);
}

TEST(PredictTest, InputsOfDifferentSampleCountsAreRefused) {
  std::string dir = tempDir();
  Artifact a = copyModel(4);
  TensorInfo z = a.tensors[0];
  z.name = "z";
  a.tensors.push_back(z);
  a.programs[0].inputs.push_back(2);
  auto s = openSession("cpu", a, ExecMode::Compiled);
  std::vector<float> v(18);
  writeNpy(dir + "/x.npy", "<f4", {6, 3}, v.data(), 72);
  writeNpy(dir + "/z.npy", "<f4", {5, 3}, v.data(), 60);
  try {
    predict(*s, a, {{"x", dir + "/x.npy"}, {"z", dir + "/z.npy"}});
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("z.npy has 5 samples but"),
              std::string::npos)
        << e.what();
  }
}

TEST(PredictTest, OutputsWithoutTheBatchDimensionAreRefused) {
  // forward(x [4, 3]) = x as [12]: no row per sample to keep or drop.
  Artifact a = copyModel(4);
  a.tensors[1].shape = {12};
  auto s = openSession("cpu", a, ExecMode::Compiled);
  std::string dir = tempDir();
  std::vector<float> v(18);
  writeNpy(dir + "/x.npy", "<f4", {6, 3}, v.data(), 72);
  try {
    predict(*s, a, {{"x", dir + "/x.npy"}});
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("not one row per sample"),
              std::string::npos)
        << e.what();
  }
}
