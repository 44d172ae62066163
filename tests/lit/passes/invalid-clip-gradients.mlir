// RUN: tcc-opt %s --tcc-clip-gradients=max-norm=1 --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-clip-gradients=max-norm=-1 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not tcc-opt %s --tcc-clip-gradients=max-norm=inf 2>&1 | FileCheck %s --check-prefix=INF

// NEG: tcc-clip-gradients: max-norm must be a positive finite number (0: no clipping), got -1
// INF: tcc-clip-gradients: max-norm must be a positive finite number (0: no clipping), got INF

// expected-error @+1 {{tcc-clip-gradients: @train_step has no gradients to clip (no trainable parameter, or tcc-autodiff has not run)}}
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "state", tcc.name = "w"}) -> (tensor<f32> {tcc.kind = "loss"}) {
  %l = tcc.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tcc-clip-gradients: no func.func @train_step with a body (run tcc-build-loss and tcc-autodiff first)}}
module {
  func.func @forward(%w: tensor<3xf32>) -> tensor<3xf32> {
    return %w : tensor<3xf32>
  }
}
