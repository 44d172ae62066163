//===- CudaMmaEmu.h - Tensor-core instructions for the CUDA emulator -*- C++
//-*-===//
//
// Included by CudaKernelEmu.h: the warp-wide PTX instructions of the tiled
// attention kernels (CudaKernelsAttentionTiled.cu) on the emulator's fibers.
// Each is a collective of the warp's 32 lanes, as on the GPU: every lane
// passes its operands (warpAllGather), then computes its own part of the
// result from the documented fragment layouts (PTX ISA, "Matrix Fragments
// for mma.m16n8k16" and "ldmatrix"), so a kernel that puts a value in the
// wrong lane or register computes the wrong product here as it would there.
// Lane l = 4 g + t.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAMMAEMU_H
#define TCC_TESTS_UNIT_CUDAMMAEMU_H

#include "runtime/core/prelude/Half.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tcc_emu {

/// A 16-bit element of dtype code dt (2 bf16, 3 f16: DType's codes).
inline float half16(int dt, unsigned bits) {
  unsigned short h = static_cast<unsigned short>(bits & 0xffffu);
  return dt == 2 ? tcc::rt::bf16ToF32(h) : tcc::rt::f16ToF32(h);
}

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.f32: c += A B, f32
/// accumulation. A (16 x 16): a[0] row g, cols 2t, 2t + 1 (low half
/// first); a[1] row g + 8; a[2] row g, cols + 8; a[3] row g + 8, cols + 8.
/// B (16 x 8): b[0] rows 2t, 2t + 1 of col g; b[1] rows + 8. C (16 x 8):
/// c[0], c[1] row g, cols 2t, 2t + 1; c[2], c[3] row g + 8.
inline void mma16816(int dt, float *c, const unsigned *a, const unsigned *b) {
  struct Operands {
    unsigned a[4], b[2];
  } mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, all[32];
  warpAllGather(&mine, sizeof mine, all);
  auto aAt = [&](int row, int k) {
    const Operands &o = all[(row % 8) * 4 + (k % 8) / 2];
    return half16(dt, o.a[(row >= 8) + 2 * (k >= 8)] >> (16 * (k % 2)));
  };
  auto bAt = [&](int k, int col) {
    const Operands &o = all[col * 4 + (k % 8) / 2];
    return half16(dt, o.b[k >= 8] >> (16 * (k % 2)));
  };
  int lane = static_cast<int>(laneIndex()), g = lane / 4, t = lane % 4;
  for (int e = 0; e < 4; ++e) {
    int row = g + 8 * (e / 2), col = 2 * t + e % 2;
    float acc = c[e];
    for (int k = 0; k < 16; ++k)
      acc += aAt(row, k) * bAt(k, col);
    c[e] = acc;
  }
}

/// The row addresses of an ldmatrix, after checking the lane's own.
inline void ldmatrixRows(const unsigned short *row,
                         const unsigned short **rows) {
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    std::fprintf(stderr,
                 "CUDA emulator: ldmatrix row address %p is not 16-byte "
                 "aligned\n",
                 static_cast<const void *>(row));
    std::abort();
  }
  warpAllGather(&row, sizeof row, rows);
}

/// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lane l passes the address of
/// row l % 8 of matrix l / 8 (16-byte aligned); r[m] of lane 4 g + t
/// receives matrix m's elements [g][2t] (low half) and [g][2t + 1].
inline void ldmatrixX4(const unsigned short *row, unsigned *r) {
  const unsigned short *rows[32];
  ldmatrixRows(row, rows);
  int lane = static_cast<int>(laneIndex()), g = lane / 4, t = lane % 4;
  for (int m = 0; m < 4; ++m)
    r[m] = static_cast<unsigned>(rows[8 * m + g][2 * t]) |
           static_cast<unsigned>(rows[8 * m + g][2 * t + 1]) << 16;
}

/// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: lane l passes the
/// address of row l % 8 of matrix l / 8 (16-byte aligned); r[m] of lane
/// 4 g + t receives matrix m's elements [2t][g] (low half) and [2t + 1][g].
inline void ldmatrixX4Trans(const unsigned short *row, unsigned *r) {
  const unsigned short *rows[32];
  ldmatrixRows(row, rows);
  int lane = static_cast<int>(laneIndex()), g = lane / 4, t = lane % 4;
  for (int m = 0; m < 4; ++m)
    r[m] = static_cast<unsigned>(rows[8 * m + 2 * t][g]) |
           static_cast<unsigned>(rows[8 * m + 2 * t + 1][g]) << 16;
}

} // namespace tcc_emu

#endif // TCC_TESTS_UNIT_CUDAMMAEMU_H
