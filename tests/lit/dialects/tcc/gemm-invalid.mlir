// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @unknown(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op unknown epilogue "bias_sigmoid"; expected bias, relu, bias_relu, gelu_tanh, bias_gelu_tanh, gelu_tanh_aux, bias_gelu_tanh_aux, bgrad_lhs, bgrad_rhs, dgelu_tanh, dgelu_tanh_bgrad}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "bias_sigmoid"} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @missing_bias(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the bias_relu epilogue needs bias operand}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "bias_relu"} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @extra_bias(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the relu epilogue takes no bias operand}}
  %y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "relu"} : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @bias_shape(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<1x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op bias must be 'tensor<16xf32>', got 'tensor<1x16xf32>'}}
  %y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "bias"} : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @transposed_lhs(%x: tensor<4x8xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the bias epilogue takes lhs without transpose_lhs}}
  %y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "bias", transpose_lhs = true} : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @batched_rhs(%x: tensor<2x8x4xf32>, %w: tensor<2x4x16xf32>, %b: tensor<16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op rhs must be 2-D, got [2,4,16]}}
  %y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "bias"} : (tensor<2x8x4xf32>, tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @contraction(%x: tensor<8x5xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op contraction sizes differ: lhs [8,5] and rhs [4,16] give 5 vs 4}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "relu"} : (tensor<8x5xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @result_shape(%x: tensor<2x8x4xf32>, %w: tensor<4x16xf32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op result shape [16,16] should be [2,8,16]}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "relu"} : (tensor<2x8x4xf32>, tensor<4x16xf32>) -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

// An f32 result from 16-bit operands is for the bias-gradient forms only.
func.func @element_types(%x: tensor<8x4xbf16>, %w: tensor<4x16xbf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the result's element type must be the operands' 'bf16' (or f32 with the bgrad_lhs and bgrad_rhs epilogues), got 'f32'}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "relu"} : (tensor<8x4xbf16>, tensor<4x16xbf16>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @bgrad_mixed_operands(%x: tensor<32x4xbf16>, %dy: tensor<32x16xf16>) -> (tensor<4x16xf32>, tensor<16xf32>) {
  // expected-error @+1 {{'tcc.matmul_epilogue' op lhs and rhs must share an element type, got 'bf16' and 'f16'}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xf16>) -> (tensor<4x16xf32>, tensor<16xf32>)
  return %dw, %db : tensor<4x16xf32>, tensor<16xf32>
}

// -----

func.func @bgrad_f16_from_bf16(%x: tensor<32x4xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<4x16xf16>, tensor<16xf32>) {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the result's element type must be the operands' 'bf16' (or f32 with the bgrad_lhs and bgrad_rhs epilogues), got 'f16'}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xf16>, tensor<16xf32>)
  return %dw, %db : tensor<4x16xf16>, tensor<16xf32>
}

// -----

func.func @bgrad_bf16_from_f32(%x: tensor<32x4xf32>, %dy: tensor<32x16xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>) {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the result's element type must be the operands' 'f32', got 'bf16'}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xf32>, tensor<32x16xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>)
  return %dw, %db : tensor<4x16xbf16>, tensor<16xf32>
}

// -----

func.func @bgrad_f16_aux(%x: tensor<32x4xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<4x16xf32>, tensor<16xf16>) {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the bias gradient must be 'tensor<16xbf16>' or 'tensor<16xf32>', got 'tensor<16xf16>'}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xf32>, tensor<16xf16>)
  return %dw, %db : tensor<4x16xf32>, tensor<16xf16>
}

// -----

func.func @f64(%x: tensor<8x4xf64>, %w: tensor<4x16xf64>) -> tensor<8x16xf64> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op element type must be f32, bf16 or f16, got 'f64'}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "relu"} : (tensor<8x4xf64>, tensor<4x16xf64>) -> tensor<8x16xf64>
  return %y : tensor<8x16xf64>
}

// -----

func.func @aux_missing(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the gelu_tanh_aux epilogue has two results}}
  %y = tcc.matmul_epilogue %x, %w {epilogue = "gelu_tanh_aux"} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @aux_type(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the pre-activation result must have the result's type 'tensor<8x16xf32>', got 'tensor<8x16xf16>'}}
  %y, %p = tcc.matmul_epilogue %x, %w {epilogue = "gelu_tanh_aux"} : (tensor<8x4xf32>, tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf16>)
  return %y : tensor<8x16xf32>
}

// -----

func.func @bgrad_lhs_transpose(%dy: tensor<32x16xf32>, %x: tensor<32x4xf32>) -> tensor<32x4xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op bgrad_lhs sums the transposed lhs: it needs transpose_lhs}}
  %dw, %db = tcc.matmul_epilogue %dy, %x {epilogue = "bgrad_lhs"} : (tensor<32x16xf32>, tensor<32x4xf32>) -> (tensor<32x4xf32>, tensor<32xf32>)
  return %dw : tensor<32x4xf32>
}

// -----

func.func @bgrad_rhs_transpose(%x: tensor<32x4xf32>, %dy: tensor<16x32xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op bgrad_rhs sums the non-transposed rhs: it cannot have transpose_rhs}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true, transpose_rhs = true} : (tensor<32x4xf32>, tensor<16x32xf32>) -> (tensor<4x16xf32>, tensor<16xf32>)
  return %dw : tensor<4x16xf32>
}

// -----

func.func @bgrad_shape(%x: tensor<32x4xbf16>, %dy: tensor<32x16xbf16>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the bias gradient must be 'tensor<16xbf16>' or 'tensor<16xf32>', got 'tensor<4xf16>'}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xbf16>, tensor<4xf16>)
  return %dw : tensor<4x16xbf16>
}

// -----

func.func @bgrad_2d(%x: tensor<2x32x4xf32>, %dy: tensor<32x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the bgrad_rhs epilogue needs a 2-D lhs, got [2,32,4]}}
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<2x32x4xf32>, tensor<32x16xf32>) -> (tensor<2x4x16xf32>, tensor<16xf32>)
  return %dw : tensor<2x4x16xf32>
}

// -----

func.func @preact_missing(%g: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op the dgelu_tanh epilogue needs preact operand}}
  %y = tcc.matmul_epilogue %g, %w {epilogue = "dgelu_tanh"} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @preact_type(%g: tensor<8x4xf32>, %w: tensor<4x16xf32>, %z: tensor<8x16xbf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tcc.matmul_epilogue' op preact must have the result's type 'tensor<8x16xf32>', got 'tensor<8x16xbf16>'}}
  %y = tcc.matmul_epilogue %g, %w preact %z {epilogue = "dgelu_tanh"} : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
