//===- FuzzArtifact.cpp - libFuzzer target for the artifact reader --------===//
//
// tcc::rt::parseArtifact on arbitrary bytes must either return an artifact
// that validateArtifact accepts or throw tcc::rt::Error; anything else (a
// crash, a sanitizer report, another exception type) is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/core/ArtifactFormat.h"

#include <cstring>
#include <vector>

using namespace tcc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> img(data, data + size);
  // The header's CRC-32 covers manifest and blob, so nearly every mutation
  // would stop at "checksum mismatch" (a path the unit tests cover). Store
  // the right checksum whenever the sizes in the header are in range, so
  // mutations reach the manifest parser and the validator.
  if (img.size() >= format::kHeaderSize) {
    uint64_t m = format::getU64(img.data() + 16);
    uint64_t b = format::getU64(img.data() + 24);
    if (m <= img.size() - format::kHeaderSize) {
      uint64_t blobStart = format::alignUp(format::kHeaderSize + m);
      if (blobStart <= img.size() && b <= img.size() - blobStart)
        format::putU32(img.data() + 32,
                       format::checksum(img.data() + format::kHeaderSize, m,
                                        img.data() + blobStart, b));
    }
  }
  try {
    Artifact a = parseArtifact(img.data(), img.size(), "fuzz.tcc");
    validateArtifact(a); // parseArtifact validated it: must not throw now
  } catch (const Error &) {
  }
  return 0;
}
