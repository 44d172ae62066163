// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tcc-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | tcc-opt --split-input-file | FileCheck %s
// RUN: tcc-opt %s --split-input-file --verify-diagnostics --canonicalize | FileCheck %s --check-prefix=CANON

// tcc.concat: round trip, inferred shape, folding, errors.

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x5xf32>, %[[C:.+]]: tensor<1xi64>, %[[D:.+]]: tensor<3xi64>)
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<1xi64>, %d: tensor<3xi64>) -> (tensor<2x11xf32>, tensor<4xi64>) {
  // CHECK: tcc.concat %[[A]], %[[B]], %[[A]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %0 = tcc.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  // CHECK: tcc.concat %[[C]], %[[D]] {axis = 0 : i64} : (tensor<1xi64>, tensor<3xi64>) -> tensor<4xi64>
  %1 = tcc.concat %c, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<3xi64>) -> tensor<4xi64>
  return %0, %1 : tensor<2x11xf32>, tensor<4xi64>
}

// -----

// A single input is the result.
// CANON-LABEL: func.func @single
// CANON-SAME: (%[[A:.+]]: tensor<2x3xf32>)
// CANON-NEXT: return %[[A]]
func.func @single(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tcc.concat %a {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{tcc.concat: input 1 has shape [3,5], which differs from input 0's [2,3] outside axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @concat_types(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{tcc.concat: input 1 has element type 'i64', input 0 has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_axis(%a: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{tcc.concat: axis -1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.concat %a, %a {axis = -1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_none() -> tensor<4xf32> {
  // expected-error @+2 {{tcc.concat: needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
