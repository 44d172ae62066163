//===- CudaWgmmaEmuTest.cpp - Warpgroup products in the emulator ----------===//
//
// The emulator stands in for sm_90a's wgmma (runtime/cuda/CudaWgmma.cuh)
// in every test of the attention kernels that use it, so its rules are
// tested here through the kernels' own wrappers: tiles that tensor copies
// put in shared memory in the 128-byte swizzle, read through descriptors,
// give the plain matrix products (K-major A and B; registers A and
// MN-major B; 32 and 64 wide, as the kernels' halves and tiles), results
// land only at the wait, and what a GPU would get wrong aborts.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelEmu.h"

#include "CudaWgmmaProbe.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/cuda/CudaWgmma.cuh"

#include <cuda.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

using namespace tcc::rt::cuda;
using tcc::rt::test::expectWgmmaProbe;
using tcc::rt::test::kWgmmaProbeOut;
using tcc::rt::test::ProbeMatrix;
using tcc::rt::test::runWgmmaProbe;
using tcc::rt::test::WgmmaProbe;

namespace {

constexpr int kTileBytes = 64 * 64 * 2;
constexpr size_t kSmem = 4 * kTileBytes + 1024 + 64;

/// A 64 x 64 bf16 matrix of small integers (the probe's).
using Matrix = ProbeMatrix;

/// A map of m read as one swizzled box of 64 x 64.
CUtensorMap swizzledMap(const Matrix &m) {
  CUtensorMap map;
  const unsigned long long dims[3] = {64, 64, 1}, strides[2] = {128, 8192};
  const unsigned box[3] = {64, 64, 1};
  tcc_emu::encodeTileMap(&map, m.bits.data(), dims, strides, box, 2, 128);
  return map;
}

/// The block's first 1024-byte aligned byte of shared memory (by window
/// address, as the kernels align their swizzled tiles).
unsigned char *alignedTiles() {
  unsigned char *smem = tcc_emu::dynamicShared();
  return smem + (1024 - tcc_emu::sharedAddress(smem) % 1024) % 1024;
}

/// One block of a warpgroup: thread 0 copies `a` and `b` into two 1024-byte
/// aligned tiles, every thread waits, then runs `body(tileA, tileB)`.
void runWarpgroup(
    const Matrix &a, const Matrix &b,
    const std::function<void(unsigned short *, unsigned short *)> &body) {
  CUtensorMap ma = swizzledMap(a), mb = swizzledMap(b);
  tcc_emu::launch(
      dim3(1), dim3(128),
      [&] {
        unsigned char *tiles = alignedTiles();
        auto *bar =
            reinterpret_cast<unsigned long long *>(tiles + 2 * kTileBytes);
        if (threadIdx.x == 0) {
          mbarInit(bar, 1);
          mbarArriveExpectTx(bar, 2 * kTileBytes);
          tensorCopy3d(tiles, &ma, 0, 0, 0, bar);
          tensorCopy3d(tiles + kTileBytes, &mb, 0, 0, 0, bar);
        }
        __syncthreads();
        mbarWait(bar, 0);
        body(reinterpret_cast<unsigned short *>(tiles),
             reinterpret_cast<unsigned short *>(tiles + kTileBytes));
      },
      kSmem);
}

/// The thread's fragment of a 64 x N result into out[64][N].
template <int N> void storeFragment(const float (*d)[4], float *out) {
  int t = static_cast<int>(threadIdx.x), w = t / 32, g = (t % 32) / 4,
      q = t % 4;
  for (int j = 0; j < N / 8; ++j)
    for (int e = 0; e < 4; ++e)
      out[(16 * w + g + 8 * (e / 2)) * N + 8 * j + 2 * q + e % 2] = d[j][e];
}

} // namespace

// Tensor copies in the 128-byte swizzle put chunk c of row r at c ^ (r % 8).
TEST(CudaWgmmaEmu, SwizzledCopyPermutesChunksByRow) {
  Matrix a(1), b(2);
  std::vector<unsigned short> tile(64 * 64);
  runWarpgroup(a, b, [&](unsigned short *ta, unsigned short *) {
    if (threadIdx.x == 0)
      std::memcpy(tile.data(), ta, kTileBytes);
  });
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c)
      ASSERT_EQ(tile[r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8],
                a.bits[r * 64 + c])
          << r << "," << c;
}

// The layout probe (CudaWgmmaProbe.h, the same kernel CudaKernelsTest runs
// on a GPU): K-major A and B through descriptors, 64 and 32 wide (4 k16
// steps 32 bytes apart); register A and MN-major B (2048 bytes apart).
TEST(CudaWgmmaEmu, ProbeGivesThePlainProducts) {
  ProbeMatrix a(3), b(4);
  for (WgmmaProbe probe : {WgmmaProbe::SharedAB, WgmmaProbe::RegisterA}) {
    std::vector<float> out(kWgmmaProbeOut, -1.0f);
    runWgmmaProbe(probe, a.bits.data(), b.bits.data(), out.data());
    expectWgmmaProbe(probe, a, b, out);
  }
}

// The accumulators keep their values until the wait: a kernel that reads
// them before it sees stale ones here, as on a GPU.
TEST(CudaWgmmaEmu, ResultsLandAtTheWait) {
  Matrix a(7), b(8);
  std::vector<float> before(128), after(128);
  runWarpgroup(a, b, [&](unsigned short *ta, unsigned short *tb) {
    float d[4][4] = {};
    d[0][0] = -5.0f;
    wgmmaFence();
    wgmmaSS<kDtBF16, 32>(d, wgmmaDesc(smemAddress(ta), 16, 1024),
                         wgmmaDesc(smemAddress(tb), 16, 1024), 0);
    wgmmaCommit();
    before[threadIdx.x] = d[0][0];
    wgmmaWaitAll();
    after[threadIdx.x] = d[0][0];
  });
  for (int t = 0; t < 128; ++t)
    EXPECT_EQ(before[t], -5.0f) << t;
  float want = 0; // thread 0: row 0, column 0, the first k16 step
  for (int k = 0; k < 16; ++k)
    want += a.at(0, k) * b.at(0, k);
  EXPECT_EQ(after[0], want);
}

// What a GPU gets wrong aborts with what went wrong: products never
// committed and waited for, a descriptor of another layout, operands that
// differ across the warpgroup, a swizzled copy to a tile not 1024-byte
// aligned.
TEST(CudaWgmmaEmuDeathTest, MistakesAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Matrix a(9), b(10);
  EXPECT_DEATH(runWarpgroup(a, b,
                            [](unsigned short *ta, unsigned short *tb) {
                              float d[4][4];
                              wgmmaSS<kDtBF16, 32>(
                                  d, wgmmaDesc(smemAddress(ta), 16, 1024),
                                  wgmmaDesc(smemAddress(tb), 16, 1024), 0);
                            }),
               "a block ends with wgmma products no wait covered");
  EXPECT_DEATH(
      runWarpgroup(a, b,
                   [](unsigned short *ta, unsigned short *tb) {
                     float d[4][4];
                     unsigned long long plain =
                         wgmmaDesc(smemAddress(ta), 16, 1024) & ~(3ull << 62);
                     wgmmaSS<kDtBF16, 32>(
                         d, plain, wgmmaDesc(smemAddress(tb), 16, 1024), 0);
                   }),
      "a wgmma descriptor of another layout");
  EXPECT_DEATH(runWarpgroup(a, b,
                            [](unsigned short *ta, unsigned short *tb) {
                              float d[4][4];
                              unsigned at =
                                  smemAddress(threadIdx.x == 5 ? tb : ta);
                              wgmmaSS<kDtBF16, 32>(
                                  d, wgmmaDesc(at, 16, 1024),
                                  wgmmaDesc(smemAddress(tb), 16, 1024), 0);
                            }),
               "differ across the warpgroup");
  CUtensorMap m = swizzledMap(a);
  EXPECT_DEATH(tcc_emu::launch(
                   dim3(1), dim3(128),
                   [&] {
                     unsigned char *tiles = alignedTiles();
                     auto *bar = reinterpret_cast<unsigned long long *>(
                         tiles + 2 * kTileBytes);
                     if (threadIdx.x == 0) {
                       mbarInit(bar, 1);
                       mbarArriveExpectTx(bar, kTileBytes);
                       tensorCopy3d(tiles + 128, &m, 0, 0, 0, bar);
                     }
                   },
                   kSmem),
               "not 1024-byte aligned");
}
