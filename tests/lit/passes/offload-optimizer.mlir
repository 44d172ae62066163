// RUN: tcc-opt %s --tcc-clip-gradients=max-norm=1 --tcc-apply-optimizer=optimizer=adamw --tcc-offload-optimizer | FileCheck %s
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=sgd momentum=0.9" --tcc-offload-optimizer | FileCheck %s --check-prefix=SGD
// RUN: tcc-opt %s --tcc-accumulate-gradients=steps=2 --tcc-apply-optimizer=optimizer=adamw --tcc-offload-optimizer | FileCheck %s --check-prefix=ACC
// RUN: not tcc-opt %s --tcc-apply-optimizer --tcc-offload-optimizer --tcc-offload-optimizer 2>&1 | FileCheck %s --check-prefix=TWICE

// The step is cut at the updates' operands: @train_step keeps the backward
// and the clipping and returns the clipped gradients as `offload` results;
// @optimizer_step reads them as inputs of those names, with the parameters,
// the moments, the rate and AdamW's step, whose increment moves with it.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"}
// CHECK-SAME:    %{{[^:]+}}: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<f32> {tcc.kind = "metric", tcc.name = "grad_norm"}, tensor<3x2xf32> {tcc.kind = "offload", tcc.name = "offload.grad.w"}, tensor<3xf32> {tcc.kind = "offload", tcc.name = "offload.grad.b"})
// CHECK-NOT:     tcc.adamw_update
// CHECK:         %[[N:.+]] = tcc.global_norm
// CHECK:         %[[C:.+]] = tcc.minimum
// CHECK-NEXT:    %[[GW:.+]] = tcc.mul %{{.+}}, %[[C]]
// CHECK-NEXT:    %[[GB:.+]] = tcc.mul %{{.+}}, %[[C]]
// CHECK-NEXT:    return %{{.+}}, %[[N]], %[[GW]], %[[GB]] :
// CHECK-LABEL: func.func @optimizer_step
// CHECK-SAME:    %[[STEP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"}
// CHECK-SAME:    %[[OW:[^:]+]]: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[OGW:[^:]+]]: tensor<3x2xf32> {tcc.kind = "input", tcc.name = "offload.grad.w"}
// CHECK-SAME:    %[[M:[^:]+]]: tensor<3x2xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"}
// CHECK-SAME:    %[[V:[^:]+]]: tensor<3x2xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"}
// CHECK-SAME:    %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<1.000000e-03> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"}
// CHECK-SAME:    tensor<3xf32> {tcc.kind = "input", tcc.name = "offload.grad.b"}
// CHECK-SAME:    -> (tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b"}, tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"}, tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b.exp_avg"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b.exp_avg_sq"}, tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"})
// CHECK-NEXT:    %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[T:.+]] = tcc.add %[[STEP]], %[[ONE]]
// CHECK-NEXT:    %[[W1:[^,]+]], %[[M1:[^,]+]], %[[V1:[^ ]+]] = tcc.adamw_update %[[OW]], %[[OGW]], %[[M]], %[[V]], %[[T]], %[[LR]]
// CHECK-NEXT:    %[[B1:[^,]+]], %[[BM1:[^,]+]], %[[BV1:[^ ]+]] = tcc.adamw_update
// CHECK-NEXT:    return %[[W1]], %[[B1]], %[[M1]], %[[V1]], %[[BM1]], %[[BV1]], %[[T]] :

// The bias gradient is reduced from the input alone: it stays on the
// device (only state the update owns crosses with the ops that read it).
// SGD-LABEL: func.func @train_step
// SGD-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "offload", tcc.name = "offload.grad.w"}, tensor<3xf32> {tcc.kind = "offload", tcc.name = "offload.grad.b"})
// SGD:         %[[GB:.+]] = tcc.reduce_sum %{{.+}} {axes = array<i64: 0>}
// SGD:         return %{{.+}}, %{{.+}}, %[[GB]] :
// SGD-LABEL: func.func @optimizer_step
// SGD-NOT:     tcc.kind = "input", tcc.name = "x"
// SGD-SAME:    tcc.name = "w.momentum_buffer"
// SGD-NEXT:    tcc.sgd_momentum_update
// SGD-NEXT:    tcc.sgd_momentum_update
// SGD-NEXT:    return

// Accumulation: the accumulators stay on the device (accumulate_step writes
// them) and the mean of the batch crosses; @accumulate_step is untouched.
// ACC-LABEL: func.func @train_step
// ACC-SAME:    tcc.name = "w.grad_acc"
// ACC-SAME:    -> (tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w.grad_acc"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b.grad_acc"}, tensor<3x2xf32> {tcc.kind = "offload", tcc.name = "offload.grad.w"}, tensor<3xf32> {tcc.kind = "offload", tcc.name = "offload.grad.b"})
// ACC:         %[[MW:.+]] = tcc.mul %{{.+}}, %{{.+}} : (tensor<3x2xf32>, tensor<f32>)
// ACC:         return %{{.+}}, %{{.+}}, %[[MW]], %{{.+}} :
// ACC-LABEL: func.func @optimizer_step
// ACC-NOT:     grad_acc
// ACC:         return
// ACC-LABEL: func.func @accumulate_step
// ACC-NOT:     offload

// TWICE: error: tcc-offload-optimizer: @optimizer_step exists already

func.func @train_step(%w: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"},
        tensor<3xf32> {tcc.kind = "grad", tcc.name = "b"}) {
  %l = tcc.reduce_sum %x {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<4x2xf32>
  %gb = tcc.reduce_sum %x {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
  %g = tcc.matmul %x, %one {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %gw = tcc.mul %g, %w : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %l, %gw, %gb : tensor<f32>, tensor<3x2xf32>, tensor<3xf32>
}
