//===- TokenCorpus.h - Token shards, memory-mapped, as one corpus -*- C++
//-*-===//
//
// A language-model corpus: one token file, a glob of shards or a directory
// of them, each memory-mapped read-only so that a corpus far larger than
// memory trains in a process that holds only the pages of the windows it
// is copying (they are handed back to the page cache as reading goes on).
//
// Shard formats, told apart by the first bytes:
//  * llm.c's (dev/data/data_common.py): a header of 256 little-endian
//    int32 -- magic, version, token count -- then the tokens: magic
//    20240520 version 1 holds uint16 tokens (GPT-2), magic 20240801
//    version 7 uint32 tokens (Llama 3). The file must hold exactly the
//    tokens the header declares.
//  * raw (nanoGPT's prepare.py, or any byte file): no header, uint8,
//    uint16 or uint32 little-endian tokens as the caller says.
//
// Windows: window k is T + 1 consecutive tokens of one shard; shard s
// holds (n_s - 1) / T of them, at multiples of T, and the corpus numbers
// them shard after shard in path order. Windows do not straddle shards:
// shards are independent documents streams as llm.c writes them (its
// loader also reads each shard on its own), and a single file gives the
// same windows as before shards existed.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_FEEDER_TOKENCORPUS_H
#define TCC_RUNTIME_FEEDER_TOKENCORPUS_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// llm.c's shard header: 256 int32, magic and version at [0] and [1], the
/// token count at [2].
constexpr int32_t kLlmcMagicU16 = 20240520, kLlmcVersionU16 = 1;
constexpr int32_t kLlmcMagicU32 = 20240801, kLlmcVersionU32 = 7;
constexpr size_t kLlmcHeaderBytes = 256 * 4;

/// The files `spec` names, in order: a file; a directory (its regular
/// files ending in ".bin", sorted by name); or a glob pattern (*, ?, [..]),
/// its matches sorted. Error naming the spec when it names nothing.
std::vector<std::string> tokenShardPaths(const std::string &spec);

class TokenCorpus {
public:
  struct Options {
    /// Bytes per token of headerless shards (1, 2 or 4), and the width a
    /// header must agree with; 0: not given (a header decides, else 1).
    int tokenBytes = 0;
    int64_t seqLen = 0; // T: windows are T + 1 tokens
    /// Token ids must be below this (the model's vocabulary); 0: unchecked.
    int64_t vocab = 0;
    /// Windows are read in shuffled order: the kernel's read-ahead, which
    /// helps a sequential reader, only adds reads of pages never used.
    bool randomAccess = false;
  };

  /// Maps every shard `spec` names (tokenShardPaths) and checks its header.
  /// Throws Error naming the file: unreadable, a bad header (magic known
  /// but another version, a negative count, a count beyond the file or
  /// short of it), a width that contradicts the header, a size that is not
  /// a whole number of tokens, no window of T + 1 tokens in any shard.
  TokenCorpus(const std::string &spec, const Options &o);
  /// One shard whose bytes are already in memory (copied); `name` names it
  /// in errors (tests, fuzzing).
  TokenCorpus(const std::string &name, const std::vector<uint8_t> &bytes,
              const Options &o);
  ~TokenCorpus();
  TokenCorpus(const TokenCorpus &) = delete;
  TokenCorpus &operator=(const TokenCorpus &) = delete;

  int64_t numWindows() const { return numWindows_; }
  int64_t numTokens() const { return numTokens_; }
  int64_t seqLen() const { return seqLen_; }
  size_t numShards() const { return shards_.size(); }
  /// The spec (or in-memory name) it was opened from, for messages.
  const std::string &name() const { return name_; }
  /// Copies the T + 1 tokens of window k into `out`. Throws Error naming
  /// the shard and the token's place when one is >= the vocabulary. One
  /// reader at a time (the feeder's thread): it counts the bytes read to
  /// hand the pages back.
  void window(int64_t k, int64_t *out) const;

  /// A fingerprint of the corpus for checkpoints, cheap at any size: the
  /// token count and width of every shard and a CRC-32 over them and over
  /// the first and last MiB of each shard's tokens. (Reading all of a
  /// 20 GB corpus at every start would cost minutes.)
  uint32_t fingerprint() const;
  /// Bytes per token ("u8", "u16" or "u32"; "mixed" if shards differ).
  std::string tokenType() const;

private:
  struct Shard;
  void addShard(std::unique_ptr<Shard> s, const Options &o);
  void finish(const std::string &what);
  /// Hands the mapped pages read so far back to the page cache.
  void releasePages() const;

  std::string name_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<int64_t> firstWindow_; // per shard: its first global window
  int64_t numWindows_ = 0, numTokens_ = 0, seqLen_ = 0, vocab_ = 0;
  mutable size_t touchedBytes_ = 0; // mapped bytes read since the release
};

/// Decodes token bytes: one uint8 per token, or two (little-endian uint16)
/// or four (little-endian uint32) per token. `what` names the file in
/// errors. Throws Error for another width or a size that is not a whole
/// number of tokens.
std::vector<uint32_t> decodeTokens(const uint8_t *data, size_t size,
                                   int tokenBytes, const std::string &what);

} // namespace tcc::rt

#endif // TCC_RUNTIME_FEEDER_TOKENCORPUS_H
