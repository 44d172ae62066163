//===- DataFeeder.cpp - Validation, conversion and the producer thread ----===//
#include "runtime/feeder/DataFeeder.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

namespace tcc::rt {

void (*detail::feederBatchHookForTesting)(int64_t) = nullptr;

static std::string fileOf(const DataFeeder::Source &s) {
  return s.array.path.empty() ? s.name : s.array.path;
}

static bool sampleShapeMatches(const std::vector<int64_t> &file,
                               const std::vector<int64_t> &model) {
  // A scalar per sample may come as [] or [1].
  auto isOne = [](const std::vector<int64_t> &s) {
    return s.empty() || (s.size() == 1 && s[0] == 1);
  };
  return file == model || (isOne(file) && isOne(model));
}

/// A data value for a message: as written, not std::to_string's fixed
/// notation (300 digits for 1e300, "0.000000" for 1e-9).
static std::string formatValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// The whole array in the target dtype. Goes element by element so integer
/// files never pass through double and lose precision.
static std::vector<uint8_t> convert(const DataFeeder::Source &s,
                                    int64_t perSample) {
  const HostArray &a = s.array;
  int64_t n = a.numElements();
  if (s.target != DType::F32 && s.target != DType::I64)
    throw Error(fileOf(s) + ": cannot feed '" + s.name + "' as " +
                dtypeName(s.target) + " (data inputs are f32 or i64)");
  std::vector<uint8_t> out(static_cast<size_t>(n) * dtypeSize(s.target));
  bool isFloat = a.dtype == FileDType::F32 || a.dtype == FileDType::F64;
  auto where = [&](int64_t i) {
    return fileOf(s) + ": sample " + std::to_string(i / perSample);
  };
  if (s.target == DType::F32) {
    float *dst = reinterpret_cast<float *>(out.data());
    for (int64_t i = 0; i < n; ++i) {
      double v = a.at(i);
      dst[i] = static_cast<float>(v);
      if (!std::isfinite(dst[i]))
        throw Error(where(i) + " has value " + formatValue(v) +
                    (std::isfinite(v) ? ", outside the f32 range" : ""));
    }
    return out;
  }
  int64_t *dst = reinterpret_cast<int64_t *>(out.data());
  for (int64_t i = 0; i < n; ++i) {
    if (a.dtype == FileDType::I64) {
      std::memcpy(&dst[i], a.bytes.data() + i * 8, 8);
      continue;
    }
    double v = a.at(i);
    if (isFloat && (!(v == std::floor(v)) || std::fabs(v) >= 9.2e18))
      throw Error(where(i) + " has value " + formatValue(v) + " for '" +
                  s.name + "', which must be integral (i64)");
    dst[i] = static_cast<int64_t>(v);
  }
  return out;
}

DataFeeder::DataFeeder(std::vector<Source> sources, int64_t batchSize,
                       bool shuffle, uint64_t seed, int64_t maxBatches,
                       size_t prefetch, int64_t startBatch, DataShard shard)
    : batchSize_(batchSize), maxBatches_(maxBatches), startBatch_(startBatch),
      shard_(shard), shuffle_(shuffle), seed_(seed),
      prefetch_(prefetch ? prefetch : 1) {
  if (sources.empty())
    throw Error("no data sources");
  for (size_t i = 0; i < sources.size(); ++i) {
    const Source &s = sources[i];
    const auto &shape = s.array.shape;
    if (shape.empty())
      throw Error(fileOf(s) + ": a scalar has no samples; expected an array "
                              "with samples along the first dimension");
    if (i == 0)
      numSamples_ = shape[0];
    else if (shape[0] != numSamples_)
      throw Error(fileOf(s) + " has " + std::to_string(shape[0]) +
                  " samples but " + fileOf(sources[0]) + " has " +
                  std::to_string(numSamples_));
    std::vector<int64_t> sample(shape.begin() + 1, shape.end());
    if (!sampleShapeMatches(sample, s.sampleShape))
      throw Error(fileOf(s) + ": samples have shape " + formatShape(sample) +
                  ", the model expects " + formatShape(s.sampleShape));
  }
  checkBatching(fileOf(sources[0]));
  for (Source &s : sources) {
    int64_t perSample = s.array.numElements() / numSamples_;
    Column c;
    c.data = convert(s, perSample ? perSample : 1);
    c.sampleBytes = static_cast<size_t>(perSample) * dtypeSize(s.target);
    columns_.push_back(std::move(c));
    s.array = HostArray(); // the converted copy is all we keep
  }
  start();
}

std::vector<uint8_t> convertSamples(const DataFeeder::Source &s) {
  const auto &shape = s.array.shape;
  if (shape.empty())
    throw Error(fileOf(s) + ": a scalar has no samples; expected an array "
                            "with samples along the first dimension");
  std::vector<int64_t> sample(shape.begin() + 1, shape.end());
  if (!sampleShapeMatches(sample, s.sampleShape))
    throw Error(fileOf(s) + ": samples have shape " + formatShape(sample) +
                ", the model expects " + formatShape(s.sampleShape));
  int64_t perSample = shape[0] ? s.array.numElements() / shape[0] : 1;
  return convert(s, perSample ? perSample : 1);
}

static TokenCorpus::Options corpusOptions(const DataFeeder::TokenSource &s) {
  TokenCorpus::Options o;
  o.tokenBytes = s.tokenBytes;
  o.seqLen = s.seqLen;
  o.vocab = s.vocab;
  return o;
}

DataFeeder::DataFeeder(const TokenSource &src, int64_t batchSize, bool shuffle,
                       uint64_t seed, int64_t maxBatches, size_t prefetch,
                       int64_t startBatch, DataShard shard)
    : DataFeeder(
          std::make_shared<const TokenCorpus>(src.path, corpusOptions(src)),
          batchSize, shuffle, seed, maxBatches, prefetch, startBatch, shard) {}

DataFeeder::DataFeeder(const TokenSource &src,
                       const std::vector<uint8_t> &corpus, int64_t batchSize,
                       bool shuffle, uint64_t seed, int64_t maxBatches,
                       size_t prefetch, int64_t startBatch, DataShard shard)
    : DataFeeder(std::make_shared<const TokenCorpus>(src.path, corpus,
                                                     corpusOptions(src)),
                 batchSize, shuffle, seed, maxBatches, prefetch, startBatch,
                 shard) {}

DataFeeder::DataFeeder(std::shared_ptr<const TokenCorpus> corpus,
                       int64_t batchSize, bool shuffle, uint64_t seed,
                       int64_t maxBatches, size_t prefetch, int64_t startBatch,
                       DataShard shard)
    : corpus_(std::move(corpus)), batchSize_(batchSize),
      maxBatches_(maxBatches), startBatch_(startBatch), shard_(shard),
      shuffle_(shuffle), seed_(seed), prefetch_(prefetch ? prefetch : 1) {
  seqLen_ = corpus_->seqLen();
  numSamples_ = corpus_->numWindows();
  checkBatching(corpus_->name() + " (" + std::to_string(numSamples_) +
                " windows of " + std::to_string(uint64_t(seqLen_) + 1) +
                " tokens)");
  start();
}

void DataFeeder::checkBatching(const std::string &what) {
  if (batchSize_ <= 0)
    throw Error("batch size must be positive, got " +
                std::to_string(batchSize_));
  if (startBatch_ < 0)
    throw Error("start batch must be >= 0, got " + std::to_string(startBatch_));
  if (shard_.size < 1 || shard_.rank < 0 || shard_.rank >= shard_.size)
    throw Error("rank " + std::to_string(shard_.rank) + " is not one of " +
                std::to_string(shard_.size) + " ranks");
  if (shard_.size == 1 && numSamples_ < batchSize_)
    throw Error(what + ": " + std::to_string(numSamples_) +
                " samples, fewer than the batch size " +
                std::to_string(batchSize_));
  // A rank whose share of every global batch would be empty (or short)
  // cannot train: the data must hold one batch for each rank.
  if (numSamples_ < globalBatch())
    throw Error(what + ": " + std::to_string(numSamples_) +
                " samples, fewer than one global batch of " +
                std::to_string(shard_.size) + " ranks x batch size " +
                std::to_string(batchSize_) + " = " +
                std::to_string(globalBatch()) + "; rank " +
                std::to_string(shard_.rank) + "'s share would be empty");
}

void DataFeeder::start() {
  thread_ = std::thread([this] { produce(); });
}

void DataFeeder::fillTokens(const int64_t *idx, Batch &b) const {
  std::vector<uint8_t> x(sizeof(int64_t) * batchSize_ * seqLen_);
  std::vector<uint8_t> y(x.size());
  int64_t *xs = reinterpret_cast<int64_t *>(x.data());
  int64_t *ys = reinterpret_cast<int64_t *>(y.data());
  std::vector<int64_t> w(static_cast<size_t>(seqLen_) + 1);
  for (int64_t k = 0; k < batchSize_; ++k) {
    corpus_->window(idx[k], w.data());
    std::memcpy(xs + k * seqLen_, w.data(), sizeof(int64_t) * seqLen_);
    std::memcpy(ys + k * seqLen_, w.data() + 1, sizeof(int64_t) * seqLen_);
  }
  b.tensors.push_back(std::move(x));
  b.tensors.push_back(std::move(y));
}

DataFeeder::~DataFeeder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  haveSpace_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

std::vector<int64_t> DataFeeder::epochOrder(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(numSamples_));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!shuffle_)
    return order;
  if (numSamples_ > kExplicitOrderMax) {
    EpochKeys keys = epochKeys(epoch);
    for (int64_t &i : order)
      i = permuted(keys, i);
    return order;
  }
  // Fisher-Yates with our own index mapping: std::shuffle and
  // std::uniform_int_distribution differ between standard libraries, and
  // the order must be reproducible wherever the run is resumed.
  std::mt19937_64 rng(seed_ + static_cast<uint64_t>(epoch));
  for (size_t i = order.size(); i > 1; --i) {
    uint64_t j = static_cast<uint64_t>(
        (static_cast<unsigned __int128>(rng()) * i) >> 64);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

DataFeeder::EpochKeys DataFeeder::epochKeys(int64_t epoch) const {
  EpochKeys k;
  std::mt19937_64 rng(seed_ + static_cast<uint64_t>(epoch));
  for (uint64_t &key : k.round)
    key = rng();
  while ((uint64_t(1) << (2 * k.halfBits)) < uint64_t(numSamples_))
    ++k.halfBits;
  return k;
}

static uint64_t mix64(uint64_t x) { // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A Feistel network is a bijection on [0, 4^halfBits), whatever its round
// function; walking the cycle until the value lands below numSamples makes
// it one on [0, numSamples). The domain is under 4 numSamples, so a few
// rounds on average.
int64_t DataFeeder::permuted(const EpochKeys &k, int64_t i) const {
  uint64_t mask = (uint64_t(1) << k.halfBits) - 1, x = uint64_t(i);
  do {
    uint64_t left = x >> k.halfBits, right = x & mask;
    for (uint64_t key : k.round) {
      uint64_t next = left ^ (mix64(right ^ key) & mask);
      left = right;
      right = next;
    }
    x = (left << k.halfBits) | right;
  } while (x >= uint64_t(numSamples_));
  return static_cast<int64_t>(x);
}

void DataFeeder::produce() {
  try {
    int64_t perEpoch = batchesPerEpoch(), orderEpoch = -1;
    std::vector<int64_t> order, picked(static_cast<size_t>(batchSize_));
    EpochKeys keys;
    // Past kExplicitOrderMax samples the order is computed per index.
    bool computed = shuffle_ && numSamples_ > kExplicitOrderMax;
    for (int64_t step = startBatch_; maxBatches_ < 0 || step < maxBatches_;
         ++step) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_)
          break;
      }
      if (detail::feederBatchHookForTesting)
        detail::feederBatchHookForTesting(step);
      Batch b;
      b.step = step;
      b.epoch = step / perEpoch;
      if (b.epoch != orderEpoch) {
        if (computed)
          keys = epochKeys(b.epoch);
        else
          order = epochOrder(b.epoch);
        orderEpoch = b.epoch;
      }
      // This rank's B of the step's global batch of size * B positions.
      const int64_t first =
          (step % perEpoch) * globalBatch() + shard_.rank * batchSize_;
      const int64_t *idx = order.data() + (computed ? 0 : first);
      if (computed) {
        for (int64_t k = 0; k < batchSize_; ++k)
          picked[k] = permuted(keys, first + k);
        idx = picked.data();
      }
      if (seqLen_ > 0)
        fillTokens(idx, b);
      for (const Column &c : columns_) {
        std::vector<uint8_t> t(c.sampleBytes * batchSize_);
        for (int64_t k = 0; k < batchSize_; ++k)
          std::memcpy(t.data() + k * c.sampleBytes,
                      c.data.data() + idx[k] * c.sampleBytes, c.sampleBytes);
        b.tensors.push_back(std::move(t));
      }
      std::unique_lock<std::mutex> lock(mu_);
      haveSpace_.wait(lock, [&] { return stop_ || queue_.size() < prefetch_; });
      if (stop_)
        break;
      queue_.push_back(std::move(b));
      haveBatch_.notify_one();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  haveBatch_.notify_all();
}

bool DataFeeder::next(Batch &out) {
  std::unique_lock<std::mutex> lock(mu_);
  haveBatch_.wait(lock, [&] { return !queue_.empty() || done_; });
  if (!queue_.empty()) {
    out = std::move(queue_.front());
    queue_.pop_front();
    haveSpace_.notify_one();
    return true;
  }
  if (error_)
    std::rethrow_exception(error_);
  return false;
}

} // namespace tcc::rt
