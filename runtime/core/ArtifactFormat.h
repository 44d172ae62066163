//===- ArtifactFormat.h - Byte layout shared by writer, reader, tests -----===//
//
// Internal to the runtime (and its tests): the on-disk layout described in
// Artifact.h, as constants and little-endian helpers.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ARTIFACTFORMAT_H
#define TCC_RUNTIME_CORE_ARTIFACTFORMAT_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::format {

constexpr char kMagic[8] = {'T', 'C', 'C', 'A', 'R', 'T', 'F', '\0'};
constexpr uint64_t kHeaderSize = 64;
constexpr const char *kFormatName = "tcc-artifact";

inline uint64_t alignUp(uint64_t n) {
  return (n + kArtifactAlign - 1) / kArtifactAlign * kArtifactAlign;
}

void putU32(uint8_t *p, uint32_t v);
void putU64(uint8_t *p, uint64_t v);
uint32_t getU32(const uint8_t *p);
uint64_t getU64(const uint8_t *p);

/// CRC-32 of the manifest followed by the blob, as stored at [32,36).
/// `done(offset, n)`, when given, is called after each run of the blob has
/// been read (a mapped blob gives its pages back there).
uint32_t checksum(const uint8_t *manifest, uint64_t m, const uint8_t *blob,
                  uint64_t b,
                  const std::function<void(uint64_t, uint64_t)> &done = {});

/// The complete file image of `a`. Throws Error (without a path prefix).
std::vector<uint8_t> serialize(const Artifact &a);

} // namespace tcc::rt::format

namespace tcc::rt {

/// A file mapped read-only and private (readArtifact's): unmapped when the
/// last Blob viewing it goes.
class MappedFile {
public:
  /// Maps all of `path`; Error "PATH: cannot open/map: REASON".
  static std::shared_ptr<const MappedFile> open(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  const uint8_t *data() const { return static_cast<const uint8_t *>(base_); }
  size_t size() const { return size_; }
  /// Gives back the pages of [p, p + n) (they are read again on the next
  /// touch).
  void release(const uint8_t *p, size_t n) const;

private:
  MappedFile() = default;
  void *base_ = nullptr;
  size_t size_ = 0;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ARTIFACTFORMAT_H
