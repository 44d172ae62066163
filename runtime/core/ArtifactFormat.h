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
uint32_t checksum(const uint8_t *manifest, uint64_t m, const uint8_t *blob,
                  uint64_t b);

/// The complete file image of `a`. Throws Error (without a path prefix).
std::vector<uint8_t> serialize(const Artifact &a);

} // namespace tcc::rt::format

#endif // TCC_RUNTIME_CORE_ARTIFACTFORMAT_H
