//===- CudaWgmmaProbe.cu - The wgmma layout probe's kernel ----------------===//
//
// CudaWgmmaProbe.h says what it checks. Built by nvcc into tcc_unit_tests
// (sm_90a; elsewhere wgmma traps) and, through CudaWgmmaProbeEmu.cpp, as
// C++ into the emulator's tests.
//
//===----------------------------------------------------------------------===//
#include "CudaWgmmaProbe.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"
#include "runtime/cuda/CudaWgmma.cuh"

namespace tcc::rt::test {

using namespace tcc::rt::cuda;

namespace {

constexpr int kTileBytes = 64 * 64 * 2;
constexpr int kSmem = 2 * kTileBytes + 1024 + 16;

/// The thread's fragment of a 64 x N result into out[64][N].
template <int N>
__device__ void storeFragment(const float (*d)[4], float *out) {
  int t = static_cast<int>(threadIdx.x), w = t / 32, g = (t % 32) / 4,
      q = t % 4;
  for (int j = 0; j < N / 8; ++j)
    for (int e = 0; e < 4; ++e)
      out[(16 * w + g + 8 * (e / 2)) * N + 8 * j + 2 * q + e % 2] = d[j][e];
}

struct ProbeMaps {
  CUtensorMap a, b;
};

__global__ void __launch_bounds__(128)
    wgmmaProbeKernel(const __grid_constant__ ProbeMaps maps,
                     const unsigned short *a, int probe, float *out) {
  TCC_DYNAMIC_SMEM(smem);
  // The tiles at the first 1024-byte aligned window address.
  unsigned char *tiles = smem + (1024 - smemAddress(smem) % 1024) % 1024;
  auto *bar = reinterpret_cast<unsigned long long *>(tiles + 2 * kTileBytes);
  if (threadIdx.x == 0)
    mbarInit(bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarArriveExpectTx(bar, 2 * kTileBytes);
    tensorCopy3d(tiles, &maps.a, 0, 0, 0, bar);
    tensorCopy3d(tiles + kTileBytes, &maps.b, 0, 0, 0, bar);
  }
  mbarWait(bar, 0);
  const unsigned aAt = smemAddress(tiles), bAt = aAt + kTileBytes;
  float d[8][4];
  if (probe == static_cast<int>(WgmmaProbe::SharedAB)) {
    float h[4][4];
    wgmmaFence();
    for (int kk = 0; kk < 4; ++kk) {
      wgmmaSS<kDtBF16, 64>(d, wgmmaDesc(aAt + 32 * kk, 16, 1024),
                           wgmmaDesc(bAt + 32 * kk, 16, 1024), kk);
      wgmmaSS<kDtBF16, 32>(h, wgmmaDesc(aAt + 32 * kk, 16, 1024),
                           wgmmaDesc(bAt + 4096 + 32 * kk, 16, 1024), kk);
    }
    wgmmaCommit();
    wgmmaWaitAll();
    wgmmaHold<64>(d);
    wgmmaHold<32>(h);
    storeFragment<32>(h, out + 64 * 64);
  } else {
    int t = static_cast<int>(threadIdx.x), w = t / 32, g = (t % 32) / 4,
        q = t % 4;
    auto pair = [&](int r, int c) {
      return static_cast<unsigned>(a[r * 64 + c]) |
             static_cast<unsigned>(a[r * 64 + c + 1]) << 16;
    };
    unsigned fa[4][4];
    for (int kk = 0; kk < 4; ++kk) {
      int r = 16 * w + g, c = 16 * kk + 2 * q;
      fa[kk][0] = pair(r, c);
      fa[kk][1] = pair(r + 8, c);
      fa[kk][2] = pair(r, c + 8);
      fa[kk][3] = pair(r + 8, c + 8);
    }
    for (int j = 0; j < 8; ++j)
      for (int e = 0; e < 4; ++e)
        d[j][e] = 1.0f;
    wgmmaFence();
    for (int kk = 0; kk < 4; ++kk)
      wgmmaRS<kDtBF16, 64>(d, fa[kk], wgmmaDesc(bAt + 2048 * kk, 8192, 1024));
    wgmmaCommit();
    wgmmaWaitAll();
    wgmmaHold<64>(d);
  }
  storeFragment<64>(d, out);
}

/// A 64 x 64 bf16 matrix at `m` as one box, in the 128-byte swizzle.
CUtensorMap mapOf(const unsigned short *m) {
  CUtensorMap map;
  TileMapShape s;
  s.base = m;
  s.cols = s.rows = s.pitch = 64;
  s.outer = 1;
  s.boxCols = s.boxRows = 64;
  s.swizzle128 = true;
  encodeTileMap(&map, s);
  return map;
}

} // namespace

void runWgmmaProbe(WgmmaProbe probe, const unsigned short *a,
                   const unsigned short *b, float *out) {
  ProbeMaps maps{mapOf(a), mapOf(b)};
  TCC_LAUNCH_SMEM(wgmmaProbeKernel, dim3(1), dim3(128), kSmem, nullptr)
  (maps, a, static_cast<int>(probe), out);
  checkLaunch("the wgmma probe");
}

} // namespace tcc::rt::test
