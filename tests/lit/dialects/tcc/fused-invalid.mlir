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

// -----

func.func @in_place_odd(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{in_place has 1 entries; it lists (result, operand) pairs}}
  %r = tcc.fused(%x) {in_place = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = tcc.neg %a : tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @in_place_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{in_place pair (0, 1) names no result/operand (the op has 1 results and 1 operands)}}
  %r = tcc.fused(%x) {in_place = array<i64: 0, 1>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = tcc.neg %a : tensor<4xf32>
    tcc.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @in_place_type(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{in_place pair (0, 0): result 'tensor<4xbf16>' cannot be written over operand 'tensor<4xf32>' (element type and count must match)}}
  %r = tcc.fused(%x) {in_place = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xf32>):
    %n = tcc.cast %a : tensor<4xf32> -> tensor<4xbf16>
    tcc.yield %n : tensor<4xbf16>
  }
  return %r : tensor<4xbf16>
}
