// RUN: tcc-opt %s --split-input-file --verify-diagnostics

func.func @yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yields 1 values whose types differ from the op's result types}}
  %r = tcc.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %m = tcc.reduce_sum %a {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    tcc.yield %m : tensor<f32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @arg_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body argument #0 has type 'tensor<2x2xf32>' but operand #0 has type 'tensor<4xf32>'}}
  %r = tcc.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    %n = tcc.reshape %a : tensor<2x2xf32> -> tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @arg_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body has 0 arguments but the op has 1 operands}}
  %r = tcc.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
    %c = tcc.constant dense<1.0> : tensor<4xf32>
    tcc.yield %c : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects parent op 'tcc.fused'}}
  tcc.yield %x : tensor<4xf32>
}
