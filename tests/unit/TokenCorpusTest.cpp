//===- TokenCorpusTest.cpp - Token shards: mapping, headers, windows ------===//
#include "runtime/feeder/TokenCorpus.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/feeder/DataFeeder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace tcc::rt;

namespace {

/// A fresh directory for one test's shards.
std::string tempDir(const std::string &name) {
  std::string d = ::testing::TempDir() + "tcc_tokens_" +
                  std::to_string(::getpid()) + "_" + name;
  ::mkdir(d.c_str(), 0755);
  return d;
}

void writeFile(const std::string &path, const std::vector<uint8_t> &b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char *>(b.data()), b.size());
}

/// Tokens as `width`-byte little-endian integers.
std::vector<uint8_t> raw(const std::vector<uint32_t> &tokens, int width) {
  std::vector<uint8_t> b;
  for (uint32_t t : tokens)
    for (int i = 0; i < width; ++i)
      b.push_back(static_cast<uint8_t>(t >> (8 * i)));
  return b;
}

/// An llm.c shard: 256 int32 (magic, version, count), then the tokens.
constexpr int32_t kDefault = INT32_MIN;
std::vector<uint8_t> llmc(const std::vector<uint32_t> &tokens, bool u32,
                          int32_t version = kDefault,
                          int32_t count = kDefault) {
  std::vector<int32_t> header(256, 0);
  header[0] = u32 ? kLlmcMagicU32 : kLlmcMagicU16;
  header[1] = version != kDefault ? version
              : u32               ? kLlmcVersionU32
                                  : kLlmcVersionU16;
  header[2] = count != kDefault ? count : static_cast<int32_t>(tokens.size());
  std::vector<uint8_t> b(kLlmcHeaderBytes);
  std::memcpy(b.data(), header.data(), b.size());
  std::vector<uint8_t> t = raw(tokens, u32 ? 4 : 2);
  b.insert(b.end(), t.begin(), t.end());
  return b;
}

std::vector<uint32_t> iota(size_t n, uint32_t first, uint32_t step = 1) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = first + static_cast<uint32_t>(i) * step;
  return v;
}

std::vector<int64_t> window(const TokenCorpus &c, int64_t k) {
  std::vector<int64_t> w(static_cast<size_t>(c.seqLen()) + 1);
  c.window(k, w.data());
  return w;
}

template <class F> void expectError(F fn, const std::string &needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << needle;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "got: " << e.what() << "\nwanted: " << needle;
  }
}

TokenCorpus::Options opts(int64_t T, int width = 0, int64_t vocab = 0) {
  TokenCorpus::Options o;
  o.seqLen = T;
  o.tokenBytes = width;
  o.vocab = vocab;
  return o;
}

} // namespace

TEST(TokenCorpus, RawWidths) {
  std::string d = tempDir("raw");
  std::vector<uint32_t> toks = iota(17, 70000, 3); // beyond uint16 for u32
  for (int width : {1, 2, 4}) {
    std::vector<uint32_t> t = toks;
    for (uint32_t &v : t)
      v &= width == 4 ? 0xffffffffu : (1u << (8 * width)) - 1;
    std::string path = d + "/w" + std::to_string(width) + ".bin";
    writeFile(path, raw(t, width));
    TokenCorpus c(path, opts(4, width));
    EXPECT_EQ(c.numTokens(), 17);
    EXPECT_EQ(c.numWindows(), 4); // (17 - 1) / 4
    for (int64_t k = 0; k < 4; ++k) {
      std::vector<int64_t> w = window(c, k);
      for (int64_t i = 0; i <= 4; ++i)
        EXPECT_EQ(w[i], t[k * 4 + i]) << "width " << width;
    }
  }
  // Headerless without a width: one byte per token, as before shards.
  TokenCorpus c(d + "/w2.bin", opts(4));
  EXPECT_EQ(c.tokenType(), "u8");
  EXPECT_EQ(c.numTokens(), 34);
  expectError([&] { TokenCorpus(d + "/w1.bin", opts(4, 2)); },
              "17 bytes is not a whole number of u16 tokens");
  expectError([&] { TokenCorpus(d + "/w1.bin", opts(4, 3)); },
              "tokens must be 1 (uint8), 2 (uint16) or 4 (uint32) bytes");
}

TEST(TokenCorpus, LlmcHeaders) {
  std::string d = tempDir("llmc");
  std::vector<uint32_t> t16 = iota(21, 50000), t32 = iota(21, 100000);
  writeFile(d + "/a16.bin", llmc(t16, false));
  writeFile(d + "/a32.bin", llmc(t32, true));
  for (bool u32 : {false, true}) {
    const auto &t = u32 ? t32 : t16;
    std::string path = d + (u32 ? "/a32.bin" : "/a16.bin");
    // The header decides the width; given, it must agree.
    for (int width : {0, u32 ? 4 : 2}) {
      TokenCorpus c(path, opts(5, width));
      EXPECT_EQ(c.tokenType(), u32 ? "u32" : "u16");
      EXPECT_EQ(c.numTokens(), 21);
      EXPECT_EQ(c.numWindows(), 4);
      EXPECT_EQ(window(c, 3), std::vector<int64_t>(t.begin() + 15, t.end()));
    }
  }
  expectError([&] { TokenCorpus(d + "/a16.bin", opts(5, 4)); },
              "a16.bin: --token-type u32 contradicts the llm.c header, whose "
              "tokens are u16");
  expectError([&] { TokenCorpus(d + "/a32.bin", opts(5, 1)); },
              "--token-type u8 contradicts the llm.c header");
  writeFile(d + "/v2.bin", llmc(t16, false, /*version=*/2));
  expectError([&] { TokenCorpus(d + "/v2.bin", opts(5)); },
              "v2.bin: bad llm.c shard header: magic 20240520 with version 2, "
              "expected version 1");
  writeFile(d + "/long.bin", llmc(t16, false, kDefault, /*count=*/22));
  expectError([&] { TokenCorpus(d + "/long.bin", opts(5)); },
              "long.bin: bad llm.c shard header: it declares 22 u16 tokens "
              "(1068 bytes with the header), the file has 1066 bytes");
  writeFile(d + "/short.bin", llmc(t16, false, kDefault, /*count=*/20));
  expectError([&] { TokenCorpus(d + "/short.bin", opts(5)); },
              "it declares 20 u16 tokens");
  writeFile(d + "/huge.bin", llmc(t16, false, kDefault, 0x7fffffff));
  expectError([&] { TokenCorpus(d + "/huge.bin", opts(5)); },
              "declares 2147483647 u16 tokens");
  writeFile(d + "/neg.bin", llmc(t16, false, kDefault, -5));
  expectError([&] { TokenCorpus(d + "/neg.bin", opts(5)); },
              "neg.bin: bad llm.c shard header: token count -5");
}

TEST(TokenCorpus, ShardsByGlobAndDirectoryWindowsStayInShards) {
  std::string d = tempDir("shards");
  // Three shards of 10, 3 (no window of T + 1 = 5) and 13 tokens; T = 4.
  std::vector<uint32_t> a = iota(10, 0), b = iota(3, 100), c = iota(13, 200);
  writeFile(d + "/train_000.bin", llmc(a, false));
  writeFile(d + "/train_001.bin", llmc(b, false));
  writeFile(d + "/train_002.bin", llmc(c, false));
  writeFile(d + "/notes.txt", {1, 2, 3}); // not a shard
  for (const std::string &spec :
       {d + "/train_*.bin", d, d + "/", d + "/train_00[0-2].bin"}) {
    TokenCorpus corpus(spec, opts(4));
    EXPECT_EQ(corpus.numShards(), 3u) << spec;
    EXPECT_EQ(corpus.numTokens(), 26);
    EXPECT_EQ(corpus.numWindows(), 2 + 0 + 3) << spec;
    EXPECT_EQ(window(corpus, 0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(window(corpus, 1), (std::vector<int64_t>{4, 5, 6, 7, 8}));
    // Window 2 starts the third shard: no window straddles 9 and 200.
    EXPECT_EQ(window(corpus, 2),
              (std::vector<int64_t>{200, 201, 202, 203, 204}));
    EXPECT_EQ(window(corpus, 4),
              (std::vector<int64_t>{208, 209, 210, 211, 212}));
  }
  // A shard whose magic is damaged, among shards with headers.
  std::vector<uint8_t> bad = llmc(b, false);
  bad[0] ^= 1;
  writeFile(d + "/train_001.bin", bad);
  expectError([&] { TokenCorpus(d + "/train_*.bin", opts(4)); },
              "train_001.bin: no llm.c shard header (its first int32 is "
              "20240521, not the magic 20240520 or 20240801), while ");
  writeFile(d + "/train_001.bin", llmc(b, false));
  expectError([&] { TokenCorpus(d + "/val_*.bin", opts(4)); },
              "val_*.bin: the pattern matches no file");
  std::string empty = tempDir("empty");
  expectError([&] { TokenCorpus(empty, opts(4)); },
              "the directory holds no .bin token shards");
  expectError([&] { TokenCorpus(d + "/train_001.bin", opts(4)); },
              "train_001.bin: 3 tokens, fewer than one window of 5");
  expectError([&] { TokenCorpus(d + "/missing.bin", opts(4)); },
              "missing.bin: cannot open");
  // The fingerprint sees a changed shard; the same files give the same one.
  uint32_t before = TokenCorpus(d, opts(4)).fingerprint();
  EXPECT_EQ(TokenCorpus(d, opts(4)).fingerprint(), before);
  c[12] = 999;
  writeFile(d + "/train_002.bin", llmc(c, false));
  EXPECT_NE(TokenCorpus(d, opts(4)).fingerprint(), before);
}

TEST(TokenCorpus, TokensBeyondTheVocabularyNameFileAndOffset) {
  std::string d = tempDir("vocab");
  std::vector<uint32_t> t = iota(12, 0);
  t[7] = 300;
  writeFile(d + "/v.bin", llmc(t, false));
  TokenCorpus c(d + "/v.bin", opts(4, 0, /*vocab=*/256));
  EXPECT_EQ(window(c, 0)[4], 4);
  // Token 7 sits in window 1: 1024 header bytes + 7 * 2.
  expectError([&] { window(c, 1); },
              "v.bin: token 300 at token 7 (byte offset 1038) is outside the "
              "model's vocabulary of 256");
  // Through the feeder, the error surfaces at the batch that reads it.
  DataFeeder::TokenSource src;
  src.path = d + "/v.bin";
  src.seqLen = 4;
  src.vocab = 256;
  DataFeeder f(src, 1, /*shuffle=*/false, 0, 2);
  DataFeeder::Batch b;
  ASSERT_TRUE(f.next(b));
  expectError([&] { f.next(b); }, "is outside the model's vocabulary of 256");
}

// The corpus is mapped, not read: a sparse 1 GiB shard opens at once and
// reading windows all over it leaves the process holding a few MiB.
TEST(TokenCorpus, MappedNotReadWhole) {
  std::string path = tempDir("big") + "/big.bin";
  const int64_t bytes = int64_t(1) << 30;
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, bytes), 0);
  ::close(fd);
  int64_t before = readProcessMemory().rssBytes;
  {
    TokenCorpus::Options o = opts(64, 2);
    o.randomAccess = true; // no read-ahead of the zeros around each window
    TokenCorpus c(path, o);
    EXPECT_EQ(c.numTokens(), bytes / 2);
    std::vector<int64_t> w(65);
    for (int64_t k = 0; k < c.numWindows(); k += c.numWindows() / 2048) {
      c.window(k, w.data());
      ASSERT_EQ(w[0], 0);
    }
    c.fingerprint();
    EXPECT_LT(readProcessMemory().rssBytes - before, int64_t(64) << 20);
  }
  ::unlink(path.c_str());
}

// Past kExplicitOrderMax windows the shuffled order is computed per index:
// still a permutation of the windows, reproducible, new every epoch.
TEST(TokenCorpus, LargeCorporaShuffleWithoutAnOrderList) {
  const int64_t n = DataFeeder::kExplicitOrderMax + 5;
  std::vector<uint8_t> bytes(static_cast<size_t>(n) + 1);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i * 7);
  DataFeeder::TokenSource src;
  src.path = "big.mem";
  src.seqLen = 1;
  DataFeeder f(src, bytes, 3, /*shuffle=*/true, 11, 2);
  ASSERT_EQ(f.numSamples(), n);
  std::vector<int64_t> order = f.epochOrder(0), sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(sorted[i], i);
  EXPECT_NE(order, f.epochOrder(1));
  EXPECT_NE(std::vector<int64_t>(order.begin(), order.begin() + 8),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  DataFeeder::Batch b;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(f.next(b));
    const int64_t *x = reinterpret_cast<const int64_t *>(b.tensors[0].data());
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(x[k], bytes[order[step * 3 + k]]);
  }
}
