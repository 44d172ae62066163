// RUN: tcc-opt %s --tcc-autodiff --split-input-file | FileCheck %s

// The gradient rules of the data-movement ops (TccGradientsShape.cpp). Each
// case feeds the op into mse_loss, so its result gradient is %[[DY]].

// gather: the table gets a scatter-add of dy; the ids get nothing.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[W:[^:]+]]: tensor<10x4xf32> {{[^)]+}}, %[[IDS:[^:]+]]: tensor<2x3xi64> {{[^)]+}}, %[[T:[^:]+]]: tensor<2x3x4xf32> {{[^)]+}})
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DW:.+]] = tcc.gather_grad %[[DY]], %[[IDS]] {axis = 0 : i64, size = 10 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DW]]
func.func @train_step(%w: tensor<10x4xf32> {tcc.kind = "param", tcc.name = "w"},
                      %ids: tensor<2x3xi64> {tcc.kind = "input", tcc.name = "ids"},
                      %t: tensor<2x3x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.gather %w, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concat: each input's gradient is its slice of dy; an input used twice
// adds both slices.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<2x3xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<2x1xf32> {{[^)]+}}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DA1:.+]] = tcc.slice %[[DY]] {sizes = array<i64: 2, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x7xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.slice %[[DY]] {sizes = array<i64: 2, 1>, starts = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<2x7xf32> -> tensor<2x1xf32>
// CHECK-NEXT:    %[[DA2:.+]] = tcc.slice %[[DY]] {sizes = array<i64: 2, 3>, starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<2x7xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.add %[[DA1]], %[[DA2]]
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<2x1xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<2x7xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice: dy goes back into zeros at the window it came from.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DX:.+]] = tcc.slice_grad %[[DY]] {shape = array<i64: 4, 5>, starts = array<i64: 3, 1>, steps = array<i64: -2, 2>} : tensor<2x2xf32> -> tensor<4x5xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DX]]
func.func @train_step(%x: tensor<4x5xf32> {tcc.kind = "param", tcc.name = "x"},
                      %t: tensor<2x2xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.slice %x {starts = array<i64: 3, 1>, sizes = array<i64: 2, 2>, steps = array<i64: -2, 2>} : tensor<4x5xf32> -> tensor<2x2xf32>
  %l = tcc.mse_loss %y, %t : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// where: dy where the condition holds to lhs, elsewhere to rhs (summed over
// rhs's broadcast dimension); the mask gets nothing.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<3x4xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<4xf32> {{[^)]+}}, %[[M:[^:]+]]: tensor<3x4xi1>
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[Z:.+]] = tcc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.where %[[M]], %[[DY]], %[[Z]] : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[DBF:.+]] = tcc.where %[[M]], %[[Z]], %[[DY]] : (tensor<3x4xi1>, tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[DB:.+]] = tcc.reduce_sum %[[DBF]] {axes = array<i64: 0>} : tensor<3x4xf32> -> tensor<4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]], %[[DB]]
func.func @train_step(%a: tensor<3x4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<4xf32> {tcc.kind = "param", tcc.name = "b"},
                      %m: tensor<3x4xi1> {tcc.kind = "input", tcc.name = "mask"},
                      %t: tensor<3x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %y = tcc.where %m, %a, %b : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %l = tcc.mse_loss %y, %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
