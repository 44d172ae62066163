//===- FuzzCheckpoint.cpp - libFuzzer target for the checkpoint reader ----===//
//
// tcc::rt::parseCheckpoint on arbitrary bytes must either return a
// checkpoint whose every tensor lies inside the file image or throw
// tcc::rt::Error; anything else is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Checkpoint.h"

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace tcc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> img(data, data + size);
  // The CRC-32 at [32,36) covers the whole file with that field read as 0;
  // store the right value so mutations reach the manifest parser instead of
  // stopping at "checksum mismatch" (covered by CheckpointTest).
  if (img.size() >= 64) {
    for (int i = 32; i < 36; ++i)
      img[i] = 0;
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, img.data(), static_cast<uInt>(img.size()));
    for (int i = 0; i < 4; ++i)
      img[32 + i] = static_cast<uint8_t>(c >> (8 * i));
  }
  try {
    Checkpoint ck = parseCheckpoint(std::move(img), "fuzz.tcckpt");
    for (const CheckpointTensor &t : ck.tensors)
      if (t.offset > ck.bytes.size() || t.size > ck.bytes.size() - t.offset) {
        fprintf(stderr, "tensor %s lies outside the checkpoint\n",
                t.name.c_str());
        abort();
      }
  } catch (const Error &) {
  }
  return 0;
}
