//===- CudaWgmmaEmu.cpp - Warpgroup products (wgmma) in the emulator ------===//
//
// wgmma.mma_async on the emulator's fibers (CudaKernelEmu.h says what is
// modelled). The operands are read as the PTX ISA and CUTLASS's canonical
// GMMA layouts place them ("Matrix Descriptor Format", "Shared Memory
// Matrix Layout"; cute/atom/mma_traits_sm90_gmma.hpp): a descriptor's
// start address, leading and stride byte offsets in 16-byte units (bits
// 0-13, 16-29, 32-45), base offset (49-51) and layout type (62-63, 1 =
// 128-byte swizzle); a K-major operand's element (row r, k) at start + (r
// / 8) sbo + (r % 8) 128 + 2 k, an MN-major one's (k, column c) at start +
// (c / 64) lbo + 2 (c % 64) + (k % 8) 128 + (k / 8) sbo, each address
// then swizzled (bits 4-6 ^= bits 7-9).
//
//===----------------------------------------------------------------------===//
#include "CudaKernelEmu.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tcc_emu {

namespace {

/// An issued product's result for one thread: its accumulator registers
/// and the values they receive at the wait.
struct Pending {
  float *d;
  std::vector<float> values;
};

/// A thread's products: issued since the last commit, and the committed
/// groups, oldest first.
struct ThreadProducts {
  std::vector<Pending> open;
  std::vector<std::vector<Pending>> committed;
};
ThreadProducts threads[1024];

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "CUDA emulator: %s (thread %u)\n", what,
               threadInBlock());
  std::abort();
}

/// Element of a 128-byte-swizzled 16-bit operand: (mn, k) of a K-major
/// one, (k, mn) of an MN-major one.
float operandAt(int dt, unsigned long long desc, bool mnMajor, int mn, int k) {
  unsigned start = static_cast<unsigned>(desc & 0x3fff) << 4,
           lbo = static_cast<unsigned>((desc >> 16) & 0x3fff) << 4,
           sbo = static_cast<unsigned>((desc >> 32) & 0x3fff) << 4;
  if ((desc >> 62) != 1 || ((desc >> 49) & 7) != 0)
    fail("a wgmma descriptor of another layout than the 128-byte swizzle "
         "with base offset 0 (the one the emulator models)");
  unsigned at = mnMajor ? start + (mn / 64) * lbo + (mn % 64) * 2 +
                              (k % 8) * 128 + (k / 8) * sbo
                        : start + (mn / 8) * sbo + (mn % 8) * 128 + k * 2;
  at ^= ((at >> 7) & 7) << 4;
  unsigned short h;
  std::memcpy(&h, sharedAt(at, 2), 2);
  return half16(dt, h);
}

/// The newest value d will hold: a pending product's, else the register's.
float latest(ThreadProducts &p, float *d, int i) {
  for (auto it = p.open.rbegin(); it != p.open.rend(); ++it)
    if (it->d == d)
      return it->values[i];
  for (auto g = p.committed.rbegin(); g != p.committed.rend(); ++g)
    for (auto it = g->rbegin(); it != g->rend(); ++it)
      if (it->d == d)
        return it->values[i];
  return d[i];
}

} // namespace

void wgmma(int dt, int n, float *d, const unsigned *a, unsigned long long descA,
           unsigned long long descB, bool transB, bool accumulate) {
  struct Operands {
    unsigned a[4];
    unsigned long long descA, descB;
    int dt, n, flags;
  } mine{{0, 0, 0, 0},
         a ? 0 : descA,
         descB,
         dt,
         n,
         (a ? 1 : 0) | (transB ? 2 : 0) | (accumulate ? 4 : 0)},
      all[128];
  if (a)
    std::memcpy(mine.a, a, sizeof mine.a);
  if (n % 8 != 0 || n < 8 || n > 256)
    fail("a wgmma whose N is not a multiple of 8 in [8, 256]");
  warpgroupAllGather(&mine, sizeof mine, all);
  for (const Operands &o : all)
    if (o.descA != mine.descA || o.descB != mine.descB || o.dt != mine.dt ||
        o.n != mine.n || o.flags != mine.flags)
      fail("a wgmma whose shape, flags or descriptors differ across the "
           "warpgroup");
  auto aAt = [&](int row, int k) {
    if (!a)
      return operandAt(dt, descA, false, row, k);
    // The m16k16 fragment of warp row / 16: register (row % 16 >= 8) + 2
    // (k >= 8) of lane 4 (row % 8) + (k % 8) / 2, half k % 2.
    const Operands &o = all[(row / 16) * 32 + (row % 8) * 4 + (k % 8) / 2];
    return half16(dt, o.a[(row % 16 >= 8) + 2 * (k >= 8)] >> (16 * (k % 2)));
  };
  auto bAt = [&](int k, int col) {
    return transB ? operandAt(dt, descB, true, col, k)
                  : operandAt(dt, descB, false, col, k);
  };
  ThreadProducts &mineP = threads[threadInBlock()];
  const int t = static_cast<int>(threadInBlock() % 128), warp = t / 32,
            g = (t % 32) / 4, q = t % 4;
  Pending p{d, std::vector<float>(n / 2)};
  for (int j = 0; j < n / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      int row = 16 * warp + g + 8 * (e / 2), col = 8 * j + 2 * q + e % 2;
      float acc = accumulate ? latest(mineP, d, 4 * j + e) : 0.0f;
      for (int k = 0; k < 16; ++k)
        acc += aAt(row, k) * bAt(k, col);
      p.values[4 * j + e] = acc;
    }
  mineP.open.push_back(std::move(p));
}

void wgmmaFence() {}

void wgmmaCommit() {
  ThreadProducts &p = threads[threadInBlock()];
  p.committed.push_back(std::move(p.open));
  p.open.clear();
}

void wgmmaWait(int pending) {
  ThreadProducts &p = threads[threadInBlock()];
  while (static_cast<int>(p.committed.size()) > pending) {
    for (const Pending &r : p.committed.front())
      std::memcpy(r.d, r.values.data(), r.values.size() * sizeof(float));
    p.committed.erase(p.committed.begin());
  }
}

void wgmmaBlockEnded() {
  for (ThreadProducts &p : threads) {
    bool left = !p.open.empty() || !p.committed.empty();
    p.open.clear();
    p.committed.clear();
    if (left) {
      std::fprintf(stderr, "CUDA emulator: a block ends with wgmma products "
                           "no wait covered (never committed, or never "
                           "waited for)\n");
      std::abort();
    }
  }
}

} // namespace tcc_emu
