// RUN: tcc-opt %s --split-input-file | tcc-opt --split-input-file | FileCheck %s

// tcc.unary_fn and its gradient round-trip; zero parameters are elided.

// CHECK-LABEL: func.func @family
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[DY:.+]]: tensor<4x8xf32>)
// CHECK: %[[A:.+]] = tcc.unary_fn "abs" %[[X]] : tensor<4x8xf32>
// CHECK: %[[B:.+]] = tcc.unary_fn "elu" %[[A]] {alpha = 5.000000e-01 : f64} : tensor<4x8xf32>
// CHECK: %[[C:.+]] = tcc.unary_fn "clip" %[[B]] {alpha = 0xFFF0000000000000 : f64, beta = 6.000000e+00 : f64} : tensor<4x8xf32>
// CHECK: %[[D:.+]] = tcc.unary_fn_grad "selu" %[[DY]], %[[C]] {alpha = 1.500000e+00 : f64, beta = 2.000000e+00 : f64} : tensor<4x8xf32>
// CHECK: return %[[D]]
func.func @family(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.unary_fn "abs" %x {alpha = 0.0 : f64} : tensor<4x8xf32>
  %1 = tcc.unary_fn "elu" %0 {alpha = 0.5 : f64} : tensor<4x8xf32>
  %2 = tcc.unary_fn "clip" %1 {alpha = 0xFFF0000000000000 : f64, beta = 6.0 : f64} : tensor<4x8xf32>
  %3 = tcc.unary_fn_grad "selu" %dy, %2 {alpha = 1.5 : f64, beta = 2.0 : f64} : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// bf16 is a float tensor like any other.
// CHECK-LABEL: func.func @bf16
// CHECK: tcc.unary_fn "mish" %{{.+}} : tensor<3xbf16>
func.func @bf16(%x: tensor<3xbf16>) -> tensor<3xbf16> {
  %0 = tcc.unary_fn "mish" %x : tensor<3xbf16>
  return %0 : tensor<3xbf16>
}
