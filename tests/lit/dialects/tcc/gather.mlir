// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tcc-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | tcc-opt --split-input-file | FileCheck %s

// tcc.gather and tcc.gather_grad: round trip, inferred shapes, errors.

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[W:.+]]: tensor<50x16xf32>, %[[IDS:.+]]: tensor<2x8xi64>)
func.func @embedding(%w: tensor<50x16xf32>, %ids: tensor<2x8xi64>) -> (tensor<2x8x16xf32>, tensor<50x16xf32>) {
  // CHECK: %[[E:.+]] = tcc.gather %[[W]], %[[IDS]] {axis = 0 : i64} : (tensor<50x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %e = tcc.gather %w, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // CHECK: tcc.gather_grad %[[E]], %[[IDS]] {axis = 0 : i64, size = 50 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<50x16xf32>
  %d = tcc.gather_grad %e, %ids {axis = 0 : i64, size = 50 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<50x16xf32>
  return %e, %d : tensor<2x8x16xf32>, tensor<50x16xf32>
}

// -----

// A scalar index drops the axis; i64 data gathers too.
// CHECK-LABEL: func.func @scalar_index
// CHECK: tcc.gather %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<3x4x5xf32>, tensor<i64>) -> tensor<3x5xf32>
// CHECK: tcc.gather %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<4xi64>, tensor<2xi64>) -> tensor<2xi64>
func.func @scalar_index(%x: tensor<3x4x5xf32>, %i: tensor<i64>, %s: tensor<4xi64>, %j: tensor<2xi64>) -> (tensor<3x5xf32>, tensor<2xi64>) {
  %y = tcc.gather %x, %i {axis = 1 : i64} : (tensor<3x4x5xf32>, tensor<i64>) -> tensor<3x5xf32>
  %z = tcc.gather %s, %j {axis = 0 : i64} : (tensor<4xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %y, %z : tensor<3x5xf32>, tensor<2xi64>
}

// -----

func.func @gather_axis(%w: tensor<50x16xf32>, %ids: tensor<8xi64>) -> tensor<8x16xf32> {
  // expected-error @+2 {{tcc.gather: axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %e = tcc.gather %w, %ids {axis = 2 : i64} : (tensor<50x16xf32>, tensor<8xi64>) -> tensor<8x16xf32>
  return %e : tensor<8x16xf32>
}

// -----

func.func @gather_float_indices(%w: tensor<50x16xf32>, %ids: tensor<8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 64-bit signless integer values}}
  %e = tcc.gather %w, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<8xf32>) -> tensor<8x16xf32>
  return %e : tensor<8x16xf32>
}

// -----

func.func @gather_wrong_result(%w: tensor<50x16xf32>, %ids: tensor<8xi64>) -> tensor<16x8xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<8x16xf32>' are incompatible with return type(s) of operation 'tensor<16x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %e = tcc.gather %w, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<8xi64>) -> tensor<16x8xf32>
  return %e : tensor<16x8xf32>
}

// -----

func.func @gather_grad_shape(%g: tensor<2x8x16xf32>, %ids: tensor<2x7xi64>) -> tensor<50x16xf32> {
  // expected-error @+2 {{tcc.gather_grad: gradient shape [2,8,16] does not hold indices of shape [2,7] at axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %d = tcc.gather_grad %g, %ids {axis = 0 : i64, size = 50 : i64} : (tensor<2x8x16xf32>, tensor<2x7xi64>) -> tensor<50x16xf32>
  return %d : tensor<50x16xf32>
}

// -----

func.func @gather_grad_rank(%g: tensor<8xf32>, %ids: tensor<2x8xi64>) -> tensor<50xf32> {
  // expected-error @+2 {{tcc.gather_grad: axis 0 and rank-2 indices do not fit a gradient of shape [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %d = tcc.gather_grad %g, %ids {axis = 0 : i64, size = 50 : i64} : (tensor<8xf32>, tensor<2x8xi64>) -> tensor<50xf32>
  return %d : tensor<50xf32>
}
