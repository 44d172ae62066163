//===- CudaTmaEmuTest.cpp - The emulator's mbarriers and tensor copies ----===//
//
// The emulator stands in for sm_90's mbarriers and tensor copies
// (runtime/cuda/CudaTma.cuh) in every test of the kernels that use them,
// so its own rules are tested here: a box lands where and as a GPU puts it
// (zeros outside the tensor, in each dimension), not before a wait sees its
// phase complete, and the mistakes that hang or fault a GPU abort with
// what went wrong.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelEmu.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

/// A [2][5][8] tensor of 16-bit values, rows 16 elements apart (the 8
/// after each row's 8 are not the tensor's), value 1000 z + 100 y + x.
struct Tensor {
  alignas(16) unsigned short v[2][5][16];
  Tensor() {
    for (int z = 0; z < 2; ++z)
      for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 16; ++x)
          v[z][y][x] = static_cast<unsigned short>(1000 * z + 100 * y + x);
  }
};

/// A map of Tensor read in boxes of 16 columns x 4 rows.
CUtensorMap mapOf(const Tensor &t) {
  CUtensorMap m;
  const unsigned long long dims[3] = {8, 5, 2}, strides[2] = {32, 160};
  const unsigned box[3] = {16, 4, 1};
  tcc_emu::encodeTileMap(&m, t.v, dims, strides, box, 2);
  return m;
}

constexpr size_t kSmem = 1024, kBar = 512, kBoxBytes = 16 * 4 * 2;

/// One block of 64 threads: thread 0 makes the barrier and starts `issue`;
/// every thread then waits for phase 0.
void runBlock(const std::function<void(unsigned char *)> &issue) {
  tcc_emu::launch(
      dim3(1), dim3(64),
      [&] {
        unsigned char *smem = tcc_emu::dynamicShared();
        if (threadIdx.x == 0) {
          tcc_emu::mbarInit(smem + kBar, 1);
          issue(smem);
        }
        __syncthreads();
        tcc_emu::mbarWait(smem + kBar, 0);
      },
      kSmem);
}

} // namespace

// The box at column 0, row 3 of block 1: rows 3 and 4 of the tensor, zeros
// for the rows past 5 and the columns past 8 (which memory has, but the
// tensor does not); nothing lands before the phase completes and is seen.
TEST(CudaTmaEmu, BoxLandsAtTheWaitWithZerosOutside) {
  Tensor t;
  CUtensorMap m = mapOf(t);
  std::vector<unsigned short> got(64), before(1);
  tcc_emu::launch(
      dim3(1), dim3(64),
      [&] {
        unsigned char *smem = tcc_emu::dynamicShared();
        if (threadIdx.x == 0) {
          tcc_emu::mbarInit(smem + kBar, 1);
          tcc_emu::mbarArriveExpectTx(smem + kBar, kBoxBytes);
          tcc_emu::tensorCopy3dToShared(smem, &m, 0, 3, 1, smem + kBar);
          std::memcpy(before.data(), smem, 2);
        }
        __syncthreads();
        tcc_emu::mbarWait(smem + kBar, 0);
        if (threadIdx.x == 63)
          std::memcpy(got.data(), smem, 128);
      },
      kSmem);
  EXPECT_EQ(before[0], 0xffff) << "landed before any wait";
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 16; ++x)
      EXPECT_EQ(got[y * 16 + x], y < 2 && x < 8 ? 1000 + 100 * (3 + y) + x : 0)
          << "row " << y << " column " << x;
}

// Announced bytes that no copy delivers: a GPU waits forever.
TEST(CudaTmaEmuDeathTest, MissingBytesNeverComplete) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t;
  CUtensorMap m = mapOf(t);
  EXPECT_DEATH(runBlock([&](unsigned char *smem) {
                 tcc_emu::mbarArriveExpectTx(smem + kBar, 2 * kBoxBytes);
                 tcc_emu::tensorCopy3dToShared(smem, &m, 0, 0, 0, smem + kBar);
               }),
               "an mbarrier phase of block 0,0,0 never completes: 0 of 1 "
               "arrivals missing, 256 bytes expected, 128 delivered");
}

// More bytes than announced: the phase's count goes past zero and never
// completes either.
TEST(CudaTmaEmuDeathTest, ExtraBytesNeverComplete) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t;
  CUtensorMap m = mapOf(t);
  EXPECT_DEATH(runBlock([&](unsigned char *smem) {
                 tcc_emu::tensorCopy3dToShared(smem, &m, 0, 0, 0, smem + kBar);
                 tcc_emu::tensorCopy3dToShared(smem + 128, &m, 0, 0, 1,
                                               smem + kBar);
                 tcc_emu::mbarArriveExpectTx(smem + kBar, kBoxBytes);
               }),
               "tensor copies delivered 256 bytes to an mbarrier phase that "
               "expects 128");
}

// The arrival missing (no expect_tx): the phase waits for it.
TEST(CudaTmaEmuDeathTest, MissingArrivalNeverCompletes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t;
  CUtensorMap m = mapOf(t);
  EXPECT_DEATH(runBlock([&](unsigned char *smem) {
                 tcc_emu::tensorCopy3dToShared(smem, &m, 0, 0, 0, smem + kBar);
               }),
               "1 of 1 arrivals missing, 0 bytes expected, 128 delivered");
}

// A block that ends without waiting: the copies would land in shared
// memory that is no longer its own.
TEST(CudaTmaEmuDeathTest, UnwaitedCopiesAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t;
  CUtensorMap m = mapOf(t);
  EXPECT_DEATH(tcc_emu::launch(
                   dim3(1), dim3(32),
                   [&] {
                     unsigned char *smem = tcc_emu::dynamicShared();
                     if (threadIdx.x == 0) {
                       tcc_emu::mbarInit(smem + kBar, 1);
                       tcc_emu::mbarArriveExpectTx(smem + kBar, kBoxBytes);
                       tcc_emu::tensorCopy3dToShared(smem, &m, 0, 0, 0,
                                                     smem + kBar);
                     }
                   },
                   kSmem),
               "block 0,0,0 ends with tensor copies no thread waited for");
}

// A destination a GPU faults on, and a barrier never made.
TEST(CudaTmaEmuDeathTest, BadCopiesAndBarriersAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t;
  CUtensorMap m = mapOf(t);
  EXPECT_DEATH(runBlock([&](unsigned char *smem) {
                 tcc_emu::mbarArriveExpectTx(smem + kBar, kBoxBytes);
                 tcc_emu::tensorCopy3dToShared(smem + 16, &m, 0, 0, 0,
                                               smem + kBar);
               }),
               "a tensor copy to shared memory that is not 128-byte aligned");
  EXPECT_DEATH(runBlock([&](unsigned char *smem) {
                 tcc_emu::mbarArriveExpectTx(smem + kBar, kBoxBytes);
                 tcc_emu::tensorCopy3dToShared(smem + kSmem, &m, 0, 0, 0,
                                               smem + kBar);
               }),
               "a tensor copy to outside the block's shared memory");
  EXPECT_DEATH(tcc_emu::launch(
                   dim3(1), dim3(32),
                   [&] {
                     unsigned char *smem = tcc_emu::dynamicShared();
                     std::memset(smem + kBar, 0, 8);
                     tcc_emu::mbarWait(smem + kBar, 0);
                   },
                   kSmem),
               "an mbarrier used before mbarInit");
}
