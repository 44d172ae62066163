// RUN: tcc-opt %s --split-input-file --tcc-test-print-fusion -o /dev/null 2>&1 | FileCheck %s

// FusionModel (passes/FusionModel.h), asked directly: per op whether it may
// join a fused region (classify), its own rows x cols domain, how it reads
// each operand (View: row shape and strides, column stride) and the layout
// of its results; then each producer-consumer pair of fusible ops as one
// region (regionDomain, regionIsLegal). tcc-fuse's clustering is not run.

// An element-wise chain with a bias (read through a broadcast: the same
// offset for every row, stride 1 along the columns) joins; the matmul is not
// fusible, so no pair reads it or is read by it. The softmax, a last-axis
// reduction of it (a row value, one per row) and the division by that sum
// (read per row, column stride 0) all run over 4x8 and join.

// CHECK-LABEL: fusion @chain{{$}}
// CHECK-NEXT:    %0 = tcc.add: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [0] col 1; constant, scale 0{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %1 = tcc.gelu: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %2 = tcc.matmul: not fusible{{$}}
// CHECK-NEXT:    %3 = tcc.softmax: row, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %4 = tcc.reduce_sum: row, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: row{{$}}
// CHECK-NEXT:    %5 = tcc.div: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [1] col 0; row, scale 1{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %1 = tcc.gelu reads %0 = tcc.add: joins, domain 4x8{{$}}
// CHECK-NEXT:    %4 = tcc.reduce_sum reads %3 = tcc.softmax: joins, domain 4x8{{$}}
// CHECK-NEXT:    %5 = tcc.div reads %3 = tcc.softmax: joins, domain 4x8{{$}}
// CHECK-NEXT:    %5 = tcc.div reads %4 = tcc.reduce_sum: joins, domain 4x8{{$}}
// CHECK-NOT:     tcc.matmul
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8xf32>
  %2 = tcc.matmul %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = tcc.softmax %2 {axis = 1 : i64} : tensor<4x8xf32>
  %4 = tcc.reduce_sum %3 {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %5 = tcc.div %3, %4 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// A 4x1 value computed on its own domain (4x1) joins a 4x8 region as a row
// value. The loss is a whole-region scalar: it joins the region computing its
// logits, but an op reading it cuts the region (the loss is known only once
// every row is done), while the op reading the logits themselves joins.

// CHECK-LABEL: fusion @loss{{$}}
// CHECK-NEXT:    %0 = tcc.exp: elementwise, domain 4x1{{$}}
// CHECK-NEXT:      operand 0: rows [4, 1] strides [1, 0] col 0; full, row, scale 1{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %1 = tcc.mul: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [1] col 0; row, scale 1{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %2 = tcc.softmax_cross_entropy: row, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [1] col 0; row, scale 1{{$}}
// CHECK-NEXT:      result 0: scalar{{$}}
// CHECK-NEXT:    %3 = tcc.mul: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [0] col 0; constant, scale 0{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %1 = tcc.mul reads %0 = tcc.exp: joins, domain 4x8{{$}}
// CHECK-NEXT:    %2 = tcc.softmax_cross_entropy reads %1 = tcc.mul: joins, domain 4x8{{$}}
// CHECK-NEXT:    %3 = tcc.mul reads %1 = tcc.mul: joins, domain 4x8{{$}}
// CHECK-NEXT:    %3 = tcc.mul reads %2 = tcc.softmax_cross_entropy: cut, domain 4x8: tcc.mul: reads a whole-region result{{$}}
func.func @loss(%x: tensor<4x8xf32>, %r: tensor<4x1xf32>, %labels: tensor<4xi64>) -> (tensor<f32>, tensor<4x8xf32>) {
  %0 = tcc.exp %r : tensor<4x1xf32>
  %1 = tcc.mul %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = tcc.softmax_cross_entropy %1, %labels : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %3 = tcc.mul %1, %2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %2, %3 : tensor<f32>, tensor<4x8xf32>
}

// -----

// The same row sums read two ways: %1 broadcasts the [4] sums along the last
// axis (one per column: a row value read through a broadcast, so the pair is
// cut); %3 reads them as [4, 1], one per row, and joins.

// CHECK-LABEL: fusion @row_broadcast{{$}}
// CHECK:         %1 = tcc.add: elementwise, domain 4x4{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [4] col 1; full, scale 4{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [0] col 1; constant, scale 0{{$}}
// CHECK:         %2 = tcc.reshape: elementwise, domain 4x1, data movement{{$}}
// CHECK:         %3 = tcc.sub: elementwise, domain 4x4{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [4] col 1; full, scale 4{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [1] col 0; row, scale 1{{$}}
// CHECK:         %1 = tcc.add reads %0 = tcc.reduce_sum: cut, domain 4x4: tcc.add: reads a row value through a broadcast{{$}}
// CHECK-NEXT:    %2 = tcc.reshape reads %0 = tcc.reduce_sum: joins, domain 4x4{{$}}
// CHECK-NEXT:    %3 = tcc.sub reads %2 = tcc.reshape: joins, domain 4x4{{$}}
func.func @row_broadcast(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = tcc.reduce_sum %x {axes = array<i64: 1>} : tensor<4x4xf32> -> tensor<4xf32>
  %1 = tcc.add %x, %0 : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %2 = tcc.reshape %0 : tensor<4xf32> -> tensor<4x1xf32>
  %3 = tcc.sub %x, %2 : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
  return %1, %3 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Not fusible: a softmax over a leading axis (not rows), a row op on bf16
// (row ops read f32 rows). A sum over every leading axis is a column sum
// (a bias gradient): one value per column, over the rows. An element-wise
// op on bf16 is fusible, but its only reader is that softmax: no pair at
// all.

// CHECK-LABEL: fusion @not_fusible{{$}}
// CHECK-NEXT:    %0 = tcc.softmax: not fusible{{$}}
// CHECK-NEXT:    %1 = tcc.reduce_sum: row, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: column{{$}}
// CHECK-NEXT:    %2 = tcc.add: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      operand 1: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %3 = tcc.softmax: not fusible{{$}}
// CHECK-NOT:     reads
func.func @not_fusible(%x: tensor<4x8xf32>, %h: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>) {
  %0 = tcc.softmax %x {axis = 0 : i64} : tensor<4x8xf32>
  %1 = tcc.reduce_sum %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %2 = tcc.add %h, %h : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %3 = tcc.softmax %2 {axis = 1 : i64} : tensor<4x8xbf16>
  return %0, %1, %3 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>
}

// -----

// Data movement. A slice with zero starts and unit steps of a vocabulary-
// padded [4, 10] input is a view of it (row r at r * 10, not native: scale
// 10). A zero pad of the last axis by 4 (<= 8 columns) runs over its
// operand's 4x8 and produces a padded result. A reshape of [4, 8] to [8, 4]
// cannot run over its own 8x4 domain (its operand's rows are 8 wide), and
// with the exp it would produce 8x4 values in a 4x8 region: cut.

// CHECK-LABEL: fusion @views{{$}}
// CHECK-NEXT:    %0 = tcc.slice: elementwise, domain 4x8, data movement{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [10] col 1; scale 10{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %1 = tcc.exp: elementwise, domain 4x8{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %2 = tcc.slice_grad: elementwise, domain 4x8, data movement, pad 4{{$}}
// CHECK-NEXT:      operand 0: rows [4] strides [8] col 1; full, scale 8{{$}}
// CHECK-NEXT:      result 0: padded{{$}}
// CHECK-NEXT:    %3 = tcc.reshape: elementwise, domain 8x4, data movement{{$}}
// CHECK-NEXT:      operand 0: does not fit{{$}}
// CHECK-NEXT:      result 0: full{{$}}
// CHECK-NEXT:    %1 = tcc.exp reads %0 = tcc.slice: joins, domain 4x8{{$}}
// CHECK-NEXT:    %2 = tcc.slice_grad reads %1 = tcc.exp: joins, domain 4x8{{$}}
// CHECK-NEXT:    %3 = tcc.reshape reads %1 = tcc.exp: cut, domain 4x8: tcc.reshape: result does not fit the domain{{$}}
func.func @views(%p: tensor<4x10xf32>) -> (tensor<4x8xf32>, tensor<4x12xf32>, tensor<8x4xf32>) {
  %0 = tcc.slice %p {sizes = array<i64: 4, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x10xf32> -> tensor<4x8xf32>
  %1 = tcc.exp %0 : tensor<4x8xf32>
  %2 = tcc.slice_grad %1 {shape = array<i64: 4, 12>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x12xf32>
  %3 = tcc.reshape %1 : tensor<4x8xf32> -> tensor<8x4xf32>
  return %1, %2, %3 : tensor<4x8xf32>, tensor<4x12xf32>, tensor<8x4xf32>
}
