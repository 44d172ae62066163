// RUN: tcc-opt %s --canonicalize --split-input-file | FileCheck %s

// Selections moved through layout changes (dialects/tcc/
// TccPatternsLayout.cpp): what PyTorch 2.x's export of
// nn.MultiheadAttention's q/k/v split becomes.

// A gather of one constant index is a slice of that entry; a negative index
// counts from the end.
// CHECK-LABEL: func.func @gather_scalar
// CHECK-SAME: (%[[X:.+]]: tensor<3x4x8xf32>)
// CHECK-DAG: %[[A:.+]] = tcc.slice %[[X]] {sizes = array<i64: 1, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}
// CHECK-DAG: %[[B:.+]] = tcc.slice %[[X]] {sizes = array<i64: 1, 4, 8>, starts = array<i64: 2, 0, 0>, steps = array<i64: 1, 1, 1>}
// CHECK-DAG: %[[RA:.+]] = tcc.reshape %[[A]] : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-DAG: %[[RB:.+]] = tcc.reshape %[[B]] : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK: return %[[RA]], %[[RB]]
func.func @gather_scalar(%x: tensor<3x4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c0 = tcc.constant dense<0> : tensor<i64>
  %cm1 = tcc.constant dense<-1> : tensor<i64>
  %a = tcc.gather %x, %c0 {axis = 0 : i64} : (tensor<3x4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %b = tcc.gather %x, %cm1 {axis = 0 : i64} : (tensor<3x4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Consecutive constant indices along an inner axis, on int64 data.
// CHECK-LABEL: func.func @gather_run
// CHECK: %[[S:.+]] = tcc.slice %{{.+}} {sizes = array<i64: 2, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<2x5xi64> -> tensor<2x3xi64>
// CHECK-NOT: tcc.gather
// CHECK: return %[[S]]
func.func @gather_run(%x: tensor<2x5xi64>) -> tensor<2x3xi64> {
  %i = tcc.constant dense<[1, 2, 3]> : tensor<3xi64>
  %a = tcc.gather %x, %i {axis = 1 : i64} : (tensor<2x5xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %a : tensor<2x3xi64>
}

// -----

// Not consecutive, out of range, or not constant: gathers stay (the kernel
// reports an index out of range at run time).
// CHECK-LABEL: func.func @gather_stays
// CHECK-COUNT-3: tcc.gather
// CHECK-NOT: tcc.slice
func.func @gather_stays(%x: tensor<3x4xf32>, %ids: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
  %c = tcc.constant dense<[2, 0]> : tensor<2xi64>
  %o = tcc.constant dense<3> : tensor<i64>
  %a = tcc.gather %x, %c {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %b = tcc.gather %x, %o {axis = 0 : i64} : (tensor<3x4xf32>, tensor<i64>) -> tensor<4xf32>
  %d = tcc.gather %x, %ids {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %a, %b, %d : tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>
}

// -----

// PyTorch 2.x's packed in-projection split, as imported:
// proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2) and
// proj[0], proj[1], proj[2]. Each becomes a slice of the projection's last
// axis, as PyTorch 1.13's chunk(3, -1) was; no transpose is left.
// CHECK-LABEL: func.func @mha_split
// CHECK-SAME: (%[[P:.+]]: tensor<6x2x24xf32>)
// CHECK-NOT: tcc.transpose
// CHECK-NOT: tcc.gather
// CHECK-DAG: %[[Q:.+]] = tcc.slice %[[P]] {sizes = array<i64: 6, 2, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}
// CHECK-DAG: %[[K:.+]] = tcc.slice %[[P]] {sizes = array<i64: 6, 2, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>}
// CHECK-DAG: %[[V:.+]] = tcc.slice %[[P]] {sizes = array<i64: 6, 2, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>}
// CHECK-NOT: tcc.transpose
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @mha_split(%p: tensor<6x2x24xf32>) -> (tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>) {
  %0 = tcc.reshape %p : tensor<6x2x24xf32> -> tensor<6x2x3x8xf32>
  %1 = tcc.reshape %0 : tensor<6x2x3x8xf32> -> tensor<1x6x2x3x8xf32>
  %2 = tcc.transpose %1 {perm = array<i64: 3, 1, 2, 0, 4>} : tensor<1x6x2x3x8xf32> -> tensor<3x6x2x1x8xf32>
  %3 = tcc.reshape %2 : tensor<3x6x2x1x8xf32> -> tensor<3x6x2x8xf32>
  %c0 = tcc.constant dense<0> : tensor<i64>
  %c1 = tcc.constant dense<1> : tensor<i64>
  %c2 = tcc.constant dense<2> : tensor<i64>
  %q = tcc.gather %3, %c0 {axis = 0 : i64} : (tensor<3x6x2x8xf32>, tensor<i64>) -> tensor<6x2x8xf32>
  %k = tcc.gather %3, %c1 {axis = 0 : i64} : (tensor<3x6x2x8xf32>, tensor<i64>) -> tensor<6x2x8xf32>
  %v = tcc.gather %3, %c2 {axis = 0 : i64} : (tensor<3x6x2x8xf32>, tensor<i64>) -> tensor<6x2x8xf32>
  return %q, %k, %v : tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>
}

// -----

// A slice of a transpose whose other user is not a slice stays: moving it
// would add a transpose of the window and keep the full one.
// CHECK-LABEL: func.func @slice_of_shared_transpose
// CHECK: %[[T:.+]] = tcc.transpose
// CHECK: tcc.slice %[[T]]
func.func @slice_of_shared_transpose(%x: tensor<4x6xf32>) -> (tensor<2x4xf32>, tensor<6x4xf32>) {
  %t = tcc.transpose %x {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %s = tcc.slice %t {sizes = array<i64: 2, 4>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : tensor<6x4xf32> -> tensor<2x4xf32>
  return %s, %t : tensor<2x4xf32>, tensor<6x4xf32>
}

// -----

// A slice of a transpose it alone reads: the window is taken first, with
// its starts, sizes and steps moved to the input's axes.
// CHECK-LABEL: func.func @slice_then_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<4x6xf32>)
// CHECK: %[[S:.+]] = tcc.slice %[[X]] {sizes = array<i64: 4, 2>, starts = array<i64: 0, 5>, steps = array<i64: 1, -2>} : tensor<4x6xf32> -> tensor<4x2xf32>
// CHECK: %[[T:.+]] = tcc.transpose %[[S]] {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
// CHECK: return %[[T]]
func.func @slice_then_transpose(%x: tensor<4x6xf32>) -> tensor<2x4xf32> {
  %t = tcc.transpose %x {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %s = tcc.slice %t {sizes = array<i64: 2, 4>, starts = array<i64: 5, 0>, steps = array<i64: -2, 1>} : tensor<6x4xf32> -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// -----

// A window that is strided in the reshape's input (an inner axis of a
// split) stays a slice of the reshape.
// CHECK-LABEL: func.func @slice_of_reshape_strided
// CHECK: tcc.reshape
// CHECK: tcc.slice {{.+}} : tensor<4x3x8xf32> -> tensor<4x3x2xf32>
func.func @slice_of_reshape_strided(%x: tensor<4x24xf32>) -> tensor<4x3x2xf32> {
  %r = tcc.reshape %x : tensor<4x24xf32> -> tensor<4x3x8xf32>
  %s = tcc.slice %r {sizes = array<i64: 4, 3, 2>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x3x8xf32> -> tensor<4x3x2xf32>
  return %s : tensor<4x3x2xf32>
}

// -----

// The head merge of F.multi_head_attention_forward: [B*H, T, D] viewed as
// [B, H, T, D], then permuted to [T, B, H, D]. The transpose moves B and H
// together, so it is one rank-3 transpose before the view.
// CHECK-LABEL: func.func @transpose_of_split
// CHECK-SAME: (%[[X:.+]]: tensor<6x5x4xf32>)
// CHECK: %[[T:.+]] = tcc.transpose %[[X]] {perm = array<i64: 1, 0, 2>} : tensor<6x5x4xf32> -> tensor<5x6x4xf32>
// CHECK: %[[R:.+]] = tcc.reshape %[[T]] : tensor<5x6x4xf32> -> tensor<5x2x3x4xf32>
// CHECK: return %[[R]]
func.func @transpose_of_split(%x: tensor<6x5x4xf32>) -> tensor<5x2x3x4xf32> {
  %r = tcc.reshape %x : tensor<6x5x4xf32> -> tensor<2x3x5x4xf32>
  %t = tcc.transpose %r {perm = array<i64: 2, 0, 1, 3>} : tensor<2x3x5x4xf32> -> tensor<5x2x3x4xf32>
  return %t : tensor<5x2x3x4xf32>
}

// -----

// A transpose that only moves unit axes is a reshape.
// CHECK-LABEL: func.func @unit_axes
// CHECK-NOT: tcc.transpose
// CHECK: tcc.reshape {{.+}} : tensor<6x2x8xf32> -> tensor<1x6x2x1x8xf32>
func.func @unit_axes(%x: tensor<6x2x8xf32>) -> tensor<1x6x2x1x8xf32> {
  %r = tcc.reshape %x : tensor<6x2x8xf32> -> tensor<1x6x2x8x1xf32>
  %t = tcc.transpose %r {perm = array<i64: 4, 1, 2, 0, 3>} : tensor<1x6x2x8x1xf32> -> tensor<1x6x2x1x8xf32>
  return %t : tensor<1x6x2x1x8xf32>
}

// -----

// A transpose that splits a reshape group (moves H away from B) stays.
// CHECK-LABEL: func.func @transpose_splits_group
// CHECK: tcc.reshape
// CHECK: tcc.transpose {{.+}} {perm = array<i64: 1, 0, 2, 3>}
func.func @transpose_splits_group(%x: tensor<6x5x4xf32>) -> tensor<3x2x5x4xf32> {
  %r = tcc.reshape %x : tensor<6x5x4xf32> -> tensor<2x3x5x4xf32>
  %t = tcc.transpose %r {perm = array<i64: 1, 0, 2, 3>} : tensor<2x3x5x4xf32> -> tensor<3x2x5x4xf32>
  return %t : tensor<3x2x5x4xf32>
}
