//===- FuzzFeeder.cpp - libFuzzer target for the .npy and CSV readers -----===//
//
// The first byte picks the reader (even: parseNpy, odd: parseCsv), the rest
// is the file. Each must return an array whose element bytes match its
// shape or throw tcc::rt::Error; anything else is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/feeder/Csv.h"
#include "runtime/feeder/HostArray.h"
#include "runtime/feeder/Npy.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tcc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool csv = data[0] & 1;
  ++data;
  --size;
  try {
    HostArray a = csv ? parseCsv(std::string(data, data + size), "fuzz.csv")
                      : parseNpy(data, size, "fuzz.npy");
    for (int64_t d : a.shape) {
      if (d < 0) {
        fprintf(stderr, "negative dimension\n");
        abort();
      }
    }
    int64_t n = a.numElements();
    if (static_cast<uint64_t>(n) * fileDTypeSize(a.dtype) != a.bytes.size()) {
      fprintf(stderr, "element bytes do not match the shape\n");
      abort();
    }
  } catch (const Error &) {
  }
  return 0;
}
