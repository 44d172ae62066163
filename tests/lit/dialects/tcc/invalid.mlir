// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{tcc.matmul: contraction sizes differ: lhs [4,8] and rhs [7,3] give 8 vs 7}}
  // expected-error @+1 {{'tcc.matmul' op failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{tcc.matmul: operands need rank >= 2, got 1 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @matmul_wrong_result(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x4xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Only 16-bit operands may have an f32 result; nothing else changes type.
func.func @matmul_f16_from_bf16(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>) -> tensor<4x3xf16> {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xbf16>' are incompatible with return type(s) of operation 'tensor<4x3xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

func.func @matmul_bf16_from_f32(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xbf16> {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x3xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

func.func @matmul_f32_result_shape(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>) -> tensor<4x4xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xbf16>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @matmul_mixed_operands(%a: tensor<4x8xbf16>, %b: tensor<8x3xf16>) -> tensor<4x3xf32> {
  // expected-error @+2 {{tcc.matmul: element types differ ('bf16' vs 'f16')}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @add_not_broadcastable(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{tcc.add: shapes [4,8] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @element_type_mismatch(%a: tensor<3x4xf32>, %b: tensor<3x4xf16>) -> tensor<3x4xf32> {
  // expected-error @+2 {{tcc.mul: element types differ ('f32' vs 'f16')}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.mul %a, %b : (tensor<3x4xf32>, tensor<3x4xf16>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @reshape_count(%a: tensor<4x8xf32>) -> tensor<30xf32> {
  // expected-error @+1 {{'tcc.reshape' op cannot reshape [4,8] (32 elements) to [30] (30 elements)}}
  %0 = tcc.reshape %a : tensor<4x8xf32> -> tensor<30xf32>
  return %0 : tensor<30xf32>
}

// -----

func.func @reshape_element_type(%a: tensor<4x8xf32>) -> tensor<32xf16> {
  // expected-error @+1 {{'tcc.reshape' op element type changes from 'f32' to 'f16'}}
  %0 = tcc.reshape %a : tensor<4x8xf32> -> tensor<32xf16>
  return %0 : tensor<32xf16>
}

// -----

func.func @broadcast_to(%a: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tcc.broadcast_to' op cannot broadcast [3] to [4,8]}}
  %0 = tcc.broadcast_to %a : tensor<3xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @transpose_perm(%a: tensor<3x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{tcc.transpose: perm is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.transpose %a {perm = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @transpose_perm_size(%a: tensor<3x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{tcc.transpose: perm has 3 entries for a rank-2 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<3x4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @reduce_axes(%a: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{tcc.reduce_sum: axes must be sorted, unique and in [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.reduce_sum %a {axes = array<i64: 2>} : tensor<3x4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_axes_unsorted(%a: tensor<2x3x4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{tcc.reduce_mean: axes must be sorted, unique and in [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.reduce_mean %a {axes = array<i64: 2, 0>} : tensor<2x3x4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @softmax_axis(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{tcc.softmax: axis 2 is out of range for rank 2}}
  %0 = tcc.softmax %a {axis = 2 : i64} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @log_softmax_missing_axis(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{tcc.log_softmax: requires attribute 'axis'}}
  %0 = tcc.log_softmax %a : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @softmax_grad_axis(%dy: tensor<3x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'tcc.softmax_grad' op axis -1 is out of range for rank 2}}
  %0 = tcc.softmax_grad %dy, %y {axis = -1 : i64} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @log_softmax_grad_axis(%dy: tensor<3x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'tcc.log_softmax_grad' op axis 5 is out of range for rank 2}}
  %0 = tcc.log_softmax_grad %dy, %y {axis = 5 : i64} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @relu_grad_types(%dy: tensor<4x8xf32>, %x: tensor<4x9xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tcc.relu_grad' op failed to verify that all of {grad, input, result} have same type}}
  %0 = "tcc.relu_grad"(%dy, %x) : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @labels_shape(%logits: tensor<3x4xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+2 {{tcc.softmax_cross_entropy: labels have shape [4], expected [3] (the logits' shape without its class axis)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.softmax_cross_entropy %logits, %labels : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @labels_type(%logits: tensor<3x4xf32>, %labels: tensor<3xi32>) -> tensor<f32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 64-bit signless integer values}}
  %0 = tcc.softmax_cross_entropy %logits, %labels : (tensor<3x4xf32>, tensor<3xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_smoothing(%logits: tensor<3x4xf32>, %labels: tensor<3xi64>) -> tensor<f32> {
  // expected-error @+1 {{'tcc.softmax_cross_entropy' op label_smoothing must be in [0, 1], got 2}}
  %0 = tcc.softmax_cross_entropy %logits, %labels {label_smoothing = 2.0 : f64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @mse_types(%p: tensor<3x4xf32>, %t: tensor<3x1xf32>) -> tensor<f32> {
  // expected-error @+2 {{tcc.mse_loss: prediction 'tensor<3x4xf32>' and target 'tensor<3x1xf32>' differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tcc.mse_loss %p, %t : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @adamw_step_not_scalar(%p: tensor<10xf32>, %t: tensor<1xf32>, %lr: tensor<f32>) -> tensor<10xf32> {
  // expected-error @+1 {{operand #4 must be 0D tensor of floating-point values}}
  %p1, %m1, %v1 = "tcc.adamw_update"(%p, %p, %p, %p, %t, %lr) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0>}> : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<1xf32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  return %p1 : tensor<10xf32>
}

// -----

func.func @adamw_unscale_without_flag(%p: tensor<10xf32>, %t: tensor<f32>) -> tensor<10xf32> {
  // expected-error @+1 {{takes `unscale` and `if` together (fp16 loss scaling's inverse scale and finiteness flag)}}
  %p1, %m1, %v1 = "tcc.adamw_update"(%p, %p, %p, %p, %t, %t, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0>}> : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  return %p1 : tensor<10xf32>
}

// -----

func.func @adamw_flag_not_bool(%p: tensor<10xf32>, %t: tensor<f32>) -> tensor<10xf32> {
  // expected-error @+1 {{operand #7 must be 0D tensor of 1-bit signless integer values}}
  %p1, %m1, %v1 = "tcc.adamw_update"(%p, %p, %p, %p, %t, %t, %t, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>}> : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  return %p1 : tensor<10xf32>
}

// -----

func.func @adamw_low_copy_not_16_bit(%p: tensor<10xf32>, %t: tensor<f32>) -> tensor<10xf32> {
  // expected-error @+1 {{the 16-bit copy of the new parameter must be a bf16 or f16 tensor of an f32 parameter's shape, got 'tensor<10xf32>' for 'tensor<10xf32>'}}
  %p1, %m1, %v1, %l1 = tcc.adamw_update %p, %p, %p, %p, %t, %t {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32> -> tensor<10xf32>
  return %p1 : tensor<10xf32>
}

// -----

func.func @adamw_low_copy_shape(%p: tensor<10xf32>, %t: tensor<f32>) -> tensor<10xf32> {
  // expected-error @+1 {{the 16-bit copy of the new parameter must be a bf16 or f16 tensor of an f32 parameter's shape, got 'tensor<5xbf16>' for 'tensor<10xf32>'}}
  %p1, %m1, %v1, %l1 = tcc.adamw_update %p, %p, %p, %p, %t, %t {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32> -> tensor<5xbf16>
  return %p1 : tensor<10xf32>
}
