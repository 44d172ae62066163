// RUN: tcc-opt %s --tcc-autodiff --split-input-file -verify-diagnostics

// expected-error @+1 {{tcc-autodiff: no func.func @train_step with a body (run tcc-build-loss first)}}
module {
  func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    return %x : tensor<2x3xf32>
  }
}

// -----

// expected-error @+1 {{tcc-autodiff: result 0 of @train_step must be the loss ({tcc.kind = "loss"})}}
func.func @train_step(%p: tensor<f32> {tcc.kind = "param", tcc.name = "p"}) -> tensor<f32> {
  return %p : tensor<f32>
}

// -----

// expected-error @+1 {{tcc-autodiff: the loss must be a scalar float tensor, got 'tensor<2xf32>'}}
func.func @train_step(%p: tensor<2xf32> {tcc.kind = "param", tcc.name = "p"})
    -> (tensor<2xf32> {tcc.kind = "loss"}) {
  return %p : tensor<2xf32>
}

// -----

// expected-error @+1 {{tcc-autodiff: @train_step already has gradient results}}
func.func @train_step(%p: tensor<f32> {tcc.kind = "param", tcc.name = "p"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<f32> {tcc.kind = "grad", tcc.name = "p"}) {
  return %p, %p : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{tcc-autodiff: param #0 is not a float tensor: 'tensor<4xi64>'}}
func.func @train_step(%p: tensor<4xi64> {tcc.kind = "param", tcc.name = "p"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %l = tcc.softmax_cross_entropy %x, %p : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tcc-autodiff: param #1 has no tcc.name}}
func.func @train_step(%x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
                      %p: tensor<4x3xf32> {tcc.kind = "param"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %l = tcc.mse_loss %x, %p : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op between a param and the loss without a gradient rule.
func.func @train_step(%p: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "p"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  // expected-error @+1 {{tcc-autodiff: 'tcc.relu_grad' lies between a param and the loss but has no gradient rule (GradientOpInterface)}}
  %g = tcc.relu_grad %x, %p : tensor<4x3xf32>
  %l = tcc.mse_loss %g, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The same op off the param-to-loss path is fine: only data flows through it.
func.func @train_step(%p: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "p"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
                      %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  %g = tcc.relu_grad %x, %t : tensor<4x3xf32>
  %y = tcc.add %g, %p : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = tcc.mse_loss %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// tcc.attention has no mask gradient: a mask computed from a param is an
// error (tcc-fuse-attention never builds one).
func.func @train_step(%q: tensor<2x3x4xf32> {tcc.kind = "param", tcc.name = "q"},
                      %m: tensor<3x3xf32> {tcc.kind = "param", tcc.name = "m"},
                      %t: tensor<2x3x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  // expected-error @+2 {{tcc-autodiff: the gradient rule of 'tcc.attention' gives no gradient for operand #3, which depends on a param}}
  // expected-note @+1 {{tcc.attention has no gradient for its mask: a mask computed from a parameter must stay unfused (tcc-fuse-attention leaves such graphs alone), or freeze it (--freeze)}}
  %o, %lse = tcc.attention %q, %q, %q, %m {scale = 0.5 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x3xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  %l = tcc.mse_loss %o, %t : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ... and none for its log-sum-exp.
func.func @train_step(%q: tensor<2x3x4xf32> {tcc.kind = "param", tcc.name = "q"},
                      %t: tensor<2x3xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  // expected-error @+1 {{tcc.attention: the loss depends on the log-sum-exp result, which has no gradient rule (only the attention output is differentiable)}}
  %o, %lse = tcc.attention %q, %q, %q {scale = 0.5 : f64, causal = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  %l = tcc.mse_loss %lse, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A fused-QKV attention (tcc-pack-attention's, formed after autodiff) is
// not differentiated.
func.func @train_step(%x: tensor<2x3x6x4xf32> {tcc.kind = "param", tcc.name = "x"},
                      %t: tensor<2x3x2x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  // expected-error @+1 {{tcc.attention: fused_qkv attention has no gradient rule (it is formed after autodiff, by tcc-pack-attention)}}
  %o, %lse = tcc.attention %x, %x, %x {scale = 0.5 : f64, seq_major = true, fused_qkv = true} : (tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x4xf32>) -> (tensor<2x3x2x4xf32>, tensor<2x2x3xf32>)
  %l = tcc.mse_loss %o, %t : (tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A scatter that multiplies (or takes extrema) has no gradient rule.
func.func @train_step(%p: tensor<3x4xf32> {tcc.kind = "param", tcc.name = "p"},
                      %i: tensor<3x2xi64> {tcc.kind = "input", tcc.name = "i"},
                      %u: tensor<3x2xf32> {tcc.kind = "input", tcc.name = "u"})
    -> (tensor<f32> {tcc.kind = "loss"}) {
  // expected-error @+1 {{tcc-autodiff: 'tcc.scatter_elements' with reduction 'mul' lies between a param and the loss but has no gradient (only 'none' and 'add' are differentiable)}}
  %s = tcc.scatter_elements "mul", %p, %i, %u {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %l = tcc.reduce_sum %s {axes = array<i64: 0, 1>} : tensor<3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
