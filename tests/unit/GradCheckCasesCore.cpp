//===- GradCheckCasesCore.cpp - matmul, arithmetic, losses ----------------===//
//
// Matmul, element-wise arithmetic, sums and means, layout, softmax and
// the losses (TccGradients.cpp).
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

namespace gradcheck {

std::vector<Case> coreCases() {
  return {
      {"tcc.matmul",
       "matmul",
       {{"a", "3x4xf32"}, {"b", "4x5xf32"}},
       "%y = tcc.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> "
       "tensor<3x5xf32>",
       "3x5xf32"},
      {"tcc.matmul",
       "matmul_ta",
       {{"a", "4x3xf32"}, {"b", "4x5xf32"}},
       "%y = tcc.matmul %a, %b {transpose_lhs = true} : (tensor<4x3xf32>, "
       "tensor<4x5xf32>) -> tensor<3x5xf32>",
       "3x5xf32"},
      {"tcc.matmul",
       "matmul_tb",
       {{"a", "3x4xf32"}, {"b", "5x4xf32"}},
       "%y = tcc.matmul %a, %b {transpose_rhs = true} : (tensor<3x4xf32>, "
       "tensor<5x4xf32>) -> tensor<3x5xf32>",
       "3x5xf32"},
      {"tcc.matmul",
       "matmul_tatb",
       {{"a", "4x3xf32"}, {"b", "5x4xf32"}},
       "%y = tcc.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : "
       "(tensor<4x3xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>",
       "3x5xf32"},
      {"tcc.matmul",
       "matmul_batched_bcast",
       {{"a", "2x3x4xf32"}, {"b", "4x2xf32"}},
       "%y = tcc.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> "
       "tensor<2x3x2xf32>",
       "2x3x2xf32"},
      {"tcc.matmul",
       "matmul_batched_bcast_tb",
       {{"a", "2x3x4xf32"}, {"b", "2x4xf32"}},
       "%y = tcc.matmul %a, %b {transpose_rhs = true} : (tensor<2x3x4xf32>, "
       "tensor<2x4xf32>) -> tensor<2x3x2xf32>",
       "2x3x2xf32"},
      {"tcc.matmul",
       "matmul_batched",
       {{"a", "2x3x4xf32"}, {"b", "2x2x4xf32"}},
       "%y = tcc.matmul %a, %b {transpose_rhs = true} : (tensor<2x3x4xf32>, "
       "tensor<2x2x4xf32>) -> tensor<2x3x2xf32>",
       "2x3x2xf32"},
      {"tcc.add",
       "add_bcast",
       {{"a", "3x4xf32"}, {"b", "4xf32"}},
       "%y = tcc.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.sub",
       "sub_bcast",
       {{"a", "3x4xf32"}, {"b", "3x1xf32"}},
       "%y = tcc.sub %a, %b : (tensor<3x4xf32>, tensor<3x1xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.mul",
       "mul_bcast",
       {{"a", "2x3x4xf32"}, {"b", "3x4xf32"}},
       "%y = tcc.mul %a, %b : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> "
       "tensor<2x3x4xf32>",
       "2x3x4xf32"},
      {"tcc.div",
       "div_bcast",
       {{"a", "3x4xf32"}, {"b", "4xf32", 0.5f, 1.5f}},
       "%y = tcc.div %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.neg",
       "neg",
       {{"a", "3x4xf32"}},
       "%y = tcc.neg %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.relu",
       "relu",
       {{"a", "3x4xf32"}},
       "%y = tcc.relu %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.reduce_sum",
       "reduce_sum",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.reduce_sum %a {axes = array<i64: 1>} : tensor<2x3x4xf32> -> "
       "tensor<2x4xf32>",
       "2x4xf32"},
      {"tcc.reduce_mean",
       "reduce_mean_keepdims",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.reduce_mean %a {axes = array<i64: 0, 2>, keepdims = true} : "
       "tensor<2x3x4xf32> -> tensor<1x3x1xf32>",
       "1x3x1xf32"},
      {"tcc.broadcast_to",
       "broadcast_to",
       {{"a", "3x1xf32"}},
       "%y = tcc.broadcast_to %a : tensor<3x1xf32> -> tensor<2x3x4xf32>",
       "2x3x4xf32"},
      {"tcc.reshape",
       "reshape",
       {{"a", "3x4xf32"}},
       "%y = tcc.reshape %a : tensor<3x4xf32> -> tensor<2x6xf32>",
       "2x6xf32"},
      {"tcc.transpose",
       "transpose",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> "
       "-> tensor<4x2x3xf32>",
       "4x2x3xf32"},
      {"tcc.softmax",
       "softmax",
       {{"a", "3x4xf32"}},
       "%y = tcc.softmax %a {axis = 1 : i64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.log_softmax",
       "log_softmax_axis0",
       {{"a", "3x4xf32"}},
       "%y = tcc.log_softmax %a {axis = 0 : i64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.softmax_cross_entropy",
       "cross_entropy",
       {{"a", "4x5xf32"}},
       "%y = tcc.softmax_cross_entropy %a, %labels : (tensor<4x5xf32>, "
       "tensor<4xi64>) -> tensor<f32>",
       "f32",
       "4xi64",
       5},
      {"tcc.softmax_cross_entropy",
       "cross_entropy_3d",
       {{"a", "2x3x5xf32"}},
       "%y = tcc.softmax_cross_entropy %a, %labels : (tensor<2x3x5xf32>, "
       "tensor<2x3xi64>) -> tensor<f32>",
       "f32",
       "2x3xi64",
       5},
      // Ignored positions (label 1 here, about a third of them) and label
      // smoothing: the rule divides by the count of the others.
      {"tcc.softmax_cross_entropy",
       "cross_entropy_ignore_smoothing",
       {{"a", "2x4x3xf32"}},
       "%y = tcc.softmax_cross_entropy %a, %labels {ignore_index = 1 : i64, "
       "label_smoothing = 0.2 : f64} : (tensor<2x4x3xf32>, tensor<2x4xi64>) "
       "-> tensor<f32>",
       "f32",
       "2x4xi64",
       3},
      {"tcc.mse_loss",
       "mse",
       {{"a", "3x4xf32"}, {"b", "3x4xf32"}},
       "%y = tcc.mse_loss %a, %b : (tensor<3x4xf32>, tensor<3x4xf32>) -> "
       "tensor<f32>",
       "f32"},
  };
}

} // namespace gradcheck
