//===- Ptx.h - Inline PTX of generated and hand-written kernels -*- C++ -*-===//
//
// The PTX that runtime/cuda's hand-written kernels (CudaTma.cuh,
// CudaKernelsAttentionTiled.cu) and the generated CUDA kernels
// (FusedCudaMath.h, FusedCudaRows.h) both issue, written once:
//
//  * tcc_ex2_approx: 2^x by one MUFU.EX2 (ex2.approx.ftz: about 2 ulp,
//    results below 2^-126 are 0); off the GPU (the emulators) exp2f;
//  * shared-memory barriers (mbarrier) that count the bytes the copy engine
//    delivers, and the bulk copy (cp.async.bulk, no tensor map) of a
//    contiguous row that completes on one. A barrier's phase completes once
//    its arrivals are in and the bytes they announced (expect_tx) have all
//    arrived; threads wait for a phase by its parity. These exist only for
//    sm_90 and later; callers use them under the same condition and have
//    their own fallbacks elsewhere. Addresses are shared-window addresses
//    (cvta.to.shared), which each caller computes its way.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_PTX_H
#define TCC_RUNTIME_CORE_PRELUDE_PTX_H

#include "runtime/core/prelude/Config.h"

TCC_PRELUDE_FN float tcc_ex2_approx(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return __builtin_exp2f(x);
#endif
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// A barrier of `count` arrivals a phase at shared address `bar`, visible
/// to the copy engine. One thread inits; the others use it after a barrier.
__device__ __forceinline__ void tcc_ptx_mbar_init(unsigned bar,
                                                  unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count)
               : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/// Announces `bytes` more for the barrier's current phase, then arrives.
__device__ __forceinline__ void tcc_ptx_mbar_arrive_expect_tx(unsigned bar,
                                                              unsigned bytes) {
  asm volatile(
      "{\n .reg .b64 state;\n"
      " mbarrier.arrive.expect_tx.shared.b64 state, [%0], %1;\n}\n" ::"r"(bar),
      "r"(bytes)
      : "memory");
}

/// Orders this thread's earlier shared-memory accesses (generic proxy)
/// before the copy engine's later ones (async proxy).
__device__ __forceinline__ void tcc_ptx_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// `bytes` (a multiple of 16; both ends 16-byte aligned) from global `src`
/// to shared address `dst`, counted on the barrier at `bar`.
__device__ __forceinline__ void
tcc_ptx_bulk_copy(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

/// Waits until the barrier's phase of `parity` (0 for the first, 1 for the
/// second, ...) has completed; its copies are then visible to this thread.
/// A phase that never completes (bytes announced that no copy delivers) is
/// a kernel bug: after about 2^26 polls, seconds, the kernel traps (a
/// launch error) instead of hanging the GPU.
__device__ __forceinline__ void tcc_ptx_mbar_wait(unsigned bar,
                                                  unsigned parity) {
  for (unsigned polls = 0;; ++polls) {
    unsigned done;
    asm volatile("{\n .reg .pred p;\n"
                 " mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    if (done)
      return;
    if (polls == (1u << 26))
      __trap();
  }
}
#endif

#endif // TCC_RUNTIME_CORE_PRELUDE_PTX_H
