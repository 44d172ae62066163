// RUN: tcc-opt %s | tcc-opt | FileCheck %s
// RUN: tcc-opt %s --mlir-print-op-generic | tcc-opt | FileCheck %s

// Round trip of the math, normalization and dropout ops in their custom form.

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[D:.+]]: tensor<4x8xf32>)
func.func @unary(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[E:.+]] = tcc.exp %[[X]] : tensor<4x8xf32>
  %0 = tcc.exp %x : tensor<4x8xf32>
  // CHECK: %[[L:.+]] = tcc.log %[[E]] : tensor<4x8xf32>
  %1 = tcc.log %0 : tensor<4x8xf32>
  // CHECK: %[[S:.+]] = tcc.sqrt %[[E]] : tensor<4x8xf32>
  %2 = tcc.sqrt %0 : tensor<4x8xf32>
  // CHECK: %[[T:.+]] = tcc.tanh %[[L]] : tensor<4x8xf32>
  %3 = tcc.tanh %1 : tensor<4x8xf32>
  // CHECK: %[[G:.+]] = tcc.sigmoid %[[T]] : tensor<4x8xf32>
  %4 = tcc.sigmoid %3 : tensor<4x8xf32>
  // CHECK: %[[R:.+]] = tcc.erf %[[G]] : tensor<4x8xf32>
  %5 = tcc.erf %4 : tensor<4x8xf32>
  // CHECK: tcc.sqrt_grad %[[D]], %[[S]] : tensor<4x8xf32>
  %6 = tcc.sqrt_grad %dy, %2 : tensor<4x8xf32>
  // CHECK: tcc.tanh_grad %{{.+}}, %[[T]] : tensor<4x8xf32>
  %7 = tcc.tanh_grad %6, %3 : tensor<4x8xf32>
  // CHECK: tcc.sigmoid_grad %{{.+}}, %[[G]] : tensor<4x8xf32>
  %8 = tcc.sigmoid_grad %7, %4 : tensor<4x8xf32>
  // CHECK: tcc.erf_grad %{{.+}}, %[[R]] : tensor<4x8xf32>
  %9 = tcc.erf_grad %8, %5 : tensor<4x8xf32>
  return %9 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @powers
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[E:.+]]: tensor<8xf32>, %[[D:.+]]: tensor<4x8xf32>)
func.func @powers(%x: tensor<4x8xf32>, %e: tensor<8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: tcc.pow %[[X]], %[[E]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = tcc.pow %x, %e : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: tcc.pow_grad %[[D]], %[[X]], %[[X]] : tensor<4x8xf32>
  %1:2 = tcc.pow_grad %dy, %x, %x : tensor<4x8xf32>
  // CHECK: tcc.pow_scalar %[[X]] {exponent = 2.500000e+00 : f64} : tensor<4x8xf32>
  %2 = tcc.pow_scalar %x {exponent = 2.5 : f64} : tensor<4x8xf32>
  // CHECK: tcc.pow_scalar_grad %[[D]], %[[X]] {exponent = 3.000000e+00 : f64} : tensor<4x8xf32>
  %3 = tcc.pow_scalar_grad %dy, %x {exponent = 3.0 : f64} : tensor<4x8xf32>
  return %0, %1#0, %1#1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[D:.+]]: tensor<4x8xf32>)
func.func @gelu(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // The default approximation is not printed.
  // CHECK: tcc.gelu %[[X]] : tensor<4x8xf32>
  %0 = tcc.gelu %x : tensor<4x8xf32>
  // CHECK: tcc.gelu %[[X]] {approximate = "tanh"} : tensor<4x8xf32>
  %1 = tcc.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
  // CHECK: tcc.gelu_grad %[[D]], %[[X]] {approximate = "tanh"} : tensor<4x8xf32>
  %2 = tcc.gelu_grad %dy, %x {approximate = "tanh"} : tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[S:.+]]: tensor<3x4xf32>, %[[B:.+]]: tensor<3x4xf32>, %[[D:.+]]: tensor<2x3x4xf32>)
func.func @layer_norm(%x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<3x4xf32>, %dy: tensor<2x3x4xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  // CHECK: %[[Y:.+]], %[[M:.+]], %[[R:.+]] = tcc.layer_norm %[[X]], %[[S]], %[[B]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %y, %mean, %rstd = tcc.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  // CHECK: tcc.layer_norm_grad %[[D]], %[[X]], %[[S]], %[[M]], %[[R]] {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
  %dx, %ds, %db = tcc.layer_norm_grad %dy, %x, %s, %mean, %rstd {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
  return %y, %dx, %ds, %db : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}

// The column sums alone, from 16-bit dy and x (f32 statistics and results).
// CHECK-LABEL: func.func @layer_norm_param_grad
// CHECK: tcc.layer_norm_param_grad %arg0, %arg1, %arg2, %arg3 {axis = 2 : i64} : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func @layer_norm_param_grad(%dy: tensor<2x3x4xbf16>, %x: tensor<2x3x4xbf16>, %m: tensor<2x3x1xf32>, %r: tensor<2x3x1xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %ds, %db = tcc.layer_norm_param_grad %dy, %x, %m, %r {axis = 2 : i64} : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %ds, %db : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[S:.+]]: tensor<i64>)
func.func @dropout(%x: tensor<4x8xf32>, %step: tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) {
  // CHECK: %[[Y:.+]], %[[M:.+]] = tcc.dropout %[[X]], %[[S]] {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  %y, %mask = tcc.dropout %x, %step {ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf32>, tensor<i64>
  // CHECK: tcc.increment %[[S]] : tensor<i64>
  %next = tcc.increment %step : tensor<i64>
  return %y, %mask, %next : tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>
}

// CHECK-LABEL: func.func @random
// CHECK-SAME: (%[[S:.+]]: tensor<i64>)
func.func @random(%step: tensor<i64>) -> (tensor<4x8xf32>, tensor<3xf32>) {
  // CHECK: tcc.random %[[S]] {a = 0.000000e+00 : f64, b = 2.000000e+00 : f64, normal, seed = 7 : i64} : tensor<i64> -> tensor<4x8xf32>
  %n = tcc.random %step {normal, a = 0.0 : f64, b = 2.0 : f64, seed = 7 : i64} : tensor<i64> -> tensor<4x8xf32>
  // CHECK: tcc.random %[[S]] {a = -1.000000e+00 : f64, b = 1.000000e+00 : f64, seed = -3 : i64} : tensor<i64> -> tensor<3xf32>
  %u = tcc.random %step {a = -1.0 : f64, b = 1.0 : f64, seed = -3 : i64} : tensor<i64> -> tensor<3xf32>
  return %n, %u : tensor<4x8xf32>, tensor<3xf32>
}
