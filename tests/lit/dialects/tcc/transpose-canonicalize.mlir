// RUN: tcc-opt %s --canonicalize --split-input-file | FileCheck %s

// A transpose of a transpose is one transpose (dialects/tcc/
// TccPatternsMatmul.cpp, ComposeTransposes): result dim i is x's dim
// p1[p2[i]].

// Inverse permutations cancel: what tcc-fuse-attention's transpose back to
// the heads' layout and an exported transpose back to tokens do.
// CHECK-LABEL: func.func @cancel
// CHECK-SAME: (%[[X:.+]]: tensor<4x6x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @cancel(%x: tensor<4x6x8xf32>) -> tensor<4x6x8xf32> {
  %a = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x6x8xf32> -> tensor<6x4x8xf32>
  %b = tcc.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<6x4x8xf32> -> tensor<4x6x8xf32>
  return %b : tensor<4x6x8xf32>
}

// -----

// Others compose; the inner transpose stays for its other user.
// CHECK-LABEL: func.func @compose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4x5xf32>)
// CHECK-DAG: %[[A:.+]] = tcc.transpose %[[X]] {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
// CHECK-DAG: %[[B:.+]] = tcc.transpose %[[X]] {perm = array<i64: 2, 0, 1, 3>} : tensor<2x3x4x5xf32> -> tensor<4x2x3x5xf32>
// CHECK: return %[[B]], %[[A]]
func.func @compose(%x: tensor<2x3x4x5xf32>) -> (tensor<4x2x3x5xf32>, tensor<2x4x3x5xf32>) {
  %a = tcc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %b = tcc.transpose %a {perm = array<i64: 1, 0, 2, 3>} : tensor<2x4x3x5xf32> -> tensor<4x2x3x5xf32>
  return %b, %a : tensor<4x2x3x5xf32>, tensor<2x4x3x5xf32>
}
