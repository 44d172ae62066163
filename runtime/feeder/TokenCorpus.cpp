//===- TokenCorpus.cpp - Shards found, mapped, checked and windowed -------===//
#include "runtime/feeder/TokenCorpus.h"

#include "runtime/core/Artifact.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace tcc::rt {

/// One shard: its bytes (a read-only mapping, or a copy for the in-memory
/// constructor) and where its tokens start.
struct TokenCorpus::Shard {
  std::string path;
  const uint8_t *bytes = nullptr;
  size_t size = 0;
  bool mapped = false;
  std::vector<uint8_t> owned;
  size_t dataOffset = 0; // kLlmcHeaderBytes, or 0 without a header
  int tokenBytes = 1;
  bool header = false;
  int64_t numTokens = 0;
  int64_t numWindows = 0;
  ~Shard() {
    if (mapped && size)
      ::munmap(const_cast<uint8_t *>(bytes), size);
  }
};

static bool isGlob(const std::string &s) {
  return s.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> tokenShardPaths(const std::string &spec) {
  if (spec.empty())
    throw Error("no token corpus given");
  struct stat st;
  if (::stat(spec.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::vector<std::string> out;
    DIR *d = ::opendir(spec.c_str());
    if (!d)
      throw Error(spec +
                  ": cannot open the directory: " + std::strerror(errno));
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      std::string path = spec + (spec.back() == '/' ? "" : "/") + name;
      struct stat fs;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0 &&
          ::stat(path.c_str(), &fs) == 0 && S_ISREG(fs.st_mode))
        out.push_back(path);
    }
    ::closedir(d);
    if (out.empty())
      throw Error(spec + ": the directory holds no .bin token shards");
    std::sort(out.begin(), out.end());
    return out;
  }
  if (!isGlob(spec))
    return {spec}; // opening it says whether it exists
  glob_t g;
  std::memset(&g, 0, sizeof g);
  int rc = ::glob(spec.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i)
    out.push_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && out.empty()))
    throw Error(spec + ": the pattern matches no file");
  if (rc != 0)
    throw Error(spec + ": cannot expand the pattern");
  std::sort(out.begin(), out.end());
  return out;
}

static const char *widthName(int bytes) {
  return bytes == 1 ? "u8" : bytes == 2 ? "u16" : "u32";
}

std::vector<uint32_t> decodeTokens(const uint8_t *data, size_t size,
                                   int tokenBytes, const std::string &what) {
  if (tokenBytes != 1 && tokenBytes != 2 && tokenBytes != 4)
    throw Error(what + ": tokens must be 1 (uint8), 2 (uint16) or 4 (uint32) "
                       "bytes");
  if (size % tokenBytes)
    throw Error(what + ": " + std::to_string(size) +
                " bytes is not a whole number of " +
                (tokenBytes == 2 ? "uint16" : "uint32") + " tokens");
  std::vector<uint32_t> tokens(size / tokenBytes);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint8_t *p = data + i * tokenBytes;
    uint32_t v = 0;
    for (int b = tokenBytes - 1; b >= 0; --b)
      v = (v << 8) | p[b];
    tokens[i] = v;
  }
  return tokens;
}

static int32_t readI32(const uint8_t *p) {
  return static_cast<int32_t>(uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                              uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
}

/// Reads the header (if any) and the token count of `s`.
static void parseShard(TokenCorpus::Options const &o, const std::string &path,
                       const uint8_t *bytes, size_t size, size_t &dataOffset,
                       int &tokenBytes, bool &header, int64_t &numTokens) {
  int32_t magic = size >= 4 ? readI32(bytes) : 0;
  header = size >= kLlmcHeaderBytes &&
           (magic == kLlmcMagicU16 || magic == kLlmcMagicU32);
  if (!header) {
    tokenBytes = o.tokenBytes ? o.tokenBytes : 1;
    dataOffset = 0;
    if (tokenBytes != 1 && tokenBytes != 2 && tokenBytes != 4)
      throw Error(path + ": tokens must be 1 (uint8), 2 (uint16) or 4 "
                         "(uint32) bytes");
    if (size % tokenBytes)
      throw Error(path + ": " + std::to_string(size) +
                  " bytes is not a whole number of " + widthName(tokenBytes) +
                  " tokens (and the file has no llm.c header)");
    numTokens = static_cast<int64_t>(size / tokenBytes);
    return;
  }
  int32_t version = readI32(bytes + 4), count = readI32(bytes + 8);
  int32_t want = magic == kLlmcMagicU16 ? kLlmcVersionU16 : kLlmcVersionU32;
  if (version != want)
    throw Error(path + ": bad llm.c shard header: magic " +
                std::to_string(magic) + " with version " +
                std::to_string(version) + ", expected version " +
                std::to_string(want));
  tokenBytes = magic == kLlmcMagicU16 ? 2 : 4;
  if (o.tokenBytes && o.tokenBytes != tokenBytes)
    throw Error(path + ": --token-type " + widthName(o.tokenBytes) +
                " contradicts the llm.c header, whose tokens are " +
                widthName(tokenBytes));
  if (count < 0)
    throw Error(path + ": bad llm.c shard header: token count " +
                std::to_string(count));
  dataOffset = kLlmcHeaderBytes;
  uint64_t need = kLlmcHeaderBytes + uint64_t(count) * tokenBytes;
  if (need != size)
    throw Error(path + ": bad llm.c shard header: it declares " +
                std::to_string(count) + " " + widthName(tokenBytes) +
                " tokens (" + std::to_string(need) + " bytes with the header)" +
                ", the file has " + std::to_string(size) + " bytes");
  numTokens = count;
}

void TokenCorpus::addShard(std::unique_ptr<Shard> s, const Options &o) {
  parseShard(o, s->path, s->bytes, s->size, s->dataOffset, s->tokenBytes,
             s->header, s->numTokens);
  s->numWindows = s->numTokens > 0 ? (s->numTokens - 1) / seqLen_ : 0;
  firstWindow_.push_back(numWindows_);
  numWindows_ += s->numWindows;
  numTokens_ += s->numTokens;
  shards_.push_back(std::move(s));
}

void TokenCorpus::finish(const std::string &what) {
  // Shards of one corpus come from one writer: a shard without the header
  // the others have is most likely one whose header is damaged, and read
  // as raw tokens it would train on garbage.
  auto withHeader = std::find_if(shards_.begin(), shards_.end(),
                                 [](const auto &s) { return s->header; });
  if (withHeader != shards_.end())
    for (const auto &s : shards_)
      if (!s->header)
        throw Error(s->path + ": no llm.c shard header (its first int32 is " +
                    std::to_string(s->size >= 4 ? readI32(s->bytes) : 0) +
                    ", not the magic " + std::to_string(kLlmcMagicU16) +
                    " or " + std::to_string(kLlmcMagicU32) + "), while " +
                    (*withHeader)->path + " has one");
  if (numWindows_ == 0)
    throw Error(
        what + ": " + std::to_string(numTokens_) + " tokens" +
        (shards_.size() > 1
             ? " in " + std::to_string(shards_.size()) + " shards, none holding"
             : ",") +
        " fewer than one window of " + std::to_string(uint64_t(seqLen_) + 1));
}

TokenCorpus::TokenCorpus(const std::string &spec, const Options &o)
    : name_(spec), seqLen_(o.seqLen), vocab_(o.vocab) {
  if (o.seqLen <= 0)
    throw Error(spec + ": the sequence length must be positive");
  for (const std::string &path : tokenShardPaths(spec)) {
    auto s = std::make_unique<Shard>();
    s->path = path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(path + ": not a regular file");
    }
    s->size = static_cast<size_t>(st.st_size);
    if (s->size) {
      void *p = ::mmap(nullptr, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        throw Error(path + ": cannot map: " + std::strerror(err));
      }
      s->bytes = static_cast<const uint8_t *>(p);
      s->mapped = true;
      if (o.randomAccess)
        ::madvise(p, s->size, MADV_RANDOM); // advice: failing is harmless
    }
    ::close(fd); // the mapping keeps the file
    addShard(std::move(s), o);
  }
  finish(spec);
}

TokenCorpus::TokenCorpus(const std::string &name,
                         const std::vector<uint8_t> &bytes, const Options &o)
    : name_(name), seqLen_(o.seqLen), vocab_(o.vocab) {
  if (o.seqLen <= 0)
    throw Error(name + ": the sequence length must be positive");
  auto s = std::make_unique<Shard>();
  s->path = name;
  s->owned = bytes;
  s->bytes = s->owned.data();
  s->size = s->owned.size();
  addShard(std::move(s), o);
  finish(name);
}

TokenCorpus::~TokenCorpus() = default;

std::string TokenCorpus::tokenType() const {
  std::string t = widthName(shards_[0]->tokenBytes);
  for (const auto &s : shards_)
    if (widthName(s->tokenBytes) != t)
      return "mixed";
  return t;
}

// Pages of the mapping the feeder has read stay resident (and count in the
// process's RSS) until the kernel needs the memory. Dropping them from the
// mapping every so often bounds what a long run holds; they stay in the
// page cache, so a window read again soon costs no disk read.
static constexpr size_t kReleaseEvery = size_t(32) << 20;

void TokenCorpus::releasePages() const {
  for (const auto &s : shards_)
    if (s->mapped && s->size)
      ::madvise(const_cast<uint8_t *>(s->bytes), s->size, MADV_DONTNEED);
  touchedBytes_ = 0;
}

void TokenCorpus::window(int64_t k, int64_t *out) const {
  if (k < 0 || k >= numWindows_)
    throw Error("token window " + std::to_string(k) + " is outside [0, " +
                std::to_string(numWindows_) + ")");
  // The last shard starting at or before k: an empty shard shares its
  // first window with the next, so it is never the one found.
  size_t si = std::upper_bound(firstWindow_.begin(), firstWindow_.end(), k) -
              firstWindow_.begin() - 1;
  const Shard &s = *shards_[si];
  int64_t first = (k - firstWindow_[si]) * seqLen_;
  int w = s.tokenBytes;
  const uint8_t *p = s.bytes + s.dataOffset + size_t(first) * w;
  for (int64_t t = 0; t <= seqLen_; ++t, p += w) {
    uint32_t v = w == 1   ? p[0]
                 : w == 2 ? uint32_t(p[0]) | uint32_t(p[1]) << 8
                          : uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                                uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    if (vocab_ > 0 && int64_t(v) >= vocab_) {
      int64_t index = first + t;
      throw Error(s.path + ": token " + std::to_string(v) + " at token " +
                  std::to_string(index) + " (byte offset " +
                  std::to_string(s.dataOffset + size_t(index) * w) +
                  ") is outside the model's vocabulary of " +
                  std::to_string(vocab_));
    }
    out[t] = v;
  }
  if (s.mapped) {
    // A fault maps the cached pages around it too (the kernel's
    // fault-around, 64 KiB by default): count that much per window.
    touchedBytes_ += size_t(seqLen_ + 1) * w + (size_t(64) << 10);
    if (touchedBytes_ >= kReleaseEvery)
      releasePages();
  }
}

uint32_t TokenCorpus::fingerprint() const {
  uLong c = crc32(0L, Z_NULL, 0);
  auto add = [&](const void *p, size_t n) {
    const Bytef *b = static_cast<const Bytef *>(p);
    while (n) {
      uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
      c = crc32(c, b, chunk);
      b += chunk;
      n -= chunk;
    }
  };
  const size_t sample = size_t(1) << 20;
  for (const auto &s : shards_) {
    int64_t meta[2] = {s->numTokens, s->tokenBytes};
    add(meta, sizeof meta);
    size_t data = s->size - s->dataOffset;
    const uint8_t *d = s->bytes + s->dataOffset;
    if (data <= 2 * sample) {
      add(d, data);
    } else {
      add(d, sample);
      add(d + data - sample, sample);
    }
  }
  releasePages();
  return static_cast<uint32_t>(c);
}

} // namespace tcc::rt
