//===- CudaWgmma.cuh - Warpgroup tensor-core products (sm_90a wgmma) ------===//
//
// sm_90's warpgroup MMA (PTX `wgmma.mma_async`): the four warps of a
// warpgroup (128 threads) issue one instruction for a 64 x N x 16 product,
// B (and A, when it is not in registers) read by the tensor cores straight
// from shared memory through a 64-bit matrix descriptor. mma.sync takes a
// warp instruction per 16 x 8 x 16 and its operands in registers, loaded by
// ldmatrix: for the tiled attention's 64 x 64 x 64 products that is 32
// HMMAs and 16 ldmatrix a warp where wgmma takes 4 instructions; and on an
// H100 only wgmma feeds the tensor cores at their full rate (the reason
// FlashAttention-3 uses it).
//
// Operands in shared memory are 16-bit tiles of 128-byte rows (64
// elements) in the 128-byte swizzle a tensor copy with
// CU_TENSOR_MAP_SWIZZLE_128B writes: 16-byte chunk c of row r of each
// 1024-byte block of 8 rows at chunk c ^ (r % 8), the XOR taken from the
// address bits (4-6 ^= 7-9), so a tile starts 1024-byte aligned. Two forms
// (CUTLASS's canonical GMMA layouts, cute/atom/mma_traits_sm90_gmma.hpp):
//  * K-major (rows of the tile are M or N, its columns K): 8-row groups
//    `sbo` bytes apart; each k16 step starts 32 bytes further;
//  * MN-major (rows are K, columns N): 8-row groups `sbo` apart, 64-column
//    blocks `lbo` apart; each k16 step starts 2 sbo further.
// The accumulator fragment of warp w of the warpgroup is mma.sync's m16n8
// layout for rows 16 w.., repeated for each 8 columns (d[j][0..3]: rows g
// and g + 8, columns 8 j + 2 t, + 1); a register A is mma.sync's m16k16 A
// fragment. So the kernels' softmax code reads wgmma's results as it read
// mma.sync's.
//
// wgmma is asynchronous: issued products run until wgmmaWait; the
// accumulators must not be read or written before it, and wgmmaFence
// orders the warpgroup's earlier register writes before the products.
// The emulator (tests/unit/CudaWgmmaEmu.cpp) decodes the descriptors and
// swizzle, computes each thread's fragment, and writes it only at the
// wait, so a kernel that reads early reads stale values.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAWGMMA_CUH
#define TCC_RUNTIME_CUDA_CUDAWGMMA_CUH

#include "runtime/cuda/CudaTma.cuh"

namespace tcc::rt::cuda {

/// The shared-memory window address of p (what descriptors and tensor
/// copies take).
__device__ __forceinline__ unsigned smemAddress(const void *p) {
#ifdef TCC_CUDA_EMULATE
  return tcc_emu::sharedAddress(p);
#else
  return sharedAddress(p);
#endif
}

/// The descriptor of a 128-byte-swizzled operand starting at shared
/// address `at` (16-byte aligned; its 1024-byte block aligned): layout type
/// 1 (SWIZZLE_128B) in bits 62-63, base offset 0, and the byte offsets in
/// 16-byte units: start in bits 0-13, lbo 16-29, sbo 32-45.
__device__ __forceinline__ unsigned long long
wgmmaDesc(unsigned at, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((at & 0x3ffffu) >> 4) |
         static_cast<unsigned long long>((lbo >> 4) & 0x3fffu) << 16 |
         static_cast<unsigned long long>((sbo >> 4) & 0x3fffu) << 32 |
         1ull << 62;
}

/// Orders the warpgroup's earlier register writes (accumulators, A) before
/// the products issued next.
__device__ __forceinline__ void wgmmaFence() {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::wgmmaFence();
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Closes the group of products issued since the last commit.
__device__ __forceinline__ void wgmmaCommit() {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::wgmmaCommit();
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Waits for every committed group; their accumulators are then this
/// thread's to read.
__device__ __forceinline__ void wgmmaWaitAll() {
#ifdef TCC_CUDA_EMULATE
  tcc_emu::wgmmaWait(0);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Keeps the compiler from moving reads or writes of an accumulator
/// register across the asynchronous products (nvcc does not know that
/// wgmma writes them later).
__device__ __forceinline__ void wgmmaHold(float &x) {
#ifndef TCC_CUDA_EMULATE
  asm volatile("" : "+f"(x)::"memory");
#else
  (void)x;
#endif
}
template <int N> __device__ __forceinline__ void wgmmaHold(float (*d)[4]) {
  TCC_UNROLL
  for (int j = 0; j < N / 8; ++j)
    TCC_UNROLL
  for (int e = 0; e < 4; ++e)
    wgmmaHold(d[j][e]);
}

#ifndef TCC_CUDA_EMULATE
// The accumulator operands of an m64nNk16 product: N / 2 floats, d[j][e].
#define TCC_WG_D4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define TCC_WG_D32 TCC_WG_D4(0), TCC_WG_D4(1), TCC_WG_D4(2), TCC_WG_D4(3)
#define TCC_WG_D64                                                             \
  TCC_WG_D32, TCC_WG_D4(4), TCC_WG_D4(5), TCC_WG_D4(6), TCC_WG_D4(7)
#define TCC_WG_R16                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define TCC_WG_R32                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31}"
#endif

/// d (64 x N, f32) = A B + (accumulate ? d : 0) over one k16 step, A (64 x
/// 16) and B (N x 16) both K-major in shared memory: Q K^T, K Q^T, dO V^T,
/// V dO^T. N is 32 or 64; Dt the 16-bit type (kDtBF16, kDtF16).
template <int Dt, int N>
__device__ __forceinline__ void wgmmaSS(float (*d)[4], unsigned long long a,
                                        unsigned long long b, int accumulate) {
  static_assert(N == 32 || N == 64, "the kernels' products are 32 or 64 wide");
#ifdef TCC_CUDA_EMULATE
  tcc_emu::wgmma(Dt, N, &d[0][0], nullptr, a, b, false, accumulate != 0);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TCC_WG_SS(shape, type, regs, ops, ia, ib, ic)                          \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" #ic ", 0;\n"             \
               " wgmma.mma_async.sync.aligned." shape ".f32." type "." type    \
               " " regs ", %" #ia ", %" #ib ", p, 1, 1, 0, 0;\n}\n"            \
               : ops                                                           \
               : "l"(a), "l"(b), "r"(accumulate))
  if constexpr (N == 32 && Dt == kDtBF16)
    TCC_WG_SS("m64n32k16", "bf16", TCC_WG_R16, TCC_WG_D32, 16, 17, 18);
  else if constexpr (N == 32)
    TCC_WG_SS("m64n32k16", "f16", TCC_WG_R16, TCC_WG_D32, 16, 17, 18);
  else if constexpr (Dt == kDtBF16)
    TCC_WG_SS("m64n64k16", "bf16", TCC_WG_R32, TCC_WG_D64, 32, 33, 34);
  else
    TCC_WG_SS("m64n64k16", "f16", TCC_WG_R32, TCC_WG_D64, 32, 33, 34);
#undef TCC_WG_SS
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
  __trap();
#endif
}

/// d (64 x N, f32) += A B over one k16 step, A in registers (the m16k16
/// fragment of the warp's 16 rows) and B (16 x N) MN-major in shared
/// memory: P V, P^T dO, dS^T Q, dS K. N is 32 or 64.
template <int Dt, int N>
__device__ __forceinline__ void wgmmaRS(float (*d)[4], const unsigned *a,
                                        unsigned long long b) {
  static_assert(N == 32 || N == 64, "the kernels' products are 32 or 64 wide");
#ifdef TCC_CUDA_EMULATE
  tcc_emu::wgmma(Dt, N, &d[0][0], a, 0, b, true, true);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TCC_WG_RS(shape, type, regs, ops, i0, i1, i2, i3, ib, ic)              \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" #ic ", 0;\n"             \
               " wgmma.mma_async.sync.aligned." shape ".f32." type "." type    \
               " " regs ", {%" #i0 ", %" #i1 ", %" #i2 ", %" #i3 "}, %" #ib    \
               ", p, 1, 1, 1;\n}\n"                                            \
               : ops                                                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
  if constexpr (N == 32 && Dt == kDtBF16)
    TCC_WG_RS("m64n32k16", "bf16", TCC_WG_R16, TCC_WG_D32, 16, 17, 18, 19, 20,
              21);
  else if constexpr (N == 32)
    TCC_WG_RS("m64n32k16", "f16", TCC_WG_R16, TCC_WG_D32, 16, 17, 18, 19, 20,
              21);
  else if constexpr (Dt == kDtBF16)
    TCC_WG_RS("m64n64k16", "bf16", TCC_WG_R32, TCC_WG_D64, 32, 33, 34, 35, 36,
              37);
  else
    TCC_WG_RS("m64n64k16", "f16", TCC_WG_R32, TCC_WG_D64, 32, 33, 34, 35, 36,
              37);
#undef TCC_WG_RS
#else
  (void)d;
  (void)a;
  (void)b;
  __trap();
#endif
}

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAWGMMA_CUH
