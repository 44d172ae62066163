//===- FeederShardTest.cpp - The DataFeeder's rank shares -----------------===//
//
// A data-parallel run of S ranks at batch B must see, at every step, what a
// one-process run at batch S*B sees: the ranks' batches, in rank order, are
// that batch (DataFeeder.h). Checked by running both feeders side by side.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/feeder/DataFeeder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

using namespace tcc::rt;

namespace {

/// x: f32 [n, 2] with x[i] = {10i, 10i+1}; labels: i32 [n] with labels[i] =
/// i, so a batch's labels name its samples.
std::vector<DataFeeder::Source> columns(int64_t n) {
  HostArray x, y;
  x.dtype = FileDType::F32;
  x.shape = {n, 2};
  x.path = "x.npy";
  y.dtype = FileDType::I32;
  y.shape = {n};
  y.path = "y.npy";
  for (int64_t i = 0; i < n; ++i) {
    float xv[2] = {10.0f * i, 10.0f * i + 1};
    int32_t yv = static_cast<int32_t>(i);
    x.bytes.insert(x.bytes.end(), reinterpret_cast<uint8_t *>(xv),
                   reinterpret_cast<uint8_t *>(xv) + 8);
    y.bytes.insert(y.bytes.end(), reinterpret_cast<uint8_t *>(&yv),
                   reinterpret_cast<uint8_t *>(&yv) + 4);
  }
  return {{"x", x, DType::F32, {2}}, {"labels", y, DType::I64, {}}};
}

/// A u8 corpus of `n` tokens whose windows of T+1 differ from each other.
std::vector<uint8_t> corpus(int64_t n) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    bytes[i] = static_cast<uint8_t>((i * 7 + i / 251) % 251);
  return bytes;
}

DataFeeder::TokenSource tokenSource(int64_t seqLen) {
  DataFeeder::TokenSource s;
  s.path = "corpus.bin";
  s.tokenBytes = 1;
  s.seqLen = seqLen;
  return s;
}

using MakeFeeder = std::function<std::unique_ptr<DataFeeder>(
    int64_t batch, int64_t startBatch, DataShard shard)>;

/// Runs one feeder of batch S*B and S rank feeders of batch B to the end
/// and checks that at every step each tensor of the big batch is the ranks'
/// tensors one after the other.
void expectRanksMakeTheGlobalBatch(const MakeFeeder &make, int64_t size,
                                   int64_t b, int64_t startBatch,
                                   int64_t wantSteps) {
  std::unique_ptr<DataFeeder> whole = make(size * b, startBatch, {});
  std::vector<std::unique_ptr<DataFeeder>> ranks;
  for (int r = 0; r < size; ++r) {
    ranks.push_back(make(b, startBatch, {r, static_cast<int>(size)}));
    EXPECT_EQ(ranks.back()->batchesPerEpoch(), whole->batchesPerEpoch());
    EXPECT_EQ(ranks.back()->globalBatch(), size * b);
  }
  DataFeeder::Batch all, part;
  int64_t steps = 0;
  while (whole->next(all)) {
    std::vector<std::vector<uint8_t>> joined(all.tensors.size());
    for (int r = 0; r < size; ++r) {
      ASSERT_TRUE(ranks[r]->next(part)) << "rank " << r << " step " << all.step;
      EXPECT_EQ(part.step, all.step);
      EXPECT_EQ(part.epoch, all.epoch);
      ASSERT_EQ(part.tensors.size(), all.tensors.size());
      for (size_t t = 0; t < part.tensors.size(); ++t)
        joined[t].insert(joined[t].end(), part.tensors[t].begin(),
                         part.tensors[t].end());
    }
    for (size_t t = 0; t < all.tensors.size(); ++t)
      EXPECT_EQ(joined[t], all.tensors[t])
          << "tensor " << t << " of step " << all.step;
    ++steps;
  }
  EXPECT_EQ(steps, wantSteps);
  for (int r = 0; r < size; ++r)
    EXPECT_FALSE(ranks[r]->next(part)) << "rank " << r << " has more batches";
}

void expectError(const std::function<void()> &f, const std::string &want) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << want;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
        << "got: " << e.what() << "\nexpected to contain: " << want;
  }
}

} // namespace

TEST(FeederShard, ColumnsRanksMakeTheGlobalBatch) {
  for (bool shuffle : {false, true})
    for (int64_t size : {2, 3}) {
      SCOPED_TRACE(std::string(shuffle ? "shuffled" : "file order") + ", " +
                   std::to_string(size) + " ranks");
      // 23 samples: 2 ranks x 3 = 6 gives 3 steps an epoch (5 dropped), 3
      // ranks x 3 = 9 gives 2 (5 dropped); 7 steps cross epochs.
      MakeFeeder make = [&](int64_t batch, int64_t start, DataShard shard) {
        return std::make_unique<DataFeeder>(columns(23), batch, shuffle, 5, 7,
                                            2, start, shard);
      };
      expectRanksMakeTheGlobalBatch(make, size, 3, 0, 7);
    }
}

TEST(FeederShard, FileOrderTakesConsecutiveShares) {
  DataFeeder r1(columns(10), 2, false, 0, 3, 4, 0, {1, 2});
  EXPECT_EQ(r1.batchesPerEpoch(), 2);
  DataFeeder::Batch b;
  std::vector<std::vector<int64_t>> want = {{2, 3}, {6, 7}, {2, 3}};
  for (const auto &w : want) {
    ASSERT_TRUE(r1.next(b));
    std::vector<int64_t> labels(2);
    std::memcpy(labels.data(), b.tensors[1].data(), 16);
    EXPECT_EQ(labels, w) << "step " << b.step;
  }
  EXPECT_FALSE(r1.next(b));
}

TEST(FeederShard, TokensRanksMakeTheGlobalBatch) {
  std::vector<uint8_t> bytes = corpus(200);
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "file order");
    // 200 tokens, T = 4: 49 windows; 2 ranks x 4 = 8 per step, 6 steps an
    // epoch.
    MakeFeeder make = [&](int64_t batch, int64_t start, DataShard shard) {
      return std::make_unique<DataFeeder>(tokenSource(4), bytes, batch, shuffle,
                                          9, 14, 3, start, shard);
    };
    expectRanksMakeTheGlobalBatch(make, 2, 4, 0, 14);
  }
}

TEST(FeederShard, ResumedRanksContinueTheGlobalOrder) {
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "file order");
    MakeFeeder cols = [&](int64_t batch, int64_t start, DataShard shard) {
      return std::make_unique<DataFeeder>(columns(20), batch, shuffle, 3, 9, 4,
                                          start, shard);
    };
    // Steps 5..8 of a run whose epochs are 20 / (2 x 2) = 5 steps.
    expectRanksMakeTheGlobalBatch(cols, 2, 2, 5, 4);
    std::vector<uint8_t> bytes = corpus(100);
    MakeFeeder toks = [&](int64_t batch, int64_t start, DataShard shard) {
      return std::make_unique<DataFeeder>(tokenSource(3), bytes, batch, shuffle,
                                          4, 12, 4, start, shard);
    };
    expectRanksMakeTheGlobalBatch(toks, 2, 3, 7, 5);
  }
}

// Past kExplicitOrderMax windows the shuffled order is computed per index;
// the shares must follow it the same way.
TEST(FeederShard, LargeCorporaShareTheComputedOrder) {
  std::vector<uint8_t> bytes = corpus(DataFeeder::kExplicitOrderMax + 6);
  MakeFeeder make = [&](int64_t batch, int64_t start, DataShard shard) {
    return std::make_unique<DataFeeder>(tokenSource(1), bytes, batch, true, 21,
                                        4, 2, start, shard);
  };
  expectRanksMakeTheGlobalBatch(make, 2, 5, 1, 3);
}

TEST(FeederShard, ErrorsNameTheCounts) {
  expectError(
      [] {
        DataFeeder f(columns(7), 4, false, 0, 1, 4, 0, {1, 2});
      },
      "x.npy: 7 samples, fewer than one global batch of 2 ranks x batch size "
      "4 = 8; rank 1's share would be empty");
  std::vector<uint8_t> bytes = corpus(20);
  expectError(
      [&] {
        DataFeeder f(tokenSource(4), bytes, 2, false, 0, 1, 4, 0, {0, 3});
      },
      "corpus.bin (4 windows of 5 tokens): 4 samples, fewer than one global "
      "batch of 3 ranks x batch size 2 = 6");
  expectError(
      [] {
        DataFeeder f(columns(8), 2, false, 0, 1, 4, 0, {2, 2});
      },
      "rank 2 is not one of 2 ranks");
}
