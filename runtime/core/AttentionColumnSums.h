//===- AttentionColumnSums.h - attention_grad's column sums, in order ---===//
//
// A fused-QKV attention_grad may write a second output: the column sums of
// the projection's gradient G ([B..., T, 3H, D], as rows [B... * T, 3HD]),
// the QKV projection's bias gradient (tcc-pack-attention's column_sums).
// The CUDA backward kernels add them while they still hold each tile of G,
// so no pass reads G again; this header fixes the order of the additions,
// which the CUDA chunk loop's pass follows too, so that both give the same
// bits from the same G, and which the tests recompute on the host (the CPU
// kernel adds as reduce_sum does, so that a CPU step's bits do not depend
// on whether the op or a reduce_sum sums G):
//
// * Slices: 64 positions of one sequence (a tiled kernel's block), slice
//   b * attentionSumTiles(T) + i / 64 for row i of sequence b; the last of
//   a sequence may be short. A slice's sum of a column (f32) is its four
//   16-row units (a warp's m16 tile) added in order; a unit adds rows g and
//   g + 8 (the two rows an mma fragment gives a lane), then those eight
//   pairs as a tree ((0+1)+(2+3))+((4+5)+(6+7)) (the warp's xor shuffles
//   over lanes 4, 8 and 16 apart). Rows past the end add 0.
// * Total: the slices' partials as CUDA's sliceSum adds them: lane y of 8
//   adds slices y, y + 8, ... in order from 0; then the 8 lanes in order.
//
// The values added are G's elements as stored (rounded to G's type).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ATTENTIONCOLUMNSUMS_H
#define TCC_RUNTIME_CORE_ATTENTIONCOLUMNSUMS_H

#include <cstdint>

namespace tcc::rt {

/// Positions of a sequence in one slice.
constexpr int64_t kAttentionSumRows = 64;

/// Slices of one sequence of `t` positions.
inline int64_t attentionSumTiles(int64_t t) {
  return (t + kAttentionSumRows - 1) / kAttentionSumRows;
}

/// One slice's sum of one column: `x(r)` is the value of the slice's row
/// r, for r < rows (rows <= 64).
template <class X> float attentionSliceSum(X &&x, int64_t rows) {
  float unit[4];
  for (int u = 0; u < 4; ++u) {
    float v[8];
    for (int g = 0; g < 8; ++g) {
      int64_t r = 16 * u + g;
      float a = r < rows ? x(r) : 0.0f;
      float b = r + 8 < rows ? x(r + 8) : 0.0f;
      v[g] = a + b;
    }
    unit[u] = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  }
  return ((unit[0] + unit[1]) + unit[2]) + unit[3];
}

/// A column's total from its slices' sums `part(s)`, s < slices.
template <class P> float attentionSlicesTotal(P &&part, int64_t slices) {
  float total = 0.0f;
  for (int64_t y = 0; y < 8; ++y) {
    float lane = 0.0f;
    for (int64_t s = y; s < slices; s += 8)
      lane += part(s);
    total += lane;
  }
  return total;
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ATTENTIONCOLUMNSUMS_H
