// RUN: tcc-opt %s --canonicalize --split-input-file | FileCheck %s
// RUN: tcc-opt %s --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=CSE

// Narrowing casts move ahead of data movement, bias-gradient sums read
// through row permutations, zero pads move ahead of reshapes
// (dialects/tcc/TccPatternsCast.cpp), and narrow(widen(x)) folds.

// A layer norm's f32 output, transposed then cast down for a GEMM (the
// forward), and reshaped then cast down for the weight gradient (the
// backward): both casts become casts of %y, which CSE merges.
// CHECK-LABEL: func.func @cast_before_transpose_and_reshape
// CHECK-SAME: (%[[Y:.+]]: tensor<2x4x8xf32>)
// CHECK-DAG: %[[C1:.+]] = tcc.cast %[[Y]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-DAG: %[[C2:.+]] = tcc.cast %[[Y]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-DAG: tcc.transpose %[[C1]] {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xbf16> -> tensor<4x2x8xbf16>
// CHECK-DAG: tcc.reshape %[[C2]] : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
// CSE-LABEL: func.func @cast_before_transpose_and_reshape
// CSE-COUNT-1: tcc.cast
// CSE-NOT: tcc.cast
// CSE: return
func.func @cast_before_transpose_and_reshape(%y: tensor<2x4x8xf32>) -> (tensor<4x2x8xbf16>, tensor<8x8xbf16>) {
  %t = tcc.transpose %y {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %tc = tcc.cast %t : tensor<4x2x8xf32> -> tensor<4x2x8xbf16>
  %r = tcc.reshape %y : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %rc = tcc.cast %r : tensor<8x8xf32> -> tensor<8x8xbf16>
  return %tc, %rc : tensor<4x2x8xbf16>, tensor<8x8xbf16>
}

// -----

// A zero pad (tcc-pad-shapes) and a broadcast: the cast moves ahead; the pad
// of the 16-bit value is the same zeros.
// CHECK-LABEL: func.func @cast_before_pad_and_broadcast
// CHECK-SAME: (%[[G:.+]]: tensor<4x10xf32>, %[[B:.+]]: tensor<10xf32>)
// CHECK-DAG: %[[GC:.+]] = tcc.cast %[[G]] : tensor<4x10xf32> -> tensor<4x10xf16>
// CHECK-DAG: tcc.slice_grad %[[GC]] {shape = array<i64: 4, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x10xf16> -> tensor<4x16xf16>
// CHECK-DAG: %[[BC:.+]] = tcc.cast %[[B]] : tensor<10xf32> -> tensor<10xbf16>
// CHECK-DAG: tcc.broadcast_to %[[BC]] : tensor<10xbf16> -> tensor<4x10xbf16>
func.func @cast_before_pad_and_broadcast(%g: tensor<4x10xf32>, %b: tensor<10xf32>) -> (tensor<4x16xf16>, tensor<4x10xbf16>) {
  %p = tcc.slice_grad %g {shape = array<i64: 4, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x10xf32> -> tensor<4x16xf32>
  %pc = tcc.cast %p : tensor<4x16xf32> -> tensor<4x16xf16>
  %bb = tcc.broadcast_to %b : tensor<10xf32> -> tensor<4x10xf32>
  %bc = tcc.cast %bb : tensor<4x10xf32> -> tensor<4x10xbf16>
  return %pc, %bc : tensor<4x16xf16>, tensor<4x10xbf16>
}

// -----

// Left alone: a widening cast (moving it up would move more bytes), a
// transpose that another op also reads (it would be done twice), and casts
// of one transpose to two different types.
// CHECK-LABEL: func.func @not_moved
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xbf16>, %[[Y:.+]]: tensor<2x4xf32>, %[[Z:.+]]: tensor<2x4xf32>)
// CHECK: %[[T:.+]] = tcc.transpose %[[X]]
// CHECK: tcc.cast %[[T]] : tensor<4x2xbf16> -> tensor<4x2xf32>
// CHECK: %[[U:.+]] = tcc.transpose %[[Y]]
// CHECK: tcc.cast %[[U]] : tensor<4x2xf32> -> tensor<4x2xbf16>
// CHECK: %[[V:.+]] = tcc.transpose %[[Z]]
// CHECK-DAG: tcc.cast %[[V]] : tensor<4x2xf32> -> tensor<4x2xbf16>
// CHECK-DAG: tcc.cast %[[V]] : tensor<4x2xf32> -> tensor<4x2xf16>
func.func @not_moved(%x: tensor<2x4xbf16>, %y: tensor<2x4xf32>, %z: tensor<2x4xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xbf16>, tensor<4x2xf32>, tensor<4x2xbf16>, tensor<4x2xf16>) {
  %t = tcc.transpose %x {perm = array<i64: 1, 0>} : tensor<2x4xbf16> -> tensor<4x2xbf16>
  %tc = tcc.cast %t : tensor<4x2xbf16> -> tensor<4x2xf32>
  %u = tcc.transpose %y {perm = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  %uc = tcc.cast %u : tensor<4x2xf32> -> tensor<4x2xbf16>
  %v = tcc.transpose %z {perm = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  %vb = tcc.cast %v : tensor<4x2xf32> -> tensor<4x2xbf16>
  %vh = tcc.cast %v : tensor<4x2xf32> -> tensor<4x2xf16>
  return %tc, %uc, %u, %vb, %vh : tensor<4x2xf32>, tensor<4x2xbf16>, tensor<4x2xf32>, tensor<4x2xbf16>, tensor<4x2xf16>
}

// -----

// narrow(widen(x)) is x (bf16 and f16 widen to f32 exactly); widen(narrow)
// rounds, and bf16 -> f32 -> f16 is not the identity.
// CHECK-LABEL: func.func @narrow_widen
// CHECK-SAME: (%[[X:.+]]: tensor<4xbf16>, %[[Y:.+]]: tensor<4xf16>, %[[Z:.+]]: tensor<4xf32>)
// CHECK-DAG: %[[ZN:.+]] = tcc.cast %[[Z]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK-DAG: %[[ZW:.+]] = tcc.cast %[[ZN]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-DAG: %[[XW:.+]] = tcc.cast %[[X]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-DAG: %[[XH:.+]] = tcc.cast %[[XW]] : tensor<4xf32> -> tensor<4xf16>
// CHECK: return %[[X]], %[[Y]], %[[ZW]], %[[XH]]
func.func @narrow_widen(%x: tensor<4xbf16>, %y: tensor<4xf16>, %z: tensor<4xf32>)
    -> (tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>) {
  %xw = tcc.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %xn = tcc.cast %xw : tensor<4xf32> -> tensor<4xbf16>
  %yw = tcc.cast %y : tensor<4xf16> -> tensor<4xf32>
  %yn = tcc.cast %yw : tensor<4xf32> -> tensor<4xf16>
  %zn = tcc.cast %z : tensor<4xf32> -> tensor<4xbf16>
  %zw = tcc.cast %zn : tensor<4xbf16> -> tensor<4xf32>
  %xh = tcc.cast %xw : tensor<4xf32> -> tensor<4xf16>
  return %xn, %yn, %zw, %xh : tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>
}

// -----

// Bias-gradient sums over every leading axis read through a transpose that
// keeps the last axis and through a reshape that keeps it.
// CHECK-LABEL: func.func @sum_through_row_permutation
// CHECK-SAME: (%[[G:.+]]: tensor<4x2x8xf32>)
// CHECK-DAG: tcc.reduce_sum %[[G]] {axes = array<i64: 0, 1>} : tensor<4x2x8xf32> -> tensor<8xf32>
// CHECK-DAG: tcc.reduce_sum %[[G]] {axes = array<i64: 0, 1>} : tensor<4x2x8xf32> -> tensor<8xf32>
// CHECK-NOT: tcc.transpose
// CHECK-NOT: tcc.reshape
// CSE-LABEL: func.func @sum_through_row_permutation
// CSE-COUNT-1: tcc.reduce_sum
// CSE-NOT: tcc.reduce_sum
// CSE: return
func.func @sum_through_row_permutation(%g: tensor<4x2x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %t = tcc.transpose %g {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %s = tcc.reduce_sum %t {axes = array<i64: 0, 1>} : tensor<2x4x8xf32> -> tensor<8xf32>
  %r = tcc.reshape %g : tensor<4x2x8xf32> -> tensor<8x8xf32>
  %q = tcc.reduce_sum %r {axes = array<i64: 0>} : tensor<8x8xf32> -> tensor<8xf32>
  return %s, %q : tensor<8xf32>, tensor<8xf32>
}

// -----

// Left alone: a transpose that moves the last axis, a sum over some leading
// axes only, a sum with keepdims, a reshape that changes the last axis.
// CHECK-LABEL: func.func @sum_not_rewritten
// CHECK-COUNT-4: tcc.reduce_sum %{{[0-9]+}}
func.func @sum_not_rewritten(%g: tensor<4x2x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<1x1x8xf32>, tensor<16xf32>) {
  %t = tcc.transpose %g {perm = array<i64: 2, 1, 0>} : tensor<4x2x8xf32> -> tensor<8x2x4xf32>
  %a = tcc.reduce_sum %t {axes = array<i64: 0, 1>} : tensor<8x2x4xf32> -> tensor<4xf32>
  %u = tcc.transpose %g {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %b = tcc.reduce_sum %u {axes = array<i64: 0>} : tensor<2x4x8xf32> -> tensor<4x8xf32>
  %c = tcc.reduce_sum %u {axes = array<i64: 0, 1>, keepdims = true} : tensor<2x4x8xf32> -> tensor<1x1x8xf32>
  %r = tcc.reshape %g : tensor<4x2x8xf32> -> tensor<4x16xf32>
  %d = tcc.reduce_sum %r {axes = array<i64: 0>} : tensor<4x16xf32> -> tensor<16xf32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4x8xf32>, tensor<1x1x8xf32>, tensor<16xf32>
}

// -----

// A zero pad of the last axis moves ahead of a reshape that keeps it, so the
// pads of a gradient and of its reshape become one (CSE).
// CHECK-LABEL: func.func @pad_before_reshape
// CHECK-SAME: (%[[G:.+]]: tensor<2x4x10xf32>)
// CHECK: %[[P:.+]] = tcc.slice_grad %[[G]] {shape = array<i64: 2, 4, 16>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x10xf32> -> tensor<2x4x16xf32>
// CHECK: tcc.reshape %[[P]] : tensor<2x4x16xf32> -> tensor<8x16xf32>
// CSE-LABEL: func.func @pad_before_reshape
// CSE-COUNT-1: tcc.slice_grad
// CSE-NOT: tcc.slice_grad
// CSE: return
func.func @pad_before_reshape(%g: tensor<2x4x10xf32>) -> (tensor<8x16xf32>, tensor<2x4x16xf32>) {
  %r = tcc.reshape %g : tensor<2x4x10xf32> -> tensor<8x10xf32>
  %p = tcc.slice_grad %r {shape = array<i64: 8, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x10xf32> -> tensor<8x16xf32>
  %q = tcc.slice_grad %g {shape = array<i64: 2, 4, 16>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x10xf32> -> tensor<2x4x16xf32>
  return %p, %q : tensor<8x16xf32>, tensor<2x4x16xf32>
}

// -----

// Left alone: a pad of a leading axis, a pad with a non-zero start.
// CHECK-LABEL: func.func @pad_not_moved
// CHECK-COUNT-2: tcc.reshape %arg0
func.func @pad_not_moved(%g: tensor<2x4x10xf32>) -> (tensor<9x10xf32>, tensor<8x16xf32>) {
  %r = tcc.reshape %g : tensor<2x4x10xf32> -> tensor<8x10xf32>
  %p = tcc.slice_grad %r {shape = array<i64: 9, 10>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x10xf32> -> tensor<9x10xf32>
  %s = tcc.reshape %g : tensor<2x4x10xf32> -> tensor<8x10xf32>
  %q = tcc.slice_grad %s {shape = array<i64: 8, 16>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<8x10xf32> -> tensor<8x16xf32>
  return %p, %q : tensor<9x10xf32>, tensor<8x16xf32>
}

// -----

// q, k and v's gradients padded into their projection's and summed (as
// autodiff writes them): one concat along the padded axis, in window order.
// CHECK-LABEL: func.func @sum_of_pads_is_concat
// CHECK-SAME: (%[[Q:.+]]: tensor<4x2x8xf32>, %[[K:.+]]: tensor<4x2x8xf32>, %[[V:.+]]: tensor<4x2x8xf32>)
// CHECK-NEXT: %[[C:.+]] = tcc.concat %[[Q]], %[[K]], %[[V]] {axis = 2 : i64}
// CHECK-NEXT: return %[[C]]
func.func @sum_of_pads_is_concat(%q: tensor<4x2x8xf32>, %k: tensor<4x2x8xf32>, %v: tensor<4x2x8xf32>) -> tensor<4x2x24xf32> {
  %pv = tcc.slice_grad %v {shape = array<i64: 4, 2, 24>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<4x2x8xf32> -> tensor<4x2x24xf32>
  %pk = tcc.slice_grad %k {shape = array<i64: 4, 2, 24>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<4x2x8xf32> -> tensor<4x2x24xf32>
  %pq = tcc.slice_grad %q {shape = array<i64: 4, 2, 24>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x2x8xf32> -> tensor<4x2x24xf32>
  %a = tcc.add %pv, %pk : (tensor<4x2x24xf32>, tensor<4x2x24xf32>) -> tensor<4x2x24xf32>
  %s = tcc.add %a, %pq : (tensor<4x2x24xf32>, tensor<4x2x24xf32>) -> tensor<4x2x24xf32>
  return %s : tensor<4x2x24xf32>
}

// -----

// Left alone: windows with a gap, overlapping windows, a pad along two
// axes, and an inner sum that is used elsewhere too.
// CHECK-LABEL: func.func @sums_not_concat
// CHECK-NOT: tcc.concat
// CHECK: return
func.func @sums_not_concat(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<3x8xf32>)
    -> (tensor<4x20xf32>, tensor<4x12xf32>, tensor<4x16xf32>, tensor<4x24xf32>, tensor<4x24xf32>) {
  %a0 = tcc.slice_grad %a {shape = array<i64: 4, 20>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x20xf32>
  %b1 = tcc.slice_grad %b {shape = array<i64: 4, 20>, starts = array<i64: 0, 12>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x20xf32>
  %gap = tcc.add %a0, %b1 : (tensor<4x20xf32>, tensor<4x20xf32>) -> tensor<4x20xf32>
  %a2 = tcc.slice_grad %a {shape = array<i64: 4, 12>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x12xf32>
  %b3 = tcc.slice_grad %b {shape = array<i64: 4, 12>, starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x12xf32>
  %overlap = tcc.add %a2, %b3 : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<4x12xf32>
  %a4 = tcc.slice_grad %a {shape = array<i64: 4, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x16xf32>
  %c5 = tcc.slice_grad %c {shape = array<i64: 4, 16>, starts = array<i64: 1, 8>, steps = array<i64: 1, 1>} : tensor<3x8xf32> -> tensor<4x16xf32>
  %twoaxes = tcc.add %a4, %c5 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %a6 = tcc.slice_grad %a {shape = array<i64: 4, 24>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x24xf32>
  %b7 = tcc.slice_grad %b {shape = array<i64: 4, 24>, starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x24xf32>
  %c8 = tcc.slice_grad %b {shape = array<i64: 4, 24>, starts = array<i64: 0, 16>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x24xf32>
  %inner = tcc.add %a6, %b7 : (tensor<4x24xf32>, tensor<4x24xf32>) -> tensor<4x24xf32>
  %outer = tcc.add %inner, %c8 : (tensor<4x24xf32>, tensor<4x24xf32>) -> tensor<4x24xf32>
  return %gap, %overlap, %twoaxes, %inner, %outer : tensor<4x20xf32>, tensor<4x12xf32>, tensor<4x16xf32>, tensor<4x24xf32>, tensor<4x24xf32>
}
