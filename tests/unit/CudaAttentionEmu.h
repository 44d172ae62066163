//===- CudaAttentionEmu.h - Shared pieces of the attention emulator tests -===//
//
// CudaAttentionEmuGemm.cpp runs attention programs through the CUDA chunk
// loops on a host GEMM; CudaAttentionEmuTest.cpp and
// CudaAttentionSeqMajorEmuTest.cpp check them.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAATTENTIONEMU_H
#define TCC_TESTS_UNIT_CUDAATTENTIONEMU_H

#include "OneProgram.h"

#include <cstdint>
#include <vector>

namespace tcc::rt::test {

/// a followed by b.
inline std::vector<int64_t> cat(std::vector<int64_t> a,
                                std::vector<int64_t> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Runs the program's two instrs through the chunk loops, at most
/// `chunkCap` entries per chunk; returns every tensor's bytes (and the
/// number of chunks in `chunks`).
std::vector<std::vector<uint8_t>>
runLoops(const OneProgram &prog, int64_t chunkCap, int64_t *chunks = nullptr);

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_CUDAATTENTIONEMU_H
