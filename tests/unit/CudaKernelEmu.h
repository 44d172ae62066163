//===- CudaKernelEmu.h - The runtime's CUDA kernels on CPU threads --------===//
//
// Force-included (-include) before runtime/cuda/CudaKernels*.cu when the
// tests compile them as C++ (tcc_cuda_emu_tests): with it the hand-written
// kernels run on a machine without a GPU, so their indexing, reductions and
// barriers are checked against the CPU kernels in CI.
//
// Each CUDA thread of a block is a fiber (ucontext) on the calling thread;
// the fibers switch at every __syncthreads and, per warp, at every
// shuffle, so barriers and shuffles have their real semantics. Blocks run
// one after the other, so `__shared__` (a static variable here) is the
// block's shared memory, and atomics need no lock. A barrier that is not
// reached by every thread (a kernel bug that hangs or corrupts a GPU)
// aborts the test with a message. Device math is the host libm's and
// 16-bit conversions are runtime/core/prelude/Half.h's.
//
// The CUDA runtime calls the launchers make (memsets and copies, 1-D and
// 2-D, on "device" memory, which is host memory here) are defined by
// CudaKernelEmu.cpp; cudart is not linked.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAKERNELEMU_H
#define TCC_TESTS_UNIT_CUDAKERNELEMU_H

#define TCC_CUDA_EMULATE 1
// Before the CUDA headers, which then leave these alone.
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <functional>

namespace tcc_emu {

struct Index {
  unsigned x = 0, y = 0, z = 0;
};
extern Index threadIndex, blockIndex; // of the running fiber
extern dim3 blockDims, gridDims;

/// Runs body() as every thread of every block of the launch, with `smem`
/// bytes of dynamic shared memory (dynamicShared(); all bytes 0xff when a
/// block starts, so a kernel reading what it did not write sees NaNs).
void launch(dim3 grid, dim3 block, const std::function<void()> &body,
            size_t smem = 0);
unsigned char *dynamicShared();
void syncBlock();
void syncWarp();
/// The value lane (own lane ^ laneMask) of this warp passed in.
unsigned long long exchangeXor(unsigned long long bits, int laneMask);
/// A warp collective: every lane's `bytes` (at most 64) at `mine`, in lane
/// order, into all[32 * bytes].
void warpAllGather(const void *mine, size_t bytes, void *all);
/// The running fiber's lane in its warp.
unsigned laneIndex();
/// The running fiber's thread index in its block (x fastest).
unsigned threadInBlock();
/// warpAllGather over the running fiber's warpgroup (warps 4 i .. 4 i + 3,
/// 128 threads): all[128 * bytes].
void warpgroupAllGather(const void *mine, size_t bytes, void *all);

/// The shared-window address of p, a byte of the block's dynamic shared
/// memory, as a GPU's __cvta_generic_to_shared gives it: what tensor
/// copies' and wgmma's 128-byte swizzle takes its XOR from. Here dynamic
/// shared memory starts at window address 0x80, 128-byte aligned but not
/// 1024-byte aligned, so a kernel that needs a 1024-byte aligned tile must
/// align it itself.
unsigned sharedAddress(const void *p);
/// The bytes at window address `at` (all `bytes` of them inside the
/// block's dynamic shared memory, or the test aborts).
unsigned char *sharedAt(unsigned at, size_t bytes);

// sm_90's shared-memory barriers (mbarrier) and the tensor copies that
// complete on them (runtime/cuda/CudaTma.cuh). A barrier's phase completes
// once its `count` arrivals are in and the bytes its arrivals announced
// (expect_tx) have been delivered, as on the GPU. The copies of a phase
// land in shared memory when a thread's wait first sees the phase
// complete, not when they are issued, so a thread that reads a tile
// without waiting reads what was there before. A wait that can never end
// (bytes announced that no copy delivers, more delivered than announced,
// an arrival missing) aborts with the barrier's counts instead of hanging,
// and so do copies a GPU would fault on (a destination not 128-byte
// aligned or outside the block's shared memory), a barrier used before
// mbarInit, and a block that ends before a wait saw its copies land.

/// mbarrier.init: a barrier of `count` arrivals a phase at `bar` (8 bytes
/// of shared memory).
void mbarInit(void *bar, unsigned count);
/// mbarrier.arrive.expect_tx: `bytes` more to be delivered this phase,
/// then one arrival.
void mbarArriveExpectTx(void *bar, unsigned bytes);
/// What encodeTileMap records in a CUtensorMap (128 bytes): a 3-D tensor
/// of `elementBytes`-byte elements at `base`, dims[0] contiguous,
/// strides[i] bytes between steps of dimension i + 1, read in boxes of
/// box[0] x box[1] x box[2] elements; `swizzle` 0 or 128
/// (CU_TENSOR_MAP_SWIZZLE_128B, modelled for boxes of 128-byte rows).
void encodeTileMap(void *map, const void *base, const unsigned long long *dims,
                   const unsigned long long *strides, const unsigned *box,
                   unsigned elementBytes, unsigned swizzle = 0);
/// cp.async.bulk.tensor.3d global -> shared completing on `bar`: the box
/// at (c0, c1, c2), zeros where it leaves the tensor, into `dst` densely
/// (with the 128-byte swizzle: 16-byte chunk c of row r at c ^ (r % 8),
/// into a 1024-byte aligned `dst`).
void tensorCopy3dToShared(void *dst, const void *map, int c0, int c1, int c2,
                          void *bar);
/// Waits until the phase of parity `parity` has completed (other threads
/// run meanwhile), then lands its copies.
void mbarWait(void *bar, unsigned parity);

// sm_90a's warpgroup products (runtime/cuda/CudaWgmma.cuh;
// CudaWgmmaEmu.cpp). A product is a collective of the warpgroup's 128
// threads; each computes its accumulator fragment from the operands (A
// from the threads' registers or, like B, from shared memory through a
// 128-byte-swizzle descriptor) at issue, but its registers receive the
// result only at the wgmmaWait that covers its committed group, so a
// kernel that reads an accumulator early, or never commits, sees stale
// values. Operands that differ across the warpgroup, a descriptor of
// another layout and a block ending with products not waited for abort.

/// wgmma.mma_async m64nNk16 with f32 accumulation, dt 2 (bf16) or 3
/// (f16): d (N / 2 floats, the fragment layout of CudaWgmma.cuh) = A B +
/// (accumulate ? d : 0). A: `a` (4 registers, the m16k16 fragment of the
/// warp's rows), or with a == nullptr K-major in shared memory through
/// descA. B through descB: MN-major when transB, else K-major.
void wgmma(int dt, int n, float *d, const unsigned *a, unsigned long long descA,
           unsigned long long descB, bool transB, bool accumulate);
void wgmmaFence();
void wgmmaCommit();
/// Waits until at most `pending` committed groups are outstanding.
void wgmmaWait(int pending);
/// Aborts unless every thread of the block waited for its products (the
/// emulator calls it as a block ends).
void wgmmaBlockEnded();

template <class K> struct Launcher {
  K kernel;
  dim3 grid, block;
  size_t smem;
  template <class... A> void operator()(A... args) const {
    K k = kernel;
    launch(
        grid, block, [&] { k(args...); }, smem);
  }
};
template <class K>
Launcher<K> launcher(K kernel, dim3 grid, dim3 block, size_t smem = 0) {
  return {kernel, grid, block, smem};
}

} // namespace tcc_emu

#define threadIdx (::tcc_emu::threadIndex)
#define blockIdx (::tcc_emu::blockIndex)
#define blockDim (::tcc_emu::blockDims)
#define gridDim (::tcc_emu::gridDims)

inline void __syncthreads() { tcc_emu::syncBlock(); }
inline void __syncwarp(unsigned = 0xffffffffu) { tcc_emu::syncWarp(); }

template <class T> T __shfl_xor_sync(unsigned, T v, int laneMask) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = tcc_emu::exchangeXor(bits, laneMask);
  T r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

// Fibers switch only at barriers, so these are atomic as they stand.
inline unsigned long long atomicCAS(unsigned long long *p,
                                    unsigned long long compare,
                                    unsigned long long value) {
  unsigned long long old = *p;
  if (old == compare)
    *p = value;
  return old;
}

inline float atomicAdd(float *p, float v) {
  float old = *p;
  *p = old + v;
  return old;
}

inline unsigned long long atomicAdd(unsigned long long *p,
                                    unsigned long long v) {
  unsigned long long old = *p;
  *p = old + v;
  return old;
}

#include "CudaMmaEmu.h"

#endif // TCC_TESTS_UNIT_CUDAKERNELEMU_H
