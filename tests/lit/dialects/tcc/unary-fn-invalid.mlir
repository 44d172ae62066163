// RUN: tcc-opt %s -split-input-file -verify-diagnostics

// The function must be one of runtime/core/prelude/UnaryFn.h's list.

func.func @unknown_fn(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.unary_fn' op fn must be one of abs, sign, floor, ceil, round, sin, cos, hard_swish, hard_sigmoid, leaky_relu, elu, selu, softplus, mish, clip, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, softsign, shrink, celu, thresholded_relu, norm_sqrt; got "tanz"}}
  %0 = tcc.unary_fn "tanz" %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown_grad_fn(%dy: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.unary_fn_grad' op fn must be one of}}
  %0 = tcc.unary_fn_grad "relu6" %dy, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @grad_types(%dy: tensor<4xf32>, %x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{all of {grad, input, result} have same type}}
  %0 = "tcc.unary_fn_grad"(%dy, %x) {fn = "abs"} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @int_input(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = tcc.unary_fn "abs" %x : tensor<4xi64>
  return %0 : tensor<4xi64>
}
