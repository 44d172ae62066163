//===- GradCheckCasesLogic.cpp - extrema, mod, products -------------------===//
//
// Extrema, remainders, products and scans, Trilu (TccOpsLogic.cpp,
// TccGradientsMath.cpp, TccOpsReduce.td).
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

namespace gradcheck {

std::vector<Case> logicCases() {
  return {
      // Extrema (TccOpsLogic.cpp). maximum/minimum get values on a grid of
      // 0.1 (below), so some pairs tie: there the central difference is
      // 1/2, the half-and-half split of the rule.
      {"tcc.maximum",
       "maximum_bcast_ties",
       {{"a", "3x4xf32"}, {"b", "4xf32"}},
       "%y = tcc.maximum %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.minimum",
       "minimum_bcast_ties",
       {{"a", "3x1xf32"}, {"b", "3x4xf32"}},
       "%y = tcc.minimum %a, %b : (tensor<3x1xf32>, tensor<3x4xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      // Remainders (TccGradientsMath.cpp): quotients in (-2.8, -2.09), away
      // from the integers where the remainder jumps; trunc is -2, floor -3.
      {"tcc.mod",
       "mod_fmod_bcast",
       {{"a", "3x4xf32", -2.8f, -2.2f}, {"b", "4xf32", 1.0f, 1.05f}},
       "%y = tcc.mod %a, %b {fmod = true} : (tensor<3x4xf32>, tensor<4xf32>) "
       "-> tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.mod",
       "mod_floor_bcast",
       {{"a", "3x4xf32", 2.2f, 2.8f}, {"b", "3x1xf32", -1.05f, -1.0f}},
       "%y = tcc.mod %a, %b : (tensor<3x4xf32>, tensor<3x1xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.reduce_max",
       "reduce_max",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.reduce_max %a {axes = array<i64: 1>} : tensor<2x3x4xf32> -> "
       "tensor<2x4xf32>",
       "2x4xf32"},
      {"tcc.reduce_min",
       "reduce_min_keepdims",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.reduce_min %a {axes = array<i64: 0, 2>, keepdims = true} : "
       "tensor<2x3x4xf32> -> tensor<1x3x1xf32>",
       "1x3x1xf32"},
      // Products and scans (TccOpsReduce.td): the exclusive products of
      // reduce_prod's gradient (KernelsLogicTest checks them at zeros).
      {"tcc.reduce_prod",
       "reduce_prod",
       {{"a", "2x3x4xf32", -1.5f, 1.5f}},
       "%y = tcc.reduce_prod %a {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> "
       "-> tensor<3xf32>",
       "3xf32"},
      {"tcc.reduce_prod",
       "reduce_prod_keepdims",
       {{"a", "2x3x4xf32", -1.5f, 1.5f}},
       "%y = tcc.reduce_prod %a {axes = array<i64: 1>, keepdims = true} : "
       "tensor<2x3x4xf32> -> tensor<2x1x4xf32>",
       "2x1x4xf32"},
      {"tcc.cumsum",
       "cumsum",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.cumsum %a {axis = 1 : i64} : tensor<2x3x4xf32>",
       "2x3x4xf32"},
      {"tcc.cumsum",
       "cumsum_exclusive_reverse",
       {{"a", "2x3x4xf32"}},
       "%y = tcc.cumsum %a {axis = 2 : i64, exclusive = true, reverse = true} "
       ": tensor<2x3x4xf32>",
       "2x3x4xf32"},
      // ONNX Trilu on run-time data (OnnxOpsCompare.cpp): a select with a
      // constant mask, whose gradient is the same Trilu of dy.
      {"tcc.where",
       "trilu_lower",
       {{"a", "2x3x4xf32"}},
       "%mask = tcc.constant dense<[[true, true, false, false], [true, true, "
       "true, false], [true, true, true, true]]> : tensor<3x4xi1>\n"
       "  %zero = tcc.constant dense<0.0> : tensor<f32>\n"
       "  %y = tcc.where %mask, %a, %zero : (tensor<3x4xi1>, "
       "tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>",
       "2x3x4xf32"},
  };
}

} // namespace gradcheck
