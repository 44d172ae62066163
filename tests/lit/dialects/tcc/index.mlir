// RUN: tcc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The indexing ops round-trip; their shapes are checked.

// CHECK-LABEL: func.func @round_trip
// CHECK: tcc.gather_elements %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
// CHECK: tcc.scatter_elements "max", %{{.+}}, %{{.+}}, %{{.+}} {axis = 0 : i64}
// CHECK: tcc.gather_nd %{{.+}}, %{{.+}} {batch_dims = 0 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>) -> tensor<2xf32>
// CHECK: tcc.scatter_nd "add", %{{.+}}, %{{.+}}, %{{.+}} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<3x4xf32>
// CHECK: tcc.top_k %{{.+}} {axis = 1 : i64, k = 2 : i64} : tensor<3x4xf32> -> tensor<3x2xi64>
func.func @round_trip(%x: tensor<3x4xf32>, %i: tensor<2x2xi64>, %u: tensor<2x2xf32>, %v: tensor<2xf32>) -> (tensor<2x2xf32>, tensor<3x4xf32>, tensor<2xf32>, tensor<3x4xf32>, tensor<3x2xi64>) {
  %0 = tcc.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  %1 = tcc.scatter_elements "max", %x, %i, %u {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x4xf32>
  %2 = tcc.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>) -> tensor<2xf32>
  %3 = tcc.scatter_nd "add", %x, %i, %v : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  %4 = tcc.top_k %x {axis = 1 : i64, k = 2 : i64} : tensor<3x4xf32> -> tensor<3x2xi64>
  return %0, %1, %2, %3, %4 : tensor<2x2xf32>, tensor<3x4xf32>, tensor<2xf32>, tensor<3x4xf32>, tensor<3x2xi64>
}

// -----

func.func @bad_reduction(%x: tensor<3x4xf32>, %i: tensor<2x2xi64>, %u: tensor<2x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'tcc.scatter_elements' op has reduction 'sum', expected none, add, mul, max or min}}
  %0 = tcc.scatter_elements "sum", %x, %i, %u {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @updates_shape(%x: tensor<3x4xf32>, %i: tensor<2x2xi64>, %u: tensor<2x3xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{tcc.scatter_elements: updates 'tensor<2x3xf32>' must have the indices' shape [2,2] and the data's element type}}
  %0 = tcc.scatter_elements "none", %x, %i, %u {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @nd_tuple(%x: tensor<3x4xf32>, %i: tensor<2x3xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{tcc.gather_nd: indices of shape [2,3] (batch_dims 0) do not index data of shape [3,4]}}
  %0 = tcc.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<3x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @top_k_k(%x: tensor<3x4xf32>) -> tensor<3x5xi64> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{tcc.top_k: k 5 is not in [0, 4]}}
  %0 = tcc.top_k %x {axis = 1 : i64, k = 5 : i64} : tensor<3x4xf32> -> tensor<3x5xi64>
  return %0 : tensor<3x5xi64>
}
