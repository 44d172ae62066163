//===- DataFeeder.h - Batches for the training loop, prepared ahead -------===//
//
// Checks data sources against what the model expects, converts them once to
// the model's dtypes, and assembles batches on a background thread so the
// training step never waits on gathering samples.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_FEEDER_DATAFEEDER_H
#define TCC_RUNTIME_FEEDER_DATAFEEDER_H

#include "runtime/core/Artifact.h"
#include "runtime/feeder/HostArray.h"
#include "runtime/feeder/TokenCorpus.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tcc::rt {

/// A rank's place in a data-parallel run (runtime/core/Comm.h): every
/// global batch is `size` per-rank batches, and this rank takes the
/// `rank`-th. The default is the whole batch of a one-process run.
struct DataShard {
  int rank = 0;
  int size = 1;
};

class DataFeeder {
public:
  using Shard = DataShard;

  struct Source {
    std::string name; // the model input it feeds, e.g. "x", "labels"
    HostArray array;  // dim 0 indexes samples
    DType target;     // the model input's dtype
    std::vector<int64_t> sampleShape; // the model input's shape without batch
  };

  /// A language-model corpus (TokenCorpus.h): a token file, a glob of
  /// shards or a directory of them, memory-mapped. Sample k is window k of
  /// T+1 tokens: its first T tokens feed `inputName` and its last T (the
  /// next token at each position) feed `labelsName`, both as int64 [T].
  /// Windows are copied from the mapping per batch.
  struct TokenSource {
    std::string path; // file, glob or directory
    /// Width of headerless tokens: 1, 2 or 4 bytes (little-endian); 0: the
    /// llm.c header's, else 1.
    int tokenBytes = 0;
    int64_t seqLen = 0; // T
    int64_t vocab = 0;  // token ids must be below it; 0: unchecked
    std::string inputName = "x", labelsName = "labels";
  };

  struct Batch {
    int64_t step = 0;  // global batch index, from 0
    int64_t epoch = 0; // step / batchesPerEpoch()
    /// One per source, in target dtype, batch-major (batchSize samples).
    std::vector<std::vector<uint8_t>> tensors;
  };

  /// Validates the sources (same sample count, sample shapes, at least one
  /// global batch of samples, integral values for i64 targets, values
  /// representable in f32) and starts the background thread. Produces the
  /// batches with step in [startBatch, maxBatches) -- maxBatches < 0:
  /// unbounded -- so a resumed run passes the same maxBatches and the step
  /// it stopped at. Each epoch visits a permutation of the samples
  /// (std::mt19937_64 seeded with seed + epoch) when shuffling, file order
  /// otherwise; the last partial global batch of an epoch is dropped.
  ///
  /// `batchSize` is this rank's: step k covers positions [k*S*B, (k+1)*S*B)
  /// of the epoch's order (S = shard.size, B = batchSize) and this rank
  /// takes the shard.rank-th B of them. Every rank computes the same order
  /// from the seed, so the ranks' batches together are a one-process
  /// feeder's batch of S*B. Throws Error.
  DataFeeder(std::vector<Source> sources, int64_t batchSize, bool shuffle,
             uint64_t seed, int64_t maxBatches, size_t prefetch = 4,
             int64_t startBatch = 0, DataShard shard = {});
  /// Same batching, sharding, shuffling and resumption rules, over the
  /// windows of a token corpus; each Batch has two tensors: inputs, then
  /// labels.
  DataFeeder(const TokenSource &tokens, int64_t batchSize, bool shuffle,
             uint64_t seed, int64_t maxBatches, size_t prefetch = 4,
             int64_t startBatch = 0, DataShard shard = {});
  /// The same over a corpus already in memory: `corpus` holds the file's
  /// bytes and tokens.path only names it in errors (tests, fuzzing).
  DataFeeder(const TokenSource &tokens, const std::vector<uint8_t> &corpus,
             int64_t batchSize, bool shuffle, uint64_t seed, int64_t maxBatches,
             size_t prefetch = 4, int64_t startBatch = 0, DataShard shard = {});
  /// The same over a corpus already opened.
  DataFeeder(std::shared_ptr<const TokenCorpus> corpus, int64_t batchSize,
             bool shuffle, uint64_t seed, int64_t maxBatches,
             size_t prefetch = 4, int64_t startBatch = 0, DataShard shard = {});
  /// Stops and joins the thread, also when batches remain unconsumed.
  ~DataFeeder();
  DataFeeder(const DataFeeder &) = delete;
  DataFeeder &operator=(const DataFeeder &) = delete;

  int64_t numSamples() const { return numSamples_; }
  /// Global batches (steps) per epoch: of shard.size * batchSize samples.
  int64_t batchesPerEpoch() const { return numSamples_ / globalBatch(); }
  /// Samples per step over all ranks.
  int64_t globalBatch() const { return batchSize_ * shard_.size; }
  const DataShard &shard() const { return shard_; }

  /// Waits for the next batch. False once maxBatches is reached; rethrows an
  /// exception raised on the background thread.
  bool next(Batch &out);

  /// The sample order of `epoch` (exposed for tests and tools).
  std::vector<int64_t> epochOrder(int64_t epoch) const;

  /// Up to this many samples an epoch's shuffled order is a list (a
  /// Fisher-Yates shuffle, 8 bytes a sample); beyond it, a keyed bijection
  /// computed per index, so a corpus of billions of windows costs no
  /// memory for its order.
  static constexpr int64_t kExplicitOrderMax = int64_t(1) << 20;

private:
  struct Column {
    std::vector<uint8_t> data; // all samples, converted
    size_t sampleBytes = 0;
  };

  void checkBatching(const std::string &what);
  void start();
  void produce();
  void fillTokens(const int64_t *idx, Batch &b) const;
  /// The computed order of one epoch: Feistel round keys and the half
  /// width of its domain.
  struct EpochKeys {
    uint64_t round[4] = {};
    int halfBits = 1;
  };
  EpochKeys epochKeys(int64_t epoch) const;
  int64_t permuted(const EpochKeys &k, int64_t i) const;

  std::vector<Column> columns_;
  std::shared_ptr<const TokenCorpus> corpus_; // token mode
  int64_t seqLen_ = 0;                        // token mode: T (0 = column mode)
  int64_t numSamples_ = 0, batchSize_ = 0, maxBatches_ = 0, startBatch_ = 0;
  DataShard shard_;
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  size_t prefetch_ = 4;

  std::mutex mu_;
  std::condition_variable haveBatch_, haveSpace_;
  std::deque<Batch> queue_;
  bool stop_ = false, done_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

/// One source's samples checked as the feeder checks them (samples along
/// dimension 0, the model's sample shape) and converted whole to its target
/// dtype, sample-major. For callers that batch on their own: prediction,
/// which pads its last batch instead of dropping it. Error naming the file.
std::vector<uint8_t> convertSamples(const DataFeeder::Source &s);

namespace detail {
/// Test seam: when set, the producer thread calls it before assembling each
/// batch, so tests can make the thread fail at a chosen step.
extern void (*feederBatchHookForTesting)(int64_t step);
} // namespace detail

} // namespace tcc::rt

#endif // TCC_RUNTIME_FEEDER_DATAFEEDER_H
