//===- CudaWmmaEmu.h - nvcuda::wmma for the CUDA emulator ------*- C++ -*-===//
//
// Included by CudaKernelEmu.h: the WMMA calls of the tiled attention
// kernels (16x16x16 tiles of 16-bit operands, f32 accumulators) on the
// emulator's fibers. A fragment's layout across a warp's registers is
// unspecified on the GPU, so kernels only load, store, fill and multiply
// whole fragments; here every lane therefore holds the whole 16 x 16 tile
// and computes the whole product. A store therefore first waits for the
// warp's lanes (on the GPU each lane stores the elements it loaded, so a
// load, multiply and store of one tile never sees another lane's store;
// here lane 1 would load what lane 0 stored). Nothing else synchronizes
// the warp: a kernel that reads a tile before its warp's lanes have all
// written it (a missing __syncwarp) reads stale values in the emulator,
// and its test fails. Pointers and leading dims are checked against WMMA's
// rules (32-byte aligned pointers, ldm a multiple of 16 bytes): a violation
// aborts with a message, as it would fault or corrupt on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAWMMAEMU_H
#define TCC_TESTS_UNIT_CUDAWMMAEMU_H

#include "runtime/cpu/Half.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace tcc_emu {

/// A 16-bit WMMA element of dtype code Dt (2 bf16, 3 f16: DType's codes).
template <int Dt> struct Half16 {
  unsigned short bits;
  float value() const {
    return Dt == 2 ? tcc::rt::bf16ToF32(bits) : tcc::rt::f16ToF32(bits);
  }
};

inline void checkWmma(const void *p, unsigned ldm, unsigned elementBytes,
                      const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0 ||
      (ldm * elementBytes) % 16 != 0) {
    std::fprintf(stderr,
                 "CUDA emulator: %s with pointer %p and ldm %u (WMMA needs "
                 "32-byte aligned pointers and ldm a multiple of 16 bytes)\n",
                 what, p, ldm);
    std::abort();
  }
}

} // namespace tcc_emu

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

/// The logical tile: [m][k] of A, [k][n] of B, [m][n] of an accumulator.
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "emulated: 16x16x16 only");
  float x[16][16];
};

template <class Use, class T, class L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float v) {
  for (auto &row : f.x)
    for (float &e : row)
      e = v;
}

template <class Use, class T, class L>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p,
                      unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>,
                "accumulators take a layout");
  tcc_emu::checkWmma(p, ldm, sizeof(T), "load_matrix_sync");
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      f.x[r][c] =
          (std::is_same_v<L, row_major> ? p[r * ldm + c] : p[c * ldm + r])
              .value();
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f,
                             const float *p, unsigned ldm, layout_t l) {
  tcc_emu::checkWmma(p, ldm, 4, "load_matrix_sync");
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      f.x[r][c] = l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}

inline void store_matrix_sync(float *p,
                              const fragment<accumulator, 16, 16, 16, float> &f,
                              unsigned ldm, layout_t l) {
  tcc_emu::checkWmma(p, ldm, 4, "store_matrix_sync");
  tcc_emu::syncWarp();
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      (l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r][c];
}

/// d = a b + c in f32.
template <class T, class LA, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
              const fragment<matrix_a, 16, 16, 16, T, LA> &a,
              const fragment<matrix_b, 16, 16, 16, T, LB> &b,
              const fragment<accumulator, 16, 16, 16, float> &c) {
  float out[16][16];
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      float acc = c.x[m][n];
      for (int k = 0; k < 16; ++k)
        acc += a.x[m][k] * b.x[k][n];
      out[m][n] = acc;
    }
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n)
      d.x[m][n] = out[m][n];
}

} // namespace nvcuda::wmma

#endif // TCC_TESTS_UNIT_CUDAWMMAEMU_H
