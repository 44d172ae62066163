//===- GradCheckCasesAttention.cpp - fused attention ----------------------===//
//
// Fused attention (TccGradientsAttention.cpp).
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

namespace gradcheck {

std::vector<Case> attentionCases() {
  return {
      // Fused attention (TccGradientsAttention.cpp): the backward kernel
      // recomputes the probabilities from the saved log-sum-exp. Causal
      // with D != Dv; a constant mask (one -inf per row, never a whole
      // row) with Tq != Tk; rank 4 with a mask broadcast over rows.
      {"tcc.attention",
       "attention_causal",
       {{"q", "2x3x4xf32"}, {"k", "2x3x4xf32"}, {"v", "2x3x5xf32"}},
       "%y, %lse = tcc.attention %q, %k, %v {scale = 0.5 : f64, causal = true} "
       ": (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> "
       "(tensor<2x3x5xf32>, tensor<2x3xf32>)",
       "2x3x5xf32"},
      {"tcc.attention",
       "attention_mask",
       {{"q", "2x3x4xf32"}, {"k", "2x5x4xf32"}, {"v", "2x5x3xf32"}},
       "%mask = tcc.constant dense<[[0.0, 0xFF800000, 0.5, -1.0, 0.0], [0.25, "
       "0.0, 0xFF800000, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0xFF800000]]> : "
       "tensor<3x5xf32>\n"
       "  %y, %lse = tcc.attention %q, %k, %v, %mask {scale = 0.7 : f64} : "
       "(tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x3xf32>, "
       "tensor<3x5xf32>) -> (tensor<2x3x3xf32>, tensor<2x3xf32>)",
       "2x3x3xf32"},
      {"tcc.attention",
       "attention_rank4_row_mask",
       {{"q", "2x2x3x4xf32"}, {"k", "2x2x4x4xf32"}, {"v", "2x2x4x2xf32"}},
       "%mask = tcc.constant dense<[[[[0.0, -0.5, 0xFF800000, 0.5]], [[0.0, "
       "0.0, 1.0, 0xFF800000]]], [[[0xFF800000, 0.0, 0.0, 0.0]], [[0.0, 0.5, "
       "0.0, -1.0]]]]> : tensor<2x2x1x4xf32>\n"
       "  %y, %lse = tcc.attention %q, %k, %v, %mask {scale = 1.0 : f64} : "
       "(tensor<2x2x3x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x2xf32>, "
       "tensor<2x2x1x4xf32>) -> (tensor<2x2x3x2xf32>, tensor<2x2x3xf32>)",
       "2x2x3x2xf32"},
      // Sequence-major ([T, H, D] and [B, T, H, D], the layout before the
      // head transposes): the kernels read strided rows.
      {"tcc.attention",
       "attention_seq_major_causal",
       {{"q", "3x2x4xf32"}, {"k", "3x2x4xf32"}, {"v", "3x2x5xf32"}},
       "%y, %lse = tcc.attention %q, %k, %v {scale = 0.5 : f64, causal = true, "
       "seq_major = true} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>, "
       "tensor<3x2x5xf32>) -> (tensor<3x2x5xf32>, tensor<2x3xf32>)",
       "3x2x5xf32"},
      {"tcc.attention",
       "attention_seq_major_rank4_mask",
       {{"q", "2x3x2x4xf32"}, {"k", "2x4x2x4xf32"}, {"v", "2x4x2x2xf32"}},
       "%mask = tcc.constant dense<[[[[0.0, -0.5, 0xFF800000, 0.5]], [[0.0, "
       "0.0, 1.0, 0xFF800000]]], [[[0xFF800000, 0.0, 0.0, 0.0]], [[0.0, 0.5, "
       "0.0, -1.0]]]]> : tensor<2x2x1x4xf32>\n"
       "  %y, %lse = tcc.attention %q, %k, %v, %mask {scale = 1.0 : f64, "
       "seq_major = true} : (tensor<2x3x2x4xf32>, tensor<2x4x2x4xf32>, "
       "tensor<2x4x2x2xf32>, tensor<2x2x1x4xf32>) -> (tensor<2x3x2x2xf32>, "
       "tensor<2x2x3xf32>)",
       "2x3x2x2xf32"},
  };
}

} // namespace gradcheck
