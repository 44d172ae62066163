// RUN: tcc-opt %s -split-input-file -verify-diagnostics

// Shape and attribute errors of the math, normalization and dropout ops.

func.func @pow_not_broadcastable(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{tcc.pow: shapes [4,8] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.pow %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @sigmoid_grad_types(%dy: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{all of {grad, value, result} have same type}}
  %0 = "tcc.sigmoid_grad"(%dy, %y) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gelu_approximate(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = tcc.gelu %x {approximate = "fast"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gelu_grad_approximate(%dy: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.gelu_grad' op approximate must be "none" or "tanh", got "erf"}}
  %0 = tcc.gelu_grad %dy, %x {approximate = "erf"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{tcc.layer_norm: axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %r = tcc.layer_norm %x, %s, %s {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %y : tensor<2x4xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+2 {{tcc.layer_norm: scale has shape [4], expected the normalized shape [3,4] (input [2,3,4] from axis 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %r = tcc.layer_norm %x, %s, %s {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @layer_norm_stats_shape(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>', 'tensor<2x1xf32>', 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>', 'tensor<2xf32>', 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %r = tcc.layer_norm %x, %s, %s {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>)
  return %y : tensor<2x4xf32>
}

// -----

func.func @layer_norm_param_grad_axis(%dy: tensor<2x4xf32>, %x: tensor<2x4xf32>, %m: tensor<2x1xf32>, %r: tensor<2x1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.layer_norm_param_grad' op axis 2 is out of range for rank 2}}
  %ds, %db = tcc.layer_norm_param_grad %dy, %x, %m, %r {axis = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %ds : tensor<4xf32>
}

// -----

func.func @layer_norm_param_grad_shapes(%dy: tensor<2x5xf32>, %x: tensor<2x4xf32>, %m: tensor<2x1xf32>, %r: tensor<2x1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.layer_norm_param_grad' op grad 'tensor<2x5xf32>' and input 'tensor<2x4xf32>' differ in shape}}
  %ds, %db = tcc.layer_norm_param_grad %dy, %x, %m, %r {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %ds : tensor<4xf32>
}

// -----

func.func @layer_norm_param_grad_stats(%dy: tensor<2x4xbf16>, %x: tensor<2x4xbf16>, %m: tensor<2x1xbf16>, %r: tensor<2x1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.layer_norm_param_grad' op mean is 'tensor<2x1xbf16>', expected 'tensor<2x1xf32>'}}
  %ds, %db = tcc.layer_norm_param_grad %dy, %x, %m, %r {axis = 1 : i64} : (tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<2x1xbf16>, tensor<2x1xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %ds : tensor<4xf32>
}

// -----

func.func @layer_norm_param_grad_result(%dy: tensor<2x4xf32>, %x: tensor<2x4xf32>, %m: tensor<2x1xf32>, %r: tensor<2x1xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'tcc.layer_norm_param_grad' op bias_grad is 'tensor<4xbf16>', expected the f32 normalized shape 'tensor<4xf32>'}}
  %ds, %db = tcc.layer_norm_param_grad %dy, %x, %m, %r {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<4xf32>, tensor<4xbf16>)
  return %db : tensor<4xbf16>
}

// -----

func.func @layer_norm_grad_mean(%dy: tensor<2x4xf32>, %x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2xf32>, %r: tensor<2x1xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{tcc.layer_norm_grad: mean is 'tensor<2xf32>', expected 'tensor<2x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %ds, %db = tcc.layer_norm_grad %dy, %x, %s, %m, %r {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2x1xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %dx : tensor<2x4xf32>
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.dropout' op ratio must be in [0, 1], got 1.5}}
  %y, %m = tcc.dropout %x, %step {ratio = 1.5 : f64, seed = 1 : i64} : tensor<4xf32>, tensor<i64>
  return %y : tensor<4xf32>
}

// -----

func.func @dropout_step_type(%x: tensor<4xf32>, %step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #1 must be 0D tensor of 64-bit signless integer values}}
  %y, %m = "tcc.dropout"(%x, %step) {ratio = 0.5 : f64, seed = 1 : i64} : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4xf32>
}

// -----

func.func @random_low_high(%step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.random' op uniform needs low <= high, got 2.000000e+00 and 1.000000e+00}}
  %y = tcc.random %step {a = 2.0 : f64, b = 1.0 : f64, seed = 1 : i64} : tensor<i64> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @random_dynamic(%step: tensor<i64>) -> tensor<?xf32> {
  // expected-error @+1 {{'tcc.random' op the result must have a static shape}}
  %y = tcc.random %step {a = 0.0 : f64, b = 1.0 : f64, seed = 1 : i64} : tensor<i64> -> tensor<?xf32>
  return %y : tensor<?xf32>
}
