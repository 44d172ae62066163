// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @conv_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+2 {{tcc.conv2d: weight [2,3,3,3] expects 3 input channels, input [1,4,5,5] has 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

func.func @conv_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+2 {{tcc.conv2d: groups = 2 must be positive and divide the input channels (4) and output channels (3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

func.func @conv_window_too_big(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error @+2 {{tcc.conv2d: the window [3,3] (dilations [1,1], pads [0,0,0,0]) does not fit the input [1,1,2,2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

func.func @conv_bad_strides(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+2 {{tcc.conv2d: strides must be 2 positive values, got [0,1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.conv2d %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x2x2x2xf32> {
  // expected-error @+2 {{tcc.conv2d: bias has shape [3], expected [2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<3xf32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----

func.func @conv_grad_input_type(%dy: tensor<1x2x2x2xf32>, %w: tensor<2x1x3x3xf32>) -> tensor<1x1x5x5xf32> {
  // expected-error @+1 {{'tcc.conv2d_grad_input' op the convolution of [1,1,5,5] by [2,1,3,3] gives [1,2,3,3], but the gradient is [1,2,2,2]}}
  %0 = tcc.conv2d_grad_input %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<2x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  return %0 : tensor<1x1x5x5xf32>
}

// -----

func.func @conv_grad_weight_type(%dy: tensor<1x2x2x2xf32>, %x: tensor<1x1x4x4xf32>) -> tensor<2x1x2x2xf32> {
  // expected-error @+1 {{'tcc.conv2d_grad_weight' op the convolution of [1,1,4,4] by [2,1,2,2] gives [1,2,3,3], but the gradient is [1,2,2,2]}}
  %0 = tcc.conv2d_grad_weight %dy, %x {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<2x1x2x2xf32>
  return %0 : tensor<2x1x2x2xf32>
}

// -----

func.func @max_pool_pads(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+2 {{tcc.max_pool2d: pads [2,2,2,2] must be smaller than the dilated window [2,2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %i = tcc.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>
  return %y : tensor<1x1x3x3xf32>
}

// -----

func.func @max_pool_rank(%x: tensor<1x4x4xf32>) -> tensor<1x2x2xf32> {
  // expected-error @+2 {{tcc.max_pool2d: input must be [N, C, H, W], got [1,4,4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %i = tcc.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x4x4xf32> -> tensor<1x2x2xf32>, tensor<1x2x2xi64>
  return %y : tensor<1x2x2xf32>
}

// -----

func.func @max_pool_grad_shapes(%dy: tensor<1x1x2x2xf32>, %i: tensor<1x1x3x3xi64>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'tcc.max_pool2d_grad' op grad [1,1,2,2] and indices [1,1,3,3] differ in shape}}
  %0 = tcc.max_pool2d_grad %dy, %i : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xi64>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @avg_pool_kernel(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+2 {{tcc.avg_pool2d: kernel_shape must be 2 positive sizes, got [2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.avg_pool2d %x {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @avg_pool_grad_type(%dy: tensor<1x1x2x2xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+1 {{'tcc.avg_pool2d_grad' op pooling [1,1,6,6] gives [1,1,3,3], but the gradient is [1,1,2,2]}}
  %0 = tcc.avg_pool2d_grad %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x1x2x2xf32> -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<4x3x2xf32>, %g: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4x3x2xf32> {
  // expected-error @+2 {{tcc.batch_norm_train: per-channel operand has shape [4], expected [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %v = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<4x3x2xf32>, tensor<4xf32>, tensor<3xf32>) -> (tensor<4x3x2xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y : tensor<4x3x2xf32>
}

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{tcc.batch_norm_train: input must be [N, C, ...], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %v = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4xf32>
}
