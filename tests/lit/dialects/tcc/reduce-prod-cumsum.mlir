// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// tcc.reduce_prod, its gradient and tcc.cumsum round-trip; their verifiers.

// CHECK-LABEL: func.func @ops
// CHECK: %[[P:.+]] = tcc.reduce_prod %{{.+}} {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: %[[G:.+]] = tcc.reduce_prod_grad %[[P]], %{{.+}} {axes = array<i64: 1>} : tensor<4xf32>, tensor<4x8xf32>
// CHECK: %[[C:.+]] = tcc.cumsum %[[G]] {axis = 0 : i64, exclusive = true, reverse = true} : tensor<4x8xf32>
func.func @ops(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %p = tcc.reduce_prod %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %g = tcc.reduce_prod_grad %p, %x {axes = array<i64: 1>} : tensor<4xf32>, tensor<4x8xf32>
  %c = tcc.cumsum %g {axis = 0 : i64, exclusive = true, reverse = true} : tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

func.func @grad_shape(%dy: tensor<8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{grad has shape [8], expected the reduction's [4]}}
  %g = tcc.reduce_prod_grad %dy, %x {axes = array<i64: 1>} : tensor<8xf32>, tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

func.func @cumsum_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %c = tcc.cumsum %x {axis = 2 : i64} : tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}
