// RUN: tcc-opt %s | tcc-opt | FileCheck %s
// RUN: tcc-opt %s --mlir-print-op-generic | tcc-opt | FileCheck %s

// Round trip of the convolution, pooling and batch-norm ops.

// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4x9x9xf32>, %[[W:[^:]+]]: tensor<6x2x3x3xf32>, %[[B:[^:]+]]: tensor<6xf32>, %[[DY:[^:]+]]: tensor<8x6x5x5xf32>)
func.func @conv(%x: tensor<8x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %dy: tensor<8x6x5x5xf32>)
    -> (tensor<8x6x5x5xf32>, tensor<8x6x5x5xf32>, tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>) {
  // CHECK: tcc.conv2d %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<8x6x5x5xf32>
  %y = tcc.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<8x6x5x5xf32>
  // CHECK: tcc.conv2d %[[X]], %[[W]] {{{.*}}} : (tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<8x6x5x5xf32>
  %y2 = tcc.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<8x6x5x5xf32>
  // CHECK: tcc.conv2d_grad_input %[[DY]], %[[W]] {{{.*}}} : (tensor<8x6x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<8x4x9x9xf32>
  %dx = tcc.conv2d_grad_input %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<8x6x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<8x4x9x9xf32>
  // CHECK: tcc.conv2d_grad_weight %[[DY]], %[[X]] {{{.*}}} : (tensor<8x6x5x5xf32>, tensor<8x4x9x9xf32>) -> tensor<6x2x3x3xf32>
  %dw = tcc.conv2d_grad_weight %dy, %x {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<8x6x5x5xf32>, tensor<8x4x9x9xf32>) -> tensor<6x2x3x3xf32>
  return %y, %y2, %dx, %dw : tensor<8x6x5x5xf32>, tensor<8x6x5x5xf32>, tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>
}

// CHECK-LABEL: func.func @pool
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x8x7xf32>)
func.func @pool(%x: tensor<2x3x8x7xf32>) -> (tensor<2x3x8x7xf32>, tensor<2x3x8x7xf32>) {
  // CHECK: %[[Y:.+]], %[[I:.+]] = tcc.max_pool2d %[[X]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x3x8x7xf32> -> tensor<2x3x5x4xf32>, tensor<2x3x5x4xi64>
  %y, %i = tcc.max_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : tensor<2x3x8x7xf32> -> tensor<2x3x5x4xf32>, tensor<2x3x5x4xi64>
  // CHECK: tcc.max_pool2d_grad %[[Y]], %[[I]] : (tensor<2x3x5x4xf32>, tensor<2x3x5x4xi64>) -> tensor<2x3x8x7xf32>
  %dx = tcc.max_pool2d_grad %y, %i : (tensor<2x3x5x4xf32>, tensor<2x3x5x4xi64>) -> tensor<2x3x8x7xf32>
  // CHECK: %[[A:.+]] = tcc.avg_pool2d %[[X]] {count_include_pad = true, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x3x8x7xf32> -> tensor<2x3x4x3xf32>
  %a = tcc.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = true} : tensor<2x3x8x7xf32> -> tensor<2x3x4x3xf32>
  // CHECK: tcc.avg_pool2d_grad %[[A]] {count_include_pad = true, {{.*}}} : tensor<2x3x4x3xf32> -> tensor<2x3x8x7xf32>
  %da = tcc.avg_pool2d_grad %a {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = true} : tensor<2x3x4x3xf32> -> tensor<2x3x8x7xf32>
  return %dx, %da : tensor<2x3x8x7xf32>, tensor<2x3x8x7xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x3x2x2xf32>, %[[G:[^:]+]]: tensor<3xf32>, %[[B:[^:]+]]: tensor<3xf32>)
func.func @batch_norm(%x: tensor<4x3x2x2xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>)
    -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) {
  // CHECK: %[[Y:[^,]+]], %[[M:[^,]+]], %[[V:[^ ]+]] = tcc.batch_norm_train %[[X]], %[[G]], %[[B]] {epsilon = 1.000000e-05 : f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  %y, %m, %v = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: tcc.batch_norm_train_grad %[[Y]], %[[X]], %[[G]], %[[M]], %[[V]] {epsilon = 1.000000e-05 : f64}
  %dx, %dg, %db = tcc.batch_norm_train_grad %y, %x, %g, %m, %v {epsilon = 1.0e-5 : f64} : (tensor<4x3x2x2xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  return %dx, %dg, %db : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
}
