// RUN: tcc-opt %s --tcc-pad-shapes=multiple=8 --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-pad-shapes=multiple=0 --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tcc-opt %s --tcc-pad-shapes="multiple=0 vocab-multiple=64 vocab-threshold=1000" --split-input-file | FileCheck %s --check-prefix=VOCAB
// RUN: not tcc-opt %s --tcc-pad-shapes=multiple=-8 --split-input-file 2>&1 | FileCheck %s --check-prefix=NEG

// M, K and N all misaligned: both operands padded with zeros (slice_grad at
// the origin), the product sliced back to the original window.

// CHECK-LABEL: func.func @mkn
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<5x10xf32>, %[[W:[a-z0-9]+]]: tensor<10x3xf32>
// CHECK-DAG:     %[[XP:.+]] = tcc.slice_grad %[[X]] {shape = array<i64: 8, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<5x10xf32> -> tensor<8x16xf32>
// CHECK-DAG:     %[[WP:.+]] = tcc.slice_grad %[[W]] {shape = array<i64: 16, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<10x3xf32> -> tensor<16x8xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[XP]], %[[WP]] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK:         %[[Y:.+]] = tcc.slice %[[P]] {sizes = array<i64: 5, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x8xf32> -> tensor<5x3xf32>
// CHECK:         return %[[Y]]
// OFF-LABEL:   func.func @mkn
// OFF-NOT:     tcc.slice
// OFF:         tcc.matmul %{{.+}}, %{{.+}} : (tensor<5x10xf32>, tensor<10x3xf32>) -> tensor<5x3xf32>
// NEG: error: tcc-pad-shapes: multiple (-8), vocab-multiple (0) and vocab-threshold (8192) must be >= 0
func.func @mkn(%x: tensor<5x10xf32>, %w: tensor<10x3xf32>) -> tensor<5x3xf32> {
  %y = tcc.matmul %x, %w : (tensor<5x10xf32>, tensor<10x3xf32>) -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}

// -----

// Aligned dimensions are left alone.

// CHECK-LABEL: func.func @aligned
// CHECK-NOT:     tcc.slice
// CHECK:         tcc.matmul %{{.+}}, %{{.+}} : (tensor<8x16xf32>, tensor<16x24xf32>) -> tensor<8x24xf32>
// CHECK-NOT:     tcc.slice
func.func @aligned(%x: tensor<8x16xf32>, %w: tensor<16x24xf32>) -> tensor<8x24xf32> {
  %y = tcc.matmul %x, %w : (tensor<8x16xf32>, tensor<16x24xf32>) -> tensor<8x24xf32>
  return %y : tensor<8x24xf32>
}

// -----

// Only K misaligned: operands padded along K, no slice of the result.

// CHECK-LABEL: func.func @only_k
// CHECK-DAG:     %[[XP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 8, 16>, {{.+}}} : tensor<8x12xf32> -> tensor<8x16xf32>
// CHECK-DAG:     %[[WP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 16, 8>, {{.+}}} : tensor<12x8xf32> -> tensor<16x8xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[XP]], %[[WP]] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    return %[[P]]
func.func @only_k(%x: tensor<8x12xf32>, %w: tensor<12x8xf32>) -> tensor<8x8xf32> {
  %y = tcc.matmul %x, %w : (tensor<8x12xf32>, tensor<12x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// Only N misaligned: rhs padded along N, lhs untouched, result sliced.

// CHECK-LABEL: func.func @only_n
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x16xf32>
// CHECK:         %[[WP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 16, 16>, {{.+}}} : tensor<16x10xf32> -> tensor<16x16xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[X]], %[[WP]] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
// CHECK:         tcc.slice %[[P]] {sizes = array<i64: 8, 10>, {{.+}}} : tensor<8x16xf32> -> tensor<8x10xf32>
func.func @only_n(%x: tensor<8x16xf32>, %w: tensor<16x10xf32>) -> tensor<8x10xf32> {
  %y = tcc.matmul %x, %w : (tensor<8x16xf32>, tensor<16x10xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}

// -----

// Transpose flags: lhs is [K, M] and rhs [N, K]; M=3, K=10, N=5.

// CHECK-LABEL: func.func @transposed
// CHECK-DAG:     %[[AP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 16, 8>, {{.+}}} : tensor<10x3xf32> -> tensor<16x8xf32>
// CHECK-DAG:     %[[BP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 8, 16>, {{.+}}} : tensor<5x10xf32> -> tensor<8x16xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[AP]], %[[BP]] {transpose_lhs = true, transpose_rhs = true} : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
// CHECK:         tcc.slice %[[P]] {sizes = array<i64: 3, 5>, {{.+}}} : tensor<8x8xf32> -> tensor<3x5xf32>
func.func @transposed(%a: tensor<10x3xf32>, %b: tensor<5x10xf32>) -> tensor<3x5xf32> {
  %y = tcc.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<10x3xf32>, tensor<5x10xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// Batched, with a broadcast rhs: batch dimensions are never padded.

// CHECK-LABEL: func.func @batched
// CHECK-DAG:     %[[AP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 2, 3, 8, 8>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<2x3x6x4xf32> -> tensor<2x3x8x8xf32>
// CHECK-DAG:     %[[BP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 8, 8>, {{.+}}} : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[AP]], %[[BP]] : (tensor<2x3x8x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8x8xf32>
// CHECK:         tcc.slice %[[P]] {sizes = array<i64: 2, 3, 6, 8>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<2x3x8x8xf32> -> tensor<2x3x6x8xf32>
func.func @batched(%a: tensor<2x3x6x4xf32>, %b: tensor<4x8xf32>) -> tensor<2x3x6x8xf32> {
  %y = tcc.matmul %a, %b : (tensor<2x3x6x4xf32>, tensor<4x8xf32>) -> tensor<2x3x6x8xf32>
  return %y : tensor<2x3x6x8xf32>
}

// -----

// The same with 4 x 6 = 24 rows: one GEMM with an aligned M of 24, so only
// K is padded and there is no slice.

// CHECK-LABEL: func.func @batched_rows_aligned
// CHECK-DAG:     %[[AP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 4, 6, 8>, {{.+}}} : tensor<4x6x4xf32> -> tensor<4x6x8xf32>
// CHECK-DAG:     %[[BP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 8, 8>, {{.+}}} : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[AP]], %[[BP]] : (tensor<4x6x8xf32>, tensor<8x8xf32>) -> tensor<4x6x8xf32>
// CHECK-NEXT:    return %[[P]]
func.func @batched_rows_aligned(%a: tensor<4x6x4xf32>, %b: tensor<4x8xf32>) -> tensor<4x6x8xf32> {
  %y = tcc.matmul %a, %b : (tensor<4x6x4xf32>, tensor<4x8xf32>) -> tensor<4x6x8xf32>
  return %y : tensor<4x6x8xf32>
}

// -----

// A weight read by the forward and the backward is padded once; the padded
// product feeds the next matmul directly (its padding is already zero), so
// there is no slice -> pad chain.

// CHECK-LABEL: func.func @shared
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x10xf32>, %[[W:[a-z0-9]+]]: tensor<10x3xf32>
// CHECK:         %[[WP:.+]] = tcc.slice_grad %[[W]] {{.+}} -> tensor<16x8xf32>
// CHECK-NOT:     tcc.slice_grad %[[W]]
// CHECK:         %[[XP:.+]] = tcc.slice_grad %[[X]] {{.+}} -> tensor<8x16xf32>
// CHECK:         %[[P:.+]] = tcc.matmul %[[XP]], %[[WP]] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK:         %[[Y:.+]] = tcc.slice %[[P]]
// CHECK-NOT:     tcc.slice_grad %[[Y]]
// CHECK:         %[[Z:.+]] = tcc.matmul %[[P]], %[[WP]] {transpose_rhs = true} : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
// CHECK:         tcc.slice %[[Z]] {sizes = array<i64: 8, 10>
func.func @shared(%x: tensor<8x10xf32>, %w: tensor<10x3xf32>) -> (tensor<8x3xf32>, tensor<8x10xf32>) {
  %y = tcc.matmul %x, %w : (tensor<8x10xf32>, tensor<10x3xf32>) -> tensor<8x3xf32>
  %z = tcc.matmul %y, %w {transpose_rhs = true} : (tensor<8x3xf32>, tensor<10x3xf32>) -> tensor<8x10xf32>
  return %y, %z : tensor<8x3xf32>, tensor<8x10xf32>
}

// -----

// Vocabulary-sized dimensions (at least vocab-threshold) take vocab-multiple;
// with multiple=0 the small ones stay.

// VOCAB-LABEL: func.func @vocab
// VOCAB:         %[[WP:.+]] = tcc.slice_grad %{{.+}} {shape = array<i64: 24, 1024>, {{.+}}} : tensor<24x1000xf32> -> tensor<24x1024xf32>
// VOCAB:         %[[P:.+]] = tcc.matmul %{{.+}}, %[[WP]] : (tensor<4x24xf32>, tensor<24x1024xf32>) -> tensor<4x1024xf32>
// VOCAB:         tcc.slice %[[P]] {sizes = array<i64: 4, 1000>, {{.+}}} : tensor<4x1024xf32> -> tensor<4x1000xf32>
func.func @vocab(%h: tensor<4x24xf32>, %w: tensor<24x1000xf32>) -> tensor<4x1000xf32> {
  %y = tcc.matmul %h, %w : (tensor<4x24xf32>, tensor<24x1000xf32>) -> tensor<4x1000xf32>
  return %y : tensor<4x1000xf32>
}
