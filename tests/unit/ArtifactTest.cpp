//===- ArtifactTest.cpp - Artifact round trip and corruption detection ----===//
#include "runtime/core/Artifact.h"
#include "runtime/core/ArtifactFormat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace tcc::rt;

static std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "tcc_artifact_" + std::to_string(::getpid()) +
         "_" + name;
}

static std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

static TensorInfo tensor(std::string name, DType dt, std::vector<int64_t> shape,
                         TensorKind kind) {
  TensorInfo t;
  t.name = std::move(name);
  t.dtype = dt;
  t.shape = std::move(shape);
  t.kind = kind;
  return t;
}

/// A small but complete artifact: every tensor kind, two programs.
static Artifact sampleArtifact() {
  Artifact a;
  a.meta = {{"model", "mlp.onnx"}, {"optimizer", "adamw"}, {"lr", "0.001"}};
  std::vector<float> w(12, 0.25f), step = {0.0f};
  a.tensors.push_back(tensor("x", DType::F32, {2, 4}, TensorKind::Input));
  a.tensors.push_back(tensor("w", DType::F32, {4, 3}, TensorKind::Param));
  a.tensors[1].dataOffset = a.addBlob(w.data(), w.size() * 4);
  a.tensors.push_back(tensor("step", DType::F32, {}, TensorKind::State));
  a.tensors[2].dataOffset = a.addBlob(step.data(), 4);
  std::vector<int64_t> c = {7, 8};
  a.tensors.push_back(tensor("c", DType::I64, {2}, TensorKind::Constant));
  a.tensors[3].dataOffset = a.addBlob(c.data(), 16);
  a.tensors.push_back(tensor("y", DType::F32, {2, 3}, TensorKind::Temp));
  a.tensors[4].arenaOffset = 64;
  a.tensors[4].program = "train_step";

  Program train;
  train.name = "train_step";
  train.inputs = {0};
  train.outputs = {4};
  train.arenaBytes = 128;
  train.instrs.push_back({"matmul", {0, 1}, {4}, {0, 0}, {}});
  train.instrs.push_back({"sgd_update", {1, 1, 2}, {1}, {}, {1e-8}});
  a.programs.push_back(train);
  Program fwd;
  fwd.name = "forward";
  a.programs.push_back(fwd);

  const char onnx[] = "fake onnx bytes";
  a.onnxOffset = a.addBlob(onnx, sizeof(onnx));
  a.onnxSize = sizeof(onnx);
  return a;
}

static void expectSame(const Artifact &a, const Artifact &b) {
  EXPECT_EQ(a.meta, b.meta);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorInfo &x = a.tensors[i], &y = b.tensors[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.dataOffset, y.dataOffset);
    EXPECT_EQ(x.arenaOffset, y.arenaOffset);
    EXPECT_EQ(x.program, y.program);
    EXPECT_EQ(x.init.kind, y.init.kind);
    EXPECT_EQ(x.init.a, y.init.a); // exact doubles
    EXPECT_EQ(x.init.b, y.init.b);
    EXPECT_EQ(x.init.seed, y.init.seed);
    EXPECT_EQ(x.init.source, y.init.source);
  }
  ASSERT_EQ(a.programs.size(), b.programs.size());
  for (size_t i = 0; i < a.programs.size(); ++i) {
    const Program &p = a.programs[i], &q = b.programs[i];
    EXPECT_EQ(p.name, q.name);
    EXPECT_EQ(p.inputs, q.inputs);
    EXPECT_EQ(p.outputs, q.outputs);
    EXPECT_EQ(p.arenaBytes, q.arenaBytes);
    ASSERT_EQ(p.instrs.size(), q.instrs.size());
    for (size_t j = 0; j < p.instrs.size(); ++j) {
      EXPECT_EQ(p.instrs[j].kernel, q.instrs[j].kernel);
      EXPECT_EQ(p.instrs[j].inputs, q.instrs[j].inputs);
      EXPECT_EQ(p.instrs[j].outputs, q.instrs[j].outputs);
      EXPECT_EQ(p.instrs[j].iattrs, q.instrs[j].iattrs);
      EXPECT_EQ(p.instrs[j].fattrs, q.instrs[j].fattrs); // exact doubles
    }
  }
  EXPECT_EQ(a.blob, b.blob);
  EXPECT_EQ(a.onnxOffset, b.onnxOffset);
  EXPECT_EQ(a.onnxSize, b.onnxSize);
}

/// Expects parsing `bytes` to throw an Error whose message contains `needle`.
static void expectRejected(const std::vector<uint8_t> &bytes,
                           const std::string &needle) {
  try {
    parseArtifact(bytes.data(), bytes.size(), "model.tcc");
    ADD_FAILURE() << "accepted; expected: " << needle;
  } catch (const Error &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("model.tcc: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

/// A file image with the given manifest text and a valid checksum.
static std::vector<uint8_t>
withManifest(const std::string &manifest,
             const std::vector<uint8_t> &blob = {}) {
  using namespace format;
  uint64_t start = alignUp(kHeaderSize + manifest.size());
  std::vector<uint8_t> out(start + blob.size(), 0);
  std::memcpy(out.data(), kMagic, 8);
  putU32(out.data() + 8, kArtifactVersion);
  putU64(out.data() + 16, manifest.size());
  putU64(out.data() + 24, blob.size());
  std::memcpy(out.data() + kHeaderSize, manifest.data(), manifest.size());
  std::copy(blob.begin(), blob.end(), out.begin() + start);
  putU32(out.data() + 32, checksum(out.data() + kHeaderSize, manifest.size(),
                                   out.data() + start, blob.size()));
  return out;
}

TEST(Artifact, RoundTripKeepsEveryField) {
  Artifact a = sampleArtifact();
  std::string path = tempPath("roundtrip.tcc");
  writeArtifact(a, path);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);
  expectSame(a, readArtifact(path));
  EXPECT_EQ(a.findTensor("w"), 1);
  EXPECT_EQ(a.findTensor("nope"), -1);
  ASSERT_NE(a.findProgram("forward"), nullptr);
  EXPECT_EQ(a.findProgram("eval"), nullptr);
  for (const TensorInfo &t : a.tensors) {
    if (t.dataOffset >= 0) {
      EXPECT_EQ(t.dataOffset % kArtifactAlign, 0);
    }
  }
  std::remove(path.c_str());
}

TEST(Artifact, FlippedByteFailsChecksum) {
  auto bytes = format::serialize(sampleArtifact());
  for (size_t pos : {size_t(format::kHeaderSize + 5), bytes.size() - 3}) {
    auto bad = bytes;
    bad[pos] ^= 0x20;
    expectRejected(bad, "checksum mismatch: file is corrupted");
  }
}

TEST(Artifact, TruncationAndMagicAreDetected) {
  auto bytes = format::serialize(sampleArtifact());
  expectRejected({bytes.begin(), bytes.end() - 1}, "truncated");
  expectRejected({bytes.begin(), bytes.begin() + 30}, "truncated");
  expectRejected({}, "not a tcc artifact");
  auto bad = bytes;
  bad[0] = 'X';
  expectRejected(bad, "not a tcc artifact");
  auto longer = bytes;
  longer.push_back(0);
  expectRejected(longer, "1 unexpected bytes after the blob");
}

TEST(Artifact, VersionMismatchAsksToRecompile) {
  auto bytes = format::serialize(sampleArtifact());
  format::putU32(bytes.data() + 8, 1); // an artifact of an older tcc
  // The checksum covers manifest and blob only; recompute it anyway so the
  // version check, not the checksum, is what fails.
  uint64_t m = format::getU64(bytes.data() + 16),
           b = format::getU64(bytes.data() + 24);
  uint64_t start = format::alignUp(format::kHeaderSize + m);
  format::putU32(bytes.data() + 32, format::checksum(bytes.data() + 64, m,
                                                     bytes.data() + start, b));
  try {
    parseArtifact(bytes.data(), bytes.size(), "model.tcc");
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "model.tcc: artifact format version 1, this runtime "
                           "reads version 2; recompile the model");
  }
}

TEST(Artifact, OutOfRangeTensorIdInInstr) {
  Artifact a = sampleArtifact();
  a.programs[0].instrs[0].inputs[1] = 99;
  expectRejected(format::serialize(a), "tensor id 99 is out of range");
  a = sampleArtifact();
  a.programs[0].instrs[1].outputs[0] = -1;
  expectRejected(format::serialize(a), "tensor id -1 is out of range");
}

TEST(Artifact, BadManifestsAreRejected) {
  expectRejected(withManifest("{not json"), "not valid JSON");
  expectRejected(withManifest("[]"), "expected a JSON object");
  expectRejected(withManifest(std::string(100, '[') + std::string(100, ']')),
                 "nested too deeply");
  std::string head = R"({"format":"tcc-artifact","version":2,"programs":[],)";
  expectRejected(withManifest(head + R"("tensors":{}})"), "expected an array");
  expectRejected(
      withManifest(head +
                   R"("tensors":[{"name":"x","dtype":"f32","shape":[2]}]})"),
      "missing field 'kind'");
  expectRejected(withManifest(head + R"("tensors":[{"name":"x","dtype":"f32",)"
                                     R"("shape":[2,-3],"kind":"input"}]})"),
                 "negative dimension");
  expectRejected(withManifest(head + R"("tensors":[{"name":"x","dtype":"f64",)"
                                     R"("shape":[2],"kind":"input"}]})"),
                 "unknown dtype 'f64'");
  expectRejected(withManifest(head + R"("tensors":[{"name":"x","dtype":"f32",)"
                                     R"("shape":["2"],"kind":"input"}]})"),
                 "expected an integer");
  expectRejected(
      withManifest(head + R"("tensors":[{"name":"w","dtype":"f32",)"
                          R"("shape":[4],"kind":"param","data_offset":60}]})",
                   std::vector<uint8_t>(64)),
      "outside the blob");
  expectRejected(withManifest(head +
                              R"("tensors":[{"name":"t","dtype":"f32",)"
                              R"("shape":[4],"kind":"temp","program":"p"}]})"),
                 "unknown program 'p'");
  expectRejected(
      withManifest(
          R"({"format":"tcc-artifact","version":2,"tensors":[],)"
          R"("programs":[{"name":"p","inputs":[],"outputs":[],)"
          R"("arena_bytes":0,"instrs":[{"k":"relu","in":[0],"out":[0]}]}]})"),
      "tensor id 0 is out of range");
}

TEST(Artifact, RandomManifestDamageNeverCrashes) {
  Artifact a = sampleArtifact();
  auto good = format::serialize(a);
  uint64_t m = format::getU64(good.data() + 16);
  std::string manifest(good.begin() + 64, good.begin() + 64 + m);
  std::vector<uint8_t> blob(a.blob.begin(), a.blob.end());
  std::mt19937 rng(42);
  int rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string damaged = manifest;
    for (int k = 0; k < 3; ++k)
      damaged[rng() % damaged.size()] = "0123456789-[]{}\",:ax"[rng() % 21];
    auto bytes = withManifest(damaged, blob);
    try {
      parseArtifact(bytes.data(), bytes.size(), "fuzz");
    } catch (const Error &) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);
}

TEST(Artifact, FailedWriteLeavesExistingFileIntact) {
  Artifact a = sampleArtifact();
  EXPECT_THROW(writeArtifact(a, "/nonexistent-dir/sub/model.tcc"), Error);

  std::string path = tempPath("intact.tcc");
  writeArtifact(a, path);
  auto before = readFile(path);
  // A directory where the temporary file should go makes the write fail.
  ASSERT_EQ(::mkdir((path + ".tmp").c_str(), 0755), 0);
  Artifact changed = a;
  changed.meta["lr"] = "0.5";
  EXPECT_THROW(writeArtifact(changed, path), Error);
  ::rmdir((path + ".tmp").c_str());
  EXPECT_EQ(readFile(path), before);

  changed.programs[0].instrs[1].fattrs[0] = NAN; // JSON cannot hold NaN
  try {
    writeArtifact(changed, path);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos);
  }
  EXPECT_EQ(readFile(path), before);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);
  std::remove(path.c_str());
}

TEST(Artifact, ReadMissingFileNamesIt) {
  try {
    readArtifact("/nonexistent/model.tcc");
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("/nonexistent/model.tcc: cannot open", 0),
        0u);
  }
}

TEST(Artifact, ReadingADirectoryNamesIt) {
  try {
    readArtifact(::testing::TempDir());
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(": is a directory"),
              std::string::npos)
        << e.what();
  }
}

// A file's blob is a read-only mapping of it: releasing pages changes
// nothing a reader sees (they are read again from the file), the checksum
// is the file's, and growing the blob copies it into owned bytes.
TEST(Artifact, ReadBlobIsMappedAndReleasable) {
  Artifact a = sampleArtifact();
  std::string path = tempPath("mapped.tcc");
  writeArtifact(a, path);
  Artifact b = readArtifact(path);
  ASSERT_TRUE(b.blob.mapped());
  EXPECT_FALSE(a.blob.mapped());
  EXPECT_EQ(a.blob, b.blob);
  b.blob.release(0, static_cast<int64_t>(b.blob.size()));
  b.blob.release(-5, 3);                   // ignored: out of range
  b.blob.release(0, 1 << 30);              // ignored: past the end
  EXPECT_EQ(a.blob, b.blob);
  auto bytes = format::serialize(a);
  EXPECT_EQ(artifactChecksum(b), format::getU32(bytes.data() + 32));
  EXPECT_EQ(artifactChecksum(a), artifactChecksum(b));
  int64_t at = b.addBlob("xyz", 3);
  EXPECT_FALSE(b.blob.mapped());
  EXPECT_EQ(std::memcmp(b.blob.data() + at, "xyz", 3), 0);
  EXPECT_EQ(std::memcmp(b.blob.data(), a.blob.data(), a.blob.size()), 0);
  std::remove(path.c_str());
}

/// sampleArtifact with --weights seeded: w drawn from a normal, the step
/// counter a constant; neither has bytes in the blob.
static Artifact seededArtifact() {
  Artifact a = sampleArtifact();
  a.tensors[1].dataOffset = -1;
  a.tensors[1].init = {InitSpec::Kind::Normal, 0.01, 0.02,
                       0x8000000000000005ull}; // above INT64_MAX
  a.tensors[2].dataOffset = -1;
  a.tensors[2].init = {InitSpec::Kind::Constant, 3, 0, 0};
  return a;
}

TEST(Artifact, SeededInitializersRoundTrip) {
  Artifact a = seededArtifact();
  std::string path = tempPath("seeded.tcc");
  writeArtifact(a, path);
  Artifact b = readArtifact(path);
  std::remove(path.c_str());
  expectSame(a, b);
  EXPECT_EQ(b.tensors[0].init.kind, InitSpec::Kind::Blob); // input: none
  EXPECT_EQ(b.tensors[3].init.kind, InitSpec::Kind::Blob); // constant: bytes
  // Uniform too, and a manifest written by hand.
  a.tensors[1].init = {InitSpec::Kind::Uniform, -0.5, 0.25, 9};
  expectSame(a, parseArtifact(format::serialize(a).data(),
                              format::serialize(a).size(), "model.tcc"));
}

/// sampleArtifact plus tcc-shadow-weights' bf16 copy of w.
static Artifact castArtifact() {
  Artifact a = sampleArtifact();
  TensorInfo c = tensor("w.bf16", DType::BF16, {4, 3}, TensorKind::State);
  c.init.kind = InitSpec::Kind::Cast;
  c.init.source = "w";
  a.tensors.push_back(c);
  return a;
}

TEST(Artifact, CastInitializersRoundTripAndAreChecked) {
  Artifact a = castArtifact();
  std::vector<uint8_t> bytes = format::serialize(a);
  expectSame(a, parseArtifact(bytes.data(), bytes.size(), "model.tcc"));
  a.tensors[5].init.source = "nope";
  expectRejected(format::serialize(a), "tensor 'w.bf16' (id 5): cast "
                                       "initializer of unknown tensor 'nope'");
  a.tensors[5].init.source = "step";
  expectRejected(format::serialize(a),
                 "tensor 'w.bf16' (id 5): cast initializer of 'step', a "
                 "f32[] state; expected an f32[4,3] param");
  a = castArtifact();
  a.tensors[5].dtype = DType::F32;
  expectRejected(format::serialize(a),
                 "tensor 'w.bf16' (id 5): a cast initializer belongs to a "
                 "bf16 or f16 state, not a f32 state");
  a = castArtifact();
  a.tensors[5].shape = {12};
  expectRejected(format::serialize(a), "expected an f32[12] param");
}

TEST(Artifact, BadSeededInitializersAreRejected) {
  Artifact a = seededArtifact();
  a.tensors[1].init.b = -0.02;
  expectRejected(format::serialize(a),
                 "tensor 'w' (id 1): normal initializer has a negative "
                 "standard deviation");
  a = seededArtifact();
  a.tensors[1].init = {InitSpec::Kind::Uniform, 1, 0.5, 0};
  expectRejected(format::serialize(a),
                 "tensor 'w' (id 1): uniform initializer has low 1.000000 "
                 "above high 0.500000");
  a = seededArtifact();
  a.tensors[3].init = {InitSpec::Kind::Constant, 7, 0, 0};
  expectRejected(format::serialize(a),
                 "tensor 'c' (id 3): a constant cannot have a seeded "
                 "initializer");
  a = seededArtifact();
  a.tensors[0].init = {InitSpec::Kind::Constant, 0, 0, 0};
  expectRejected(format::serialize(a),
                 "tensor 'x' (id 0): an input cannot have a seeded "
                 "initializer");
  a = seededArtifact();
  a.tensors[4].init = {InitSpec::Kind::Normal, 0, 1, 0};
  expectRejected(format::serialize(a),
                 "tensor 'y' (id 4): a temp cannot have a seeded initializer");
  a = seededArtifact();
  a.tensors[1].dataOffset = 0;
  expectRejected(format::serialize(a),
                 "tensor 'w' (id 1): has both a normal initializer and "
                 "initial data");
  a = seededArtifact();
  a.tensors[2].dtype = DType::I64;
  a.tensors[2].init = {InitSpec::Kind::Uniform, 0, 1, 0};
  expectRejected(format::serialize(a),
                 "tensor 'step' (id 2): a uniform initializer needs a float "
                 "tensor, not i64");
  a.tensors[2].init = {InitSpec::Kind::Constant, 0.5, 0, 0};
  expectRejected(format::serialize(a),
                 "tensor 'step' (id 2): constant initializer 0.500000 of an "
                 "i64 tensor is not an i64 value");
  a.tensors[2].init = {InitSpec::Kind::Constant, 1e19, 0, 0};
  expectRejected(format::serialize(a), "is not an i64 value");
  a.tensors[2].init = {InitSpec::Kind::Constant, -2, 0, 0};
  EXPECT_NO_THROW(validateArtifact(a));
  // Not finite: the writer refuses it (JSON has no NaN), the validator too.
  a = seededArtifact();
  a.tensors[1].init.a = INFINITY;
  EXPECT_THROW(format::serialize(a), Error);
  try {
    validateArtifact(a);
    ADD_FAILURE() << "accepted an infinite mean";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("non-finite parameter"),
              std::string::npos)
        << e.what();
  }

  // Malformed "init" objects in the manifest.
  std::string head = R"({"format":"tcc-artifact","version":2,"programs":[],)"
                     R"("tensors":[{"name":"w","dtype":"f32","shape":[4],)"
                     R"("kind":"param","init":)";
  expectRejected(withManifest(head + R"({"kind":"xavier","a":0,"b":1,)"
                                     R"("seed":0}}]})"),
                 "unknown initializer kind 'xavier' (expected blob, "
                 "constant, normal, uniform or cast)");
  expectRejected(withManifest(head + R"({"kind":"normal","a":0,"b":1}}]})"),
                 "missing field 'seed'");
  expectRejected(withManifest(head + R"({"kind":"normal","a":0,"b":1,)"
                                     R"("seed":-1}}]})"),
                 "tensors[0] ('w').init.seed: expected an unsigned integer");
  expectRejected(withManifest(head + R"({"kind":"normal","a":"0","b":1,)"
                                     R"("seed":1}}]})"),
                 "tensors[0] ('w').init.a: expected a number");
  // A valid one parses: no blob bytes needed.
  std::string ok = head + R"({"kind":"normal","a":0,"b":0.5,"seed":1}}]})";
  std::vector<uint8_t> bytes = withManifest(ok);
  Artifact b = parseArtifact(bytes.data(), bytes.size(), "model.tcc");
  EXPECT_EQ(b.tensors[0].init.kind, InitSpec::Kind::Normal);
  EXPECT_EQ(b.tensors[0].init.b, 0.5);
}

/// sampleArtifact with GPU code: one generated kernel whose output may be
/// written over its input (in place).
static Artifact deviceArtifact() {
  Artifact a = sampleArtifact();
  const char cubin[] = "not really a cubin";
  a.device.arch = "sm_90a";
  a.device.offset = a.addBlob(cubin, sizeof(cubin));
  a.device.size = sizeof(cubin);
  DeviceKernel k;
  k.symbol = "tcc_fused_0";
  k.mapping = "elements";
  k.rows = 2;
  k.cols = 6;
  k.block = 256;
  k.inputs = {{DType::F32, 12}, {DType::I64, 12}};
  k.outputs = {{DType::F32, 12}};
  k.inPlace = {{0, 0}};
  a.device.kernels.push_back(k);
  return a;
}

static void expectInvalid(const Artifact &a, const std::string &needle) {
  try {
    validateArtifact(a);
    ADD_FAILURE() << "accepted; expected: " << needle;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << e.what();
  }
}

TEST(Artifact, DeviceKernelTablesAreChecked) {
  Artifact a = deviceArtifact();
  auto bytes = format::serialize(a);
  Artifact back = parseArtifact(bytes.data(), bytes.size(), "model.tcc");
  ASSERT_EQ(back.device.kernels.size(), 1u);
  EXPECT_EQ(back.device.kernels[0].inPlace, a.device.kernels[0].inPlace);
  // A block per row with its shared memory comes back as written.
  a.device.kernels[0].mapping = "block_rows";
  a.device.kernels[0].smem = 100608;
  bytes = format::serialize(a);
  back = parseArtifact(bytes.data(), bytes.size(), "model.tcc");
  EXPECT_EQ(back.device.kernels[0].mapping, "block_rows");
  EXPECT_EQ(back.device.kernels[0].smem, 100608);
  EXPECT_EQ(back.device.kernels[0].gridPerSm, 0);
  // ... and a strided grid of them.
  a.device.kernels[0].gridPerSm = 1;
  bytes = format::serialize(a);
  back = parseArtifact(bytes.data(), bytes.size(), "model.tcc");
  EXPECT_EQ(back.device.kernels[0].gridPerSm, 1);
  a.device.kernels[0].gridPerSm = 33;
  expectInvalid(a, "device kernel 0 ('tcc_fused_0'): 33 blocks a "
                   "multiprocessor; a strided grid is 1 to 32 of a block_rows "
                   "kernel's blocks, else 0");

  // Column sums (a rows kernel with a fin) come back as written; their
  // slices and fin are checked.
  a = deviceArtifact();
  a.device.kernels[0].mapping = "rows";
  a.device.kernels[0].colSums = 1;
  a.device.kernels[0].sliceRows = 1;
  a.device.kernels[0].finSymbol = "tcc_fused_0_fin";
  bytes = format::serialize(a);
  back = parseArtifact(bytes.data(), bytes.size(), "model.tcc");
  EXPECT_EQ(back.device.kernels[0].colSums, 1);
  EXPECT_EQ(back.device.kernels[0].sliceRows, 1);
  EXPECT_EQ(back.device.kernels[0].partialCount(), 2 * 6);
  a.device.kernels[0].sliceRows = 3; // more than the kernel's 2 rows
  expectInvalid(a, "device kernel 0 ('tcc_fused_0'): 1 column sums over "
                   "slices of 3 rows; column sums are at most the outputs, of "
                   "a rows kernel with a fin and no per-row partials");
  a.device.kernels[0].sliceRows = 1;
  a.device.kernels[0].colSums = 2; // one output
  expectInvalid(a, "2 column sums over slices of 1 rows");
  a.device.kernels[0].colSums = 1;
  a.device.kernels[0].finSymbol = "";
  expectInvalid(a, "1 column sums over slices of 1 rows");
  a.device.kernels[0].finSymbol = "tcc_fused_0_fin";
  a.device.kernels[0].mapping = "elements";
  expectInvalid(a, "1 column sums over slices of 1 rows");

  a = deviceArtifact(); // mapping "rows"
  a.device.kernels[0].gridPerSm = 1;
  expectInvalid(a, "device kernel 0 ('tcc_fused_0'): 1 blocks a "
                   "multiprocessor; a strided grid is 1 to 32");
  a = deviceArtifact();
  a.device.kernels[0].mapping = "tiles";
  expectInvalid(a, "device kernel 0 ('tcc_fused_0'): unknown mapping 'tiles'");
  a = deviceArtifact();
  a.device.kernels[0].smem = kMaxKernelSmem + 16;
  expectInvalid(a, "device kernel 0 ('tcc_fused_0'): 232464 bytes of shared "
                   "memory, outside [0, 232448]");
  a = deviceArtifact();
  a.device.kernels[0].smem = -1;
  expectInvalid(a, "-1 bytes of shared memory");
  a = deviceArtifact();
  a.device.kernels[0].block = 100;
  expectInvalid(a, "block of 100 threads is not a multiple of 32");
  a = deviceArtifact();
  a.device.kernels[0].symbol.clear();
  expectInvalid(a, "empty symbol");
  // In-place pairs name an output and an input of one dtype and size.
  a = deviceArtifact();
  a.device.kernels[0].inPlace = {{0, 1}}; // an i64 input
  expectInvalid(a, "in-place pair (0, 1) names no output and input of one "
                   "dtype and size");
  a = deviceArtifact();
  a.device.kernels[0].inPlace = {{1, 0}}; // no output 1
  expectInvalid(a, "in-place pair (1, 0)");
  a = deviceArtifact();
  a.device.kernels[0].outputs = {{DType::F32, 10}};
  expectInvalid(a, "in-place pair (0, 0)");

  // A pair in the manifest is two integers.
  bytes = format::serialize(deviceArtifact());
  uint64_t m = format::getU64(bytes.data() + 16);
  std::string manifest(bytes.begin() + format::kHeaderSize,
                       bytes.begin() + format::kHeaderSize + m);
  size_t at = manifest.find("\"in_place\":[[0,0]]");
  ASSERT_NE(at, std::string::npos) << manifest;
  manifest.replace(at, 18, "\"in_place\":[[0]]");
  uint64_t start = format::alignUp(format::kHeaderSize + m);
  std::vector<uint8_t> blob(bytes.begin() + start, bytes.end());
  expectRejected(withManifest(manifest, blob),
                 "device_code.kernels[0].in_place[0]: expected an [output, "
                 "input] pair");
}

// Each cross-reference check of validateArtifact on a file that passes the
// checksum (a crafted or damaged-then-resealed artifact): the message names
// the tensor, program or instr and what is wrong, and the file.
TEST(Artifact, CrossReferencesAreChecked) {
  struct Case {
    void (*edit)(Artifact &);
    const char *want;
  } cases[] = {
      {[](Artifact &a) { a.tensors[1].name.clear(); },
       "tensor '' (id 1): empty name"},
      {[](Artifact &a) { a.tensors[2].name = "w"; },
       "tensor 'w' (id 2): duplicate tensor name"},
      {[](Artifact &a) {
         a.tensors[1].shape = {int64_t(1) << 40, 1 << 20};
       },
       "tensor 'w' (id 1): shape [1099511627776,1048576] is too large"},
      {[](Artifact &a) { a.tensors[4].arenaOffset = 66; },
       "tensor 'y' (id 4): arena offset 66 is not aligned to its element "
       "size"},
      {[](Artifact &a) { a.tensors[4].program = "eval"; },
       "tensor 'y' (id 4): temp of unknown program 'eval'"},
      {[](Artifact &a) { a.programs[1].name = "train_step"; },
       "duplicate program name 'train_step'"},
      {[](Artifact &a) { a.programs[1].name.clear(); },
       "a program has an empty name"},
      {[](Artifact &a) { a.programs[1].arenaBytes = -1; },
       "program 'forward': invalid arena size -1"},
      {[](Artifact &a) { a.programs[0].inputs = {1}; },
       "program 'train_step': program input tensor 'w' (id 1) is a param, "
       "not an input"},
      {[](Artifact &a) { a.programs[0].instrs[0].kernel.clear(); },
       "program 'train_step' instr 0 (): empty kernel name"},
      {[](Artifact &a) { a.programs[0].instrs[1].outputs = {3}; },
       "program 'train_step' instr 1 (sgd_update): writes constant tensor "
       "'c' (id 3)"},
      {[](Artifact &a) { a.programs[1].outputs = {4}; },
       "program 'forward': output tensor 'y' (id 4) is a temp the program "
       "does not write"},
      {[](Artifact &a) { a.onnxSize = 1 << 20; },
       "embedded ONNX model: bytes ["},
      {[](Artifact &a) {
         a.hostLibOffset = 0;
         a.hostLibSize = 4;
       },
       "the host library names no ISA"},
      {[](Artifact &a) {
         a.device.offset = 0;
         a.device.size = 4;
         a.device.arch = "compute_90";
       },
       "device code: architecture 'compute_90' is not of the form sm_NN"},
  };
  for (const Case &c : cases) {
    Artifact a = sampleArtifact();
    c.edit(a);
    expectRejected(format::serialize(a), c.want);
  }
  // Not written to a file (the writer keeps no kernels without a cubin).
  Artifact d = sampleArtifact();
  d.device.kernels.push_back(DeviceKernel());
  expectInvalid(d, "device code: kernels but no cubin");
  // The untouched artifact parses: each edit is the cause.
  std::vector<uint8_t> good = format::serialize(sampleArtifact());
  EXPECT_NO_THROW(parseArtifact(good.data(), good.size(), "model.tcc"));
}

// Manifest fields of the wrong type or out of range, named by their path.
TEST(Artifact, ManifestFieldTypesAreNamed) {
  std::string head = R"({"format":"tcc-artifact","version":2,"programs":[],)";
  expectRejected(withManifest(head + R"("meta":[],"tensors":[]})"),
                 "manifest.meta: expected a JSON object");
  expectRejected(withManifest(head + R"("meta":{"lr":1},"tensors":[]})"),
                 "manifest.meta.lr: expected a string");
  expectRejected(withManifest(head + R"("tensors":[{"name":"x","dtype":"f32",)"
                                     R"("shape":[2],"kind":"weight"}]})"),
                 "unknown tensor kind 'weight' (expected param, state, input, "
                 "constant or temp)");
  expectRejected(withManifest(head + R"("tensors":[{"name":"x","dtype":"f64",)"
                                     R"("shape":[2],"kind":"input"}]})"),
                 "unknown dtype 'f64' (expected f32, i64, bf16 or f16)");
  expectRejected(withManifest(head + R"("tensors":[{"name":"x","dtype":"f32",)"
                                     R"("shape":[18446744073709551615],)"
                                     R"("kind":"input"}]})"),
                 "tensors[0] ('x').shape: integer out of range");
  expectRejected(withManifest(head + R"("tensors":[{"name":7,"dtype":"f32",)"
                                     R"("shape":[2],"kind":"input"}]})"),
                 "tensors[0].name: expected a string");
}

// Values JSON cannot hold are refused when writing, naming the tensor.
TEST(Artifact, NonFiniteInitializerIsRefusedOnWrite) {
  Artifact a = sampleArtifact();
  a.tensors[1].dataOffset = -1;
  a.tensors[1].init.kind = InitSpec::Kind::Normal;
  a.tensors[1].init.b = INFINITY;
  std::string path = tempPath("nonfinite.tcc");
  try {
    writeArtifact(a, path);
    ADD_FAILURE() << "accepted an infinite standard deviation";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(),
                 (path + ": tensor 'w': initializer is not finite").c_str());
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);
}
