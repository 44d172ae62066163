//===- CudaKernelsCommon.cuh - Shared by the .cu kernel files ---*- CUDA
//-*-===//
//
// Device helpers of the hand-written kernels:
//  - loads and stores by runtime dtype code (the DType enum: 0 f32, 1 i64,
//    2 bf16, 3 f16): float kernels load any float operand as f32 and round
//    a 16-bit result once on store, which is what the CPU's half adapter
//    (KernelsHalf.cpp) computes. The switch is uniform across a warp;
//  - Strided<N>: an index space of up to kCudaMaxRank merged dims with one
//    element stride per operand (numpy broadcasting, transposes, windows),
//    built on the host from the ABI's LoopNest (the CPU kernels' merging
//    of dims);
//  - warp and block reductions in a fixed order (results do not depend on
//    timing: a run is reproducible bit for bit).
//
// Kernels launched with up to 1024 threads per block (one block per row)
// are marked __launch_bounds__(1024), so ptxas keeps them within the 64
// registers per thread such a block can have.
//
// Launches are written TCC_LAUNCH(kernel, grid, block, stream)(args...):
// with TCC_CUDA_EMULATE (tests/unit/CudaKernelEmu.h, which compiles these
// files as C++ for a machine without a GPU) the same kernels run on CPU
// threads, so their logic is tested where no GPU is.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAKERNELSCOMMON_CUH
#define TCC_RUNTIME_CUDA_CUDAKERNELSCOMMON_CUH

#include "runtime/core/abi/KernelAbi.h"
#include "runtime/core/abi/LoopNest.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include "runtime/core/prelude/Half.h"

#ifdef TCC_CUDA_EMULATE
#define TCC_LAUNCH(kernel, grid, block, stream)                                \
  ::tcc_emu::launcher(kernel, grid, block)
#define TCC_LAUNCH_SMEM(kernel, grid, block, smem, stream)                     \
  ::tcc_emu::launcher(kernel, grid, block, smem)
#define TCC_DYNAMIC_SMEM(name) unsigned char *name = ::tcc_emu::dynamicShared()
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define TCC_LAUNCH(kernel, grid, block, stream)                                \
  kernel<<<grid, block, 0, stream>>>
// With `smem` bytes of dynamic shared memory, which the kernel declares
// with TCC_DYNAMIC_SMEM(name) (an unsigned char *, 128-byte aligned).
#define TCC_LAUNCH_SMEM(kernel, grid, block, smem, stream)                     \
  kernel<<<grid, block, smem, stream>>>
#define TCC_DYNAMIC_SMEM(name)                                                 \
  extern __shared__ __align__(128) unsigned char name[]
#endif

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

// Full unrolling (nvcc) keeps arrays indexed by the loop in registers; the
// emulator's compiler does not know the pragma.
#ifdef TCC_CUDA_EMULATE
#define TCC_UNROLL
#define TCC_NO_UNROLL
#else
#define TCC_UNROLL _Pragma("unroll")
// A loop kept rolled: its iterations' registers are not live at once.
#define TCC_NO_UNROLL _Pragma("unroll 1")
#endif

namespace tcc::rt::cuda {

constexpr int kDtF32 = 0, kDtI64 = 1, kDtBF16 = 2, kDtF16 = 3;
static_assert(static_cast<int>(DType::F32) == kDtF32 &&
                  static_cast<int>(DType::I64) == kDtI64 &&
                  static_cast<int>(DType::BF16) == kDtBF16 &&
                  static_cast<int>(DType::F16) == kDtF16,
              "device dtype codes follow the DType enum");

inline int dt(const TensorView &v) { return static_cast<int>(v.dtype); }

// 16-bit float conversions: runtime/core/prelude/Half.h's, which the
// generated kernels share: on the GPU the hardware's round-to-nearest-even
// cvt (bit for bit Half.h's C++ but for NaN payloads), emulated the C++.
__device__ __forceinline__ float bf16Bits(unsigned short h) {
  return tcc_bf16_to_f32(h);
}
__device__ __forceinline__ float f16Bits(unsigned short h) {
  return tcc_f16_to_f32(h);
}
__device__ __forceinline__ unsigned short toBf16Bits(float v) {
  return tcc_f32_to_bf16(v);
}
__device__ __forceinline__ unsigned short toF16Bits(float v) {
  return tcc_f32_to_f16(v);
}

/// Whether p may be read by 16-byte vector loads.
inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Element e of a 16-byte vector load: word e (0..3) as f32, or 16-bit
/// half e (0..7) of dtype t widened. Read from the words, not through a
/// pointer of another type to the vector (the emulator tests' host
/// compiler may assume such a pointer does not alias it).
__device__ __forceinline__ unsigned wordOf(const uint4 &v, int e) {
  return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}
__device__ __forceinline__ float f32Of(const uint4 &v, int e) {
#ifdef TCC_CUDA_EMULATE
  unsigned w = wordOf(v, e);
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
#else
  return __uint_as_float(wordOf(v, e));
#endif
}
__device__ __forceinline__ float halfOf(const uint4 &v, int e, int t) {
  unsigned short h =
      static_cast<unsigned short>(wordOf(v, e >> 1) >> (16 * (e & 1)));
  return t == kDtBF16 ? bf16Bits(h) : f16Bits(h);
}

__device__ __forceinline__ float ldf(const void *p, int t, long long i) {
  switch (t) {
  case kDtF32:
    return static_cast<const float *>(p)[i];
  case kDtBF16:
    return bf16Bits(static_cast<const unsigned short *>(p)[i]);
  case kDtF16:
    return f16Bits(static_cast<const unsigned short *>(p)[i]);
  default: // i64 read as a number (casts)
    return static_cast<float>(static_cast<const long long *>(p)[i]);
  }
}

__device__ __forceinline__ void stf(void *p, int t, long long i, float v) {
  switch (t) {
  case kDtF32:
    static_cast<float *>(p)[i] = v;
    break;
  case kDtBF16:
    static_cast<unsigned short *>(p)[i] = toBf16Bits(v);
    break;
  case kDtF16:
    static_cast<unsigned short *>(p)[i] = toF16Bits(v);
    break;
  default:
    static_cast<long long *>(p)[i] = static_cast<long long>(v);
    break;
  }
}

/// An index space of `rank` dims (outer to inner) with N operands' element
/// strides; offsets(i) of the row-major linear index i.
template <int N> struct Strided {
  int rank = 0;
  /// The space has fewer than 2^31 indexes: 32-bit divisions suffice
  /// (64-bit ones are a long instruction sequence on the GPU).
  bool small = false;
  long long dims[kCudaMaxRank];
  long long st[N][kCudaMaxRank];

  __device__ __forceinline__ void offsets(long long i, long long off[N]) const {
    for (int k = 0; k < N; ++k)
      off[k] = 0;
    if (small) {
      unsigned u = static_cast<unsigned>(i);
      for (int d = rank - 1; d >= 0; --d) {
        unsigned dim = static_cast<unsigned>(dims[d]);
        long long idx = u % dim;
        u /= dim;
        for (int k = 0; k < N; ++k)
          off[k] += idx * st[k][d];
      }
      return;
    }
    for (int d = rank - 1; d >= 0; --d) {
      long long idx = i % dims[d];
      i /= dims[d];
      for (int k = 0; k < N; ++k)
        off[k] += idx * st[k][d];
    }
  }
};

/// The device form of a LoopNest over `shape` (dims merged, size-1 dims
/// dropped). Throws Error above kCudaMaxRank merged dims (prepare functions
/// check the ranks first, so this is a second line of defence).
template <size_t N>
Strided<static_cast<int>(N)>
makeStrided(const std::vector<int64_t> &shape,
            const std::array<std::vector<int64_t>, N> &operandStrides) {
  abi::LoopNest<N> nest(shape, operandStrides);
  Strided<static_cast<int>(N)> s;
  if (nest.dims.size() > static_cast<size_t>(kCudaMaxRank))
    throw Error("more than " + std::to_string(kCudaMaxRank) +
                " dimensions after merging; the CUDA kernels index at most "
                "that many");
  s.rank = static_cast<int>(nest.dims.size());
  int64_t count = 1;
  for (int d = 0; d < s.rank; ++d) {
    s.dims[d] = nest.dims[d];
    count *= nest.dims[d];
    for (size_t k = 0; k < N; ++k)
      s.st[k][d] = nest.strides[d][k];
  }
  s.small = count < (int64_t(1) << 31);
  return s;
}

/// Moves elements of 2, 4 or 8 bytes without caring what they hold.
template <int Bytes> struct Word;
template <> struct Word<2> { using T = unsigned short; };
template <> struct Word<4> { using T = unsigned int; };
template <> struct Word<8> { using T = unsigned long long; };

/// Calls f(Word<bytes>) for the element size of `t`.
template <class F> void byElementSize(DType t, F &&f) {
  switch (dtypeSize(t)) {
  case 2:
    f(Word<2>());
    break;
  case 4:
    f(Word<4>());
    break;
  default:
    f(Word<8>());
    break;
  }
}

/// Records a data error in err[0..3] (see CudaArgs::err): the first thread
/// to claim the flag writes the details.
__device__ __forceinline__ void raiseError(long long *err, long long pos,
                                           long long value, long long bound) {
  if (!err)
    return;
  unsigned long long *flag = reinterpret_cast<unsigned long long *>(err + 3);
  if (atomicCAS(flag, 0ull, 1ull) == 0ull) {
    err[0] = pos;
    err[1] = value;
    err[2] = bound;
  }
}

template <class T> __device__ __forceinline__ T warpSum(T v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
/// thread gets the result. `shared` holds 32 T. Fixed order: reproducible.
template <class T> __device__ T blockSum(T v, T *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = blockDim.x >> 5;
  v = warpSum(v);
  __syncthreads(); // `shared` may still be read by a previous reduction
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  T r = lane < warps ? shared[lane] : T(0);
  return warpSum(r);
}

__device__ __forceinline__ float blockMax(float v, float *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = blockDim.x >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  float r = lane < warps ? shared[lane] : -INFINITY;
  return warpMax(r);
}

/// Final sums of slice-wise partial sums: for column j = blockIdx.x * 32 +
/// threadIdx.x of a (32, 8) block, the sum over s < slices of
/// p[s * stride + j], returned to threadIdx.y == 0 (columns j >= n: 0).
/// Row lane y adds slices y, y + 8, ... in order, then lane 0 adds the 8
/// lanes in order, so results repeat. Where one thread looped over all the
/// slices (128 dependent L2 reads for each of 768 columns: 3 blocks on a
/// GPU of 132 multiprocessors), 8 threads a column now keep their loads in
/// flight on 8 times the blocks. Every thread of the block must call it
/// (it synchronizes); `shared` is the block's [8][33] scratch.
template <class Acc>
__device__ Acc sliceSum(const Acc *p, long long slices, long long stride,
                        long long n, Acc (*shared)[33]) {
  long long j = blockIdx.x * 32LL + threadIdx.x;
  Acc acc = Acc(0);
  if (j < n) {
    long long s = threadIdx.y;
    // Four loads in flight before their adds.
    for (; s + 24 < slices; s += 32) {
      Acc v0 = p[s * stride + j], v1 = p[(s + 8) * stride + j],
          v2 = p[(s + 16) * stride + j], v3 = p[(s + 24) * stride + j];
      acc += v0;
      acc += v1;
      acc += v2;
      acc += v3;
    }
    for (; s < slices; s += 8)
      acc += p[s * stride + j];
  }
  shared[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  Acc total = Acc(0);
  if (threadIdx.y == 0)
    for (int y = 0; y < 8; ++y)
      total += shared[y][threadIdx.x];
  return total;
}

/// Threads per block for one row of n elements: a multiple of 32 in
/// [32, 1024], about one element per thread up to 1024.
inline int rowBlock(int64_t n) {
  int b = 32;
  while (b < 1024 && b < n)
    b *= 2;
  return b;
}

/// Blocks for a block-per-row kernel (rows loop inside when above the cap).
inline unsigned rowGrid(int64_t rows) {
  return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
}

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAKERNELSCOMMON_CUH
