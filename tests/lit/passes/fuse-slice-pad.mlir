// RUN: tcc-opt %s --tcc-fuse --split-input-file | FileCheck %s

// The loss region of a vocabulary padded by tcc-pad-shapes (60 -> 64), as
// mixed precision leaves it once the narrowing cast has moved ahead of the
// zero pad: the region reads the GEMM's padded logits through the slice (no
// sliced copy) and writes the padded bf16 gradient itself (no pad or cast
// kernel after it).
// CHECK-LABEL: func.func @loss_region
// CHECK:       %[[M:.+]] = tcc.matmul %arg0, %arg1
// CHECK-NOT:   tcc.slice
// CHECK:       %[[F:.+]]:2 = tcc.fused(%[[M]], %arg2, %arg3) : (tensor<2x4x64xbf16>, tensor<60xbf16>, tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x64xbf16>) {
// CHECK-NEXT:  ^bb0(%[[L:.+]]: tensor<2x4x64xbf16>, %[[B:.+]]: tensor<60xbf16>, %[[Y:.+]]: tensor<2x4xi64>):
// CHECK-NEXT:    %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[S:.+]] = tcc.slice %[[L]] {sizes = array<i64: 2, 4, 60>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x64xbf16> -> tensor<2x4x60xbf16>
// CHECK-NEXT:    %[[A:.+]] = tcc.add %[[S]], %[[B]]
// CHECK-NEXT:    %[[U:.+]] = tcc.cast %[[A]] : tensor<2x4x60xbf16> -> tensor<2x4x60xf32>
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[U]], %[[Y]]
// CHECK-NEXT:    %[[G:.+]] = tcc.softmax_cross_entropy_grad %[[ONE]], %[[U]], %[[Y]]
// CHECK-NEXT:    %[[D:.+]] = tcc.cast %[[G]] : tensor<2x4x60xf32> -> tensor<2x4x60xbf16>
// CHECK-NEXT:    %[[P:.+]] = tcc.slice_grad %[[D]] {shape = array<i64: 2, 4, 64>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x60xbf16> -> tensor<2x4x64xbf16>
// CHECK-NEXT:    tcc.yield %[[LOSS]], %[[P]] : tensor<f32>, tensor<2x4x64xbf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[F]]#0, %[[F]]#1
func.func @loss_region(%h: tensor<2x4x16xbf16>, %w: tensor<16x64xbf16>, %bias: tensor<60xbf16>, %labels: tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x64xbf16>) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %lp = tcc.matmul %h, %w : (tensor<2x4x16xbf16>, tensor<16x64xbf16>) -> tensor<2x4x64xbf16>
  %l = tcc.slice %lp {starts = array<i64: 0, 0, 0>, sizes = array<i64: 2, 4, 60>, steps = array<i64: 1, 1, 1>} : tensor<2x4x64xbf16> -> tensor<2x4x60xbf16>
  %0 = tcc.add %l, %bias : (tensor<2x4x60xbf16>, tensor<60xbf16>) -> tensor<2x4x60xbf16>
  %1 = tcc.cast %0 : tensor<2x4x60xbf16> -> tensor<2x4x60xf32>
  %loss = tcc.softmax_cross_entropy %1, %labels : (tensor<2x4x60xf32>, tensor<2x4xi64>) -> tensor<f32>
  %g = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<2x4x60xf32>, tensor<2x4xi64>) -> tensor<2x4x60xf32>
  %g16 = tcc.cast %g : tensor<2x4x60xf32> -> tensor<2x4x60xbf16>
  %gp = tcc.slice_grad %g16 {shape = array<i64: 2, 4, 64>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x60xbf16> -> tensor<2x4x64xbf16>
  return %loss, %gp : tensor<f32>, tensor<2x4x64xbf16>
}

// -----

// The same loss in a training step (a `loss` result) with the vocabulary
// bias in the GEMM's epilogue (tcc-gemm-epilogue): the widening of the
// sliced logits is not recomputed for the loss's own gradient, which shares
// the loss's region: one kernel reads the padded logits once for the loss
// and the padded gradient.
// CHECK-LABEL: func.func @loss_region_in_step
// CHECK:       %[[M:.+]] = tcc.matmul_epilogue %arg0, %arg1 bias %arg2
// CHECK-NEXT:  %[[F:.+]]:2 = tcc.fused(%[[M]], %arg3) : (tensor<2x4x64xbf16>, tensor<2x4xi64>) -> (tensor<f32>, tensor<2x4x64xbf16>) {
// CHECK:         tcc.slice
// CHECK-NEXT:    tcc.cast
// CHECK-NEXT:    tcc.softmax_cross_entropy
// CHECK-NEXT:    tcc.softmax_cross_entropy_grad
// CHECK-NOT:     tcc.cast %{{.+}} : tensor<2x4x60xbf16> -> tensor<2x4x60xf32>
// CHECK:         tcc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[F]]#0, %[[F]]#1
func.func @loss_region_in_step(%h: tensor<2x4x16xbf16>, %w: tensor<16x64xbf16>, %bias: tensor<64xbf16>, %labels: tensor<2x4xi64>) -> (tensor<f32> {tcc.kind = "loss"}, tensor<2x4x64xbf16>) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %lp = tcc.matmul_epilogue %h, %w bias %bias {epilogue = "bias"} : (tensor<2x4x16xbf16>, tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<2x4x64xbf16>
  %l = tcc.slice %lp {starts = array<i64: 0, 0, 0>, sizes = array<i64: 2, 4, 60>, steps = array<i64: 1, 1, 1>} : tensor<2x4x64xbf16> -> tensor<2x4x60xbf16>
  %1 = tcc.cast %l : tensor<2x4x60xbf16> -> tensor<2x4x60xf32>
  %loss = tcc.softmax_cross_entropy %1, %labels : (tensor<2x4x60xf32>, tensor<2x4xi64>) -> tensor<f32>
  %g = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<2x4x60xf32>, tensor<2x4xi64>) -> tensor<2x4x60xf32>
  %g16 = tcc.cast %g : tensor<2x4x60xf32> -> tensor<2x4x60xbf16>
  %gp = tcc.slice_grad %g16 {shape = array<i64: 2, 4, 64>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x60xbf16> -> tensor<2x4x64xbf16>
  return %loss, %gp : tensor<f32>, tensor<2x4x64xbf16>
}

// -----

// A softmax over a slice that keeps every other row of a leading axis (steps
// 2 and 1): the slice is a strided view of the input.
// CHECK-LABEL: func.func @strided_rows
// CHECK:       tcc.fused(%arg0) : (tensor<6x8x32xf32>) -> tensor<3x8x20xf32> {
// CHECK:         tcc.slice
// CHECK:         tcc.softmax
// CHECK:         tcc.yield
// CHECK-NOT:   tcc.slice
func.func @strided_rows(%x: tensor<6x8x32xf32>) -> tensor<3x8x20xf32> {
  %0 = tcc.slice %x {starts = array<i64: 0, 0, 0>, sizes = array<i64: 3, 8, 20>, steps = array<i64: 2, 1, 1>} : tensor<6x8x32xf32> -> tensor<3x8x20xf32>
  %1 = tcc.softmax %0 {axis = 2 : i64} : tensor<3x8x20xf32>
  return %1 : tensor<3x8x20xf32>
}

// -----

// An element-wise region writes its bf16 value padded (and unpadded, for
// another user).
// CHECK-LABEL: func.func @pad_elementwise
// CHECK:       %[[F:.+]]:2 = tcc.fused(%arg0) : (tensor<4x30xf32>) -> (tensor<4x30xbf16>, tensor<4x32xbf16>) {
// CHECK:         tcc.tanh
// CHECK:         %[[C:.+]] = tcc.cast %{{.+}} : tensor<4x30xf32> -> tensor<4x30xbf16>
// CHECK:         %[[P:.+]] = tcc.slice_grad %[[C]]
// CHECK:         tcc.yield %[[C]], %[[P]]
// CHECK-NOT:   tcc.slice_grad
// CHECK:       return %[[F]]#1, %[[F]]#0
func.func @pad_elementwise(%x: tensor<4x30xf32>) -> (tensor<4x32xbf16>, tensor<4x30xbf16>) {
  %0 = tcc.tanh %x : tensor<4x30xf32>
  %1 = tcc.cast %0 : tensor<4x30xf32> -> tensor<4x30xbf16>
  %2 = tcc.slice_grad %1 {shape = array<i64: 4, 32>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x30xbf16> -> tensor<4x32xbf16>
  return %2, %1 : tensor<4x32xbf16>, tensor<4x30xbf16>
}

// -----

// Slices that are not views stay slice kernels: a non-zero start, a
// negative step, a step along the last axis.
// CHECK-LABEL: func.func @slices_not_views
// CHECK:       %[[A:.+]] = tcc.slice %arg0 {sizes = array<i64: 4, 30>, starts = array<i64: 0, 2>
// CHECK:       %[[B:.+]] = tcc.slice %arg0 {sizes = array<i64: 4, 30>, starts = array<i64: 3, 31>, steps = array<i64: -1, -1>}
// CHECK:       %[[C:.+]] = tcc.slice %arg1 {sizes = array<i64: 4, 30>, starts = array<i64: 0, 0>, steps = array<i64: 1, 2>}
// CHECK:       tcc.fused(%[[A]], %[[B]], %[[C]]) : (tensor<4x30xf32>, tensor<4x30xf32>, tensor<4x30xf32>) -> tensor<4x30xf32> {
// CHECK-NOT:     tcc.slice
// CHECK:         tcc.yield
func.func @slices_not_views(%x: tensor<4x32xf32>, %y: tensor<4x60xf32>) -> tensor<4x30xf32> {
  %a = tcc.slice %x {starts = array<i64: 0, 2>, sizes = array<i64: 4, 30>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x30xf32>
  %b = tcc.slice %x {starts = array<i64: 3, 31>, sizes = array<i64: 4, 30>, steps = array<i64: -1, -1>} : tensor<4x32xf32> -> tensor<4x30xf32>
  %c = tcc.slice %y {starts = array<i64: 0, 0>, sizes = array<i64: 4, 30>, steps = array<i64: 1, 2>} : tensor<4x60xf32> -> tensor<4x30xf32>
  %0 = tcc.add %a, %b : (tensor<4x30xf32>, tensor<4x30xf32>) -> tensor<4x30xf32>
  %1 = tcc.mul %0, %c : (tensor<4x30xf32>, tensor<4x30xf32>) -> tensor<4x30xf32>
  return %1 : tensor<4x30xf32>
}

// -----

// A slice of a value computed inside a region would read it through a
// broadcast, so the slice starts the region of its consumer instead, which
// reads the first region's output through the view.
// CHECK-LABEL: func.func @slice_of_region_value
// CHECK:       %[[E:.+]] = tcc.fused(%arg0) : (tensor<4x32xf32>) -> tensor<4x32xf32> {
// CHECK:         tcc.exp
// CHECK-NOT:     tcc.slice
// CHECK:         tcc.yield
// CHECK:       tcc.fused(%[[E]]) : (tensor<4x32xf32>) -> tensor<4x30xf32> {
// CHECK:         tcc.slice
// CHECK:         tcc.tanh
func.func @slice_of_region_value(%x: tensor<4x32xf32>) -> tensor<4x30xf32> {
  %0 = tcc.exp %x : tensor<4x32xf32>
  %1 = tcc.slice %0 {starts = array<i64: 0, 0>, sizes = array<i64: 4, 30>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x30xf32>
  %2 = tcc.tanh %1 : tensor<4x30xf32>
  return %2 : tensor<4x30xf32>
}

// -----

// Pads that are not last-axis pads of at most the row's width stay
// slice_grad kernels: a leading axis, a last axis widened more than twice,
// a pad with a non-zero start.
// CHECK-LABEL: func.func @pads_not_fused
// CHECK:       %[[F:.+]] = tcc.fused(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NOT:     tcc.slice_grad
// CHECK:         tcc.yield
// CHECK:       tcc.slice_grad %[[F]] {shape = array<i64: 6, 8>
// CHECK:       tcc.slice_grad %[[F]] {shape = array<i64: 4, 20>
// CHECK:       tcc.slice_grad %[[F]] {shape = array<i64: 4, 10>, starts = array<i64: 0, 2>
func.func @pads_not_fused(%x: tensor<4x8xf32>) -> (tensor<6x8xf32>, tensor<4x20xf32>, tensor<4x10xf32>) {
  %0 = tcc.exp %x : tensor<4x8xf32>
  %1 = tcc.slice_grad %0 {shape = array<i64: 6, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<6x8xf32>
  %2 = tcc.slice_grad %0 {shape = array<i64: 4, 20>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x20xf32>
  %3 = tcc.slice_grad %0 {shape = array<i64: 4, 10>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x10xf32>
  return %1, %2, %3 : tensor<6x8xf32>, tensor<4x20xf32>, tensor<4x10xf32>
}

// -----

// A padded value may only leave its region: the slice that reads it back
// (it would fit the domain) and the op after it form the next region.
// CHECK-LABEL: func.func @padded_read_inside
// CHECK:       %[[P:.+]] = tcc.fused(%arg0) : (tensor<4x30xf32>) -> tensor<4x32xf32> {
// CHECK:         tcc.tanh
// CHECK:         %[[G:.+]] = tcc.slice_grad
// CHECK-NEXT:    tcc.yield %[[G]]
// CHECK:       tcc.fused(%[[P]]) : (tensor<4x32xf32>) -> tensor<4x30xf32> {
// CHECK:         tcc.slice
// CHECK:         tcc.exp
func.func @padded_read_inside(%x: tensor<4x30xf32>) -> tensor<4x30xf32> {
  %0 = tcc.tanh %x : tensor<4x30xf32>
  %1 = tcc.slice_grad %0 {shape = array<i64: 4, 32>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x30xf32> -> tensor<4x32xf32>
  %2 = tcc.slice %1 {starts = array<i64: 0, 0>, sizes = array<i64: 4, 30>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x30xf32>
  %3 = tcc.exp %2 : tensor<4x30xf32>
  return %3 : tensor<4x30xf32>
}

// -----

// Data movement alone is no generated kernel: a lone slice, a lone pad, a
// slice cast and padded (copy and cast kernels do as well).
// CHECK-LABEL: func.func @data_movement_alone
// CHECK-NOT:   tcc.fused
// CHECK:       tcc.slice %arg0
// CHECK:       tcc.slice_grad %arg1
// CHECK:       tcc.slice %arg2
// CHECK:       tcc.cast
// CHECK:       tcc.slice_grad
// CHECK-NOT:   tcc.fused
func.func @data_movement_alone(%x: tensor<4x32xf32>, %y: tensor<4x30xf32>, %z: tensor<4x32xf32>) -> (tensor<4x30xf32>, tensor<4x32xf32>, tensor<4x32xbf16>) {
  %0 = tcc.slice %x {starts = array<i64: 0, 0>, sizes = array<i64: 4, 30>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x30xf32>
  %1 = tcc.slice_grad %y {shape = array<i64: 4, 32>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x30xf32> -> tensor<4x32xf32>
  %2 = tcc.slice %z {starts = array<i64: 0, 0>, sizes = array<i64: 4, 30>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x30xf32>
  %3 = tcc.cast %2 : tensor<4x30xf32> -> tensor<4x30xbf16>
  %4 = tcc.slice_grad %3 {shape = array<i64: 4, 32>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x30xbf16> -> tensor<4x32xbf16>
  return %0, %1, %4 : tensor<4x30xf32>, tensor<4x32xf32>, tensor<4x32xbf16>
}
