// RUN: tcc-opt %s --canonicalize --split-input-file | FileCheck %s

// Transposes of the last two dimensions fold into tcc.matmul's flags
// (dialects/tcc/TccPatternsMatmul.cpp).

// MatMul(x, Transpose(W)), as torch.onnx.export writes a linear layer.
// CHECK-LABEL: func.func @operand_rhs
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[Y:.+]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @operand_rhs(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %t = tcc.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = tcc.matmul %x, %t : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A flag already set flips back; a batched lhs transposed in its last two
// dims folds too; the transpose used elsewhere stays for that user.
// CHECK-LABEL: func.func @operand_both
// CHECK-SAME: (%[[A:.+]]: tensor<3x8x4xf32>, %[[B:.+]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[T:.+]] = tcc.transpose %[[A]]
// CHECK-NEXT: %[[Y:.+]] = tcc.matmul %[[A]], %[[B]] {transpose_lhs = true} : (tensor<3x8x4xf32>, tensor<8x16xf32>) -> tensor<3x4x16xf32>
// CHECK-NEXT: return %[[Y]], %[[T]]
func.func @operand_both(%a: tensor<3x8x4xf32>, %b: tensor<8x16xf32>) -> (tensor<3x4x16xf32>, tensor<3x4x8xf32>) {
  %ta = tcc.transpose %a {perm = array<i64: 0, 2, 1>} : tensor<3x8x4xf32> -> tensor<3x4x8xf32>
  %tb = tcc.transpose %b {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %y = tcc.matmul %ta, %tb {transpose_rhs = true} : (tensor<3x4x8xf32>, tensor<16x8xf32>) -> tensor<3x4x16xf32>
  return %y, %ta : tensor<3x4x16xf32>, tensor<3x4x8xf32>
}

// -----

// Other permutations are data movement a GEMM flag cannot express.
// CHECK-LABEL: func.func @operand_other_perm
// CHECK: tcc.transpose
// CHECK: tcc.matmul %{{.+}}, %{{.+}} :
func.func @operand_other_perm(%a: tensor<4x3x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<3x4x16xf32> {
  %t = tcc.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<4x3x8xf32> -> tensor<3x4x8xf32>
  %y = tcc.matmul %t, %b : (tensor<3x4x8xf32>, tensor<3x8x16xf32>) -> tensor<3x4x16xf32>
  return %y : tensor<3x4x16xf32>
}

// -----

// (A B)^T = B^T A^T: the transpose of a product becomes the swapped product.
// CHECK-LABEL: func.func @result
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[Y:.+]] = tcc.matmul %[[B]], %[[A]] {transpose_rhs = true} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @result(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x4xf32> {
  %p = tcc.matmul %a, %b {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %t = tcc.transpose %p {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  return %t : tensor<16x4xf32>
}

// -----

// A product with another user stays (swapping it would add a GEMM).
// CHECK-LABEL: func.func @result_shared
// CHECK: tcc.matmul
// CHECK-NEXT: tcc.transpose
func.func @result_shared(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> (tensor<16x4xf32>, tensor<4x16xf32>) {
  %p = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %t = tcc.transpose %p {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  return %t, %p : tensor<16x4xf32>, tensor<4x16xf32>
}
