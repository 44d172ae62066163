//===- CudaPrelude.cpp - The fixed part of the generated CUDA source ------===//
//
// Self-contained: NVRTC compiles it without any header (its CUDA math API is
// built in). The node templates the two emitters share are spelled in C++
// (std::pow, std::exp, ...); CudaEmit.cpp rewrites `std::` to `tccm::`,
// whose device overloads below keep C++'s float/double overload resolution.
// The math is CUDA's accurate library (expf, erff, tanhf: a few ulp), not
// the __expf-style intrinsics (but for the losses' exponential of x - max,
// tcc_exp_exact below), and the program is compiled without fast math, so
// NaN and Inf propagate as in the host library. The GELU formulas
// are runtime/cpu/KernelsMath.cpp's, as in FusedPrelude.cpp; the host's
// tcc_libm_* variants (16-bit results) are the same functions here.
// bf16/f16 words: on the GPU by the hardware's conversions (cvt.rn, inline
// PTX, no header), as runtime/cuda's kernels convert them: bit for bit
// runtime/core/prelude/Half.h but for NaN payloads. Off the GPU (the CUDA emulator
// of tests/unit, which compiles this text with the host compiler) by hand,
// bit for bit Half.h (the f16 rounding is float arithmetic, exact with
// --fmad=false and no flush to zero). By hand a narrowing was eight integer
// instructions an element, a sixth of the GPT-2 loss kernel's.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

const char *tcc::cudaPrelude() {
  return R"TCCPRELUDE(// tcc generated CUDA kernels: prelude (self-contained; ABI: runtime/core/Artifact.h, DeviceKernel)
// The dynamic shared memory of a "block_rows" kernel (the emulator of
// tests/unit/CudaEmulator.h defines its own before this prelude).
#ifndef TCC_SMEM_BYTES
#define TCC_SMEM_BYTES(name) extern __shared__ __align__(16) unsigned char name[]
#endif

namespace tccm {
__device__ __forceinline__ float pow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) { return ::pow(a, b); }
__device__ __forceinline__ float log(float a) { return ::logf(a); }
__device__ __forceinline__ double log(double a) { return ::log(a); }
__device__ __forceinline__ float sqrt(float a) { return ::sqrtf(a); }
__device__ __forceinline__ double sqrt(double a) { return ::sqrt(a); }
__device__ __forceinline__ float exp(float a) { return ::expf(a); }
__device__ __forceinline__ double exp(double a) { return ::exp(a); }
__device__ __forceinline__ float nan_f() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ float inf_f() { return __int_as_float(0x7f800000); }
} // namespace tccm

__device__ __forceinline__ float tcc_bits_to_f(unsigned u) {
  return __uint_as_float(u);
}
__device__ __forceinline__ unsigned tcc_f_to_bits(float f) {
  return __float_as_uint(f);
}
__device__ __forceinline__ float tcc_bf16_to_f32(unsigned short h) {
  return tcc_bits_to_f((unsigned)h << 16);
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ unsigned short tcc_f32_to_bf16(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float tcc_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short tcc_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#else
__device__ __forceinline__ unsigned short tcc_f32_to_bf16(float f) {
  unsigned u = tcc_f_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: kept, quiet
    return (unsigned short)((u >> 16) | 0x0040u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float tcc_f16_to_f32(unsigned short h) {
  const unsigned w = (unsigned)h << 16;
  const unsigned sign = w & 0x80000000u;
  const unsigned twoW = w + w;
  const float normalized =
      tcc_bits_to_f((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = tcc_bits_to_f((twoW >> 17) | (126u << 23)) - 0.5f;
  return tcc_bits_to_f(sign | (twoW < (1u << 27) ? tcc_f_to_bits(denormalized)
                                                 : tcc_f_to_bits(normalized)));
}
__device__ __forceinline__ unsigned short tcc_f32_to_f16(float f) {
  float base = ((f < 0 ? -f : f) * 0x1.0p+112f) * 0x1.0p-110f;
  const unsigned w = tcc_f_to_bits(f);
  const unsigned shl1W = w + w;
  const unsigned sign = w & 0x80000000u;
  unsigned bias = shl1W & 0xFF000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  base = tcc_bits_to_f((bias >> 1) + 0x07800000u) + base;
  const unsigned bits = tcc_f_to_bits(base);
  const unsigned nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return (unsigned short)((sign >> 16) |
                          (shl1W > 0xFF000000u ? 0x7E00u : nonsign));
}
#endif

__device__ __forceinline__ float tcc_exp(float x) { return ::expf(x); }
// The losses' exponential, of x - max <= 0 (the host's is the runtime's
// fastExp, which the GPU does not match bit for bit either way). On the GPU
// 2^(x log2 e) by one multiply and ex2.approx.ftz, two instructions where
// expf's range reduction takes eight, twice per logit: GPT-2's loss kernel
// (50257 logits a row) is bound by instruction issue. Relative error: ex2's
// 2 ulp, plus the rounding of x log2 e, 2^-24 |x log2 e| (3e-7 at x = -5,
// 5e-6 at x = -87, where e^x < 2e-38); results below 2^-126 are 0. The
// consumers are a double sum whose log is the loss and a gradient rounded
// to bf16 or f32. Off the GPU (the emulator) expf.
__device__ __forceinline__ float tcc_exp_exact(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
#else
  return ::expf(x);
#endif
}
__device__ __forceinline__ float tcc_erf(float x) { return ::erff(x); }
__device__ __forceinline__ float tcc_tanh(float x) { return ::tanhf(x); }
__device__ __forceinline__ float tcc_sigmoid(float x) {
  return 1.0f / (1.0f + ::expf(-x));
}

#define tcc_kSqrt1_2 0.70710678118654752440f
#define tcc_kTanhBeta 0.79788456080286535588f
#define tcc_kErfBeta 0.39894228040143267794f
#define tcc_kKappa 0.044715f

__device__ __forceinline__ float tcc_gelu_erf(float x) {
  return x * 0.5f * (1.0f + tcc_erf(x * tcc_kSqrt1_2));
}
__device__ __forceinline__ float tcc_gelu_tanh(float x) {
  float inner = tcc_kTanhBeta * (x + tcc_kKappa * x * x * x);
  return 0.5f * x * (1.0f + tcc_tanh(inner));
}
__device__ __forceinline__ float tcc_gelu_erf_grad(float dy, float x) {
  float cdf = 0.5f * (1.0f + tcc_erf(x * tcc_kSqrt1_2));
  float pdf = tcc_kErfBeta * tcc_exp(x * x * -0.5f);
  return dy * (cdf + x * pdf);
}
__device__ __forceinline__ float tcc_gelu_tanh_grad(float dy, float x) {
  float xSq = x * x;
  float inner = tcc_kTanhBeta * (x + tcc_kKappa * xSq * x);
  float t = tcc_tanh(inner);
  float left = 0.5f * x, right = 1.0f + t;
  float leftDerivative = 0.5f * right;
  float rightDerivative =
      (1.0f - t * t) * tcc_kTanhBeta * (1.0f + 3.0f * tcc_kKappa * xSq);
  return dy * (leftDerivative + left * rightDerivative);
}

// One math library on the device: the exact variants are the same.
__device__ __forceinline__ float tcc_libm_exp(float x) { return tcc_exp(x); }
__device__ __forceinline__ float tcc_libm_erf(float x) { return tcc_erf(x); }
__device__ __forceinline__ float tcc_libm_tanh(float x) { return tcc_tanh(x); }
__device__ __forceinline__ float tcc_libm_sigmoid(float x) {
  return tcc_sigmoid(x);
}
__device__ __forceinline__ float tcc_libm_gelu_erf(float x) {
  return tcc_gelu_erf(x);
}
__device__ __forceinline__ float tcc_libm_gelu_tanh(float x) {
  return tcc_gelu_tanh(x);
}
__device__ __forceinline__ float tcc_libm_gelu_erf_grad(float dy, float x) {
  return tcc_gelu_erf_grad(dy, x);
}
__device__ __forceinline__ float tcc_libm_gelu_tanh_grad(float dy, float x) {
  return tcc_gelu_tanh_grad(dy, x);
}

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
        reinterpret_cast<unsigned long long>(dst)) & 15) == 0) {
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
// overwrites. The PTX is runtime/cuda/CudaTma.cuh's (mbarInit,
// mbarArriveExpectTx, mbarWait), written again because NVRTC compiles
// this prelude alone.
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
  asm volatile("mbarrier.init.shared.b64 [%0], 1;\n" ::"r"(tcc_smem_addr(bar))
               : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  *bar = 0;
#endif
}
// Announces `bytes` for the barrier's current phase and arrives (thread 0,
// before the copies it counts).
__device__ __forceinline__ void tcc_mbar_expect(unsigned long long *bar,
                                                unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n .reg .b64 state;\n"
               " mbarrier.arrive.expect_tx.shared.b64 state, [%0], %1;\n}\n"
               ::"r"(tcc_smem_addr(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar;
  (void)bytes;
#endif
}
// The half's reads in the previous row (generic proxy) before the copy
// engine's writes (async proxy) that overwrite it.
__device__ __forceinline__ void tcc_fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// `bytes` (a multiple of 16; both ends 16-byte aligned) from global `src`
// to shared `dst`, counted on `bar`.
__device__ __forceinline__ void tcc_bulk_copy(void *dst, const void *src,
                                              unsigned bytes,
                                              unsigned long long *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes [%0], [%1], %2, [%3];\n" ::"r"(tcc_smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(tcc_smem_addr(bar))
               : "memory");
#elif defined(__CUDA_ARCH__)
  (void)dst;
  (void)src;
  (void)bytes;
  (void)bar;
  __trap();
#else
  (void)bar;
  memcpy(dst, src, bytes);
#endif
}
// Waits until the barrier's phase of `parity` completed: its copies are
// then visible. A phase that never completes is a kernel bug: after about
// 2^26 polls the kernel traps (a launch error) instead of hanging the GPU.
__device__ __forceinline__ void tcc_mbar_wait(unsigned long long *bar,
                                              unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned at = tcc_smem_addr(bar);
  for (unsigned polls = 0;; ++polls) {
    unsigned done;
    asm volatile("{\n .reg .pred p;\n"
                 " mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(at), "r"(parity)
                 : "memory");
    if (done)
      return;
    if (polls == (1u << 26))
      __trap();
  }
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
  memcpy(&v, p, 16);
  return v;
#endif
}
__device__ __forceinline__ void tcc_st16(void *p, uint4 v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
#else
  memcpy(p, &v, 16);
#endif
}
__device__ __forceinline__ unsigned tcc_word(const uint4 &v, int e) {
  return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}
// Element e (0..7) of a group: a 16-bit word of one vector, a float of two.
__device__ __forceinline__ unsigned short tcc_h8(const uint4 &v, int e) {
  return (unsigned short)(tcc_word(v, e >> 1) >> ((e & 1) * 16));
}
__device__ __forceinline__ float tcc_f8(const uint4 &a, const uint4 &b,
                                        int e) {
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
__device__ __forceinline__ void tcc_bad_label(long long *err, long long r,
                                              long long label,
                                              long long classes) {
  if (atomicCAS(reinterpret_cast<unsigned long long *>(err) + 3, 0ull,
                1ull) == 0ull) {
    err[0] = r;
    err[1] = label;
    err[2] = classes;
  }
}
)TCCPRELUDE";
}
