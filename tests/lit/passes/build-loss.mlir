// RUN: tcc-opt %s --tcc-build-loss --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-build-loss=loss=mse --split-input-file | FileCheck %s --check-prefix=MSE
// RUN: tcc-opt %s --tcc-build-loss="ignore-index=0 label-smoothing=0.25" --split-input-file | FileCheck %s --check-prefix=OPTS

// Cross-entropy over the first output; the second output and the ops only it
// used are dropped from @train_step, @forward is unchanged.

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"})
      -> (tensor<4x3xf32> {tcc.name = "logits"}, tensor<4x3xf32> {tcc.name = "probs"}) {
    %y = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %p = tcc.softmax %y {axis = 1 : i64} : tensor<4x3xf32>
    return %y, %p : tensor<4x3xf32>, tensor<4x3xf32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK:         tcc.softmax
// CHECK:         return %{{.+}}, %{{.+}} : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:.+]]: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
// CHECK-SAME:     %[[W:.+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"},
// CHECK-SAME:     %[[LABELS:.+]]: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"})
// CHECK-NEXT:    %[[Y:.+]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true}
// CHECK-NOT:     tcc.softmax
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[Y]], %[[LABELS]] : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK-NEXT:    return %[[LOSS]] : tensor<f32>

// The pass options become the loss's attributes (the defaults, -100 and 0,
// are not printed).
// OPTS-LABEL: func.func @train_step
// OPTS:         tcc.softmax_cross_entropy %{{.+}}, %{{.+}} {ignore_index = 0 : i64, label_smoothing = 2.500000e-01 : f64} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>

// MSE-LABEL: func.func @train_step
// MSE-SAME:    %[[LABELS:[^:]+]]: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
// MSE-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"})
// MSE:         %[[Y:.+]] = tcc.matmul
// MSE-NEXT:    %[[LOSS:.+]] = tcc.mse_loss %[[Y]], %[[LABELS]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
// MSE-NEXT:    return %[[LOSS]] : tensor<f32>

// -----

// Classes on the last axis of a rank-3 output: labels drop that axis only.

module attributes {tcc.batch = 2 : i64} {
  func.func @forward(%x: tensor<2x5x7xf32> {tcc.kind = "input", tcc.name = "tokens"},
                     %b: tensor<7xf32> {tcc.kind = "param", tcc.name = "bias"})
      -> (tensor<2x5x7xf32> {tcc.name = "logits"}) {
    %y = tcc.add %x, %b : (tensor<2x5x7xf32>, tensor<7xf32>) -> tensor<2x5x7xf32>
    return %y : tensor<2x5x7xf32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[LABELS:[^:]+]]: tensor<2x5xi64> {tcc.kind = "input", tcc.name = "labels"})
// CHECK:         %[[Y:.+]] = tcc.add
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[Y]], %[[LABELS]] : (tensor<2x5x7xf32>, tensor<2x5xi64>) -> tensor<f32>
// CHECK-NEXT:    return %[[LOSS]]

// MSE-LABEL: func.func @train_step
// MSE-SAME:    %[[LABELS:[^:]+]]: tensor<2x5x7xf32> {tcc.kind = "input", tcc.name = "labels"})
// MSE:         tcc.mse_loss %{{.+}}, %[[LABELS]] : (tensor<2x5x7xf32>, tensor<2x5x7xf32>) -> tensor<f32>

// -----

// @train_step is inserted right after @forward; other functions stay.

module {
  func.func @forward(%w: tensor<1x3xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<1x3xf32> {tcc.name = "y"}) {
    return %w : tensor<1x3xf32>
  }
  func.func @helper() {
    return
  }
}

// CHECK-LABEL: func.func @forward
// CHECK:       func.func @train_step
// CHECK-SAME:    (%[[W:.+]]: tensor<1x3xf32> {tcc.kind = "param", tcc.name = "w"}, %[[LABELS:.+]]: tensor<1xi64> {tcc.kind = "input", tcc.name = "labels"})
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[W]], %[[LABELS]]
// CHECK-NEXT:    return %[[LOSS]]
// CHECK:       func.func @helper

// -----

// Running statistics (batch norm): @forward returns the new value of each
// `state` argument as an `update` result. @train_step keeps those updates
// right after the loss; @forward, the evaluation program, drops them, the ops
// only they used, and the statistics it no longer reads.

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x2xf32> {tcc.kind = "input", tcc.name = "x"},
                     %g: tensor<2xf32> {tcc.kind = "param", tcc.name = "bn.weight"},
                     %b: tensor<2xf32> {tcc.kind = "param", tcc.name = "bn.bias"},
                     %rm: tensor<2xf32> {tcc.kind = "state", tcc.name = "bn.running_mean"})
      -> (tensor<4x2xf32> {tcc.name = "y"},
          tensor<2xf32> {tcc.kind = "update", tcc.name = "bn.running_mean"}) {
    %y, %m, %v = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
    %new = tcc.add %rm, %m : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %y, %new : tensor<4x2xf32>, tensor<2xf32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    %{{[^:]+}}: tensor<2xf32> {tcc.kind = "param", tcc.name = "bn.bias"})
// CHECK-SAME:    -> (tensor<4x2xf32> {tcc.name = "y"})
// CHECK-NEXT:    %[[Y:[^,]+]], %{{.+}} = tcc.batch_norm_train
// CHECK-NEXT:    return %[[Y]] : tensor<4x2xf32>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[RM:[^:]+]]: tensor<2xf32> {tcc.kind = "state", tcc.name = "bn.running_mean"}
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<2xf32> {tcc.kind = "update", tcc.name = "bn.running_mean"})
// CHECK:         %[[Y:[^,]+]], %[[M:[^,]+]], %{{.+}} = tcc.batch_norm_train
// CHECK-NEXT:    %[[NEW:.+]] = tcc.add %[[RM]], %[[M]]
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[Y]]
// CHECK-NEXT:    return %[[LOSS]], %[[NEW]] : tensor<f32>, tensor<2xf32>
