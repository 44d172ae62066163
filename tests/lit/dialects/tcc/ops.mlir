// RUN: tcc-opt %s | tcc-opt | FileCheck %s
// RUN: tcc-opt %s --mlir-print-op-generic | tcc-opt | FileCheck %s

// Round trip of every tcc op in its custom form.

// CHECK-LABEL: func.func @layout
// CHECK-SAME: (%[[X:.+]]: tensor<4x8x8xf32>, %[[B:.+]]: tensor<10xf32>, %[[T:.+]]: tensor<3x4xf32>)
func.func @layout(%x: tensor<4x8x8xf32>, %b: tensor<10xf32>, %t: tensor<3x4xf32>)
    -> (tensor<f32>, tensor<4x64xf32>, tensor<32x10xf32>, tensor<4x3xf32>) {
  // CHECK: tcc.constant dense<1.000000e+00> : tensor<f32>
  %c = tcc.constant dense<1.0> : tensor<f32>
  // CHECK: tcc.reshape %[[X]] : tensor<4x8x8xf32> -> tensor<4x64xf32>
  %r = tcc.reshape %x : tensor<4x8x8xf32> -> tensor<4x64xf32>
  // CHECK: tcc.broadcast_to %[[B]] : tensor<10xf32> -> tensor<32x10xf32>
  %bb = tcc.broadcast_to %b : tensor<10xf32> -> tensor<32x10xf32>
  // CHECK: tcc.transpose %[[T]] {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
  %tt = tcc.transpose %t {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
  return %c, %r, %bb, %tt : tensor<f32>, tensor<4x64xf32>, tensor<32x10xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:.+]]: tensor<32x64xf32>, %[[W:.+]]: tensor<10x64xf32>, %[[A:.+]]: tensor<2x3x4xf32>, %[[B:.+]]: tensor<4x5xf32>)
func.func @matmul(%x: tensor<32x64xf32>, %w: tensor<10x64xf32>,
                  %a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>)
    -> (tensor<32x10xf32>, tensor<64x64xf32>, tensor<2x3x5xf32>) {
  // CHECK: tcc.matmul %[[X]], %[[W]] {transpose_rhs = true} : (tensor<32x64xf32>, tensor<10x64xf32>) -> tensor<32x10xf32>
  %y = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<32x64xf32>, tensor<10x64xf32>) -> tensor<32x10xf32>
  // CHECK: tcc.matmul %[[X]], %[[X]] {transpose_lhs = true} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
  %g = tcc.matmul %x, %x {transpose_lhs = true} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
  // CHECK: tcc.matmul %[[A]], %[[B]] : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %z = tcc.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %y, %g, %z : tensor<32x10xf32>, tensor<64x64xf32>, tensor<2x3x5xf32>
}

// 16-bit operands may write the f32 accumulator (weight gradients).
// CHECK-LABEL: func.func @matmul_f32_result
// CHECK: tcc.matmul %{{.+}}, %{{.+}} {transpose_lhs = true} : (tensor<32x10xbf16>, tensor<32x64xbf16>) -> tensor<10x64xf32>
// CHECK: tcc.matmul %{{.+}}, %{{.+}} : (tensor<2x3x4xf16>, tensor<4x5xf16>) -> tensor<2x3x5xf32>
func.func @matmul_f32_result(%dy: tensor<32x10xbf16>, %x: tensor<32x64xbf16>,
                             %a: tensor<2x3x4xf16>, %b: tensor<4x5xf16>)
    -> (tensor<10x64xf32>, tensor<2x3x5xf32>) {
  %dw = tcc.matmul %dy, %x {transpose_lhs = true} : (tensor<32x10xbf16>, tensor<32x64xbf16>) -> tensor<10x64xf32>
  %z = tcc.matmul %a, %b : (tensor<2x3x4xf16>, tensor<4x5xf16>) -> tensor<2x3x5xf32>
  return %dw, %z : tensor<10x64xf32>, tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.+]]: tensor<32x10xf32>, %[[B:.+]]: tensor<10xf32>)
func.func @elementwise(%a: tensor<32x10xf32>, %b: tensor<10xf32>) -> tensor<32x10xf32> {
  // CHECK: %[[ADD:.+]] = tcc.add %[[A]], %[[B]] : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
  %0 = tcc.add %a, %b : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
  // CHECK: %[[SUB:.+]] = tcc.sub %[[B]], %[[ADD]] : (tensor<10xf32>, tensor<32x10xf32>) -> tensor<32x10xf32>
  %1 = tcc.sub %b, %0 : (tensor<10xf32>, tensor<32x10xf32>) -> tensor<32x10xf32>
  // CHECK: %[[MUL:.+]] = tcc.mul %[[SUB]], %[[A]] : (tensor<32x10xf32>, tensor<32x10xf32>) -> tensor<32x10xf32>
  %2 = tcc.mul %1, %a : (tensor<32x10xf32>, tensor<32x10xf32>) -> tensor<32x10xf32>
  // CHECK: %[[DIV:.+]] = tcc.div %[[MUL]], %[[B]] : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
  %3 = tcc.div %2, %b : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
  // CHECK: %[[NEG:.+]] = tcc.neg %[[DIV]] : tensor<32x10xf32>
  %4 = tcc.neg %3 : tensor<32x10xf32>
  // CHECK: %[[RELU:.+]] = tcc.relu %[[NEG]] : tensor<32x10xf32>
  %5 = tcc.relu %4 : tensor<32x10xf32>
  // CHECK: tcc.relu_grad %[[RELU]], %[[NEG]] : tensor<32x10xf32>
  %6 = tcc.relu_grad %5, %4 : tensor<32x10xf32>
  return %6 : tensor<32x10xf32>
}

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.+]]: tensor<32x10xf32>)
func.func @reductions(%x: tensor<32x10xf32>) -> (tensor<10xf32>, tensor<32x1xf32>) {
  // CHECK: tcc.reduce_sum %[[X]] {axes = array<i64: 0>} : tensor<32x10xf32> -> tensor<10xf32>
  %s = tcc.reduce_sum %x {axes = array<i64: 0>} : tensor<32x10xf32> -> tensor<10xf32>
  // CHECK: tcc.reduce_mean %[[X]] {axes = array<i64: 1>, keepdims = true} : tensor<32x10xf32> -> tensor<32x1xf32>
  %m = tcc.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<32x10xf32> -> tensor<32x1xf32>
  return %s, %m : tensor<10xf32>, tensor<32x1xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<32x10xf32>, %[[DY:.+]]: tensor<32x10xf32>)
func.func @softmax(%x: tensor<32x10xf32>, %dy: tensor<32x10xf32>) -> (tensor<32x10xf32>, tensor<32x10xf32>) {
  // CHECK: %[[Y:.+]] = tcc.softmax %[[X]] {axis = 1 : i64} : tensor<32x10xf32>
  %y = tcc.softmax %x {axis = 1 : i64} : tensor<32x10xf32>
  // CHECK: %[[L:.+]] = tcc.log_softmax %[[X]] {axis = 0 : i64} : tensor<32x10xf32>
  %l = tcc.log_softmax %x {axis = 0 : i64} : tensor<32x10xf32>
  // CHECK: tcc.softmax_grad %[[DY]], %[[Y]] {axis = 1 : i64} : tensor<32x10xf32>
  %dx = tcc.softmax_grad %dy, %y {axis = 1 : i64} : tensor<32x10xf32>
  // CHECK: tcc.log_softmax_grad %[[DY]], %[[L]] {axis = 0 : i64} : tensor<32x10xf32>
  %dl = tcc.log_softmax_grad %dy, %l {axis = 0 : i64} : tensor<32x10xf32>
  return %dx, %dl : tensor<32x10xf32>, tensor<32x10xf32>
}

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[LOGITS:.+]]: tensor<32x10xf32>, %[[LABELS:.+]]: tensor<32xi64>, %[[P:.+]]: tensor<32x1xf32>, %[[T:.+]]: tensor<32x1xf32>)
func.func @losses(%logits: tensor<32x10xf32>, %labels: tensor<32xi64>,
                  %p: tensor<32x1xf32>, %t: tensor<32x1xf32>)
    -> (tensor<32x10xf32>, tensor<32x1xf32>) {
  // CHECK: %[[CE:.+]] = tcc.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  %ce = tcc.softmax_cross_entropy %logits, %labels : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  // CHECK: tcc.softmax_cross_entropy_grad %[[CE]], %[[LOGITS]], %[[LABELS]] : (tensor<f32>, tensor<32x10xf32>, tensor<32xi64>) -> tensor<32x10xf32>
  %dce = tcc.softmax_cross_entropy_grad %ce, %logits, %labels : (tensor<f32>, tensor<32x10xf32>, tensor<32xi64>) -> tensor<32x10xf32>
  // CHECK: tcc.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64}
  %ces = tcc.softmax_cross_entropy %logits, %labels {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  // CHECK: %[[MSE:.+]] = tcc.mse_loss %[[P]], %[[T]] : (tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<f32>
  %mse = tcc.mse_loss %p, %t : (tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<f32>
  // CHECK: tcc.mse_loss_grad %[[MSE]], %[[P]], %[[T]] : (tensor<f32>, tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<32x1xf32>
  %dmse = tcc.mse_loss_grad %mse, %p, %t : (tensor<f32>, tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<32x1xf32>
  return %dce, %dmse : tensor<32x10xf32>, tensor<32x1xf32>
}

// CHECK-LABEL: func.func @optimizers
// CHECK-SAME: (%[[P:.+]]: tensor<10xf32>, %[[G:.+]]: tensor<10xf32>, %[[S1:.+]]: tensor<10xf32>, %[[S2:.+]]: tensor<10xf32>, %[[STEP:.+]]: tensor<f32>, %[[LR:.+]]: tensor<f32>)
func.func @optimizers(%p: tensor<10xf32>, %g: tensor<10xf32>, %m: tensor<10xf32>,
                      %v: tensor<10xf32>, %t: tensor<f32>, %lr: tensor<f32>)
    -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) {
  // CHECK: tcc.sgd_update %[[P]], %[[G]], %[[LR]] {weight_decay = 0.000000e+00 : f64} : tensor<10xf32>
  %p1 = tcc.sgd_update %p, %g, %lr {weight_decay = 0.0 : f64} : tensor<10xf32>
  // CHECK: tcc.sgd_momentum_update %[[P]], %[[G]], %[[S1]], %[[LR]] {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<10xf32>
  %p2, %b2 = tcc.sgd_momentum_update %p, %g, %m, %lr {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<10xf32>
  // CHECK: tcc.sgd_momentum_update %[[P]], %[[G]], %[[S1]], %[[LR]] {momentum = 9.000000e-01 : f64, nesterov, weight_decay = 0.000000e+00 : f64} : tensor<10xf32>
  %p6, %b6 = tcc.sgd_momentum_update %p, %g, %m, %lr {momentum = 0.9 : f64, nesterov, weight_decay = 0.0 : f64} : tensor<10xf32>
  // CHECK: tcc.lion_update %[[P]], %[[G]], %[[S1]], %[[LR]] {beta1 = 9.000000e-01 : f64, beta2 = 0.98999{{[0-9]*}} : f64, weight_decay = 1.000000e-01 : f64} : tensor<10xf32>
  %p7, %m7 = tcc.lion_update %p, %g, %m, %lr {beta1 = 0.9 : f64, beta2 = 0.99 : f64, weight_decay = 0.1 : f64} : tensor<10xf32>
  // CHECK: tcc.adamw_update %[[P]], %[[G]], %[[S1]], %[[S2]], %[[STEP]], %[[LR]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899{{[0-9]*}} : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : tensor<10xf32>, tensor<f32>
  %p3, %m3, %v3 = tcc.adamw_update %p, %g, %m, %v, %t, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32>
  // CHECK: tcc.adamw_update %[[P]], %[[G]], %[[S1]], %[[S2]], %[[STEP]], %[[LR]] {{.*}}l2_decay{{.*}} : tensor<10xf32>, tensor<f32>
  %p8, %m8, %v8 = tcc.adamw_update %p, %g, %m, %v, %t, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, l2_decay, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32>
  // CHECK: tcc.adamw_update %[[P]], %[[G]], %[[S1]], %[[S2]], %[[STEP]], %[[LR]] {{.*}} : tensor<10xf32>, tensor<f32> -> tensor<10xbf16>
  %p4, %m4, %v4, %l4 = tcc.adamw_update %p, %g, %m, %v, %t, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32> -> tensor<10xbf16>
  // CHECK: tcc.adamw_update %[[P]], %[[G]], %[[S1]], %[[S2]], %[[STEP]], %[[LR]] unscale %[[STEP]] if %[[OK:[a-z0-9_]+]] {{.*}} : tensor<10xf32>, tensor<f32> -> tensor<10xf16>
  %ok = tcc.constant dense<true> : tensor<i1>
  %p5, %m5, %v5, %l5 = tcc.adamw_update %p, %g, %m, %v, %t, %lr unscale %t if %ok {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32> -> tensor<10xf16>
  return %p1, %p2, %b2, %p3, %m3, %v3, %p6, %p7 : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
}
