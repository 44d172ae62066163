//===- FuzzTokens.cpp - libFuzzer target for token corpora (--tokens) -----===//
//
// Input layout: byte 0 picks the token width (bits 1-2 clear or 1: bit 0
// chooses uint8 or uint16; bit 2 alone: uint32; bits 1 and 2: an invalid
// width 3, to reach that error) and shuffling (bit 3); byte 1 the sequence
// length T (1 + b % 16, or a huge T when b is 255); byte 2 the batch size
// (1 + b % 8); byte 3 the start batch (b % 4) and the batches to take
// (start + 1 + b / 4 % 4). The rest is the file.
//
// The feeder must either throw tcc::rt::Error or produce batches in which
// every token comes from the corpus (past an llm.c header, when the file
// starts with one's magic), inputs are a window's first T tokens
// and labels the same window shifted by one; anything else is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/feeder/DataFeeder.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace tcc::rt;

[[noreturn]] static void bug(const char *what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  DataFeeder::TokenSource src;
  src.path = "fuzz.tokens";
  src.tokenBytes = (data[0] & 6) == 6   ? 3
                   : (data[0] & 6) == 4 ? 4
                                        : 1 + (data[0] & 1);
  bool shuffle = data[0] & 8;
  src.seqLen = data[1] == 255 ? INT64_MAX : 1 + data[1] % 16;
  int64_t batch = 1 + data[2] % 8;
  int64_t start = data[3] % 4, stop = start + 1 + data[3] / 4 % 4;
  std::vector<uint8_t> corpus(data + 4, data + size);

  // An llm.c header's tokens start after it (the feeder also checks its
  // version, count and width, which may reject what the oracle takes).
  size_t skip = 0;
  if (corpus.size() >= kLlmcHeaderBytes) {
    int32_t magic;
    std::memcpy(&magic, corpus.data(), 4);
    if (magic == kLlmcMagicU16 || magic == kLlmcMagicU32)
      skip = kLlmcHeaderBytes;
  }
  std::vector<uint32_t> tokens;
  try {
    tokens = decodeTokens(corpus.data() + skip, corpus.size() - skip,
                          src.tokenBytes, src.path);
  } catch (const Error &) {
  }
  if (!tokens.empty() && tokens.size() * src.tokenBytes != corpus.size() - skip)
    bug("decodeTokens: token count does not match the byte count");
  try {
    DataFeeder f(src, corpus, batch, shuffle, /*seed=*/data[0], stop,
                 /*prefetch=*/2, start);
    if (tokens.empty())
      bug("the feeder accepted what decodeTokens rejected");
    int64_t T = src.seqLen;
    if (f.numSamples() < batch ||
        static_cast<uint64_t>(f.numSamples() * T + 1) > tokens.size())
      bug("the windows do not fit the corpus");
    DataFeeder::Batch b;
    int64_t seen = 0;
    while (f.next(b)) {
      if (b.step != start + seen++ || b.tensors.size() != 2)
        bug("unexpected batch");
      size_t bytes = sizeof(int64_t) * batch * T;
      if (b.tensors[0].size() != bytes || b.tensors[1].size() != bytes)
        bug("batch tensors have the wrong size");
      const int64_t *x = reinterpret_cast<const int64_t *>(b.tensors[0].data());
      const int64_t *y = reinterpret_cast<const int64_t *>(b.tensors[1].data());
      for (int64_t k = 0; k < batch; ++k) {
        // Find the window: x[k] must be some tokens[w*T .. w*T+T).
        bool found = false;
        for (int64_t w = 0; w < f.numSamples() && !found; ++w) {
          const uint32_t *win = tokens.data() + w * T;
          bool same = true;
          for (int64_t t = 0; t < T && same; ++t)
            same = x[k * T + t] == win[t] && y[k * T + t] == win[t + 1];
          found = same;
        }
        if (!found)
          bug("a batch row is not a window of the corpus");
      }
    }
    if (seen != stop - start)
      bug("wrong number of batches");
  } catch (const Error &) {
  }
  return 0;
}
