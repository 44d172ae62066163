//===- FusedCudaRows.h - Row helpers of generated CUDA kernels --*- C++ -*-===//
//
// What the generated "rows" and "block_rows" kernels (compiler/codegen/
// CudaEmit.cpp) call: warp and block reductions in a fixed order, row
// staging in shared memory (16-byte loads, or sm_90 bulk copies on
// Ptx.h's barriers), 16-byte column groups, and the label check. Off the
// GPU these run in the CUDA emulator of tests/unit (CudaEmulator.h), which
// compiles this text with the host compiler. Only the generated kernels
// use this header; runtime/cuda's reductions (CudaKernelsCommon.cuh) have
// an order of their own.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PRELUDE_FUSEDCUDAROWS_H
#define TCC_RUNTIME_CORE_PRELUDE_FUSEDCUDAROWS_H

#include "runtime/core/prelude/Half.h"
#include "runtime/core/prelude/Ptx.h"

// The dynamic shared memory of a "block_rows" kernel (the emulator of
// tests/unit/CudaEmulator.h defines its own before the prelude).
#ifndef TCC_SMEM_BYTES
#define TCC_SMEM_BYTES(name)                                                   \
  extern __shared__ __align__(16) unsigned char name[]
#endif

// Row reductions of "rows" kernels: each lane has reduced its own columns
// in order; a fixed xor butterfly combines the 32 lanes, then every lane
// takes lane 0's value, so all lanes hold the same bits whatever the
// hardware does with equal operands (max of -0 and +0) and the result
// depends only on the row's values.
__device__ __forceinline__ float tcc_warp_sum(float a) {
  for (int o = 16; o > 0; o >>= 1)
    a += __shfl_xor_sync(0xffffffffu, a, o);
  return __shfl_sync(0xffffffffu, a, 0);
}
__device__ __forceinline__ double tcc_warp_sum_f64(double a) {
  for (int o = 16; o > 0; o >>= 1)
    a += __shfl_xor_sync(0xffffffffu, a, o);
  return __shfl_sync(0xffffffffu, a, 0);
}
// As tcc_rowmax: a NaN element never replaces the maximum.
__device__ __forceinline__ float tcc_warp_max(float a) {
  for (int o = 16; o > 0; o >>= 1) {
    float b = __shfl_xor_sync(0xffffffffu, a, o);
    a = a < b ? b : a;
  }
  return __shfl_sync(0xffffffffu, a, 0);
}

// Row reductions of "block_rows" kernels (a block per row): each warp as
// above, then lane 0 of every warp leaves its warp's value in red[warp] and
// every thread combines them in warp order. The same bits in every thread,
// and only the row's values and the block size decide them. A reduction
// has its own 32 slots of red; the row loop's closing barrier makes them
// free for the next row.
template <class T>
__device__ __forceinline__ T tcc_block_add(T warpSum, double *red) {
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = warpSum;
  __syncthreads();
  T s = static_cast<T>(red[0]);
  for (unsigned w = 1; w < (blockDim.x >> 5); ++w)
    s += static_cast<T>(red[w]);
  return s;
}
__device__ __forceinline__ float tcc_block_sum(float a, double *red) {
  return tcc_block_add(tcc_warp_sum(a), red);
}
__device__ __forceinline__ double tcc_block_sum_f64(double a, double *red) {
  return tcc_block_add(tcc_warp_sum_f64(a), red);
}
__device__ __forceinline__ float tcc_block_max(float a, double *red) {
  a = tcc_warp_max(a);
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = a;
  __syncthreads();
  float m = static_cast<float>(red[0]);
  for (unsigned w = 1; w < (blockDim.x >> 5); ++w) {
    float b = static_cast<float>(red[w]);
    m = m < b ? b : m;
  }
  return m;
}

// Copies n elements of a row from global to shared memory: 16 bytes at a
// time when both ends allow it (a row of a padded vocabulary does), so
// that a thread has several loads in flight; then the tail one by one.
template <class T>
__device__ __forceinline__ void tcc_stage_row(T *dst, const T *src, int n) {
  int done = 0;
  if (((reinterpret_cast<unsigned long long>(src) |
        reinterpret_cast<unsigned long long>(dst)) &
       15) == 0) {
    constexpr int per = 16 / sizeof(T);
    const int vecs = n / per;
    const uint4 *s = reinterpret_cast<const uint4 *>(src);
    uint4 *d = reinterpret_cast<uint4 *>(dst);
#pragma unroll 4
    for (int q = threadIdx.x; q < vecs; q += blockDim.x)
      d[q] = s[q];
    done = vecs * per;
  }
  for (int j = done + threadIdx.x; j < n; j += blockDim.x)
    dst[j] = src[j];
}

// The rows of a strided "block_rows" kernel (DeviceKernel::gridPerSm,
// sm_90): thread 0 starts one bulk copy (cp.async.bulk, the copy engine;
// no thread issues a load) of each staged input's next row into the other
// half of the double buffer, counted on that half's mbarrier, and every
// thread waits on the barrier of its current half. The barriers' phases
// are the fills of their half in turn, so row iteration i waits on barrier
// i & 1 for parity (i >> 1) & 1. Off the GPU (the emulator, which runs a
// block's threads as threads) the copy is thread 0's memcpy at once and a
// wait is a __syncthreads (every thread of the block waits at the same
// point), which orders the memcpy before the reads it guards; the row
// loop's closing __syncthreads orders it after the reads of the half it
// overwrites. The PTX is Ptx.h's, which runtime/cuda/CudaTma.cuh issues
// too.
__device__ __forceinline__ unsigned tcc_smem_addr(const void *p) {
#ifdef __CUDA_ARCH__
  unsigned a;
  asm("{\n .reg .u64 t;\n cvta.to.shared.u64 t, %1;\n cvt.u32.u64 %0, t;\n}\n"
      : "=r"(a)
      : "l"(p));
  return a;
#else
  (void)p;
  return 0;
#endif
}
__device__ __forceinline__ void tcc_mbar_init(unsigned long long *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  tcc_ptx_mbar_init(tcc_smem_addr(bar), 1);
#else
  *bar = 0;
#endif
}
// Announces `bytes` for the barrier's current phase and arrives (thread 0,
// before the copies it counts).
__device__ __forceinline__ void tcc_mbar_expect(unsigned long long *bar,
                                                unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  tcc_ptx_mbar_arrive_expect_tx(tcc_smem_addr(bar), bytes);
#else
  (void)bar;
  (void)bytes;
#endif
}
// The half's reads in the previous row (generic proxy) before the copy
// engine's writes (async proxy) that overwrite it.
__device__ __forceinline__ void tcc_fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  tcc_ptx_fence_proxy_async();
#endif
}
// `bytes` (a multiple of 16; both ends 16-byte aligned) from global `src`
// to shared `dst`, counted on `bar`.
__device__ __forceinline__ void tcc_bulk_copy(void *dst, const void *src,
                                              unsigned bytes,
                                              unsigned long long *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  tcc_ptx_bulk_copy(tcc_smem_addr(dst), src, bytes, tcc_smem_addr(bar));
#elif defined(__CUDA_ARCH__)
  (void)dst;
  (void)src;
  (void)bytes;
  (void)bar;
  __trap();
#else
  (void)bar;
  __builtin_memcpy(dst, src, bytes);
#endif
}
// Waits until the barrier's phase of `parity` completed: its copies are
// then visible (a phase that never completes traps, see Ptx.h).
__device__ __forceinline__ void tcc_mbar_wait(unsigned long long *bar,
                                              unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  tcc_ptx_mbar_wait(tcc_smem_addr(bar), parity);
#else
  (void)bar;
  (void)parity;
  __syncthreads();
#endif
}

// The 16-byte groups of a "block_rows" kernel's column loops (CudaEmit.cpp,
// emitWideLoop): thread t's columns 8 q .. 8 q + 7 for q = t, t + B, ...
// Loads and stores go through words (memcpy off the GPU): the emulator's
// host compiler may assume a uint4 pointer and an unsigned short one never
// alias.
// The store is PTX's: NVVM splits a uint4 store through a pointer that
// was a 2-byte one into four 4-byte stores, whatever alignment it is told.
__device__ __forceinline__ uint4 tcc_ld16(const void *p) {
#ifdef __CUDA_ARCH__
  return *static_cast<const uint4 *>(p);
#else
  uint4 v;
  __builtin_memcpy(&v, p, 16);
  return v;
#endif
}
__device__ __forceinline__ void tcc_st16(void *p, uint4 v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
#else
  __builtin_memcpy(p, &v, 16);
#endif
}
__device__ __forceinline__ unsigned tcc_word(const uint4 &v, int e) {
  return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}
// Element e (0..7) of a group: a 16-bit word of one vector, a float of two.
__device__ __forceinline__ unsigned short tcc_h8(const uint4 &v, int e) {
  return (unsigned short)(tcc_word(v, e >> 1) >> ((e & 1) * 16));
}
__device__ __forceinline__ float tcc_f8(const uint4 &a, const uint4 &b, int e) {
  return tcc_bits_to_f(tcc_word(e < 4 ? a : b, e & 3));
}
// A group's 8 results to columns d[0..7]: 16-byte stores where d is
// 16-byte aligned (`vec`, one test per kernel), else one by one.
__device__ __forceinline__ void tcc_st8(unsigned short *d,
                                        const unsigned short *h, bool vec) {
  if (vec) {
    uint4 v;
    v.x = h[0] | (unsigned)h[1] << 16;
    v.y = h[2] | (unsigned)h[3] << 16;
    v.z = h[4] | (unsigned)h[5] << 16;
    v.w = h[6] | (unsigned)h[7] << 16;
    tcc_st16(d, v);
  } else {
    for (int e = 0; e < 8; ++e)
      d[e] = h[e];
  }
}
__device__ __forceinline__ void tcc_st8(float *d, const float *f, bool vec) {
  if (vec) {
    uint4 v;
    v.x = tcc_f_to_bits(f[0]);
    v.y = tcc_f_to_bits(f[1]);
    v.z = tcc_f_to_bits(f[2]);
    v.w = tcc_f_to_bits(f[3]);
    tcc_st16(d, v);
    v.x = tcc_f_to_bits(f[4]);
    v.y = tcc_f_to_bits(f[5]);
    v.z = tcc_f_to_bits(f[6]);
    v.w = tcc_f_to_bits(f[7]);
    tcc_st16(d + 4, v);
  } else {
    for (int e = 0; e < 8; ++e)
      d[e] = f[e];
  }
}
__device__ __forceinline__ bool tcc_aligned16(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// A label out of range: the first kernel to meet one records it (the CAS
// comes first so the three words always describe one label).
__device__ __forceinline__ void
tcc_bad_label(long long *err, long long r, long long label, long long classes) {
  if (atomicCAS(reinterpret_cast<unsigned long long *>(err) + 3, 0ull, 1ull) ==
      0ull) {
    err[0] = r;
    err[1] = label;
    err[2] = classes;
  }
}

#endif // TCC_RUNTIME_CORE_PRELUDE_FUSEDCUDAROWS_H
