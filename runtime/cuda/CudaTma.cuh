//===- CudaTma.cuh - Tensor-map copies that complete on an mbarrier -----===//
//
// sm_90's tensor memory accelerator (TMA): one instruction (PTX
// `cp.async.bulk.tensor`) copies a whole box of a tensor, described by a
// tensor map (CUtensorMap: base, sizes, strides, box), from global to
// shared memory; elements outside the tensor arrive as zeros. The copy
// engine counts the bytes it delivered on a shared-memory barrier
// (mbarrier), whose phase completes once its arrivals are in and the
// bytes they announced (expect_tx) have all arrived; threads wait for a
// phase by its parity.
//
// Why: per-thread cp.async takes an instruction and its address arithmetic
// for every 16 bytes, in every thread (and on sm_90 ptxas puts three
// never-executed shared loads in front of each one, which still take issue
// slots); a tensor copy takes one instruction for a whole tile, issued by
// one thread, and the kernels that use it are bound by instruction issue.
// (cp.async.bulk without a tensor map, one instruction a contiguous row,
// does not help: its operands are uniform registers, so a warp whose lanes
// copy different rows issues them one lane at a time, in a loop of about
// eight instructions a row: more than cp.async's.)
//
// Only for compute capability 9.0 and later: elsewhere these trap, and the
// launchers do not choose them. In the emulator (tests/unit/CudaKernelEmu.h)
// tensor maps are recorded by encodeTileMap, the barrier's phases and byte
// counts and the copies' alignment are checked, and a phase's copies land
// when a thread's wait first sees it complete. The barrier PTX is
// runtime/core/prelude/Ptx.h's, which the generated kernels issue too.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDATMA_CUH
#define TCC_RUNTIME_CUDA_CUDATMA_CUH

#include "runtime/core/prelude/Ptx.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <cuda.h>

namespace tcc::rt::cuda {

#ifndef TCC_CUDA_EMULATE
__device__ __forceinline__ unsigned sharedAddress(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif

/// A barrier of `count` arrivals a phase at `bar` (shared memory), visible
/// to the copy engine. One thread inits; the others use it after a
/// barrier (or, within the warp, a __syncwarp).
__device__ __forceinline__ void mbarInit(unsigned long long *bar,
                                         unsigned count) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::mbarInit(bar, count);
#elif __CUDA_ARCH__ >= 900
  tcc_ptx_mbar_init(sharedAddress(bar), count);
#else
  (void)bar;
  (void)count;
  __trap();
#endif
}

/// Announces `bytes` more for the current phase, then arrives.
__device__ __forceinline__ void mbarArriveExpectTx(unsigned long long *bar,
                                                   unsigned bytes) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::mbarArriveExpectTx(bar, bytes);
#elif __CUDA_ARCH__ >= 900
  tcc_ptx_mbar_arrive_expect_tx(sharedAddress(bar), bytes);
#else
  (void)bar;
  (void)bytes;
  __trap();
#endif
}

/// Orders this thread's earlier shared-memory accesses before the copy
/// engine's later ones (generic proxy before async proxy).
__device__ __forceinline__ void fenceProxyAsync() {
#if !defined(TCC_CUDA_EMULATE) && __CUDA_ARCH__ >= 900
  tcc_ptx_fence_proxy_async();
#endif
}

/// Starts copying the box of `map` whose first element is at column c0,
/// row c1 and outer index c2 into shared `dst` (128-byte aligned, the box
/// densely: columns, then rows); its bytes, all the box's, count on `bar`.
__device__ __forceinline__ void tensorCopy3d(void *dst, const CUtensorMap *map,
                                             int c0, int c1, int c2,
                                             unsigned long long *bar) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::tensorCopy3dToShared(dst, map, c0, c1, c2, bar);
#elif __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::"
               "complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
                   sharedAddress(dst)),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1),
               "r"(c2), "r"(sharedAddress(bar))
               : "memory");
#else
  (void)dst;
  (void)map;
  (void)c0;
  (void)c1;
  (void)c2;
  (void)bar;
  __trap();
#endif
}

/// Waits until the phase of parity `parity` (0 for the first, 1 for the
/// second, ...) has completed; its copies are then visible to this thread.
/// A phase that never completes (bytes announced that no copy delivers) is
/// a kernel bug: after about 2^26 polls, seconds, the kernel traps (a
/// launch error) instead of hanging the GPU.
__device__ __forceinline__ void mbarWait(unsigned long long *bar,
                                         unsigned parity) {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::mbarWait(bar, parity);
#elif __CUDA_ARCH__ >= 900
  tcc_ptx_mbar_wait(sharedAddress(bar), parity);
#else
  (void)bar;
  (void)parity;
  __trap();
#endif
}

/// A 16-bit operand seen as a 3-D tensor for tensor copies: `cols`
/// contiguous elements a row, `rows` rows `pitch` elements apart, `outer`
/// blocks of rows `rows * pitch` apart, copied in boxes of boxCols x
/// boxRows x 1 elements; with swizzle128 in the 128-byte swizzle
/// (CU_TENSOR_MAP_SWIZZLE_128B: boxCols * 2 <= 128 bytes, and the
/// destination 1024-byte aligned) that wgmma reads (CudaWgmma.cuh).
struct TileMapShape {
  const void *base = nullptr;
  unsigned long long cols = 0, rows = 0, outer = 0, pitch = 0;
  unsigned boxCols = 0, boxRows = 0;
  bool swizzle128 = false;
};

/// Encodes `s` into `map` (cuTensorMapEncodeTiled, reached through the CUDA
/// runtime's driver entry point, so nothing links libcuda; the emulator
/// records the shape). Throws Error with the driver's refusal.
void encodeTileMap(CUtensorMap *map, const TileMapShape &s);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDATMA_CUH
