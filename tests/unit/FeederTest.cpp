//===- FeederTest.cpp - .npy/.csv readers and the DataFeeder --------------===//
#include "runtime/core/Artifact.h"
#include "runtime/feeder/Csv.h"
#include "runtime/feeder/DataFeeder.h"
#include "runtime/feeder/Npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace tcc::rt;

static std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "tcc_feeder_" + std::to_string(::getpid()) +
         "_" + name;
}

/// A .npy image: magic, version, header dict padded to 64 bytes, data.
static std::vector<uint8_t> npyBytes(const std::string &descr,
                                     const std::vector<int64_t> &shape,
                                     const void *data, size_t bytes,
                                     int version = 1, bool fortran = false) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  else if (shape.size() == 1)
    dims.resize(dims.size() - 1);
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': (" + dims + "), }";
  size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
  for (size_t i = 0; i < prefix - 8; ++i)
    out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  const uint8_t *p = static_cast<const uint8_t *>(data);
  out.insert(out.end(), p, p + bytes);
  return out;
}

template <class T>
static std::string writeNpy(const std::string &name, const std::string &descr,
                            const std::vector<int64_t> &shape,
                            const std::vector<T> &values, int version = 1) {
  std::string path = tempPath(name);
  auto bytes =
      npyBytes(descr, shape, values.data(), values.size() * sizeof(T), version);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  return path;
}

static std::string writeText(const std::string &name, const std::string &text) {
  std::string path = tempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// Runs fn and expects an Error whose message contains `needle`.
template <class F> static void expectError(F fn, const std::string &needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected: " << needle;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << e.what();
  }
}

TEST(Npy, ReadsEveryDtypeAndVersion) {
  for (int version : {1, 2, 3}) {
    std::string v = std::to_string(version);
    HostArray f4 = loadNpy(
        writeNpy<float>("f4.npy", "<f4", {2, 2}, {1.5f, -2, 3, 4}, version));
    EXPECT_EQ(f4.dtype, FileDType::F32);
    EXPECT_EQ(f4.shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(f4.at(0), 1.5);
    EXPECT_EQ(f4.at(1), -2.0);
    HostArray f8 = loadNpy(
        writeNpy<double>("f8.npy", "<f8", {3}, {0.25, 1e10, -7}, version));
    EXPECT_EQ(f8.dtype, FileDType::F64);
    EXPECT_EQ(f8.at(1), 1e10);
    HostArray i8 = loadNpy(writeNpy<int64_t>("i8.npy", "<i8", {2},
                                             {-5, int64_t(1) << 40}, version));
    EXPECT_EQ(i8.dtype, FileDType::I64);
    EXPECT_EQ(i8.at(1), double(int64_t(1) << 40));
    HostArray i4 = loadNpy(
        writeNpy<int32_t>("i4.npy", "<i4", {1, 3}, {7, -8, 9}, version));
    EXPECT_EQ(i4.dtype, FileDType::I32);
    EXPECT_EQ(i4.at(1), -8.0);
    HostArray u1 = loadNpy(
        writeNpy<uint8_t>("u1.npy", "|u1", {4}, {0, 1, 200, 255}, version));
    EXPECT_EQ(u1.dtype, FileDType::U8);
    EXPECT_EQ(u1.at(3), 255.0);
    HostArray scalar =
        loadNpy(writeNpy<float>("s.npy", "<f4", {}, {3.0f}, version));
    EXPECT_TRUE(scalar.shape.empty());
  }
  EXPECT_EQ(loadArray(tempPath("f4.npy")).shape, (std::vector<int64_t>{2, 2}));
}

// An empty array may list huge dimensions beside its 0; counting its
// elements must not overflow (found by fuzz_feeder, UBSan).
TEST(Npy, EmptyArrayWithHugeDimensions) {
  auto bytes = npyBytes("<f4", {11, 13000000800000000, 3, 0, 2}, nullptr, 0);
  HostArray a = parseNpy(bytes.data(), bytes.size(), "empty.npy");
  EXPECT_EQ(a.numElements(), 0);
  EXPECT_TRUE(a.bytes.empty());
}

TEST(Npy, RejectsBadFiles) {
  std::vector<float> v = {1, 2, 3, 4};
  auto good = npyBytes("<f4", {2, 2}, v.data(), 16);
  expectError([&] { parseNpy(good.data(), good.size() - 1, "x.npy"); },
              "x.npy: truncated data");
  expectError([&] { parseNpy(good.data(), 5, "x.npy"); },
              "x.npy: not a .npy file");
  auto fortran = npyBytes("<f4", {2, 2}, v.data(), 16, 1, true);
  expectError([&] { parseNpy(fortran.data(), fortran.size(), "x.npy"); },
              "x.npy: Fortran-order arrays are not supported");
  auto half = npyBytes("<f2", {2}, v.data(), 4);
  expectError([&] { parseNpy(half.data(), half.size(), "x.npy"); },
              "x.npy: unsupported dtype '<f2'");
  auto big = npyBytes(">f4", {2}, v.data(), 8);
  expectError([&] { parseNpy(big.data(), big.size(), "x.npy"); },
              "unsupported dtype");
  auto broken = good; // "False" -> "Maybe"

  std::memcpy(broken.data() + 10, "{'descr': '<f4', 'fortran_order': Maybe",
              39);
  expectError([&] { parseNpy(broken.data(), broken.size(), "x.npy"); },
              "x.npy: bad .npy header");
  std::vector<float> nan = {1, 2, NAN, 4, 5, 6};
  auto withNan = npyBytes("<f4", {3, 2}, nan.data(), 24);
  expectError([&] { parseNpy(withNan.data(), withNan.size(), "x.npy"); },
              "x.npy: sample 1 contains NaN");
  expectError([&] { loadNpy(tempPath("missing.npy")); }, "cannot open");
  expectError([&] { loadArray("data.bin"); },
              "data.bin: unsupported data file");
}

/// A version-1 .npy image whose header dict is `dict` (padded as NumPy
/// pads it), followed by `data`.
static std::vector<uint8_t> npyWithHeader(std::string dict,
                                          std::vector<uint8_t> data = {}) {
  while ((10 + dict.size() + 1) % 64 != 0)
    dict += ' ';
  dict += '\n';
  std::string image = "\x93NUMPY\x01";
  image += '\0';
  image += static_cast<char>(dict.size() & 0xff);
  image += static_cast<char>(dict.size() >> 8);
  image += dict;
  image.append(data.begin(), data.end());
  return {image.begin(), image.end()};
}

// Each malformed header, version and size names the file and the problem.
TEST(Npy, RejectsMalformedHeadersAndSizes) {
  auto parse = [](const std::vector<uint8_t> &b) {
    return [b] { parseNpy(b.data(), b.size(), "x.npy"); };
  };
  expectError(parse(npyWithHeader("{'descr': '<f4', 'fortran_order': False}")),
              "x.npy: bad .npy header: missing 'descr', 'fortran_order' or "
              "'shape'");
  expectError(parse(npyWithHeader("{descr: '<f4'}")),
              "x.npy: bad .npy header: expected a quoted string");
  expectError(parse(npyWithHeader("{'descr': '<f4")),
              "x.npy: bad .npy header: unterminated string");
  expectError(parse(npyWithHeader("{'descr': '<f4' 'shape': (2,)}")),
              "x.npy: bad .npy header: expected ','");
  expectError(parse(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (99999999999999999999,), }")),
              "x.npy: bad .npy header: dimension too large");
  expectError(parse(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (2, x), }")),
              "x.npy: bad .npy header: expected a non-negative integer "
              "dimension");
  expectError(parse(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (1099511627776, 1099511627776), "
                                  "}")),
              "x.npy: shape [1099511627776,1099511627776] is too large");
  expectError(parse(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (2,), 'order': 'C', }")),
              "x.npy: bad .npy header: unexpected key 'order'");

  std::vector<float> v = {1, 2};
  auto good = npyBytes("<f4", {2}, v.data(), 8);
  auto longer = good;
  longer.insert(longer.end(), 3, 0);
  expectError(parse(longer), "x.npy: 3 unexpected bytes after the data");
  auto v5 = good;
  v5[6] = 5;
  expectError(parse(v5), "x.npy: unsupported .npy format version 5");
  auto v2 = npyBytes("<f4", {2}, v.data(), 8, 2);
  expectError(parse({v2.begin(), v2.begin() + 11}),
              "x.npy: truncated .npy header");
  expectError(parse({good.begin(), good.begin() + 40}),
              "x.npy: truncated .npy header");
}

TEST(Csv, ReadsWithAndWithoutHeader) {
  HostArray a =
      loadCsv(writeText("h.csv", "a, b ,c\r\n1,2,3\r\n4,5.5,-6e1\r\n\r\n"));
  EXPECT_EQ(a.dtype, FileDType::F64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.at(4), 5.5);
  EXPECT_EQ(a.at(5), -60.0);
  HostArray b = parseCsv("1,2\n3,4\n5,6", "b.csv");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(b.at(5), 6.0);
  HostArray c = parseCsv("label\n3\n1\n2\n", "c.csv");
  EXPECT_EQ(c.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(c.at(0), 3.0);
  EXPECT_EQ(loadArray(tempPath("h.csv")).shape, a.shape);
}

TEST(Csv, RejectsBadRows) {
  expectError([] { parseCsv("1,2,3\n4,5,6\n7,8\n", "x.csv"); },
              "x.csv line 3: 2 columns, expected 3");
  expectError([] { parseCsv("a,b\n1,2\nfoo,3\n", "x.csv"); },
              "x.csv line 3: column 1 ('foo') is not a number");
  expectError([] { parseCsv("1,2\n3,nan\n", "x.csv"); },
              "x.csv line 2 (sample 1): column 2 is NaN");
  expectError([] { parseCsv("1,,2\n", "x.csv"); },
              "x.csv line 1: column 2 is empty");
  expectError([] { parseCsv("a,b\n", "x.csv"); }, "x.csv: no data rows");
}

// --- DataFeeder -------------------------------------------------------------

/// x: f32 [n, 2] with x[i] = {10i, 10i+1}; y: i32 [n] with y[i] = i.
static std::vector<DataFeeder::Source> sources(int64_t n) {
  HostArray x, y;
  x.dtype = FileDType::F32;
  x.shape = {n, 2};
  x.path = "x.npy";
  std::vector<float> xv;
  std::vector<int32_t> yv;
  for (int64_t i = 0; i < n; ++i) {
    xv.push_back(10.0f * i);
    xv.push_back(10.0f * i + 1);
    yv.push_back(static_cast<int32_t>(i));
  }
  x.bytes.resize(xv.size() * 4);
  std::memcpy(x.bytes.data(), xv.data(), x.bytes.size());
  y.dtype = FileDType::I32;
  y.shape = {n};
  y.path = "y.npy";
  y.bytes.resize(yv.size() * 4);
  std::memcpy(y.bytes.data(), yv.data(), y.bytes.size());
  return {{"x", x, DType::F32, {2}}, {"labels", y, DType::I64, {}}};
}

/// The sample indices of a batch, read back from its converted labels.
static std::vector<int64_t> labelsOf(const DataFeeder::Batch &b) {
  std::vector<int64_t> out(b.tensors[1].size() / 8);
  std::memcpy(out.data(), b.tensors[1].data(), b.tensors[1].size());
  return out;
}

TEST(DataFeeder, BatchesInFileOrderAndDropsPartialBatch) {
  DataFeeder f(sources(10), 3, false, 0, 7);
  EXPECT_EQ(f.numSamples(), 10);
  EXPECT_EQ(f.batchesPerEpoch(), 3);
  DataFeeder::Batch b;
  std::vector<std::vector<int64_t>> want = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}};
  for (int64_t step = 0; step < 7; ++step) {
    ASSERT_TRUE(f.next(b));
    EXPECT_EQ(b.step, step);
    EXPECT_EQ(b.epoch, step / 3);
    EXPECT_EQ(labelsOf(b), want[step % 3]);
    ASSERT_EQ(b.tensors[0].size(), 3u * 2 * 4);
    float first;
    std::memcpy(&first, b.tensors[0].data() + 8, 4); // sample 1 of the batch
    EXPECT_EQ(first, 10.0f * want[step % 3][1]);
  }
  EXPECT_FALSE(f.next(b));
  EXPECT_FALSE(f.next(b));
}

TEST(DataFeeder, ShuffleIsAReproduciblePermutation) {
  DataFeeder a(sources(20), 4, true, 7, 10), b(sources(20), 4, true, 7, 10),
      c(sources(20), 4, true, 8, 10);
  auto order = a.epochOrder(0);
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 20; ++i)
    EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(order, b.epochOrder(0));
  EXPECT_NE(order, c.epochOrder(0));
  EXPECT_NE(order, a.epochOrder(1));
  DataFeeder::Batch ba, bb;
  for (int64_t step = 0; step < 10; ++step) {
    ASSERT_TRUE(a.next(ba));
    ASSERT_TRUE(b.next(bb));
    EXPECT_EQ(labelsOf(ba), labelsOf(bb));
    auto epochOrder = a.epochOrder(step / 5);
    std::vector<int64_t> want(epochOrder.begin() + (step % 5) * 4,
                              epochOrder.begin() + (step % 5) * 4 + 4);
    EXPECT_EQ(labelsOf(ba), want);
  }
  EXPECT_FALSE(a.next(ba));
}

TEST(DataFeeder, ResumesAtStartBatch) {
  DataFeeder full(sources(10), 2, true, 3, 12),
      resumed(sources(10), 2, true, 3, 12, 4, 9);
  DataFeeder::Batch b, r;
  for (int i = 0; i < 9; ++i)
    ASSERT_TRUE(full.next(b));
  for (int64_t step = 9; step < 12; ++step) {
    ASSERT_TRUE(full.next(b));
    ASSERT_TRUE(resumed.next(r));
    EXPECT_EQ(r.step, step);
    EXPECT_EQ(labelsOf(r), labelsOf(b));
  }
  EXPECT_FALSE(resumed.next(r));
}

TEST(DataFeeder, ValidatesSources) {
  auto s = sources(10);
  s[1].array.shape = {9};
  s[1].array.bytes.resize(36);
  expectError([&] { DataFeeder(s, 2, false, 0, 1); },
              "y.npy has 9 samples but x.npy has 10");
  s = sources(10);
  s[0].sampleShape = {64};
  expectError([&] { DataFeeder(s, 2, false, 0, 1); },
              "x.npy: samples have shape [2], the model expects [64]");
  expectError([] { DataFeeder(sources(3), 4, false, 0, 1); },
              "x.npy: 3 samples, fewer than the batch size 4");
  s = sources(4);
  s[1].sampleShape = {1}; // [] and [1] are interchangeable
  EXPECT_NO_THROW(DataFeeder(s, 2, false, 0, 1));
  s = sources(4);
  s[0].array.dtype = FileDType::F32;
  s[1].array = s[0].array; // float "labels" 0, 1, 10, 11, ...
  s[1].array.path = "labels.npy";
  s[1].sampleShape = {2};
  float half = 20.5f;
  std::memcpy(s[1].array.bytes.data() + 5 * 4, &half, 4);
  expectError([&] { DataFeeder(s, 2, false, 0, 1); },
              "labels.npy: sample 2 has value 20.5");
}

TEST(DataFeeder, ThreadErrorSurfacesInNext) {
  detail::feederBatchHookForTesting = [](int64_t step) {
    if (step == 2)
      throw Error("disk on fire at step 2");
  };
  {
    DataFeeder f(sources(10), 2, false, 0, -1);
    DataFeeder::Batch b;
    EXPECT_TRUE(f.next(b));
    EXPECT_TRUE(f.next(b));
    expectError([&] { f.next(b); }, "disk on fire at step 2");
  }
  detail::feederBatchHookForTesting = nullptr;
}

TEST(DataFeeder, EarlyDestructionJoins) {
  {
    DataFeeder f(sources(10), 2, true, 1, -1, 2); // unbounded, small queue
    DataFeeder::Batch b;
    EXPECT_TRUE(f.next(b));
  }
  { DataFeeder f(sources(10), 2, false, 1, -1); } // never consumed
  SUCCEED();
}

//===----------------------------------------------------------------------===//
// Token corpora (language models)
//===----------------------------------------------------------------------===//

namespace {
std::string writeTokens(const std::string &name,
                        const std::vector<uint8_t> &b) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(b.data()), b.size());
  return path;
}
} // namespace

TEST(TokenFeeder, WindowsGiveInputsAndNextTokenLabels) {
  std::vector<uint8_t> corpus(41);
  for (size_t i = 0; i < corpus.size(); ++i)
    corpus[i] = static_cast<uint8_t>(i * 3);
  tcc::rt::DataFeeder::TokenSource src;
  src.path = writeTokens("tokens_u8.bin", corpus);
  src.seqLen = 4;
  // 40 / 4 = 10 windows; batch 3 -> 3 batches per epoch, one window dropped.
  tcc::rt::DataFeeder f(src, 3, /*shuffle=*/false, 0, /*maxBatches=*/4);
  EXPECT_EQ(f.numSamples(), 10);
  EXPECT_EQ(f.batchesPerEpoch(), 3);
  tcc::rt::DataFeeder::Batch b;
  for (int step = 0; step < 4; ++step) {
    ASSERT_TRUE(f.next(b));
    ASSERT_EQ(b.tensors.size(), 2u);
    const int64_t *x = reinterpret_cast<const int64_t *>(b.tensors[0].data());
    const int64_t *y = reinterpret_cast<const int64_t *>(b.tensors[1].data());
    int64_t firstWindow = (step % 3) * 3;
    for (int k = 0; k < 3; ++k)
      for (int t = 0; t < 4; ++t) {
        int64_t pos = (firstWindow + k) * 4 + t;
        EXPECT_EQ(x[k * 4 + t], corpus[pos]);
        EXPECT_EQ(y[k * 4 + t], corpus[pos + 1]);
      }
  }
  EXPECT_FALSE(f.next(b));
}

TEST(TokenFeeder, Uint16LittleEndianAndShuffle) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 33; ++i) {
    bytes.push_back(static_cast<uint8_t>((1000 + i) & 0xff));
    bytes.push_back(static_cast<uint8_t>((1000 + i) >> 8));
  }
  tcc::rt::DataFeeder::TokenSource src;
  src.path = writeTokens("tokens_u16.bin", bytes);
  src.tokenBytes = 2;
  src.seqLen = 8;
  tcc::rt::DataFeeder f(src, 2, /*shuffle=*/true, 7, 2);
  tcc::rt::DataFeeder::Batch b;
  ASSERT_TRUE(f.next(b));
  const int64_t *x = reinterpret_cast<const int64_t *>(b.tensors[0].data());
  const int64_t *y = reinterpret_cast<const int64_t *>(b.tensors[1].data());
  auto order = f.epochOrder(0);
  EXPECT_EQ(x[0], 1000 + order[0] * 8);
  EXPECT_EQ(y[7], 1000 + order[0] * 8 + 8);
}

TEST(TokenFeeder, Errors) {
  tcc::rt::DataFeeder::TokenSource src;
  src.seqLen = 8;
  src.path = writeTokens("tokens_short.bin", std::vector<uint8_t>(8, 1));
  EXPECT_THROW(
      {
        try {
          tcc::rt::DataFeeder f(src, 1, false, 0, 1);
        } catch (const tcc::rt::Error &e) {
          EXPECT_NE(std::string(e.what()).find("fewer than one window of 9"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      tcc::rt::Error);
  src.path = writeTokens("tokens_odd.bin", std::vector<uint8_t>(41, 1));
  src.tokenBytes = 2;
  EXPECT_THROW(tcc::rt::DataFeeder(src, 1, false, 0, 1), tcc::rt::Error);
  src.path = ::testing::TempDir() + "/no_such_tokens.bin";
  src.tokenBytes = 1;
  EXPECT_THROW(tcc::rt::DataFeeder(src, 1, false, 0, 1), tcc::rt::Error);
}

TEST(TokenFeeder, InMemoryCorpusMatchesTheFile) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 21; ++i) {
    bytes.push_back(static_cast<uint8_t>((700 + 5 * i) & 0xff));
    bytes.push_back(static_cast<uint8_t>((700 + 5 * i) >> 8));
  }
  std::vector<uint32_t> tokens =
      decodeTokens(bytes.data(), bytes.size(), 2, "mem.bin");
  ASSERT_EQ(tokens.size(), 21u);
  EXPECT_EQ(tokens[20], 800);
  tcc::rt::DataFeeder::TokenSource src;
  src.path = writeTokens("tokens_mem.bin", bytes);
  src.tokenBytes = 2;
  src.seqLen = 5;
  tcc::rt::DataFeeder fromFile(src, 2, /*shuffle=*/true, 3, 3);
  tcc::rt::DataFeeder fromMemory(src, bytes, 2, /*shuffle=*/true, 3, 3);
  EXPECT_EQ(fromMemory.numSamples(), 4);
  tcc::rt::DataFeeder::Batch a, b;
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(fromFile.next(a));
    ASSERT_TRUE(fromMemory.next(b));
    EXPECT_EQ(a.tensors, b.tensors);
  }
  EXPECT_FALSE(fromMemory.next(b));
  // The errors name what the corpus is called.
  expectError([&] { decodeTokens(bytes.data(), 3, 2, "mem.bin"); },
              "mem.bin: 3 bytes is not a whole number of uint16 tokens");
  expectError([&] { decodeTokens(bytes.data(), 6, 3, "mem.bin"); },
              "mem.bin: tokens must be 1 (uint8), 2 (uint16) or 4 (uint32) "
              "bytes");
  src.seqLen = 21;
  expectError([&] { tcc::rt::DataFeeder(src, bytes, 1, false, 0, 1); },
              "tokens_mem.bin: 21 tokens, fewer than one window of 22");
  src.seqLen = INT64_MAX; // from an untrusted artifact: no overflow
  expectError([&] { tcc::rt::DataFeeder(src, bytes, 1, false, 0, 1); },
              "fewer than one window of 9223372036854775808");
}
