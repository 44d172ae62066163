//===- CheckpointTest.cpp - Checkpoint format, directories, failures ------===//
#include "runtime/train/Checkpoint.h"
#include "runtime/core/ArtifactFormat.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/feeder/HostArray.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tcc::rt;

namespace {

std::string tempDir(const std::string &name) {
  std::string d = ::testing::TempDir() + "tcc_ckpt_" +
                  std::to_string(::getpid()) + "_" + name;
  std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return d;
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

bool exists(const std::string &path) {
  return ::access(path.c_str(), F_OK) == 0;
}

/// The message of the Error `f` throws ("" and a test failure if none).
template <class F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

/// Persistent tensors of every dtype and rank, plus their backing store.
struct Sample {
  std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  std::vector<float> m = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  float step = 42.0f;
  std::vector<int64_t> counter = {1234567890123LL, -5};
  CheckpointMeta meta;

  Sample() {
    meta.artifactCrc = 0xdeadbeef;
    meta.artifactSource = "mlp.onnx";
    meta.step = 20;
    meta.loss = 0.625f;
    meta.totalSteps = 60;
    meta.epochs = -1;
    meta.batchSize = 8;
    meta.batchesPerEpoch = 5;
    meta.blasThreads = 4;
    meta.seed = 0xfedcba9876543210ULL; // needs all 64 bits
    meta.shuffle = true;
    meta.data = {{"x", "data/x.npy", "f32", {40, 64}, 0x11223344},
                 {"labels", "data/y.npy", "i64", {40}, 0x55667788}};
  }
  std::vector<TensorRef> tensors() const {
    return {
        {"w", DType::F32, {2, 3}, TensorKind::Param, w.data()},
        {"w.exp_avg", DType::F32, {2, 3}, TensorKind::State, m.data()},
        {"adamw.step", DType::F32, {}, TensorKind::State, &step},
        {"rng.counter", DType::I64, {2}, TensorKind::State, counter.data()}};
  }
  std::vector<uint8_t> bytes() const {
    return serializeCheckpoint(meta, tensors());
  }
};

/// Recomputes the checksum of an edited image, as the writer does.
void reseal(std::vector<uint8_t> &b) {
  format::putU32(b.data() + 32, 0);
  format::putU32(b.data() + 32,
                 static_cast<uint32_t>(crc32(0L, b.data(), b.size())));
}

/// An image whose manifest is `edit`ed and then resealed, so only the
/// manifest validation can catch the problem.
std::vector<uint8_t> withManifest(const std::vector<uint8_t> &orig,
                                  void (*edit)(nlohmann::json &)) {
  uint64_t m = format::getU64(orig.data() + 16);
  uint64_t d = format::getU64(orig.data() + 24);
  nlohmann::json j =
      nlohmann::json::parse(orig.begin() + 64, orig.begin() + 64 + m);
  edit(j);
  std::string text = j.dump();
  uint64_t start = (64 + text.size() + 63) / 64 * 64;
  std::vector<uint8_t> out(start + d, 0);
  std::memcpy(out.data(), orig.data(), 64);
  format::putU64(out.data() + 16, text.size());
  std::memcpy(out.data() + 64, text.data(), text.size());
  std::memcpy(out.data() + start, orig.data() + orig.size() - d, d);
  reseal(out);
  return out;
}

/// A session holding the sample's tensors (as an artifact would declare
/// them), with `wShape` for "w".
Artifact sampleArtifact(std::vector<int64_t> wShape = {2, 3}) {
  Artifact a;
  Sample s;
  for (const TensorRef &r : s.tensors()) {
    TensorInfo t;
    t.name = r.name;
    t.dtype = r.dtype;
    t.shape = r.name == "w" ? wShape : r.shape;
    t.kind = r.kind;
    std::vector<uint8_t> zeros(static_cast<size_t>(t.byteSize()), 0);
    t.dataOffset = a.addBlob(zeros.data(), zeros.size());
    a.tensors.push_back(t);
  }
  Program p;
  p.name = "train_step";
  a.programs.push_back(p);
  return a;
}

} // namespace

TEST(CheckpointTest, RoundTripInMemoryAndOnDisk) {
  Sample s;
  std::string dir = tempDir("roundtrip");
  std::string path = dir + "/one.tcckpt";
  writeCheckpoint(path, s.meta, s.tensors());
  EXPECT_FALSE(exists(path + ".tmp"));
  EXPECT_EQ(readFile(path), s.bytes());

  for (const Checkpoint &c :
       {parseCheckpoint(s.bytes(), "mem"), readCheckpoint(path)}) {
    const CheckpointMeta &m = c.meta;
    EXPECT_EQ(m.artifactCrc, s.meta.artifactCrc);
    EXPECT_EQ(m.artifactSource, "mlp.onnx");
    EXPECT_EQ(m.step, 20);
    EXPECT_EQ(m.loss, 0.625f);
    EXPECT_EQ(m.totalSteps, 60);
    EXPECT_EQ(m.epochs, -1);
    EXPECT_EQ(m.batchSize, 8);
    EXPECT_EQ(m.batchesPerEpoch, 5);
    EXPECT_EQ(m.blasThreads, 4);
    EXPECT_EQ(m.seed, s.meta.seed);
    EXPECT_TRUE(m.shuffle);
    ASSERT_EQ(m.data.size(), 2u);
    EXPECT_EQ(m.data[1].name, "labels");
    EXPECT_EQ(m.data[1].path, "data/y.npy");
    EXPECT_EQ(m.data[1].dtype, "i64");
    EXPECT_EQ(m.data[1].shape, std::vector<int64_t>({40}));
    EXPECT_EQ(m.data[1].crc32, 0x55667788u);
    auto refs = s.tensors();
    ASSERT_EQ(c.tensors.size(), refs.size());
    for (size_t i = 0; i < refs.size(); ++i) {
      const CheckpointTensor &t = c.tensors[i];
      EXPECT_EQ(t.name, refs[i].name);
      EXPECT_EQ(t.dtype, refs[i].dtype);
      EXPECT_EQ(t.shape, refs[i].shape);
      EXPECT_EQ(t.kind, refs[i].kind);
      EXPECT_EQ(t.offset % kArtifactAlign, 0u);
      ASSERT_EQ(t.size, static_cast<uint64_t>(refs[i].byteSize()));
      EXPECT_EQ(std::memcmp(c.data(t), refs[i].data, t.size), 0) << t.name;
    }
  }
}

TEST(CheckpointTest, RestoresIntoSessionByName) {
  Sample s;
  Checkpoint c = parseCheckpoint(s.bytes(), "c.tcckpt");
  Artifact a = sampleArtifact();
  cpu::CpuSession session(a, ExecMode::Compiled);
  restoreCheckpoint(session, c);
  EXPECT_EQ(std::memcmp(session.data("w"), s.w.data(), 24), 0);
  EXPECT_EQ(std::memcmp(session.data("w.exp_avg"), s.m.data(), 24), 0);
  EXPECT_EQ(*static_cast<float *>(session.data("adamw.step")), 42.0f);
  EXPECT_EQ(static_cast<int64_t *>(session.data("rng.counter"))[0],
            1234567890123LL);
  // And back: what persistentTensors() sees is what was restored.
  auto again = serializeCheckpoint(s.meta, persistentTensors(session));
  EXPECT_EQ(again, s.bytes());
}

// A sharded run restores its state shards itself: a null destination is
// checked (name, shape) but not copied into.
TEST(CheckpointTest, NullDestinationIsCheckedNotCopied) {
  Sample s;
  Checkpoint c = parseCheckpoint(s.bytes(), "c.tcckpt");
  Artifact a = sampleArtifact();
  cpu::CpuSession session(a, ExecMode::Compiled);
  auto skipMoment = [&](int32_t id) -> void * {
    return a.tensors[id].name == "w.exp_avg" ? nullptr
                                             : hostTensor(session, id);
  };
  restoreCheckpoint(a.tensors, skipMoment, c);
  EXPECT_EQ(std::memcmp(session.data("w"), s.w.data(), 24), 0);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(static_cast<float *>(session.data("w.exp_avg"))[i], 0.0f);
  std::vector<TensorInfo> other = a.tensors;
  other[a.findTensor("w.exp_avg")].shape = {3};
  EXPECT_THROW(restoreCheckpoint(other, skipMoment, c), Error);
}

TEST(CheckpointTest, EveryFlippedByteIsDetected) {
  std::vector<uint8_t> good = Sample().bytes();
  ASSERT_GT(good.size(), 500u);
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x10;
    std::string msg = errorOf([&] { parseCheckpoint(bad, "ckpt-7.tcckpt"); });
    EXPECT_EQ(msg.rfind("ckpt-7.tcckpt: ", 0), 0u)
        << "byte " << i << ": " << msg;
    if (i >= 64) {
      EXPECT_NE(msg.find("checksum mismatch"), std::string::npos)
          << "byte " << i << ": " << msg;
    }
  }
}

TEST(CheckpointTest, EveryTruncationIsDetected) {
  std::vector<uint8_t> good = Sample().bytes();
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> bad(good.begin(), good.begin() + n);
    std::string msg = errorOf([&] { parseCheckpoint(bad, "t.tcckpt"); });
    const char *want =
        n < 8 ? "t.tcckpt: not a tcc checkpoint" : "t.tcckpt: truncated";
    EXPECT_EQ(msg.rfind(want, 0), 0u) << n << " bytes: " << msg;
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_NE(errorOf([&] {
              parseCheckpoint(longer, "t");
            }).find("1 unexpected bytes after the tensor data"),
            std::string::npos);
}

TEST(CheckpointTest, WrongVersionIsNamed) {
  std::vector<uint8_t> b = Sample().bytes();
  format::putU32(b.data() + 8, kCheckpointVersion + 1);
  EXPECT_EQ(errorOf([&] { parseCheckpoint(b, "v.tcckpt"); }),
            "v.tcckpt: checkpoint format version 2 is not supported (this tcc "
            "reads version 1)");
  reseal(b); // a consistent file of a newer version: same answer
  EXPECT_NE(errorOf([&] { parseCheckpoint(b, "v.tcckpt"); }).find("version 2"),
            std::string::npos);
  std::vector<uint8_t> art(64, 0);
  std::memcpy(art.data(), "TCCARTF", 8);
  EXPECT_EQ(errorOf([&] { parseCheckpoint(art, "m.tcc"); }),
            "m.tcc: not a tcc checkpoint (bad magic)");
}

TEST(CheckpointTest, CraftedManifestsAreRejected) {
  std::vector<uint8_t> good = Sample().bytes();
  struct Case {
    void (*edit)(nlohmann::json &);
    const char *want;
  } cases[] = {
      {[](nlohmann::json &j) {
         j["tensors"][0]["shape"] = {3, 3};
       },
       "tensors[0] ('w'): 24 bytes, but shape [3,3] f32 needs 36"},
      {[](nlohmann::json &j) {
         j["tensors"][0]["shape"] = {1LL << 40, 1LL << 40};
       },
       "needs more than the file holds"},
      {[](nlohmann::json &j) { j["tensors"][1]["offset"] = 0; },
       "tensors[1] ('w.exp_avg'): data range [0, +24) is misaligned, overlaps"},
      {[](nlohmann::json &j) { j["tensors"][1]["offset"] = 8; }, "misaligned"},
      {[](nlohmann::json &j) { j["tensors"][3]["offset"] = 1 << 20; },
       "outside the"},
      {[](nlohmann::json &j) { j["tensors"][1]["name"] = "w"; },
       "name appears twice"},
      {[](nlohmann::json &j) { j["tensors"][0]["kind"] = "temp"; },
       "kind 'temp' is not saved in checkpoints"},
      {[](nlohmann::json &j) { j["tensors"][0]["dtype"] = "f64"; },
       "unknown dtype 'f64'"},
      {[](nlohmann::json &j) { j["tensors"].erase(3); },
       "bytes after the last tensor"},
      {[](nlohmann::json &j) { j["step"] = 61; }, "step 61 is outside [0, 60]"},
      {[](nlohmann::json &j) { j["step"] = "20"; },
       "manifest.step: expected an integer"},
      {[](nlohmann::json &j) { j["feeder"]["epoch"] = 3; },
       "the feeder position disagrees with step 20"},
      {[](nlohmann::json &j) { j["feeder"]["seed"] = -1; },
       "feeder.seed: expected a non-negative integer"},
      {[](nlohmann::json &j) { j["feeder"]["batches_per_epoch"] = 0; },
       "must be positive"},
      {[](nlohmann::json &j) { j["artifact"]["crc32"] = 1LL << 33; },
       "artifact.crc32: out of range"},
      {[](nlohmann::json &j) { j["run"]["data"][0]["crc32"] = 1LL << 33; },
       "run.data[0].crc32: out of range for a CRC-32"},
      {[](nlohmann::json &j) { j["loss"] = "0.5"; },
       "manifest.loss: expected a number"},
      {[](nlohmann::json &j) { j["feeder"]["shuffle"] = 1; },
       "feeder.shuffle: expected true or false"},
      {[](nlohmann::json &j) { j["run"]["epochs"] = -2; },
       "run.epochs must be -1 (--steps) or non-negative"},
      {[](nlohmann::json &j) { j["run"]["batch_size"] = 0; },
       "run.batch_size and feeder.batches_per_epoch must be positive"},
      {[](nlohmann::json &j) { j.erase("run"); }, "missing field 'run'"},
      {[](nlohmann::json &j) { j["format"] = "tcc-artifact"; },
       "format is not 'tcc-checkpoint'"},
      {[](nlohmann::json &j) { j["version"] = 9; },
       "manifest.version disagrees with the header"},
      {[](nlohmann::json &j) {
         nlohmann::json deep = 1;
         for (int i = 0; i < 40; ++i)
           deep = nlohmann::json::array({deep});
         j["extra"] = deep;
       },
       "nested too deeply"},
  };
  for (const Case &c : cases) {
    std::string msg = errorOf(
        [&] { parseCheckpoint(withManifest(good, c.edit), "x.tcckpt"); });
    EXPECT_EQ(msg.rfind("x.tcckpt: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.want), std::string::npos) << msg;
  }
  // The untouched manifest, resealed, still parses: the edits are the cause.
  EXPECT_NO_THROW(
      parseCheckpoint(withManifest(good, [](nlohmann::json &) {}), "x"));
}

TEST(CheckpointTest, MismatchedTensorsAreNamedAndNothingIsRestored) {
  Sample s;
  Checkpoint c = parseCheckpoint(s.bytes(), "dir/ckpt-00000020.tcckpt");
  Artifact a = sampleArtifact({3, 2});
  cpu::CpuSession session(a, ExecMode::Compiled);
  EXPECT_EQ(errorOf([&] { restoreCheckpoint(session, c); }),
            "dir/ckpt-00000020.tcckpt: tensor 'w' is param [2,3] f32 in the "
            "checkpoint but param [3,2] f32 in the artifact");
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(static_cast<float *>(session.data("w.exp_avg"))[i], 0.0f);

  Artifact extra = sampleArtifact();
  extra.tensors.push_back(extra.tensors[0]);
  extra.tensors.back().name = "b";
  cpu::CpuSession s2(extra, ExecMode::Eager);
  EXPECT_NE(
      errorOf([&] {
        restoreCheckpoint(s2, c);
      }).find("ckpt-00000020.tcckpt: has no tensor 'b' (param [2,3] f32)"),
      std::string::npos);

  Artifact fewer = sampleArtifact();
  fewer.tensors.pop_back();
  cpu::CpuSession s3(fewer, ExecMode::Compiled);
  EXPECT_NE(errorOf([&] {
              restoreCheckpoint(s3, c);
            }).find("tensor 'rng.counter' is not a param or state"),
            std::string::npos);
}

TEST(CheckpointTest, ResumeChecksArtifactAndRunOptions) {
  Sample s;
  Checkpoint c = parseCheckpoint(s.bytes(), "d/ckpt-00000020.tcckpt");
  EXPECT_NO_THROW(checkResumable(c, s.meta));
  auto msgFor = [&](void (*edit)(CheckpointMeta &)) {
    CheckpointMeta now = s.meta;
    edit(now);
    return errorOf([&] { checkResumable(c, now); });
  };
  std::string m = msgFor([](CheckpointMeta &n) {
    n.artifactCrc = 0x12345678;
    n.artifactSource = "other.onnx";
  });
  EXPECT_EQ(
      m.rfind("cannot resume from d/ckpt-00000020.tcckpt: it was written "
              "for another artifact (source 'mlp.onnx', CRC-32 0xdeadbeef)",
              0),
      0u)
      << m;
  EXPECT_NE(m.find("other.onnx', CRC-32 0x12345678"), std::string::npos) << m;
  EXPECT_NE(msgFor([](CheckpointMeta &n) { n.totalSteps = 80; })
                .find("its run was --steps 60 (60 steps), this run is --steps "
                      "80 (80 steps)"),
            std::string::npos);
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.epochs = 12;
            }).find("this run is --epochs 12"),
            std::string::npos);
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.seed = 7;
            }).find("this run --seed 7; pass the same seed"),
            std::string::npos);
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.shuffle = false;
            }).find("its run shuffled, this run uses --no-shuffle"),
            std::string::npos);
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.batchesPerEpoch = 6;
            }).find("batches per epoch"),
            std::string::npos);
  EXPECT_NE(
      msgFor([](CheckpointMeta &n) {
        n.data[0].crc32 = 1;
        n.data[0].path = "elsewhere/x.npy";
      })
          .find("--data x=elsewhere/x.npy (f32 [40,64], CRC-32 0x00000001) "
                "differs from the data the run was trained on, data/x.npy"),
      std::string::npos);
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.data.pop_back();
            }).find("its run was fed input 'labels'"),
            std::string::npos);
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.data.push_back({"mask", "m.npy", "f32", {40}, 7});
            }).find("this run feeds input 'mask', its run did not"),
            std::string::npos);
  // Other data changes the run's geometry too: the data is what is named.
  EXPECT_NE(msgFor([](CheckpointMeta &n) {
              n.data[0].shape = {80, 64};
              n.totalSteps = 120;
              n.batchesPerEpoch = 10;
            })
                .find("--data x=data/x.npy (f32 [80,64], CRC-32 0x11223344) "
                      "differs from the data the run was trained on"),
            std::string::npos);
  // And the other way round of shuffling.
  Sample ordered;
  ordered.meta.shuffle = false;
  Checkpoint oc = parseCheckpoint(ordered.bytes(), "d/ckpt-00000020.tcckpt");
  EXPECT_EQ(errorOf([&] { checkResumable(oc, s.meta); }),
            "cannot resume from d/ckpt-00000020.tcckpt: its run used "
            "--no-shuffle, this run shuffles");
  // A moved but identical data file is fine.
  CheckpointMeta moved = s.meta;
  moved.data[0].path = "/elsewhere/x.npy";
  EXPECT_NO_THROW(checkResumable(c, moved));
  // Another BLAS thread count resumes, with a warning.
  CheckpointMeta threads = s.meta;
  threads.blasThreads = 1;
  std::vector<std::string> notes;
  checkResumable(c, threads, [&](const std::string &n) { notes.push_back(n); });
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "warning: d/ckpt-00000020.tcckpt was written by a run "
                      "with 4 BLAS threads, this run has 1 (TCC_NUM_THREADS): "
                      "the losses may differ in the last bits from an "
                      "uninterrupted run");
}

// A data-parallel run's checkpoint records its rank count; resuming with
// another count (another global batch) is refused naming both, and a
// checkpoint from before data-parallel runs counts as one process.
TEST(CheckpointTest, RanksAreRecordedAndMustMatch) {
  Sample two;
  two.meta.ranks = 2;
  Checkpoint c = parseCheckpoint(two.bytes(), "d/ckpt-00000020.tcckpt");
  EXPECT_EQ(c.meta.ranks, 2);
  EXPECT_NO_THROW(checkResumable(c, two.meta));
  Sample one;
  EXPECT_EQ(errorOf([&] { checkResumable(c, one.meta); }),
            "cannot resume from d/ckpt-00000020.tcckpt: its run had 2 "
            "rank(s) (global batch 16), this run has 1 (global batch 8); "
            "resume with mpirun -np 2");
  CheckpointMeta four = two.meta;
  four.ranks = 4;
  EXPECT_NE(errorOf([&] { checkResumable(c, four); })
                .find("this run has 4 (global batch 32); resume with mpirun "
                      "-np 2"),
            std::string::npos);
  Checkpoint old = parseCheckpoint(
      withManifest(one.bytes(),
                   [](nlohmann::json &j) { j["run"].erase("ranks"); }),
      "old");
  EXPECT_EQ(old.meta.ranks, 1);
  EXPECT_NE(errorOf([&] { checkResumable(old, two.meta); })
                .find("its run had 1 rank(s) (global batch 8), this run has "
                      "2 (global batch 16); resume with one process"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              parseCheckpoint(withManifest(one.bytes(),
                                           [](nlohmann::json &j) {
                                             j["run"]["ranks"] = 0;
                                           }),
                              "zero");
            }).find("run.ranks: expected a positive count, got 0"),
            std::string::npos);
}

TEST(CheckpointTest, DataIdentityFollowsContent) {
  HostArray a;
  a.dtype = FileDType::F32;
  a.shape = {2, 2};
  a.bytes.assign(16, 1);
  a.path = "x.npy";
  DataIdentity d1 = dataIdentity("x", a);
  EXPECT_EQ(d1.dtype, "f32");
  EXPECT_EQ(d1.shape, a.shape);
  EXPECT_EQ(d1.path, "x.npy");
  a.bytes[7] = 2;
  EXPECT_NE(dataIdentity("x", a).crc32, d1.crc32);
}

TEST(CheckpointTest, DirectorySavesPrunesAndNames) {
  EXPECT_EQ(checkpointFileName(1200), "ckpt-00001200.tcckpt");
  EXPECT_EQ(checkpointFileName(123456789012), "ckpt-123456789012.tcckpt");
  Sample s;
  std::string dir = tempDir("prune") + "/nested/ckpts";
  std::vector<std::string> warnings;
  auto warn = [&](const std::string &w) { warnings.push_back(w); };
  // The first save creates the directory; then a stale temporary from a
  // crashed write and an unrelated file appear.
  for (int64_t step : {10, 20, 30, 40}) {
    s.meta.step = step;
    EXPECT_EQ(saveCheckpoint(dir, s.meta, s.tensors(), 2, warn),
              dir + "/" + checkpointFileName(step));
    if (step == 10) {
      writeFile(dir + "/ckpt-00000005.tcckpt.tmp", {1, 2, 3});
      writeFile(dir + "/notes.txt", {1});
    }
  }
  EXPECT_TRUE(warnings.empty());
  auto files = listCheckpoints(dir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].step, 30);
  EXPECT_EQ(files[1].step, 40);
  EXPECT_FALSE(exists(dir + "/ckpt-00000005.tcckpt.tmp"));
  EXPECT_TRUE(exists(dir + "/notes.txt"));
  EXPECT_EQ(readCheckpoint(files[1].path).meta.step, 40);
  EXPECT_NE(errorOf([&] {
              saveCheckpoint(dir, s.meta, s.tensors(), 0, warn);
            }).find("--keep-checkpoints must be at least 1"),
            std::string::npos);
  EXPECT_TRUE(listCheckpoints(dir + "/absent").empty());
}

TEST(CheckpointTest, ResumeFallsBackToNewestValid) {
  Sample s;
  std::string dir = tempDir("fallback");
  auto none = [](const std::string &) {};
  for (int64_t step : {10, 20, 30}) {
    s.meta.step = step;
    saveCheckpoint(dir, s.meta, s.tensors(), 5, none);
  }
  // 30 is truncated (a disk that lost its tail), a partial write of 40 was
  // never renamed.
  std::vector<uint8_t> b30 = readFile(dir + "/ckpt-00000030.tcckpt");
  b30.resize(b30.size() - 10);
  writeFile(dir + "/ckpt-00000030.tcckpt", b30);
  writeFile(dir + "/ckpt-00000040.tcckpt.tmp", {'T', 'C', 'C'});
  std::vector<std::string> notes;
  Checkpoint c = loadNewestCheckpoint(
      dir, [&](const std::string &n) { notes.push_back(n); });
  EXPECT_EQ(c.meta.step, 20);
  EXPECT_EQ(c.path, dir + "/ckpt-00000020.tcckpt");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("ckpt-00000030.tcckpt: truncated"), std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("skipping it"), std::string::npos);
  EXPECT_NE(notes[1].find("resuming from the newest valid checkpoint, " + dir +
                          "/ckpt-00000020.tcckpt"),
            std::string::npos);
  // A file of the right format under the wrong name is not trusted.
  std::rename((dir + "/ckpt-00000010.tcckpt").c_str(),
              (dir + "/ckpt-00000025.tcckpt").c_str());
  notes.clear();
  EXPECT_EQ(loadNewestCheckpoint(dir, none).meta.step, 20);
  // A file path is read as is, without falling back.
  EXPECT_NE(errorOf([&] {
              loadNewestCheckpoint(dir + "/ckpt-00000030.tcckpt", none);
            }).find("ckpt-00000030.tcckpt: truncated"),
            std::string::npos);
  EXPECT_EQ(loadNewestCheckpoint(dir + "/ckpt-00000020.tcckpt", none).meta.step,
            20);

  // Nothing valid: every problem is listed.
  writeFile(dir + "/ckpt-00000020.tcckpt", {0, 1, 2});
  writeFile(dir + "/ckpt-00000025.tcckpt", {0, 1, 2});
  std::string msg = errorOf([&] { loadNewestCheckpoint(dir, none); });
  EXPECT_EQ(
      msg.rfind("cannot resume from " + dir + ": no valid checkpoint: ", 0), 0u)
      << msg;
  for (const char *f : {"ckpt-00000030", "ckpt-00000025", "ckpt-00000020"})
    EXPECT_NE(msg.find(f), std::string::npos) << msg;
}

TEST(CheckpointTest, ResumeFromEmptyOrMissingDirectory) {
  std::string dir = tempDir("empty");
  auto none = [](const std::string &) {};
  EXPECT_EQ(errorOf([&] { loadNewestCheckpoint(dir, none); }),
            "cannot resume from " + dir +
                ": the directory holds no checkpoint (ckpt-NNNNNNNN.tcckpt)");
  EXPECT_EQ(errorOf([&] { loadNewestCheckpoint(dir + "/nope", none); }),
            "cannot resume from " + dir + "/nope: No such file or directory");
}

namespace {
/// Makes writes to regular files fail past `bytes` (EFBIG), as a full disk
/// would, for the lifetime of the guard. Works as root, unlike permissions.
struct FileSizeLimit {
  rlimit old;
  void (*oldHandler)(int);
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old);
    oldHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, oldHandler);
  }
};
} // namespace

TEST(CheckpointTest, WriteFailureKeepsPreviousCheckpoint) {
  Sample s;
  std::string dir = tempDir("full");
  auto none = [](const std::string &) {};
  s.meta.step = 10;
  std::string first = saveCheckpoint(dir, s.meta, s.tensors(), 1, none);
  std::vector<uint8_t> before = readFile(first);
  s.meta.step = 20;
  std::string msg;
  {
    FileSizeLimit limit(before.size() / 2);
    msg = errorOf([&] { saveCheckpoint(dir, s.meta, s.tensors(), 1, none); });
  }
  EXPECT_EQ(msg, dir +
                     "/ckpt-00000020.tcckpt: cannot write checkpoint: "
                     "writing " +
                     dir + "/ckpt-00000020.tcckpt.tmp: File too large");
  EXPECT_EQ(readFile(first), before);
  EXPECT_FALSE(exists(dir + "/ckpt-00000020.tcckpt"));
  EXPECT_FALSE(exists(dir + "/ckpt-00000020.tcckpt.tmp"));
  EXPECT_EQ(loadNewestCheckpoint(dir, none).meta.step, 10);

  // Overwriting an existing checkpoint that fails leaves the old one.
  s.meta.step = 10;
  {
    FileSizeLimit limit(100);
    EXPECT_NE(errorOf([&] {
                writeCheckpoint(first, s.meta, s.tensors());
              }).find("File too large"),
              std::string::npos);
  }
  EXPECT_EQ(readFile(first), before);

  // The directory is a file / cannot be created.
  writeFile(dir + "/afile", {1});
  EXPECT_NE(errorOf([&] {
              saveCheckpoint(dir + "/afile", s.meta, s.tensors(), 1, none);
            }).find("afile: exists and is not a directory"),
            std::string::npos);
  EXPECT_NE(
      errorOf([&] {
        writeCheckpoint(dir + "/no/such/x.tcckpt", s.meta, s.tensors());
      }).find("cannot create " + dir + "/no/such/x.tcckpt.tmp: No such file"),
      std::string::npos);

  // A read-only directory (permissions do not bind root, so only checked
  // when they take effect).
  std::string ro = tempDir("readonly");
  s.meta.step = 10;
  saveCheckpoint(ro, s.meta, s.tensors(), 3, none);
  ASSERT_EQ(::chmod(ro.c_str(), 0555), 0);
  if (::access(ro.c_str(), W_OK) != 0) {
    s.meta.step = 20;
    EXPECT_NE(errorOf([&] {
                saveCheckpoint(ro, s.meta, s.tensors(), 3, none);
              }).find("Permission denied"),
              std::string::npos);
    EXPECT_EQ(listCheckpoints(ro).size(), 1u);
  }
  ::chmod(ro.c_str(), 0755);
}

TEST(CheckpointTest, SerializeRejectsBadTensorLists) {
  Sample s;
  auto t = s.tensors();
  t.push_back(t[0]);
  EXPECT_NE(errorOf([&] {
              serializeCheckpoint(s.meta, t);
            }).find("'w' appears twice"),
            std::string::npos);
  t = s.tensors();
  t[0].kind = TensorKind::Constant;
  EXPECT_NE(errorOf([&] {
              serializeCheckpoint(s.meta, t);
            }).find("'w' is a constant, not a param or state"),
            std::string::npos);
  std::string dir = tempDir("badlist");
  EXPECT_NE(errorOf([&] {
              writeCheckpoint(dir + "/c.tcckpt", s.meta, t);
            }).find(dir + "/c.tcckpt: cannot write checkpoint: tensor 'w'"),
            std::string::npos);
  EXPECT_FALSE(exists(dir + "/c.tcckpt.tmp"));
}
