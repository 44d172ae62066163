// RUN: tcc-opt %s --tcc-autodiff | FileCheck %s

// reduce_prod's gradient is reduce_prod_grad of dy and the forward's input;
// cumsum's the cumsum of dy in the other direction.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<2x3xf32>
// CHECK:         %[[C:.+]] = tcc.cumsum %[[A]] {axis = 1 : i64, exclusive = true} : tensor<2x3xf32>
// CHECK:         %[[P:.+]] = tcc.reduce_prod %[[C]] {axes = array<i64: 1>}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[DP:.+]] = tcc.reduce_prod_grad %[[DY]], %[[C]] {axes = array<i64: 1>} : tensor<2xf32>, tensor<2x3xf32>
// CHECK-NEXT:    %[[DA:.+]] = tcc.cumsum %[[DP]] {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x3xf32>
// CHECK-NEXT:    return %{{.+}}, %[[DA]]
func.func @train_step(%a: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<2xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %0 = tcc.cumsum %a {axis = 1 : i64, exclusive = true} : tensor<2x3xf32>
  %1 = tcc.reduce_prod %0 {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
  %l = tcc.mse_loss %1, %t : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
