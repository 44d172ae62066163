//===- GradCheckTest.cpp - Finite-difference check of every gradient rule -===//
//
// For each differentiable tcc op, a tiny @train_step computes
// loss = sum(op(params...) * w) with a random weight w, so every output
// element matters with a different factor. tcc-autodiff builds the gradients,
// the CPU code generator and runtime execute them, and each gradient element
// is compared with a central finite difference of the same compiled loss.
// A last test checks that every op with a gradient rule has a case here.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"
#include "passes/Passes.h"
#include "runtime/cpu/CpuSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

using namespace mlir;
namespace rt = ::tcc::rt;

namespace {

struct Param {
  std::string name, type; // type like "3x4xf32"
  float lo = -1, hi = 1;  // initial values are uniform in [lo, hi]
};

struct Case {
  std::string op;   // the tcc op under test (for coverage)
  std::string name; // unique test name
  std::vector<Param> params;
  std::string body;       // defines %y from the params (and %labels)
  std::string resultType; // type of %y, like "3x4xf32" or "f32"
  std::string labelsType = {}; // "" or like "4xi64"
  int64_t classes = 0;    // label range for labelsType
  // Points where the derivative jumps: initial values within 0.1 of one
  // move 0.1 away (the finite-difference step is 0.01).
  std::vector<float> kinks = {};
};

/// A case of `tcc.unary_fn` over a 3x4 parameter in [lo, hi].
Case unaryFn(const std::string &name, const std::string &fn, float lo, float hi,
             std::vector<float> kinks = {}, const std::string &attrs = "") {
  return {"tcc.unary_fn",
          name,
          {{"a", "3x4xf32", lo, hi}},
          "%y = tcc.unary_fn \"" + fn + "\" %a " + attrs + " : tensor<3x4xf32>",
          "3x4xf32",
          "",
          0,
          std::move(kinks)};
}

std::vector<Case> cases() {
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
      // Convolution, pooling, batch norm (TccGradientsConv.cpp).
      {"tcc.conv2d",
       "conv2d_bias_groups",
       {{"x", "2x4x5x6xf32"}, {"k", "6x2x3x2xf32"}, {"b", "6xf32"}},
       "%y = tcc.conv2d %x, %k, %b {strides = array<i64: 2, 1>, pads = "
       "array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 2>, groups = 2 : "
       "i64} : (tensor<2x4x5x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> "
       "tensor<2x6x3x5xf32>",
       "2x6x3x5xf32"},
      {"tcc.conv2d",
       "conv2d_stem",
       {{"x", "2x3x6x6xf32"}, {"k", "4x3x3x3xf32"}},
       "%y = tcc.conv2d %x, %k {strides = array<i64: 2, 2>, pads = array<i64: "
       "1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : "
       "(tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32>",
       "2x4x3x3xf32"},
      // The transposed convolution (ONNX ConvTranspose).
      {"tcc.conv2d_grad_input",
       "conv2d_grad_input_groups",
       {{"g", "2x4x3x3xf32"}, {"k", "4x2x3x3xf32"}},
       "%y = tcc.conv2d_grad_input %g, %k {strides = array<i64: 2, 2>, pads = "
       "array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : "
       "i64} : (tensor<2x4x3x3xf32>, tensor<4x2x3x3xf32>) -> "
       "tensor<2x4x5x6xf32>",
       "2x4x5x6xf32"},
      {"tcc.max_pool2d",
       "max_pool2d_ceil",
       {{"x", "2x2x5x5xf32"}},
       "%y, %i = tcc.max_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = "
       "array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = "
       "array<i64: 1, 1>, ceil_mode = true} : tensor<2x2x5x5xf32> -> "
       "tensor<2x2x3x3xf32>, tensor<2x2x3x3xi64>",
       "2x2x3x3xf32"},
      {"tcc.avg_pool2d",
       "avg_pool2d_include_pad",
       {{"x", "2x2x5x5xf32"}},
       "%y = tcc.avg_pool2d %x {kernel_shape = array<i64: 3, 2>, strides = "
       "array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, ceil_mode = true, "
       "count_include_pad = true} : tensor<2x2x5x5xf32> -> tensor<2x2x3x3xf32>",
       "2x2x3x3xf32"},
      {"tcc.avg_pool2d",
       "avg_pool2d",
       {{"x", "1x2x4x4xf32"}},
       "%y = tcc.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = "
       "array<i64: 1, 2>, pads = array<i64: 1, 1, 0, 0>} : tensor<1x2x4x4xf32> "
       "-> tensor<1x2x4x2xf32>",
       "1x2x4x2xf32"},
      {"tcc.batch_norm_train",
       "batch_norm_train",
       {{"x", "4x3x2x2xf32"}, {"g", "3xf32", 0.5f, 1.5f}, {"b", "3xf32"}},
       "%y, %mu, %var = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : "
       "f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> "
       "(tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)",
       "4x3x2x2xf32"},
      // The batch statistics used downstream add their own gradients.
      {"tcc.batch_norm_train",
       "batch_norm_train_stats",
       {{"x", "5x3xf32"}, {"g", "3xf32", 0.5f, 1.5f}, {"b", "3xf32"}},
       "%n, %mu, %var = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : "
       "f64} : (tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32>) -> "
       "(tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32>)\n"
       "  %t = tcc.add %n, %mu : (tensor<5x3xf32>, tensor<3xf32>) -> "
       "tensor<5x3xf32>\n"
       "  %y = tcc.mul %t, %var : (tensor<5x3xf32>, tensor<3xf32>) -> "
       "tensor<5x3xf32>",
       "5x3xf32"},
  };
}

std::string moduleText(const Case &c) {
  std::string args, sep;
  for (const Param &p : c.params) {
    args += sep + "%" + p.name + ": tensor<" + p.type +
            "> {tcc.kind = \"param\", tcc.name = \"" + p.name + "\"}";
    sep = ", ";
  }
  args += sep + "%w: tensor<" + c.resultType +
          "> {tcc.kind = \"input\", tcc.name = \"w\"}";
  if (!c.labelsType.empty())
    args += ", %labels: tensor<" + c.labelsType +
            "> {tcc.kind = \"input\", tcc.name = \"labels\"}";
  std::string ty = "tensor<" + c.resultType + ">";
  int64_t rank = c.resultType == "f32" ? 0 : std::count(c.resultType.begin(), c.resultType.end(), 'x');
  std::string axes;
  for (int64_t i = 0; i < rank; ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  std::string s = "func.func @train_step(" + args +
                  ") -> (tensor<f32> {tcc.kind = \"loss\"}) {\n  " + c.body +
                  "\n  %m = tcc.mul %y, %w : (" + ty + ", " + ty + ") -> " + ty +
                  "\n";
  if (rank == 0)
    s += "  return %m : tensor<f32>\n}\n";
  else
    s += "  %s = tcc.reduce_sum %m {axes = array<i64: " + axes + ">} : " + ty +
         " -> tensor<f32>\n  return %s : tensor<f32>\n}\n";
  return s;
}

class GradCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, func::FuncDialect>();
  std::string text = moduleText(c);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module) << text;
  PassManager pm(&ctx);
  pm.addPass(mlir::tcc::createAutodiffPass());
  ASSERT_TRUE(succeeded(pm.run(*module))) << text;

  std::mt19937 rng(42);
  std::map<std::string, std::vector<float>> init;
  for (const Param &p : c.params) {
    int64_t n = 1;
    std::string dims = p.type;
    for (size_t pos; (pos = dims.find('x')) != std::string::npos;
         dims = dims.substr(pos + 1))
      n *= std::stoll(dims.substr(0, pos));
    std::uniform_real_distribution<float> d(p.lo, p.hi);
    for (int64_t i = 0; i < n; ++i) {
      float v = d(rng);
      // Keep relu inputs away from its kink, where the derivative jumps.
      if (c.op == "tcc.relu" && std::fabs(v) < 0.2f)
        v = v < 0 ? v - 0.2f : v + 0.2f;
      for (float k : c.kinks)
        if (std::fabs(v - k) < 0.1f)
          v = v < k ? k - 0.1f : k + 0.1f;
      init[p.name].push_back(v);
    }
    // Max pooling switches its argmax where two inputs are within the
    // finite-difference step: use distinct values at least 0.05 apart
    // (reduce_max/min likewise: a tie of three would be 1/3 each by the
    // rule but 1/2 by the central difference).
    if (c.op == "tcc.max_pool2d" || c.op == "tcc.reduce_max" ||
        c.op == "tcc.reduce_min") {
      std::vector<float> &v = init[p.name];
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.05f * float(i) - 0.025f * float(v.size());
      std::shuffle(v.begin(), v.end(), rng);
    }
    // Pairs of maximum/minimum either tie exactly (the same grid value) or
    // are 0.1 apart, beyond the step.
    if (c.op == "tcc.maximum" || c.op == "tcc.minimum") {
      std::vector<float> &v = init[p.name];
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.1f * float((i * 5 + p.name.size()) % 7) - 0.3f;
    }
  }
  rt::Artifact a;
  ::tcc::ScheduleBuilder builder(a, init);
  auto fn = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(succeeded(builder.lower(fn, "train_step")));
  rt::cpu::CpuSession s(a, rt::ExecMode::Compiled);
  const rt::Program &prog = *a.findProgram("train_step");
  ASSERT_EQ(prog.outputs.size(), 1 + c.params.size());
  for (int32_t id : prog.inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    if (t.dtype == rt::DType::F32) {
      std::uniform_real_distribution<float> d(-1, 1);
      float *p = static_cast<float *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    } else {
      std::uniform_int_distribution<int64_t> d(0, c.classes - 1);
      int64_t *p = static_cast<int64_t *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    }
  }
  auto loss = [&] {
    s.run("train_step");
    return (double)*static_cast<const float *>(s.data(prog.outputs[0]));
  };
  loss();
  // Read every analytic gradient before the finite differences rerun the step.
  std::vector<std::vector<float>> analytic;
  for (size_t k = 0; k < c.params.size(); ++k) {
    const float *g = static_cast<const float *>(s.data(prog.outputs[1 + k]));
    analytic.emplace_back(g, g + a.tensors[prog.outputs[1 + k]].numElements());
  }
  for (size_t k = 0; k < c.params.size(); ++k) {
    float *p = static_cast<float *>(s.data(c.params[k].name));
    const float eps = 1e-2f;
    for (int64_t i = 0; i < (int64_t)analytic[k].size(); ++i) {
      float saved = p[i];
      p[i] = saved + eps;
      double up = loss();
      p[i] = saved - eps;
      double down = loss();
      p[i] = saved;
      double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[k][i], fd, 2e-3 + 5e-3 * std::fabs(fd))
          << c.name << ": d loss / d " << c.params[k].name << "[" << i << "]";
    }
  }
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

INSTANTIATE_TEST_SUITE_P(AllRules, GradCheck, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

TEST(GradCheckCoverage, EveryGradientRuleHasACase) {
  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect>();
  std::set<std::string> covered;
  for (const Case &c : cases())
    covered.insert(c.op);
  int withRule = 0;
  for (RegisteredOperationName op : ctx.getRegisteredOperations()) {
    if (!op.hasInterface<mlir::tcc::GradientOpInterface>())
      continue;
    ++withRule;
    EXPECT_TRUE(covered.count(op.getStringRef().str()))
        << op.getStringRef().str() << " has a gradient rule but no check";
  }
  EXPECT_GE(withRule, 15);
}

} // namespace
