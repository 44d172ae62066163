// RUN: tcc-opt %s --tcc-train-pipeline="clip-grad-norm=1.0 grad-accum=2 plan-memory=false fuse=false" | FileCheck %s --check-prefix=ACC
// RUN: tcc-opt %s --tcc-train-pipeline="clip-grad-norm=1.0 optimizer=sgd plan-memory=false fuse=false" | FileCheck %s --check-prefix=SGD
// RUN: tcc-opt %s --tcc-train-pipeline="clip-grad-norm=1.0 precision=fp16 plan-memory=false fuse=false" | FileCheck %s --check-prefix=FP16
// RUN: tcc-opt %s --tcc-train-pipeline="clip-grad-norm=1.0 precision=fp16 optimizer=sgd plan-memory=false fuse=false" | FileCheck %s --check-prefix=FP16SGD
// RUN: tcc-opt %s --tcc-train-pipeline="clip-grad-norm=1.0 precision=bf16 plan-memory=false fuse=false" | FileCheck %s --check-prefix=BF16

// Where clipping sits in the pipeline: after accumulation (the apply step
// clips acc / K, whose norm is taken as norm(acc) / K so that the scaled
// gradients are made only where they are clipped), before the optimizer (the updates read the clipped
// gradients). With fp16 loss scaling the norm is unscaled (times 1/scale),
// the coefficient joins AdamW's inverse-scale operand (no multiply of the
// gradient) or SGD's one unscaling multiply, and `finite` is read off the
// norm rather than from a sum of every gradient. With bf16 the clipping
// multiply stays f32, and the weight-gradient GEMM still writes f32 (its
// gradient is read by the norm and the clipping only).

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w1: tensor<16x8xf32> {tcc.kind = "param", tcc.name = "fc1.weight"},
                     %b1: tensor<16xf32> {tcc.kind = "param", tcc.name = "fc1.bias"})
      -> (tensor<4x16xf32> {tcc.name = "logits"}) {
    %h = tcc.matmul %x, %w1 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %hb = tcc.add %h, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %hb : tensor<4x16xf32>
  }
}

// ACC-LABEL: func.func @train_step
// ACC-SAME:    %[[ACCW:[^:]+]]: tensor<16x8xf32> {tcc.kind = "state", tcc.name = "fc1.weight.grad_acc"}
// ACC-SAME:    %[[ACCB:[^:]+]]: tensor<16xf32> {tcc.kind = "state", tcc.name = "fc1.bias.grad_acc"}
// ACC-SAME:    tensor<f32> {tcc.kind = "metric", tcc.name = "grad_norm"}
// ACC:         %[[HALF:.+]] = tcc.constant dense<5.000000e-01> : tensor<f32>
// ACC:         %[[GW:.+]] = tcc.mul %[[ACCW]], %[[HALF]] : (tensor<16x8xf32>, tensor<f32>)
// ACC:         %[[GB:.+]] = tcc.mul %[[ACCB]], %[[HALF]] : (tensor<16xf32>, tensor<f32>)
// ACC:         %[[RAW:.+]] = tcc.global_norm %[[ACCW]], %[[ACCB]]
// ACC:         %[[N:.+]] = tcc.mul %[[RAW]], %[[HALF]]
// ACC:         %[[K:.+]] = tcc.minimum
// ACC:         %[[CW:.+]] = tcc.mul %[[GW]], %[[K]]
// ACC:         tcc.adamw_update %{{[^,]+}}, %[[CW]]
// ACC:         return %{{[^,]+}}, %{{[^,]+}}, %[[N]],
// ACC-LABEL: func.func @accumulate_step
// ACC-NOT:     global_norm

// SGD-LABEL: func.func @train_step
// SGD:         %[[N:.+]] = tcc.global_norm
// SGD:         %[[K:.+]] = tcc.minimum
// SGD:         %[[CW:.+]] = tcc.mul %{{.+}}, %[[K]] : (tensor<16x8xf32>, tensor<f32>)
// SGD:         tcc.sgd_update %{{[^,]+}}, %[[CW]]

// FP16-LABEL: func.func @train_step
// FP16-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<f32> {tcc.kind = "metric", tcc.name = "grad_norm"}
// The inverse of the loss scale (a state argument); the loss gradient's own
// division by the count of labelled positions comes before it.
// FP16:         %[[INV:.+]] = tcc.div %{{[^,]+}}, %arg{{[0-9]+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16:         %[[RAW:.+]] = tcc.global_norm %[[GW:[^,]+]], %[[GB:[^ ]+]] :
// FP16:         %[[N:.+]] = tcc.mul %[[RAW]], %[[INV]]
// FP16:         %[[K:.+]] = tcc.minimum
// FP16:         %[[F:.+]] = tcc.mul %[[INV]], %[[K]]
// FP16-NOT:     tcc.reduce_sum %[[GW]]
// FP16:         %[[Z:.+]] = tcc.mul %[[RAW]], %{{.+}}
// FP16:         %[[FIN:.+]] = tcc.compare "eq", %[[Z]]
// FP16:         tcc.adamw_update %{{[^,]+}}, %[[GW]], {{.+}} unscale %[[F]] if %[[FIN]]
// FP16:         return %{{.+}}, %[[N]],

// FP16SGD-LABEL: func.func @train_step
// FP16SGD:         %[[RAW:.+]] = tcc.global_norm %[[GW:[^,]+]], %[[GB:[^ ]+]] :
// FP16SGD:         tcc.minimum
// FP16SGD:         %[[F:.+]] = tcc.mul %{{.+}}, %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16SGD:         %[[U:.+]] = tcc.mul %[[GW]], %[[F]] : (tensor<16x8xf32>, tensor<f32>)
// FP16SGD:         tcc.sgd_update %{{[^,]+}}, %[[U]]

// BF16-LABEL: func.func @train_step
// BF16:         %[[GW:.+]] = tcc.matmul {{.+}} : (tensor<4x16xbf16>, tensor<4x8xbf16>) -> tensor<16x8xf32>
// BF16:         %[[N:.+]] = tcc.global_norm %[[GW]], %[[GB:[^ ]+]] : tensor<16x8xf32>, tensor<16xf32>
// BF16:         %[[K:.+]] = tcc.minimum
// BF16:         %[[CW:.+]] = tcc.mul %[[GW]], %[[K]] : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
