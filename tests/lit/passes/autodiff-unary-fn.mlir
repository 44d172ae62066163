// RUN: tcc-opt %s --tcc-autodiff --split-input-file | FileCheck %s

// The gradient rules of tcc.unary_fn: one unary_fn_grad from the forward's
// input with the forward's parameters, or a broadcast zero for the
// piecewise-constant functions (sign, floor, ceil, round).

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4xf32>
// CHECK:         %[[E:.+]] = tcc.unary_fn "elu" %[[A]] {alpha = 5.000000e-01 : f64}
// CHECK-NEXT:    %[[C:.+]] = tcc.unary_fn "clip" %[[E]] {alpha = -1.000000e+00 : f64, beta = 1.000000e+00 : f64}
// CHECK:         %[[DY:.+]] = tcc.mse_loss_grad
// CHECK-NEXT:    %[[D1:.+]] = tcc.unary_fn_grad "clip" %[[DY]], %[[E]] {alpha = -1.000000e+00 : f64, beta = 1.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT:    %[[D2:.+]] = tcc.unary_fn_grad "elu" %[[D1]], %[[A]] {alpha = 5.000000e-01 : f64} : tensor<4xf32>
// CHECK-NEXT:    return %{{.+}}, %[[D2]]
func.func @train_step(%a: tensor<4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %0 = tcc.unary_fn "elu" %a {alpha = 0.5 : f64} : tensor<4xf32>
  %1 = tcc.unary_fn "clip" %0 {alpha = -1.0 : f64, beta = 1.0 : f64} : tensor<4xf32>
  %l = tcc.mse_loss %1, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// floor's gradient is zero: no kernel reads dy.
// CHECK-LABEL: func.func @train_step
// CHECK:         tcc.unary_fn "floor"
// CHECK-NOT:     tcc.unary_fn_grad
// CHECK:         %[[Z:.+]] = tcc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[B:.+]] = tcc.broadcast_to %[[Z]] : tensor<f32> -> tensor<4xf32>
// CHECK:         return %{{.+}}, %[[B]]
func.func @train_step(%a: tensor<4xf32> {tcc.kind = "param", tcc.name = "a"},
                      %t: tensor<4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %0 = tcc.unary_fn "floor" %a : tensor<4xf32>
  %l = tcc.mse_loss %0, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
