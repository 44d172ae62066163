// RUN: tcc-opt %s --tcc-accumulate-gradients=steps=2 --split-input-file -verify-diagnostics

// expected-error @+1 {{tcc-accumulate-gradients: @train_step has no grad results (run tcc-autodiff first)}}
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"}) -> (tensor<f32> {tcc.kind = "loss"}) {
  %l = tcc.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tcc-accumulate-gradients: no @train_step (run tcc-build-loss and tcc-autodiff first)}}
module {
  func.func @forward(%w: tensor<3xf32>) -> tensor<3xf32> {
    return %w : tensor<3xf32>
  }
}
