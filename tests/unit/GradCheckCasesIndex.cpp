//===- GradCheckCasesIndex.cpp - data movement, indexing ------------------===//
//
// Data movement and indexing by data (TccGradientsShape.cpp,
// TccGradientsIndex.cpp) and the cut cross-entropy.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

namespace gradcheck {

std::vector<Case> indexCases() {
  return {
      // Data movement (TccGradientsShape.cpp). The gathers draw 8 and 6
      // indices from 5 and 4 rows, so rows repeat and must accumulate.
      {"tcc.gather",
       "gather_embedding",
       {{"a", "5x3xf32"}},
       "%y = tcc.gather %a, %labels {axis = 0 : i64} : (tensor<5x3xf32>, "
       "tensor<2x4xi64>) -> tensor<2x4x3xf32>",
       "2x4x3xf32",
       "2x4xi64",
       5},
      {"tcc.gather",
       "gather_axis1",
       {{"a", "2x4x3xf32"}},
       "%y = tcc.gather %a, %labels {axis = 1 : i64} : (tensor<2x4x3xf32>, "
       "tensor<6xi64>) -> tensor<2x6x3xf32>",
       "2x6x3xf32",
       "6xi64",
       4},
      // Indexing by data (TccGradientsIndex.cpp). gather_elements draws 12
      // indices from 4 positions, so they repeat and must accumulate.
      {"tcc.gather_elements",
       "gather_elements",
       {{"a", "3x4xf32"}},
       "%y = tcc.gather_elements %a, %labels {axis = 1 : i64} : "
       "(tensor<3x4xf32>, tensor<3x4xi64>) -> tensor<3x4xf32>",
       "3x4xf32",
       "3x4xi64",
       4},
      // ONNX TopK: the values are a gather_elements by top_k's indices.
      {"tcc.gather_elements",
       "top_k_values",
       {{"a", "3x5xf32"}},
       "%i = tcc.top_k %a {axis = 1 : i64, k = 2 : i64, largest = false} : "
       "tensor<3x5xf32> -> tensor<3x2xi64>\n"
       "  %y = tcc.gather_elements %a, %i {axis = 1 : i64} : "
       "(tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>",
       "3x2xf32"},
      // Distinct indices: with "none" only the last of repeats would count.
      {"tcc.scatter_elements",
       "scatter_elements_none",
       {{"a", "3x4xf32"}, {"u", "2x4xf32"}},
       "%i = tcc.constant dense<[[2, 0, 1, 2], [0, 1, 2, 1]]> : "
       "tensor<2x4xi64>\n"
       "  %y = tcc.scatter_elements \"none\", %a, %i, %u {axis = 0 : i64} : "
       "(tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.scatter_elements",
       "scatter_elements_add",
       {{"a", "3x4xf32"}, {"u", "3x2xf32"}},
       "%y = tcc.scatter_elements \"add\", %a, %labels, %u {axis = 1 : i64} "
       ": (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32",
       "3x2xi64",
       4},
      {"tcc.gather_nd",
       "gather_nd_batch",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.gather_nd %a, %labels {batch_dims = 1 : i64} : "
       "(tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x4xf32>",
       "2x5x4xf32",
       "2x5x1xi64",
       3},
      {"tcc.scatter_nd",
       "scatter_nd_none",
       {{"a", "4x3xf32"}, {"u", "2x3xf32"}},
       "%i = tcc.constant dense<[[3], [1]]> : tensor<2x1xi64>\n"
       "  %y = tcc.scatter_nd \"none\", %a, %i, %u : (tensor<4x3xf32>, "
       "tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>",
       "4x3xf32"},
      {"tcc.scatter_nd",
       "scatter_nd_add",
       {{"a", "4x3xf32"}, {"u", "5xf32"}},
       "%y = tcc.scatter_nd \"add\", %a, %labels, %u : (tensor<4x3xf32>, "
       "tensor<5x2xi64>, tensor<5xf32>) -> tensor<4x3xf32>",
       "4x3xf32",
       "5x2xi64",
       3},
      {"tcc.concat",
       "concat_fanout",
       {{"a", "2x3xf32"}, {"b", "2x2xf32"}},
       "%y = tcc.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, "
       "tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x8xf32>",
       "2x8xf32"},
      {"tcc.slice",
       "slice_reversed",
       {{"a", "4x5xf32"}},
       "%y = tcc.slice %a {starts = array<i64: 3, 4>, sizes = array<i64: 2, "
       "3>, steps = array<i64: -2, -1>} : tensor<4x5xf32> -> tensor<2x3xf32>",
       "2x3xf32"},
      {"tcc.slice",
       "slice_strided",
       {{"a", "4x5xf32"}},
       "%y = tcc.slice %a {starts = array<i64: 0, 1>, sizes = array<i64: 4, "
       "2>, steps = array<i64: 1, 2>} : tensor<4x5xf32> -> tensor<4x2xf32>",
       "4x2xf32"},
      {"tcc.where",
       "where_bcast",
       {{"a", "3x4xf32"}, {"b", "4xf32"}},
       "%one = tcc.constant dense<1> : tensor<i64>\n"
       "  %c = tcc.compare \"eq\", %labels, %one : (tensor<3x4xi64>, "
       "tensor<i64>) -> tensor<3x4xi1>\n"
       "  %y = tcc.where %c, %a, %b : (tensor<3x4xi1>, tensor<3x4xf32>, "
       "tensor<4xf32>) -> tensor<3x4xf32>",
       "3x4xf32",
       "3x4xi64",
       2},
      // Cut cross-entropy: vocabulary blocks of 4 over 10 and 7 classes,
      // so the online log-sum-exp crosses block edges.
      {"tcc.linear_cross_entropy",
       "linear_cross_entropy_tw_bias",
       {{"h", "2x3x4xf32"}, {"v", "10x4xf32"}, {"b", "10xf32"}},
       "%y, %lse = tcc.linear_cross_entropy %h, %v, %labels, %b {block = 4 : "
       "i64, ignore_index = 1 : i64, label_smoothing = 0.2 : f64, "
       "transpose_weight = true} : (tensor<2x3x4xf32>, tensor<10x4xf32>, "
       "tensor<2x3xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<2x3xf32>)",
       "f32",
       "2x3xi64",
       10},
      {"tcc.linear_cross_entropy",
       "linear_cross_entropy",
       {{"h", "6x4xf32"}, {"v", "4x7xf32"}},
       "%y, %lse = tcc.linear_cross_entropy %h, %v, %labels {block = 4 : i64}"
       " : (tensor<6x4xf32>, tensor<4x7xf32>, tensor<6xi64>) -> (tensor<f32>,"
       " tensor<6xf32>)",
       "f32",
       "6xi64",
       7},
  };
}

} // namespace gradcheck
