//===- GradCheckCasesMath.cpp - math, norms, dropout ----------------------===//
//
// Math functions, the unary family, powers, layer norm and dropout
// (TccGradientsMath.cpp).
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

namespace gradcheck {

std::vector<Case> mathCases() {
  return {
      // Math, normalization, dropout (TccGradientsMath.cpp).
      {"tcc.exp",
       "exp",
       {{"a", "3x4xf32"}},
       "%y = tcc.exp %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.log",
       "log",
       {{"a", "3x4xf32", 0.5f, 2.0f}},
       "%y = tcc.log %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.sqrt",
       "sqrt",
       {{"a", "3x4xf32", 0.5f, 2.0f}},
       "%y = tcc.sqrt %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.tanh",
       "tanh",
       {{"a", "3x4xf32", -2.0f, 2.0f}},
       "%y = tcc.tanh %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.sigmoid",
       "sigmoid",
       {{"a", "3x4xf32", -3.0f, 3.0f}},
       "%y = tcc.sigmoid %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.erf",
       "erf",
       {{"a", "3x4xf32", -2.0f, 2.0f}},
       "%y = tcc.erf %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.gelu",
       "gelu_erf",
       {{"a", "3x4xf32", -3.0f, 3.0f}},
       "%y = tcc.gelu %a : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.gelu",
       "gelu_tanh",
       {{"a", "3x4xf32", -3.0f, 3.0f}},
       "%y = tcc.gelu %a {approximate = \"tanh\"} : tensor<3x4xf32>",
       "3x4xf32"},
      // The unary function family (runtime/core/prelude/UnaryFn.h).
      unaryFn("abs", "abs", -1, 1, {0}),
      unaryFn("sign", "sign", -1, 1, {0}),
      unaryFn("floor", "floor", -2.5f, 2.5f, {-2, -1, 0, 1, 2}),
      unaryFn("ceil", "ceil", -2.5f, 2.5f, {-2, -1, 0, 1, 2}),
      unaryFn("round", "round", -2, 2, {-1.5f, -0.5f, 0.5f, 1.5f}),
      unaryFn("sin", "sin", -3, 3),
      unaryFn("cos", "cos", -3, 3),
      unaryFn("hard_swish", "hard_swish", -4, 4, {-3, 3}),
      unaryFn("hard_sigmoid", "hard_sigmoid", -3.5f, 3.5f, {-2.5f, 2.5f},
              "{alpha = 0.2 : f64, beta = 0.5 : f64}"),
      unaryFn("leaky_relu", "leaky_relu", -1, 1, {0}, "{alpha = 0.1 : f64}"),
      unaryFn("elu", "elu", -2, 2, {0}, "{alpha = 0.5 : f64}"),
      unaryFn("selu", "selu", -2, 2, {0},
              "{alpha = 1.6732632 : f64, beta = 1.0507010 : f64}"),
      unaryFn("softplus", "softplus", -3, 3),
      unaryFn("mish", "mish", -3, 3),
      unaryFn("clip", "clip", -1, 1, {-0.5f, 0.5f},
              "{alpha = -0.5 : f64, beta = 0.5 : f64}"),
      unaryFn("clip_max_only", "clip", -1, 1, {0.25f},
              "{alpha = 0xFFF0000000000000 : f64, beta = 0.25 : f64}"),
      unaryFn("tan", "tan", -1.2f, 1.2f),
      unaryFn("asin", "asin", -0.8f, 0.8f),
      unaryFn("acos", "acos", -0.8f, 0.8f),
      unaryFn("atan", "atan", -3, 3),
      unaryFn("sinh", "sinh", -2, 2),
      unaryFn("cosh", "cosh", -2, 2),
      unaryFn("asinh", "asinh", -3, 3),
      unaryFn("acosh", "acosh", 1.2f, 3),
      unaryFn("atanh", "atanh", -0.8f, 0.8f),
      unaryFn("softsign", "softsign", -3, 3, {0}),
      unaryFn("shrink", "shrink", -2, 2, {-0.5f, 0.5f},
              "{alpha = 0.5 : f64, beta = 0.25 : f64}"),
      unaryFn("celu", "celu", -2, 2, {0}, "{alpha = 0.5 : f64}"),
      unaryFn("thresholded_relu", "thresholded_relu", -2, 2, {1},
              "{alpha = 1.0 : f64}"),
      unaryFn("norm_sqrt", "norm_sqrt", 0.2f, 3),
      {"tcc.pow_scalar",
       "pow_square",
       {{"a", "3x4xf32"}},
       "%y = tcc.pow_scalar %a {exponent = 2.0 : f64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.pow_scalar",
       "pow_cube",
       {{"a", "3x4xf32"}},
       "%y = tcc.pow_scalar %a {exponent = 3.0 : f64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.pow_scalar",
       "pow_sqrt",
       {{"a", "3x4xf32", 0.5f, 2.0f}},
       "%y = tcc.pow_scalar %a {exponent = 0.5 : f64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.pow_scalar",
       "pow_2_5",
       {{"a", "3x4xf32", 0.5f, 2.0f}},
       "%y = tcc.pow_scalar %a {exponent = 2.5 : f64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.pow_scalar",
       "pow_reciprocal",
       {{"a", "3x4xf32", 0.5f, 2.0f}},
       "%y = tcc.pow_scalar %a {exponent = -1.0 : f64} : tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.pow",
       "pow_bcast",
       {{"a", "3x4xf32", 0.5f, 2.0f}, {"b", "4xf32"}},
       "%y = tcc.pow %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
       "tensor<3x4xf32>",
       "3x4xf32"},
      {"tcc.layer_norm",
       "layer_norm",
       {{"a", "2x3x4xf32"}, {"g", "3x4xf32"}, {"b", "3x4xf32"}},
       "%y, %mean, %rstd = tcc.layer_norm %a, %g, %b {axis = 1 : i64, epsilon "
       "= 1.0e-5 : f64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, "
       "tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, "
       "tensor<2x1x1xf32>)",
       "2x3x4xf32"},
      // The saved statistics used downstream add their own gradients.
      {"tcc.layer_norm",
       "layer_norm_stats",
       {{"a", "3x5xf32"}, {"g", "5xf32"}},
       "%b = tcc.constant dense<0.5> : tensor<5xf32>\n"
       "  %n, %mean, %rstd = tcc.layer_norm %a, %g, %b {axis = 1 : i64, "
       "epsilon = 1.0e-5 : f64} : (tensor<3x5xf32>, tensor<5xf32>, "
       "tensor<5xf32>) -> (tensor<3x5xf32>, tensor<3x1xf32>, tensor<3x1xf32>)\n"
       "  %t = tcc.mul %n, %rstd : (tensor<3x5xf32>, tensor<3x1xf32>) -> "
       "tensor<3x5xf32>\n"
       "  %y = tcc.add %t, %mean : (tensor<3x5xf32>, tensor<3x1xf32>) -> "
       "tensor<3x5xf32>",
       "3x5xf32"},
      // The step counter comes from %labels (an i64 scalar): the mask is a
      // function of it, the same in every finite-difference evaluation.
      {"tcc.dropout",
       "dropout",
       {{"a", "4x6xf32"}},
       "%y, %mask = tcc.dropout %a, %labels {ratio = 0.4 : f64, seed = 5 : "
       "i64} : tensor<4x6xf32>, tensor<i64>",
       "4x6xf32",
       "i64",
       1000},
  };
}

} // namespace gradcheck
