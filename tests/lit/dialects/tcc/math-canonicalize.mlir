// RUN: tcc-opt %s --canonicalize --split-input-file | FileCheck %s

// GELU subgraphs as torch.onnx.export writes them become tcc.gelu; pow by a
// constant becomes tcc.pow_scalar.

// nn.GELU(): x * 0.5 * (1 + erf(x / sqrt(2))), exactly as exported.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[G:.+]] = tcc.gelu %[[X]] : tensor<2x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c0 = tcc.constant dense<1.41421354> : tensor<f32>
  %0 = tcc.div %x, %c0 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = tcc.erf %0 : tensor<2x4xf32>
  %c1 = tcc.constant dense<1.0> : tensor<f32>
  %2 = tcc.add %1, %c1 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %3 = tcc.mul %x, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c2 = tcc.constant dense<0.5> : tensor<f32>
  %4 = tcc.mul %3, %c2 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %4 : tensor<2x4xf32>
}

// -----

// Another association and x * (1/sqrt(2)) instead of x / sqrt(2).
// CHECK-LABEL: func.func @gelu_erf_reassociated
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[G:.+]] = tcc.gelu %[[X]] : tensor<2x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf_reassociated(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c0 = tcc.constant dense<0.707106769> : tensor<f32>
  %0 = tcc.mul %c0, %x : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = tcc.erf %0 : tensor<2x4xf32>
  %c1 = tcc.constant dense<1.0> : tensor<f32>
  %2 = tcc.add %c1, %1 : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c2 = tcc.constant dense<0.5> : tensor<f32>
  %3 = tcc.mul %c2, %x : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = tcc.mul %3, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4 : tensor<2x4xf32>
}

// -----

// nn.GELU(approximate="tanh"), exactly as exported.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[G:.+]] = tcc.gelu %[[X]] {approximate = "tanh"} : tensor<2x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = tcc.mul %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = tcc.mul %x, %0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = tcc.constant dense<4.471500e-02> : tensor<f32>
  %2 = tcc.mul %c0, %1 : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = tcc.add %x, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c1 = tcc.constant dense<0.797884583> : tensor<f32>
  %4 = tcc.mul %c1, %3 : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = tcc.tanh %4 : tensor<2x4xf32>
  %c2 = tcc.constant dense<1.0> : tensor<f32>
  %6 = tcc.add %c2, %5 : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %7 = tcc.mul %x, %6 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c3 = tcc.constant dense<0.5> : tensor<f32>
  %8 = tcc.mul %c3, %7 : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %8 : tensor<2x4xf32>
}

// -----

// The cube as pow(x, 3), which itself becomes pow_scalar first.
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[G:.+]] = tcc.gelu %[[X]] {approximate = "tanh"} : tensor<2x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_pow(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c3 = tcc.constant dense<3.0> : tensor<f32>
  %1 = tcc.pow %x, %c3 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %c0 = tcc.constant dense<4.471500e-02> : tensor<f32>
  %2 = tcc.mul %1, %c0 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %3 = tcc.add %2, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c1 = tcc.constant dense<0.797884583> : tensor<f32>
  %4 = tcc.mul %3, %c1 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %5 = tcc.tanh %4 : tensor<2x4xf32>
  %c2 = tcc.constant dense<1.0> : tensor<f32>
  %6 = tcc.add %5, %c2 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %c5 = tcc.constant dense<0.5> : tensor<f32>
  %7 = tcc.mul %x, %c5 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %8 = tcc.mul %7, %6 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %8 : tensor<2x4xf32>
}

// -----

// Near misses stay element-wise: a wrong constant, and a different value
// inside erf than outside.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: tcc.gelu
// CHECK: tcc.erf
// CHECK: tcc.erf
// CHECK-NOT: tcc.gelu
// CHECK: return
func.func @not_gelu(%x: tensor<2x4xf32>, %z: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %c0 = tcc.constant dense<1.5> : tensor<f32>
  %0 = tcc.div %x, %c0 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = tcc.erf %0 : tensor<2x4xf32>
  %c1 = tcc.constant dense<1.0> : tensor<f32>
  %2 = tcc.add %1, %c1 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %3 = tcc.mul %x, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c2 = tcc.constant dense<0.5> : tensor<f32>
  %4 = tcc.mul %3, %c2 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %c3 = tcc.constant dense<1.41421354> : tensor<f32>
  %5 = tcc.div %z, %c3 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %6 = tcc.erf %5 : tensor<2x4xf32>
  %7 = tcc.add %6, %c1 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %8 = tcc.mul %x, %7 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %9 = tcc.mul %8, %c2 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %4, %9 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// An intermediate used elsewhere stays, computed by its own ops.
// CHECK-LABEL: func.func @gelu_shared_intermediate
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>)
// CHECK: %[[E:.+]] = tcc.erf
// CHECK: %[[G:.+]] = tcc.gelu %[[X]] : tensor<2x4xf32>
// CHECK: return %[[G]], %[[E]]
func.func @gelu_shared_intermediate(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %c0 = tcc.constant dense<1.41421354> : tensor<f32>
  %0 = tcc.div %x, %c0 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = tcc.erf %0 : tensor<2x4xf32>
  %c1 = tcc.constant dense<1.0> : tensor<f32>
  %2 = tcc.add %1, %c1 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %3 = tcc.mul %x, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c2 = tcc.constant dense<0.5> : tensor<f32>
  %4 = tcc.mul %3, %c2 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %4, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @pow_by_constant
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[E:.+]]: tensor<4xf32>)
// CHECK: %[[P:.+]] = tcc.pow_scalar %[[X]] {exponent = 5.000000e-01 : f64} : tensor<2x4xf32>
// A splat exponent that widens the result stays a tcc.pow.
// CHECK: %[[W:.+]] = tcc.pow %[[E]], %{{.+}} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// A tensor exponent stays too.
// CHECK: %[[T:.+]] = tcc.pow %[[X]], %[[E]]
// An exponent of 1 folds away.
// CHECK: return %[[P]], %[[W]], %[[T]], %[[X]]
func.func @pow_by_constant(%x: tensor<2x4xf32>, %e: tensor<4xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %c = tcc.constant dense<0.5> : tensor<f32>
  %0 = tcc.pow %x, %c : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %cw = tcc.constant dense<2.0> : tensor<2x4xf32>
  %1 = tcc.pow %e, %cw : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = tcc.pow %x, %e : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = tcc.pow_scalar %x {exponent = 1.0 : f64} : tensor<2x4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
