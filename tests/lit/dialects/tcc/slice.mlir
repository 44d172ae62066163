// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tcc-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | tcc-opt --split-input-file | FileCheck %s
// RUN: tcc-opt %s --split-input-file --verify-diagnostics --canonicalize | FileCheck %s --check-prefix=CANON

// tcc.slice and tcc.slice_grad: round trip, inferred shapes, errors.

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.+]]: tensor<2x5xf32>)
func.func @slice(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x5xf32>) {
  // CHECK: %[[S:.+]] = tcc.slice %[[X]] {sizes = array<i64: 2, 3>, starts = array<i64: 0, 4>, steps = array<i64: 1, -1>} : tensor<2x5xf32> -> tensor<2x3xf32>
  %s = tcc.slice %x {starts = array<i64: 0, 4>, sizes = array<i64: 2, 3>, steps = array<i64: 1, -1>} : tensor<2x5xf32> -> tensor<2x3xf32>
  // CHECK: tcc.slice_grad %[[S]] {shape = array<i64: 2, 5>, starts = array<i64: 0, 4>, steps = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2x5xf32>
  %d = tcc.slice_grad %s {shape = array<i64: 2, 5>, starts = array<i64: 0, 4>, steps = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2x5xf32>
  return %s, %d : tensor<2x3xf32>, tensor<2x5xf32>
}

// -----

// Strided, empty and integer windows.
// CHECK-LABEL: func.func @windows
// CHECK: tcc.slice %{{.+}} {sizes = array<i64: 3>, starts = array<i64: 1>, steps = array<i64: 3>} : tensor<9xf32> -> tensor<3xf32>
// CHECK: tcc.slice %{{.+}} {sizes = array<i64: 0>, starts = array<i64: 9>, steps = array<i64: 1>} : tensor<9xf32> -> tensor<0xf32>
// CHECK: tcc.slice %{{.+}} {sizes = array<i64: 2>, starts = array<i64: 1>, steps = array<i64: 1>} : tensor<4xi64> -> tensor<2xi64>
func.func @windows(%x: tensor<9xf32>, %s: tensor<4xi64>) -> (tensor<3xf32>, tensor<0xf32>, tensor<2xi64>) {
  %a = tcc.slice %x {starts = array<i64: 1>, sizes = array<i64: 3>, steps = array<i64: 3>} : tensor<9xf32> -> tensor<3xf32>
  %b = tcc.slice %x {starts = array<i64: 9>, sizes = array<i64: 0>, steps = array<i64: 1>} : tensor<9xf32> -> tensor<0xf32>
  %c = tcc.slice %s {starts = array<i64: 1>, sizes = array<i64: 2>, steps = array<i64: 1>} : tensor<4xi64> -> tensor<2xi64>
  return %a, %b, %c : tensor<3xf32>, tensor<0xf32>, tensor<2xi64>
}

// -----

// The whole tensor with unit steps is the tensor.
// CANON-LABEL: func.func @identity
// CANON-SAME: (%[[X:.+]]: tensor<2x5xf32>)
// CANON-NEXT: return %[[X]]
func.func @identity(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %s = tcc.slice %x {starts = array<i64: 0, 0>, sizes = array<i64: 2, 5>, steps = array<i64: 1, 1>} : tensor<2x5xf32> -> tensor<2x5xf32>
  return %s : tensor<2x5xf32>
}

// -----

// Slicing back the window a slice_grad (a pad) wrote gives its input; a
// slice_grad as large as its input is the input. Another window stays.
// CANON-LABEL: func.func @slice_of_pad
// CANON-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CANON: %[[P:.+]] = tcc.slice_grad %[[X]]
// CANON: %[[O:.+]] = tcc.slice %[[P]] {sizes = array<i64: 2, 3>, starts = array<i64: 0, 1>
// CANON: return %[[X]], %[[X]], %[[O]]
func.func @slice_of_pad(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %p = tcc.slice_grad %x {shape = array<i64: 4, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<4x8xf32>
  %s = tcc.slice %p {starts = array<i64: 0, 0>, sizes = array<i64: 2, 3>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<2x3xf32>
  %same = tcc.slice_grad %x {shape = array<i64: 2, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %other = tcc.slice %p {starts = array<i64: 0, 1>, sizes = array<i64: 2, 3>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<2x3xf32>
  return %s, %same, %other : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

func.func @slice_outside(%x: tensor<2x5xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{tcc.slice: dimension 1 reads 3 elements from 3 in steps of 1, outside [0, 5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = tcc.slice %x {starts = array<i64: 0, 3>, sizes = array<i64: 2, 3>, steps = array<i64: 1, 1>} : tensor<2x5xf32> -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

func.func @slice_backward_outside(%x: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{tcc.slice: dimension 0 reads 3 elements from 1 in steps of -1, outside [0, 5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = tcc.slice %x {starts = array<i64: 1>, sizes = array<i64: 3>, steps = array<i64: -1>} : tensor<5xf32> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{tcc.slice: dimension 0 has step 0 and size 3 (steps must be non-zero, sizes >= 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = tcc.slice %x {starts = array<i64: 0>, sizes = array<i64: 3>, steps = array<i64: 0>} : tensor<5xf32> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

func.func @slice_rank(%x: tensor<2x5xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{tcc.slice: starts, sizes and steps need one entry per dimension of the rank-2 input, got 1, 1 and 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = tcc.slice %x {starts = array<i64: 0>, sizes = array<i64: 3>, steps = array<i64: 1>} : tensor<2x5xf32> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

func.func @slice_grad_outside(%g: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+2 {{tcc.slice_grad: dimension 0 reads 4 elements from 0 in steps of 2, outside [0, 5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %d = tcc.slice_grad %g {shape = array<i64: 5>, starts = array<i64: 0>, steps = array<i64: 2>} : tensor<4xf32> -> tensor<5xf32>
  return %d : tensor<5xf32>
}
