//===- GradCheckCasesConv.cpp - convolution, pooling ----------------------===//
//
// Convolution, pooling and batch norm (TccGradientsConv.cpp).
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

namespace gradcheck {

std::vector<Case> convCases() {
  return {
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
      // Trimmed by tcc-trim-conv-taps before autodiff (GradCheckTest.cpp
      // runs it): a 3x3 pad-1 convolution on a 1x1 map reads the centre tap
      // only, a stride-2 one from 2x2 to 1x1 the bottom-right 2x2; the
      // other taps' gradient is zero through the slice.
      {"tcc.conv2d",
       "conv2d_trimmed_1x1_map",
       {{"x", "3x4x1x1xf32"}, {"k", "5x4x3x3xf32"}, {"b", "5xf32"}},
       "%y = tcc.conv2d %x, %k, %b {strides = array<i64: 1, 1>, pads = "
       "array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : "
       "i64} : (tensor<3x4x1x1xf32>, tensor<5x4x3x3xf32>, tensor<5xf32>) -> "
       "tensor<3x5x1x1xf32>",
       "3x5x1x1xf32"},
      {"tcc.conv2d",
       "conv2d_trimmed_stride2",
       {{"x", "2x3x2x3xf32"}, {"k", "4x3x3x3xf32"}},
       "%y = tcc.conv2d %x, %k {strides = array<i64: 2, 2>, pads = array<i64: "
       "1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : "
       "(tensor<2x3x2x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x1x2xf32>",
       "2x4x1x2xf32"},
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

} // namespace gradcheck
