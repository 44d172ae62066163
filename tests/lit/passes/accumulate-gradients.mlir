// RUN: tcc-opt %s --tcc-accumulate-gradients=steps=4 | FileCheck %s
// RUN: tcc-opt %s --tcc-accumulate-gradients=steps=1 | FileCheck %s --check-prefix=NOOP

// The micro-batch step adds each gradient to its accumulator; the apply step
// scales the accumulators by 1/K for the optimizer and resets them to zero.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[ACC:[a-z0-9]+]]: tensor<3x2xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"}
// CHECK-SAME:    -> (tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"}, tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w.grad_acc"})
// CHECK:         %[[K:.+]] = tcc.constant dense<2.500000e-01> : tensor<f32>
// CHECK:         %[[G:.+]] = tcc.mul %[[ACC]], %[[K]]
// CHECK:         %[[Z:.+]] = tcc.constant dense<0.000000e+00> : tensor<3x2xf32>
// CHECK:         return %[[G]], %[[Z]]

// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"}
// CHECK-SAME:    %[[A:[a-z0-9]+]]: tensor<3x2xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"}
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w.grad_acc"})
// CHECK:         %[[GW:.+]] = tcc.matmul %[[X]], %{{.+}} {transpose_lhs = true}
// CHECK:         %[[SUM:.+]] = tcc.add %[[A]], %[[GW]]
// CHECK:         return %{{.+}}, %[[SUM]]

// NOOP-LABEL: func.func @train_step
// NOOP-NOT:   accumulate_step
func.func @train_step(%w: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %y = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = tcc.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<4x2xf32>
  %g = tcc.matmul %x, %one {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %l, %g : tensor<f32>, tensor<3x2xf32>
}

