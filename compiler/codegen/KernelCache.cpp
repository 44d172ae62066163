//===- KernelCache.cpp - Compiled kernels kept across compiles ------------===//
#include "compiler/codegen/KernelCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace tcc;

// An entry: magic, payload length (8 bytes, little-endian), SHA-256 of the
// payload, payload.
static const char kMagic[8] = {'T', 'C', 'C', 'K', 'C', '0', '0', '1'};
static constexpr size_t kHeader = 8 + 8 + 32;

std::string tcc::kernelCacheDir() {
  if (const char *d = std::getenv("TCC_CACHE_DIR"))
    return std::strcmp(d, "off") == 0 ? "" : d;
  llvm::SmallString<256> dir;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = x;
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    dir = h;
    llvm::sys::path::append(dir, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(dir, "tcc");
  return std::string(dir);
}

std::string tcc::kernelCacheKey(const std::vector<std::string> &parts) {
  llvm::SHA256 h;
  for (const std::string &p : parts) {
    uint64_t n = p.size();
    h.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(&n),
                                     sizeof n));
    h.update(p);
  }
  std::array<uint8_t, 32> digest = h.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

static std::string entryPath(const std::string &kind, const std::string &key) {
  std::string dir = kernelCacheDir();
  if (dir.empty())
    return "";
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, kind, key);
  return std::string(p);
}

static std::array<uint8_t, 32> digestOf(const uint8_t *data, size_t n) {
  llvm::SHA256 h;
  h.update(llvm::ArrayRef<uint8_t>(data, n));
  return h.final();
}

std::optional<std::vector<uint8_t>>
tcc::kernelCacheGet(const std::string &kind, const std::string &key) {
  std::string path = entryPath(kind, key);
  if (path.empty())
    return std::nullopt;
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  const uint8_t *p =
      reinterpret_cast<const uint8_t *>((*buf)->getBufferStart());
  size_t size = (*buf)->getBufferSize();
  if (size < kHeader || std::memcmp(p, kMagic, 8) != 0)
    return std::nullopt;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(p[8 + i]) << (8 * i);
  if (n != size - kHeader)
    return std::nullopt;
  std::array<uint8_t, 32> d = digestOf(p + kHeader, n);
  if (std::memcmp(d.data(), p + 16, 32) != 0)
    return std::nullopt;
  return std::vector<uint8_t>(p + kHeader, p + size);
}

bool tcc::kernelCachePut(const std::string &kind, const std::string &key,
                         const std::vector<uint8_t> &bytes) {
  std::string path = entryPath(kind, key);
  if (path.empty())
    return false;
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (llvm::sys::fs::create_directories(dir))
    return false;
  std::string entry(kMagic, 8);
  uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i)
    entry.push_back(char((n >> (8 * i)) & 0xff));
  std::array<uint8_t, 32> d = digestOf(bytes.data(), bytes.size());
  entry.append(reinterpret_cast<const char *>(d.data()), d.size());
  entry.append(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  // A temporary of this process's own, renamed over the entry: a reader
  // sees the old entry, the new one or none, never part of one.
  llvm::SmallString<256> tmp;
  int fd = -1;
  if (llvm::sys::fs::createUniqueFile(path + ".%%%%%%.tmp", fd, tmp))
    return false;
  bool ok;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << entry;
    os.flush();
    ok = !os.has_error();
    os.clear_error();
  }
  if (ok && !llvm::sys::fs::rename(tmp, path))
    return true;
  llvm::sys::fs::remove(tmp);
  return false;
}
