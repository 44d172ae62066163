//===- CudaWgmmaProbe.h - wgmma's layouts, probed on a GPU or the emulator
//-===//
//
// One warpgroup multiplies two 64 x 64 bf16 matrices the way the attention
// kernels do (CudaWgmma.cuh: tensor copies in the 128-byte swizzle, then
// wgmma through descriptors), and writes the accumulators out: the same
// kernel (CudaWgmmaProbe.cu) runs on a GPU (CudaKernelsTest.cpp) and in the
// emulator (CudaWgmmaEmuTest.cpp), against one reference. On a GPU it says
// which of the emulator's layout assumptions the hardware shares, where a
// failing attention case would only say that something differs.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAWGMMAPROBE_H
#define TCC_TESTS_UNIT_CUDAWGMMAPROBE_H

#include "runtime/core/prelude/Half.h"

#ifndef __CUDACC__ // the tests' side (the kernel's file needs no gtest)
#include <gtest/gtest.h>
#endif

#include <random>
#include <string>
#include <vector>

namespace tcc::rt::test {

enum class WgmmaProbe {
  /// A and B K-major in shared memory: out[64][64] = A Bᵀ (4 k16 steps),
  /// then out[64][32] = A (rows 32..63 of B)ᵀ (a 32-wide product on the
  /// tile's second half, as the backward's halves).
  SharedAB,
  /// A from registers (the m16k16 fragments of each warp's rows), B
  /// MN-major (its rows are K): out[64][64] = 1 + A B.
  RegisterA,
};

/// Floats the probe writes.
constexpr int kWgmmaProbeOut = 64 * 64 + 64 * 32;

/// Runs the probe on `a` and `b` (64 x 64 bf16, row-major, 16-byte aligned;
/// device memory, or host memory in the emulator) into `out`
/// (kWgmmaProbeOut floats, same kind of memory). Throws Error for a launch
/// error.
void runWgmmaProbe(WgmmaProbe probe, const unsigned short *a,
                   const unsigned short *b, float *out);

/// A 64 x 64 bf16 matrix of small integers: products and sums are exact,
/// so any summation order gives the reference's bits.
struct ProbeMatrix {
  std::vector<unsigned short> bits = std::vector<unsigned short>(64 * 64);
  std::vector<float> v = std::vector<float>(64 * 64);
  explicit ProbeMatrix(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> u(-3, 3);
    for (int i = 0; i < 64 * 64; ++i) {
      v[i] = static_cast<float>(u(rng));
      bits[i] = f32ToBf16(v[i]);
    }
  }
  float at(int r, int c) const { return v[r * 64 + c]; }
};

#ifndef __CUDACC__
/// Checks the probe's output against the plain products, naming the first
/// element that differs and the layout it tests.
inline void expectWgmmaProbe(WgmmaProbe probe, const ProbeMatrix &a,
                             const ProbeMatrix &b,
                             const std::vector<float> &out) {
  const char *what = probe == WgmmaProbe::SharedAB
                         ? "K-major A and B through descriptors"
                         : "register A and MN-major B";
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      float want = probe == WgmmaProbe::SharedAB ? 0.0f : 1.0f;
      for (int k = 0; k < 64; ++k)
        want += probe == WgmmaProbe::SharedAB ? a.at(i, k) * b.at(j, k)
                                              : a.at(i, k) * b.at(k, j);
      ASSERT_EQ(out[i * 64 + j], want)
          << what << ": row " << i << ", column " << j;
      if (probe == WgmmaProbe::SharedAB && j >= 32) {
        ASSERT_EQ(out[64 * 64 + i * 32 + j - 32], want)
            << what << ", 32 wide on the second half: row " << i << ", column "
            << j;
      }
    }
}
#endif

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_CUDAWGMMAPROBE_H
