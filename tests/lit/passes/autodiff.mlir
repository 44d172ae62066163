// RUN: tcc-opt %s --tcc-autodiff --split-input-file | FileCheck %s

// One case per gradient rule. Most cases feed the op under test into
// mse_loss against a data target, so the op's result gradient is
// %[[DY]] = mse_loss_grad(1.0, y, target).

// matmul: C = A B  ->  dA = dC B^T, dB = A^T dC.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x8xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<8x3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<4x8xf32> {tcc.kind = "grad", tcc.name = "a"}, tensor<8x3xf32> {tcc.kind = "grad", tcc.name = "b"})
// CHECK:         %[[Y:.+]] = tcc.matmul %[[A]], %[[B]] :
// CHECK-NEXT:    %[[L:.+]] = tcc.mse_loss %[[Y]], %[[T]]
// CHECK-NEXT:    %[[SEED:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DY:.+]] = tcc.mse_loss_grad %[[SEED]], %[[Y]], %[[T]] : (tensor<f32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.matmul %[[DY]], %[[B]] {transpose_rhs = true} : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.matmul %[[A]], %[[DY]] {transpose_lhs = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT:    return %[[L]], %[[DA]], %[[DB]] : tensor<f32>, tensor<4x8xf32>, tensor<8x3xf32>
func.func @train_step(%a: tensor<4x8xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<8x3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul, transpose_lhs: C = A^T B  ->  dA = B dC^T, dB = A dC.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<8x4xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<8x3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.matmul %[[B]], %[[DY]] {transpose_rhs = true} : (tensor<8x3xf32>, tensor<4x3xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.matmul %[[A]], %[[DY]] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<8x4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<8x3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.matmul %a, %b {transpose_lhs = true} : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul, transpose_rhs: C = A B^T  ->  dA = dC B, dB = dC^T A.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x8xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3x8xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.matmul %[[DY]], %[[B]] : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.matmul %[[DY]], %[[A]] {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<4x8xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.matmul %a, %b {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul, both transposed: C = A^T B^T  ->  dA = B^T dC^T, dB = dC^T A^T.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<8x4xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3x8xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.matmul %[[B]], %[[DY]] {transpose_lhs = true, transpose_rhs = true} : (tensor<3x8xf32>, tensor<4x3xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.matmul %[[DY]], %[[A]] {transpose_lhs = true, transpose_rhs = true} : (tensor<4x3xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<8x4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<8x4xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Batched matmul with a broadcast rank-2 rhs: its gradient, summed over the
// batch, is one GEMM over all rows (no [2,8,3] product to reduce).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<2x4x8xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<8x3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<2x4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.matmul %[[DY]], %[[B]] {transpose_rhs = true} : (tensor<2x4x3xf32>, tensor<8x3xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[A2:.+]] = tcc.reshape %[[A]] : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    %[[DY2:.+]] = tcc.reshape %[[DY]] : tensor<2x4x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.matmul %[[A2]], %[[DY2]] {transpose_lhs = true} : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK-NOT:     tcc.reduce_sum
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<2x4x8xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<8x3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<2x4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// add with broadcasting: the bias gradient is summed over the batch.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DB:.+]] = tcc.reduce_sum %[[DY]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DY]], %[[DB]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.add %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sub with both operands broadcast: [4,1] - [3] -> [4,3].
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x1xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[NEG:.+]] = tcc.neg %[[DY]] : tensor<4x3xf32>
// CHECK-NEXT:    %[[SA:.+]] = tcc.reduce_sum %[[DY]] {axes = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.reshape %[[SA]] : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.reduce_sum %[[NEG]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<4x1xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.sub %a, %b : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mul with broadcasting: d(a*b)/da = dy*b, d(a*b)/db = sum(dy*a).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<1x3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.mul %[[DY]], %[[B]] : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[PB:.+]] = tcc.mul %[[DY]], %[[A]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[SB:.+]] = tcc.reduce_sum %[[PB]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.reshape %[[SB]] : tensor<3xf32> -> tensor<1x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<1x3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.mul %a, %b : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// div with broadcasting: c = a / b, da = dy / b, db = sum(-(dy * c) / b).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[C:.+]] = tcc.div %[[A]], %[[B]]
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.div %[[DY]], %[[B]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[GC:.+]] = tcc.mul %[[DY]], %[[C]]
// CHECK-NEXT:    %[[Q:.+]] = tcc.div %[[GC]], %[[B]]
// CHECK-NEXT:    %[[NQ:.+]] = tcc.neg %[[Q]] : tensor<4x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.reduce_sum %[[NQ]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.div %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// neg.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.neg %[[DY]] : tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.neg %a : tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// relu: relu_grad masks the gradient with the input.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.relu_grad %[[DY]], %[[A]] : tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.relu %a : tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_sum without keepdims: reshape back to rank 2, then broadcast.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad {{.+}} -> tensor<4xf32>
// CHECK-NEXT:    %[[R:.+]] = tcc.reshape %[[DY]] : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.broadcast_to %[[R]] : tensor<4x1xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.reduce_sum %a {axes = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_mean with keepdims over two axes: scale by 1/12, then broadcast.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad {{.+}} -> tensor<1x4x1xf32>
// CHECK-NEXT:    %[[S:.+]] = tcc.constant dense<0.0833333358> : tensor<f32>
// CHECK-NEXT:    %[[G:.+]] = tcc.mul %[[DY]], %[[S]] : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.broadcast_to %[[G]] : tensor<1x4x1xf32> -> tensor<2x4x6xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<2x4x6xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<1x4x1xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.reduce_mean %a {axes = array<i64: 0, 2>, keepdims = true} : tensor<2x4x6xf32> -> tensor<1x4x1xf32>
  %l = tcc.mse_loss %y, %t : (tensor<1x4x1xf32>, tensor<1x4x1xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// broadcast_to: summed back over the broadcast dimensions.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad {{.+}} -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[S:.+]] = tcc.reduce_sum %[[DY]] {axes = array<i64: 0, 2>} : tensor<2x4x3xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.reshape %[[S]] : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x1xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<2x4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.broadcast_to %a : tensor<4x1xf32> -> tensor<2x4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reshape.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad {{.+}} -> tensor<2x6xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.reshape %[[DY]] : tensor<2x6xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<2x6xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.reshape %a : tensor<4x3xf32> -> tensor<2x6xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// transpose: the gradient goes through the inverse permutation.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad {{.+}} -> tensor<3x4x2xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.transpose %[[DY]] {perm = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<2x3x4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<3x4x2xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.transpose %a {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %l = tcc.mse_loss %y, %t : (tensor<3x4x2xf32>, tensor<3x4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softmax: softmax_grad from the forward output.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[Y:.+]] = tcc.softmax %{{.+}} {axis = 0 : i64}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.softmax_grad %[[DY]], %[[Y]] {axis = 0 : i64} : tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.softmax %a {axis = 0 : i64} : tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// log_softmax: log_softmax_grad from the forward output.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[Y:.+]] = tcc.log_softmax %{{.+}} {axis = 1 : i64}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA:.+]] = tcc.log_softmax_grad %[[DY]], %[[Y]] {axis = 1 : i64} : tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.log_softmax %a {axis = 1 : i64} : tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softmax_cross_entropy: no gradient for the integer labels. The seed is
// divided by the count of labels that are not ignore_index (at least 1),
// and the gradient op gets the attributes.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[LABELS:[^:]+]]: tensor<4xi64> {{[^)]+}})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<4x3xf32> {tcc.kind = "grad", tcc.name = "logits"})
// CHECK:         %[[L:.+]] = tcc.softmax_cross_entropy %[[A]], %[[LABELS]] {ignore_index = 2 : i64, label_smoothing = 1.000000e-01 : f64}
// CHECK-NEXT:    %[[SEED:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[IGN:.+]] = tcc.constant dense<2> : tensor<i64>
// CHECK-NEXT:    %[[EQ:.+]] = tcc.compare "eq", %[[LABELS]], %[[IGN]] : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
// CHECK-NEXT:    %[[F:.+]] = tcc.cast %[[EQ]] : tensor<4xi1> -> tensor<4xf32>
// CHECK-NEXT:    %[[SKIP:.+]] = tcc.reduce_sum %[[F]] {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
// CHECK-NEXT:    %[[ALL:.+]] = tcc.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[N:.+]] = tcc.sub %[[ALL]], %[[SKIP]]
// CHECK-NEXT:    %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[M:.+]] = tcc.maximum %[[N]], %[[ONE]]
// CHECK-NEXT:    %[[PER:.+]] = tcc.div %[[SEED]], %[[M]]
// CHECK-NEXT:    %[[DA:.+]] = tcc.softmax_cross_entropy_grad %[[PER]], %[[A]], %[[LABELS]] {ignore_index = 2 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<f32>, tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
// CHECK-NEXT:    return %[[L]], %[[DA]] : tensor<f32>, tensor<4x3xf32>
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "logits"},
                      %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %l = tcc.softmax_cross_entropy %a, %labels {ignore_index = 2 : i64, label_smoothing = 0.1 : f64} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mse_loss with both operands trainable: the target gets the negated gradient.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[P:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[Q:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[SEED:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DP:.+]] = tcc.mse_loss_grad %[[SEED]], %[[P]], %[[Q]] : (tensor<f32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[DQ:.+]] = tcc.neg %[[DP]] : tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DP]], %[[DQ]]
func.func @train_step(%p: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "p"},
                      %q: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "q"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %l = tcc.mse_loss %p, %q : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Fan-out: %a reaches the loss three times (twice through one mul); the
// adjoints are summed with tcc.add.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK:         %[[SQ:.+]] = tcc.mul %[[A]], %[[A]]
// CHECK-NEXT:    %[[Y:.+]] = tcc.add %[[SQ]], %[[A]]
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[D1:.+]] = tcc.mul %[[DY]], %[[A]]
// CHECK-NEXT:    %[[D2:.+]] = tcc.mul %[[DY]], %[[A]]
// CHECK-NEXT:    %[[S1:.+]] = tcc.add %[[DY]], %[[D1]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[S2:.+]] = tcc.add %[[S1]], %[[D2]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[S2]]
func.func @train_step(%a: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %sq = tcc.mul %a, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = tcc.add %sq, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Only the path from params to the loss is differentiated: no gradient for
// the data input %x or for the constant, a zero gradient for %unused (which
// the loss does not depend on), and the op on %unused is left alone. Other
// results stay after the loss; gradients follow in the params' argument order.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[UNUSED:[^:]+]]: tensor<5xf32> {{[^)]+}}, %[[X:[^:]+]]: tensor<4x8xf32> {{[^)]+}}, %[[W:[^:]+]]: tensor<3x8xf32> {{[^)]+}}, %[[T:[^:]+]]: tensor<4x3xf32> {{[^)]+}})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<5xf32> {tcc.name = "side"}, tensor<5xf32> {tcc.kind = "grad", tcc.name = "unused"}, tensor<3x8xf32> {tcc.kind = "grad", tcc.name = "w"})
// CHECK:         %[[SIDE:.+]] = tcc.neg %[[UNUSED]]
// CHECK:         %[[Y:.+]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[D2:.+]] = tcc.mul %[[DY]], %{{.+}} :
// CHECK-NEXT:    %[[DW:.+]] = tcc.matmul %[[D2]], %[[X]] {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    %[[ZERO:.+]] = tcc.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK-NEXT:    return %{{.+}}, %[[SIDE]], %[[ZERO]], %[[DW]] : tensor<f32>, tensor<5xf32>, tensor<5xf32>, tensor<3x8xf32>
func.func @train_step(%unused: tensor<5xf32> {tcc.kind = "param", tcc.name = "unused"},
                      %x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                      %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<5xf32> {tcc.name = "side"}) {
  %side = tcc.neg %unused : tensor<5xf32>
  %y = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %c = tcc.constant dense<2.0> : tensor<f32>
  %y2 = tcc.mul %y, %c : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y2, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l, %side : tensor<f32>, tensor<5xf32>
}

// -----

// A mask computed from a parameter is piecewise constant in it: no gradient
// flows through `equal` into the condition, only through the selected branch.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<4xf32> {tcc.kind = "grad", tcc.name = "p"})
// CHECK:         %[[M:.+]] = tcc.compare "eq", %{{.+}}, %{{.+}}
// CHECK:         tcc.where %[[M]]
// CHECK-NOT:     error
func.func @train_step(%p: tensor<4xf32> {tcc.kind = "param", tcc.name = "p"}) -> (tensor<f32> {tcc.kind = "loss"}) {
  %zero = tcc.constant dense<0.0> : tensor<f32>
  %m = tcc.compare "eq", %p, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  %y = tcc.where %m, %p, %zero : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %l = tcc.reduce_sum %y {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// State updates after the loss (batch norm's running statistics) stay where
// they are and are not differentiated: the loss does not depend on them, and
// only params get gradients, appended after every other result.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<4x3xf32> {{[^)]+}}, %[[G:[^:]+]]: tensor<3xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3xf32> {{[^)]+}}, %[[RM:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "rm"}, %[[L:[^:]+]]: tensor<4xi64> {{[^)]+}})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "rm"}, tensor<3xf32> {tcc.kind = "grad", tcc.name = "g"}, tensor<3xf32> {tcc.kind = "grad", tcc.name = "b"})
// CHECK:         %[[Y:[^,]+]], %[[M:[^,]+]], %[[V:[^ ]+]] = tcc.batch_norm_train %[[X]], %[[G]], %[[B]]
// CHECK:         %[[NEW:.+]] = tcc.add %[[RM]], %[[M]]
// CHECK:         %[[DY:.+]] = tcc.softmax_cross_entropy_grad
// CHECK-NEXT:    %{{.+}}, %[[DG:[^,]+]], %[[DB:[^ ]+]] = tcc.batch_norm_train_grad %[[DY]], %[[X]], %[[G]], %[[M]], %[[V]] {epsilon = 1.000000e-05 : f64}
// CHECK-NEXT:    return %{{.+}}, %[[NEW]], %[[DG]], %[[DB]] :
func.func @train_step(%x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
                      %g: tensor<3xf32> {tcc.kind = "param", tcc.name = "g"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %rm: tensor<3xf32> {tcc.kind = "state", tcc.name = "rm"},
                      %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "rm"}) {
  %y, %m, %v = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %new = tcc.add %rm, %m : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tcc.softmax_cross_entropy %y, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l, %new : tensor<f32>, tensor<3xf32>
}

// -----

// maximum: the winner takes dy, a tie splits it (w = [a > b] + [a == b] / 2
// to a, 1 - w to b), reduced to each operand's shape.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[GT:.+]] = tcc.compare "gt", %[[A:[^,]+]], %[[B:[^ ]+]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %[[W:.+]] = tcc.cast %[[GT]] : tensor<2x3xi1> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[EQ:.+]] = tcc.compare "eq", %[[A]], %[[B]]
// CHECK-NEXT:    %[[T:.+]] = tcc.cast %[[EQ]]
// CHECK-NEXT:    %[[H:.+]] = tcc.constant dense<5.000000e-01>
// CHECK-NEXT:    %[[TH:.+]] = tcc.mul %[[T]], %[[H]]
// CHECK-NEXT:    %[[WA:.+]] = tcc.add %[[W]], %[[TH]]
// CHECK-NEXT:    %[[ONE:.+]] = tcc.constant dense<1.000000e+00>
// CHECK-NEXT:    %[[WB:.+]] = tcc.sub %[[ONE]], %[[WA]]
// CHECK-NEXT:    %[[DA:.+]] = tcc.mul %[[DY:[^,]+]], %[[WA]]
// CHECK-NEXT:    %[[DB:.+]] = tcc.mul %[[DY]], %[[WB]]
// CHECK-NEXT:    %[[DBR:.+]] = tcc.reduce_sum %[[DB]] {axes = array<i64: 0>}
// CHECK:         return %{{.+}}, %[[DA]], %[[DBR]]
func.func @train_step(%a: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<2x3xf32> {tcc.kind = "input", tcc.name = "t"}) -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.maximum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_max: dy shared evenly by every position that attains the maximum.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[Y:.+]] = tcc.reduce_max %[[X:[^ ]+]] {axes = array<i64: 1>}
// CHECK:         %[[YR:.+]] = tcc.reshape %[[Y]] : tensor<2xf32> -> tensor<2x1xf32>
// CHECK-NEXT:    %[[YB:.+]] = tcc.broadcast_to %[[YR]] : tensor<2x1xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[EQ:.+]] = tcc.compare "eq", %[[X]], %[[YB]]
// CHECK-NEXT:    %[[HIT:.+]] = tcc.cast %[[EQ]] : tensor<2x3xi1> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[N:.+]] = tcc.reduce_sum %[[HIT]] {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
// CHECK-NEXT:    %[[S:.+]] = tcc.div %[[DY:[^,]+]], %[[N]]
// CHECK-NEXT:    %[[SR:.+]] = tcc.reshape %[[S]]
// CHECK-NEXT:    %[[SB:.+]] = tcc.broadcast_to %[[SR]]
// CHECK-NEXT:    %[[DX:.+]] = tcc.mul %[[HIT]], %[[SB]]
// CHECK:         return %{{.+}}, %[[DX]]
func.func @train_step(%x: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "x"},
                      %t: tensor<2xf32> {tcc.kind = "input", tcc.name = "t"}) -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.reduce_max %x {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
