// RUN: tcc-opt %s --tcc-sink-transposes --split-input-file | FileCheck %s

// A transpose that keeps the last axis sinks through a GEMM with a 2-D
// weight and a bias add to the transpose back, and both cancel.
// CHECK-LABEL: func.func @cancel_through_rows
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[W:[^:]+]]: tensor<6x8xf32>, %[[B:[^:]+]]: tensor<6xf32>)
// CHECK-NEXT: %[[M:.+]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT: %[[A:.+]] = tcc.add %[[M]], %[[B]] : (tensor<2x4x6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT: return %[[A]]
func.func @cancel_through_rows(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>) -> tensor<2x4x6xf32> {
  %t = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %m = tcc.matmul %t, %w {transpose_rhs = true} : (tensor<4x2x8xf32>, tensor<6x8xf32>) -> tensor<4x2x6xf32>
  %a = tcc.add %m, %b : (tensor<4x2x6xf32>, tensor<6xf32>) -> tensor<4x2x6xf32>
  %r = tcc.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<4x2x6xf32> -> tensor<2x4x6xf32>
  return %r : tensor<2x4x6xf32>
}

// -----

// nn.MultiheadAttention with batch_first, after tcc-fuse-attention (B 2,
// T 4, E 8, H 2, D 4): the block input goes to [T, B, E], the projection
// is sliced into q, k, v and split into [T, B*H, D] heads that the
// attention reads sequence-major; its [T, B*H, D] result becomes [T*B, E]
// rows for the output projection, then [T, B, E] and back to [B, T, E].
// Afterwards nothing is transposed: the projections work on [B, T, E] and
// the attention reads [B, T, H, D] (entries (b, h) as before, lse [B, H, T]).
// CHECK-LABEL: func.func @mha_batch_first
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[WI:[^:]+]]: tensor<24x8xf32>, %[[BI:[^:]+]]: tensor<24xf32>, %[[WO:[^:]+]]: tensor<8x8xf32>, %[[BO:[^:]+]]: tensor<8xf32>)
// CHECK-NOT: tcc.transpose
// CHECK: %[[P:.+]] = tcc.matmul %[[X]], %[[WI]] {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<24x8xf32>) -> tensor<2x4x24xf32>
// CHECK: %[[PB:.+]] = tcc.add %[[BI]], %[[P]]
// CHECK: %[[Q:.+]] = tcc.slice %[[PB]] {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}
// CHECK: %[[K:.+]] = tcc.slice %[[PB]] {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>}
// CHECK: %[[V:.+]] = tcc.slice %[[PB]] {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>}
// CHECK-DAG: %[[QH:.+]] = tcc.reshape %[[Q]] : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
// CHECK-DAG: %[[KH:.+]] = tcc.reshape %[[K]] : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
// CHECK-DAG: %[[VH:.+]] = tcc.reshape %[[V]] : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
// CHECK: %[[O:.+]], %[[L:.+]] = tcc.attention %[[QH]], %[[KH]], %[[VH]] {causal = true, scale = 5.000000e-01 : f64, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x2x4xf32>)
// CHECK: %[[OR:.+]] = tcc.reshape %[[O]] : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
// CHECK: %[[LR:.+]] = tcc.reshape %[[L]] : tensor<2x2x4xf32> -> tensor<4x4xf32>
// CHECK: %[[Y:.+]] = tcc.matmul %[[OR]], %[[WO]] {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[YB:.+]] = tcc.add %[[Y]], %[[BO]] : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: return %[[YB]], %[[LR]]
func.func @mha_batch_first(%x: tensor<2x4x8xf32>, %wi: tensor<24x8xf32>, %bi: tensor<24xf32>,
                           %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<4x4xf32>) {
  %xt = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %p = tcc.matmul %xt, %wi {transpose_rhs = true} : (tensor<4x2x8xf32>, tensor<24x8xf32>) -> tensor<4x2x24xf32>
  %pb = tcc.add %bi, %p : (tensor<24xf32>, tensor<4x2x24xf32>) -> tensor<4x2x24xf32>
  %q = tcc.slice %pb {sizes = array<i64: 4, 2, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x2x24xf32> -> tensor<4x2x8xf32>
  %k = tcc.slice %pb {sizes = array<i64: 4, 2, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<4x2x24xf32> -> tensor<4x2x8xf32>
  %v = tcc.slice %pb {sizes = array<i64: 4, 2, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<4x2x24xf32> -> tensor<4x2x8xf32>
  %qh = tcc.reshape %q : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %kh = tcc.reshape %k : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %vh = tcc.reshape %v : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %o, %lse = tcc.attention %qh, %kh, %vh {causal = true, scale = 0.5 : f64, seq_major = true} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4xf32>)
  %rows = tcc.reshape %o : tensor<4x4x4xf32> -> tensor<8x8xf32>
  %y = tcc.matmul %rows, %wo {transpose_rhs = true} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %yb = tcc.add %y, %bo : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %y3 = tcc.reshape %yb : tensor<8x8xf32> -> tensor<4x2x8xf32>
  %r = tcc.transpose %y3 {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  return %r, %lse : tensor<2x4x8xf32>, tensor<4x4xf32>
}

// -----

// Left alone when the transpose would not cancel: sinking it below the
// GEMM would only move (and here widen) the copy.
// CHECK-LABEL: func.func @no_inverse
// CHECK-NEXT: tcc.transpose
// CHECK-NEXT: tcc.matmul
// CHECK-NEXT: return
func.func @no_inverse(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x2x16xf32> {
  %t = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %m = tcc.matmul %t, %w : (tensor<4x2x8xf32>, tensor<8x16xf32>) -> tensor<4x2x16xf32>
  return %m : tensor<4x2x16xf32>
}

// -----

// Left alone: a transpose with a user that keeps it (here returned), an
// add whose other operand varies along a leading axis. Transposes that meet
// their inverse directly still cancel (ComposeTransposes), also of the
// last axis.
// CHECK-LABEL: func.func @not_row_local
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[C:[^:]+]]: tensor<4x1x8xf32>)
// CHECK-NEXT: %[[T:.+]] = tcc.transpose %[[X]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[U:.+]] = tcc.transpose %[[X]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[A:.+]] = tcc.add %[[U]], %[[C]]
// CHECK-NEXT: %[[AB:.+]] = tcc.transpose %[[A]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: return %[[AB]], %[[T]], %[[X]], %[[X]]
func.func @not_row_local(%x: tensor<2x4x8xf32>, %c: tensor<4x1x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x2x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %t = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %back = tcc.transpose %t {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %u = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %a = tcc.add %u, %c : (tensor<4x2x8xf32>, tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %ab = tcc.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %l = tcc.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %lb = tcc.transpose %l {perm = array<i64: 0, 2, 1>} : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  return %ab, %t, %lb, %back : tensor<2x4x8xf32>, tensor<4x2x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A mask per batch entry (here [B*H, Tq, Tk], a key-padding mask) keeps the
// [T, B*H, D] attention, so the input's transpose would only move below the
// projection and triple: it stays where it is.
// CHECK-LABEL: func.func @mha_entry_mask
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK-NEXT: %[[T:.+]] = tcc.transpose %[[X]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: tcc.matmul %[[T]]
// CHECK-NOT: tcc.transpose
// CHECK: tcc.attention {{.+}} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>)
func.func @mha_entry_mask(%x: tensor<2x4x8xf32>, %wi: tensor<24x8xf32>, %m: tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
  %xt = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %p = tcc.matmul %xt, %wi {transpose_rhs = true} : (tensor<4x2x8xf32>, tensor<24x8xf32>) -> tensor<4x2x24xf32>
  %q = tcc.slice %p {sizes = array<i64: 4, 2, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x2x24xf32> -> tensor<4x2x8xf32>
  %k = tcc.slice %p {sizes = array<i64: 4, 2, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<4x2x24xf32> -> tensor<4x2x8xf32>
  %v = tcc.slice %p {sizes = array<i64: 4, 2, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<4x2x24xf32> -> tensor<4x2x8xf32>
  %qh = tcc.reshape %q : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %kh = tcc.reshape %k : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %vh = tcc.reshape %v : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %o, %lse = tcc.attention %qh, %kh, %vh, %m {scale = 0.5 : f64, seq_major = true} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4xf32>)
  return %o : tensor<4x4x4xf32>
}

// -----

// A regrouping of rows ([T, B, E] -> [T*B, E]) moves below a GEMM, a bias
// add and a last-axis slice (rebuilt for the rank it then has) to the
// reshape back, which folds; the transpose above it then cancels.
// CHECK-LABEL: func.func @regrouped_rows
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[W:[^:]+]]: tensor<8x12xf32>, %[[B:[^:]+]]: tensor<1x12xf32>)
// CHECK-NEXT: %[[M:.+]] = tcc.matmul %[[X]], %[[W]] : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
// CHECK-NEXT: %[[A:.+]] = tcc.add %[[M]], %[[B]] : (tensor<2x4x12xf32>, tensor<1x12xf32>) -> tensor<2x4x12xf32>
// CHECK-NEXT: %[[S:.+]] = tcc.slice %[[A]] {sizes = array<i64: 2, 4, 6>, starts = array<i64: 0, 0, 3>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x6xf32>
// CHECK-NEXT: return %[[S]]
func.func @regrouped_rows(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>, %b: tensor<1x12xf32>) -> tensor<2x4x6xf32> {
  %t = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %r = tcc.reshape %t : tensor<4x2x8xf32> -> tensor<8x8xf32>
  %m = tcc.matmul %r, %w : (tensor<8x8xf32>, tensor<8x12xf32>) -> tensor<8x12xf32>
  %a = tcc.add %m, %b : (tensor<8x12xf32>, tensor<1x12xf32>) -> tensor<8x12xf32>
  %s = tcc.slice %a {sizes = array<i64: 8, 6>, starts = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<8x12xf32> -> tensor<8x6xf32>
  %back = tcc.reshape %s : tensor<8x6xf32> -> tensor<4x2x6xf32>
  %y = tcc.transpose %back {perm = array<i64: 1, 0, 2>} : tensor<4x2x6xf32> -> tensor<2x4x6xf32>
  return %y : tensor<2x4x6xf32>
}

// -----

// Splitting rows ([8, E] -> [4, 2, E]) does not move below an add whose
// bias has more axes than the rows before the split.
// CHECK-LABEL: func.func @split_rows_bias_rank
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.add
func.func @split_rows_bias_rank(%x: tensor<8x6xf32>, %b: tensor<1x1x6xf32>) -> tensor<8x6xf32> {
  %r = tcc.reshape %x : tensor<8x6xf32> -> tensor<4x2x6xf32>
  %a = tcc.add %r, %b : (tensor<4x2x6xf32>, tensor<1x1x6xf32>) -> tensor<4x2x6xf32>
  %back = tcc.reshape %a : tensor<4x2x6xf32> -> tensor<8x6xf32>
  return %back : tensor<8x6xf32>
}
