// RUN: tcc-opt %s --tcc-build-loss=loss=mse --split-input-file -verify-diagnostics | FileCheck %s
// RUN: tcc-opt %s --tcc-train-pipeline="loss=mse optimizer=adamw fuse=false" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=PIPE

// Dropout and its step counter: @train_step keeps the dropout and advances
// `rng.step` by one (an `update` result after the loss); @forward becomes the
// evaluation program: dropout is the identity there and the counter, now
// unread, leaves its arguments.

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"},
                     %step: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %d, %mask = tcc.dropout %x, %step {ratio = 0.25 : f64, seed = 3 : i64} : tensor<4x8xf32>, tensor<i64>
    %y = tcc.matmul %d, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.+]]: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
// CHECK-SAME:     %[[W:.+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"})
// CHECK-NOT:     tcc.dropout
// CHECK-NEXT:    %[[Y:.+]] = tcc.matmul %[[X]], %[[W]]
// CHECK-NEXT:    return %[[Y]]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[STEP:[^:]+]]: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"}
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<i64> {tcc.kind = "update", tcc.name = "rng.step"})
// CHECK:         tcc.dropout %{{.+}}, %[[STEP]] {ratio = 2.500000e-01 : f64, seed = 3 : i64}
// CHECK:         %[[LOSS:.+]] = tcc.mse_loss
// CHECK-NEXT:    %[[NEXT:.+]] = tcc.increment %[[STEP]] : tensor<i64>
// CHECK-NEXT:    return %[[LOSS]], %[[NEXT]] : tensor<f32>, tensor<i64>

// After autodiff and the optimizer the counter update stays, right after the
// loss; the backward multiplies by the saved mask.
// PIPE-LABEL: func.func @train_step
// PIPE-SAME:    %[[STEP:[^:]+]]: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"}
// PIPE-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<i64> {tcc.kind = "update", tcc.name = "rng.step"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight"},
// PIPE:         %[[D:.+]], %[[MASK:.+]] = tcc.dropout %{{.+}}, %[[STEP]]
// PIPE:         %[[NEXT:.+]] = tcc.increment %[[STEP]] : tensor<i64>
// PIPE:         return %{{.+}}, %[[NEXT]], %{{.+}}

// -----

// The dropout gradient reuses the mask: no second draw.
module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%w: tensor<4x8xf32> {tcc.kind = "param", tcc.name = "w"},
                     %step: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"})
      -> (tensor<4x8xf32> {tcc.name = "y"}) {
    %d, %mask = tcc.dropout %w, %step {ratio = 0.5 : f64, seed = 9 : i64} : tensor<4x8xf32>, tensor<i64>
    return %d : tensor<4x8xf32>
  }
}

// PIPE-LABEL: func.func @train_step
// PIPE:         %[[D:.+]], %[[MASK:.+]] = tcc.dropout
// PIPE-NOT:     tcc.dropout
// PIPE:         %[[DY:.+]] = tcc.mse_loss_grad
// PIPE-NEXT:    tcc.mul %[[DY]], %[[MASK]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// PIPE-NOT:     tcc.dropout

// -----

// A state argument that is not a step counter is rejected.
module attributes {tcc.batch = 2 : i64} {
  // expected-error @+1 {{tcc-build-loss: state argument 'buf' of @forward must be a step counter (tensor<i64>), got 'tensor<2xf32>'}}
  func.func @forward(%x: tensor<2xf32> {tcc.kind = "param", tcc.name = "x"},
                     %b: tensor<2xf32> {tcc.kind = "state", tcc.name = "buf"})
      -> tensor<2xf32> {
    %y = tcc.add %x, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
}
