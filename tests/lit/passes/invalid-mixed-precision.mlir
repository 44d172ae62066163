// RUN: tcc-opt %s --tcc-mixed-precision=precision=fp16 --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-mixed-precision=precision=fp64 --split-input-file 2>&1 | FileCheck %s --check-prefix=PREC

// PREC: error: tcc-mixed-precision: precision must be fp32, bf16 or fp16, got 'fp64'

// A loss whose gradient is not in the function cannot be scaled.
module {
  // expected-error @+1 {{tcc-mixed-precision: fp16 loss scaling needs the gradient of a tcc.softmax_cross_entropy, tcc.linear_cross_entropy or tcc.mse_loss loss in @train_step}}
  func.func @train_step(%x: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "x"},
                        %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<4x3xf32> {tcc.kind = "update", tcc.name = "x"}) {
    %l = tcc.softmax_cross_entropy %x, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    %lr6 = tcc.constant dense<1.000000e-01> : tensor<f32>
    %new = tcc.sgd_update %x, %x, %lr6 {weight_decay = 0.000000e+00 : f64} : tensor<4x3xf32>
    return %l, %new : tensor<f32>, tensor<4x3xf32>
  }
}
