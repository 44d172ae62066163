//===- MakeFuzzSeeds.cpp - Seed inputs for the artifact/checkpoint fuzzers
//-===//
//
// Writes a small training artifact (a linear layer with cross-entropy and
// SGD: matmul, add, the loss and its gradient, a reduction, two updates)
// and a checkpoint of it, in the format this runtime writes. The fuzz build
// runs it, so the seeds always carry the current format version: a checked-
// in seed went stale when the artifact format became version 2, and every
// mutation of it then stopped at the version check.
//
// Before writing, it proves each seed reaches past the parser: the artifact
// parses, a CPU session accepts every instr (the kernels' checks) and one
// step runs to a finite loss; the checkpoint parses back. A format change
// that this program does not follow fails the build here, loudly, instead
// of silently leaving the fuzzers nothing to fuzz.
//
//   make_fuzz_seeds ARTIFACT_DIR CHECKPOINT_DIR
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/train/Checkpoint.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

using namespace tcc::rt;

namespace {

int32_t addTensor(Artifact &a, std::string name, DType dt,
                  std::vector<int64_t> shape, TensorKind kind,
                  const std::vector<float> &init = {}) {
  TensorInfo t;
  t.name = std::move(name);
  t.dtype = dt;
  t.shape = std::move(shape);
  t.kind = kind;
  if (!init.empty())
    t.dataOffset = a.addBlob(init.data(), init.size() * sizeof(float));
  a.tensors.push_back(t);
  return static_cast<int32_t>(a.tensors.size() - 1);
}

int32_t addTemp(Artifact &a, const std::string &program, std::string name,
                std::vector<int64_t> shape, int64_t arenaOffset) {
  int32_t id = addTensor(a, program + "." + name, DType::F32, std::move(shape),
                         TensorKind::Temp);
  a.tensors[id].program = program;
  a.tensors[id].arenaOffset = arenaOffset;
  return id;
}

/// logits = x W^T + b; loss = cross-entropy(logits, labels); W, b -= lr * grad.
Artifact tinyArtifact() {
  Artifact a;
  a.meta = {{"source", "tiny.onnx"},   {"batch", "2"},
            {"loss", "cross_entropy"}, {"optimizer.name", "sgd"},
            {"precision", "fp32"},     {"target", "cpu"}};
  std::vector<float> w(12), bias = {0.1f, -0.2f, 0.3f};
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.05f * float(i) - 0.3f;
  int32_t W = addTensor(a, "W", DType::F32, {3, 4}, TensorKind::Param, w);
  int32_t b = addTensor(a, "b", DType::F32, {3}, TensorKind::Param, bias);
  int32_t x = addTensor(a, "x", DType::F32, {2, 4}, TensorKind::Input);
  int32_t labels = addTensor(a, "labels", DType::I64, {2}, TensorKind::Input);
  int32_t lr = addTensor(a, "lr", DType::F32, {}, TensorKind::State, {0.1f});
  int32_t one =
      addTensor(a, "train_step.one", DType::F32, {}, TensorKind::Constant, {1});

  Program train;
  train.name = "train_step";
  int32_t h = addTemp(a, "train_step", "h", {2, 3}, 0);
  int32_t logits = addTemp(a, "train_step", "logits", {2, 3}, 64);
  int32_t loss = addTemp(a, "train_step", "loss", {}, 0);
  int32_t dlogits = addTemp(a, "train_step", "dlogits", {2, 3}, 128);
  int32_t db = addTemp(a, "train_step", "db", {3}, 64);
  int32_t dW = addTemp(a, "train_step", "dW", {3, 4}, 192);
  train.inputs = {x, labels};
  train.outputs = {loss};
  train.arenaBytes = 256;
  train.instrs = {
      {"matmul", {x, W}, {h}, {0, 1}, {}},
      {"add", {h, b}, {logits}, {}, {}},
      {"softmax_cross_entropy", {logits, labels}, {loss}, {-100}, {0.0}},
      {"softmax_cross_entropy_grad",
       {one, logits, labels},
       {dlogits},
       {-100},
       {0.0}},
      {"reduce_sum", {dlogits}, {db}, {0}, {}},
      {"matmul", {dlogits, x}, {dW}, {1, 0}, {}},
      {"sgd_update", {W, dW, lr}, {W}, {}, {0.0}},
      {"sgd_update", {b, db, lr}, {b}, {}, {0.0}},
  };
  a.programs.push_back(train);

  Program fwd;
  fwd.name = "forward";
  int32_t fh = addTemp(a, "forward", "h", {2, 3}, 0);
  int32_t fy = addTemp(a, "forward", "y", {2, 3}, 64);
  fwd.inputs = {x};
  fwd.outputs = {fy};
  fwd.arenaBytes = 128;
  fwd.instrs = {{"matmul", {x, W}, {fh}, {0, 1}, {}},
                {"add", {fh, b}, {fy}, {}, {}}};
  a.programs.push_back(fwd);
  return a;
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ARTIFACT_DIR CHECKPOINT_DIR\n", argv[0]);
    return 2;
  }
  std::string artPath = std::string(argv[1]) + "/tiny_gemm.tcc";
  std::string ckptPath = std::string(argv[2]) + "/tiny_gemm.tcckpt";
  try {
    Artifact a = tinyArtifact();
    writeArtifact(a, artPath);
    std::vector<uint8_t> img = readFile(artPath);
    Artifact back = parseArtifact(img.data(), img.size(), artPath);
    cpu::CpuSession s(back, ExecMode::Compiled);
    const float xs[8] = {0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3};
    const int64_t ys[2] = {2, 0};
    std::copy(xs, xs + 8, static_cast<float *>(s.data("x")));
    std::copy(ys, ys + 2, static_cast<int64_t *>(s.data("labels")));
    s.run("train_step");
    const Program &train = *back.findProgram("train_step");
    float loss = *static_cast<const float *>(s.data(train.outputs[0]));
    if (!std::isfinite(loss) || loss <= 0)
      throw Error("the seed artifact's step gives loss " +
                  std::to_string(loss));

    CheckpointMeta meta;
    meta.artifactCrc = artifactIdentity(back);
    meta.artifactSource = "tiny.onnx";
    meta.step = 1;
    meta.loss = loss;
    meta.totalSteps = 4;
    meta.batchSize = 2;
    meta.batchesPerEpoch = 4;
    meta.blasThreads = 1;
    meta.data = {{"x", "x.npy", "f32", {8, 4}, 0x1234u},
                 {"labels", "y.npy", "i64", {8}, 0x5678u}};
    std::vector<uint8_t> ckpt = serializeCheckpoint(meta, persistentTensors(s));
    Checkpoint parsed = parseCheckpoint(ckpt, ckptPath);
    if (parsed.tensors.empty())
      throw Error("the seed checkpoint holds no tensors");
    writeCheckpoint(ckptPath, meta, persistentTensors(s));
  } catch (const Error &e) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s and %s (artifact format version %u)\n", artPath.c_str(),
              ckptPath.c_str(), kArtifactVersion);
  return 0;
}
