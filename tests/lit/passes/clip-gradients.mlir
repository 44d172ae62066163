// RUN: tcc-opt %s --tcc-clip-gradients=max-norm=0.5 --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-clip-gradients=track=true --split-input-file | FileCheck %s --check-prefix=TRACK
// RUN: tcc-opt %s --split-input-file | FileCheck %s --check-prefix=OFF

// clip_grad_norm_ inside the step: one global norm over every gradient, the
// coefficient min(1, C / (norm + 1e-6)), each gradient scaled by it, and
// the norm before clipping as the metric grad_norm (the last result).

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"}, tensor<2xf32> {tcc.kind = "grad", tcc.name = "b"}, tensor<f32> {tcc.kind = "metric", tcc.name = "grad_norm"})
// CHECK:         %[[N:.+]] = tcc.global_norm %[[GW:[^,]+]], %[[GB:[^ ]+]] : tensor<3x2xf32>, tensor<2xf32>
// CHECK:         %[[EPS:.+]] = tcc.constant dense<9.99999997E-7> : tensor<f32>
// CHECK:         %[[D:.+]] = tcc.add %[[N]], %[[EPS]]
// CHECK:         %[[C:.+]] = tcc.constant dense<5.000000e-01> : tensor<f32>
// CHECK:         %[[Q:.+]] = tcc.div %[[C]], %[[D]]
// CHECK:         %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[K:.+]] = tcc.minimum %[[Q]], %[[ONE]]
// CHECK:         %[[CW:.+]] = tcc.mul %[[GW]], %[[K]] : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// CHECK:         %[[CB:.+]] = tcc.mul %[[GB]], %[[K]] : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         return %{{.+}}, %[[CW]], %[[CB]], %[[N]]

// TRACK-LABEL: func.func @train_step
// TRACK-SAME:    tensor<f32> {tcc.kind = "metric", tcc.name = "grad_norm"})
// TRACK:         %[[N:.+]] = tcc.global_norm %[[GW:[^,]+]], %[[GB:[^ ]+]] :
// TRACK-NOT:     tcc.mul
// TRACK:         return %{{.+}}, %[[GW]], %[[GB]], %[[N]]

// OFF-NOT:       global_norm
func.func @train_step(%w: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<2xf32> {tcc.kind = "param", tcc.name = "b"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"},
        tensor<2xf32> {tcc.kind = "grad", tcc.name = "b"}) {
  %y = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = tcc.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<4x2xf32>
  %g = tcc.matmul %x, %one {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %gb = tcc.reduce_sum %one {axes = array<i64: 0>} : tensor<4x2xf32> -> tensor<2xf32>
  return %l, %g, %gb : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}
