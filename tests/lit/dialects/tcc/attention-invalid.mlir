// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @rank2(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+2 {{tcc.attention: query, key and value need one rank >= 3 ([batch..., rows, features]), got [8,16], [8,16] and [8,16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return %o : tensor<8x16xf32>
}

// -----

func.func @mixed_types(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xbf16>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{tcc.attention: query, key and value must share one element type (f32, bf16 or f16), got 'f32', 'bf16' and 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %k, %q {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @f64(%q: tensor<2x8x16xf64>) -> tensor<2x8x16xf64> {
  // expected-error @+2 {{tcc.attention: query, key and value must share one element type (f32, bf16 or f16), got 'f64', 'f64' and 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x8x16xf64>, tensor<2x8x16xf64>, tensor<2x8x16xf64>) -> (tensor<2x8x16xf64>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xf64>
}

// -----

func.func @batch_broadcast(%q: tensor<2x8x16xf32>, %k: tensor<1x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{tcc.attention: query [2,8,16], key [1,8,16] and value [1,8,16] must have equal batch dimensions (all but the last two)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @head_size(%q: tensor<2x8x16xf32>, %k: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+2 {{tcc.attention: query [2,8,16] and key [2,8,8] differ in the feature size (last dimension): 16 vs 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x8xf32>
}

// -----

func.func @key_length(%q: tensor<2x8x16xf32>, %k: tensor<2x6x16xf32>, %v: tensor<2x5x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{tcc.attention: key [2,6,16] and value [2,5,16] differ in the key length (dimension -2): 6 vs 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x6x16xf32>, tensor<2x5x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @mask_bf16(%q: tensor<2x8x16xbf16>, %m: tensor<8x8xbf16>) -> tensor<2x8x16xbf16> {
  // expected-error @+2 {{tcc.attention: the mask must be f32, got 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q, %m {scale = 1.0 : f64} : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<8x8xbf16>) -> (tensor<2x8x16xbf16>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xbf16>
}

// -----

func.func @mask_rank(%q: tensor<2x3x8x16xf32>, %m: tensor<1x8x8xf32>) -> tensor<2x3x8x16xf32> {
  // expected-error @+2 {{tcc.attention: the mask [1,8,8] must have rank 2 or 4 (the batch entries' dimensions [2,3] and two more)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q, %m {scale = 1.0 : f64} : (tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<1x8x8xf32>) -> (tensor<2x3x8x16xf32>, tensor<2x3x8xf32>)
  return %o : tensor<2x3x8x16xf32>
}

// -----

func.func @mask_partial_batch(%q: tensor<2x3x8x16xf32>, %m: tensor<2x1x1x8xf32>) -> tensor<2x3x8x16xf32> {
  // expected-error @+2 {{tcc.attention: the mask [2,1,1,8] must have batch dimensions all 1 or equal to the query's [2,3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q, %m {scale = 1.0 : f64} : (tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x1x1x8xf32>) -> (tensor<2x3x8x16xf32>, tensor<2x3x8xf32>)
  return %o : tensor<2x3x8x16xf32>
}

// -----

func.func @mask_shape(%q: tensor<2x8x16xf32>, %m: tensor<8x4xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{tcc.attention: the mask [8,4] does not broadcast to the scores [..., 8, 8]: each of its last two dimensions must be 1 or full}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q, %m {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8x4xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @scale_inf(%q: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'tcc.attention' op scale must be finite, got INF}}
  %o, %l = tcc.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @wrong_result(%q: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{'tcc.attention' op inferred type(s) 'tensor<2x8x16xf32>', 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x8x16xf32>', 'tensor<2x8xbf16>'}}
  // expected-error @+1 {{'tcc.attention' op failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xbf16>)
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @grad_lse(%q: tensor<2x8x16xbf16>, %lse: tensor<2x8xbf16>) -> tensor<2x8x16xbf16> {
  // expected-error @+2 {{tcc.attention_grad: lse is 'tensor<2x8xbf16>', expected 'tensor<2x8xf32>' (from query, key and value)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %q, %lse, %q {scale = 1.0 : f64} : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8xbf16>, tensor<2x8x16xbf16>) -> (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>)
  return %dq : tensor<2x8x16xbf16>
}

// -----

func.func @grad_dout(%q: tensor<2x8x16xf32>, %lse: tensor<2x8xf32>, %do: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{tcc.attention_grad: grad is 'tensor<2x8x8xf32>', expected 'tensor<2x8x16xf32>' (from query, key and value)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %q, %lse, %do {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x8xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return %dq : tensor<2x8x16xf32>
}

// -----

func.func @grad_mask(%q: tensor<2x8x16xf32>, %lse: tensor<2x8xf32>, %m: tensor<3x8x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{tcc.attention_grad: the mask [3,8,8] must have batch dimensions all 1 or equal to the query's [2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %q, %lse, %q, %m {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<3x8x8xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return %dq : tensor<2x8x16xf32>
}

// -----

// Sequence-major ([B..., T, H, D]): the heads are a batch dimension.
func.func @seq_major_heads(%q: tensor<8x4x16xf32>, %k: tensor<6x2x16xf32>) -> tensor<8x4x16xf32> {
  // expected-error @+2 {{tcc.attention: query [8,4,16], key [6,2,16] and value [6,2,16] must have equal batch dimensions (all but the last three, and the heads)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %k, %k {scale = 1.0 : f64, seq_major = true} : (tensor<8x4x16xf32>, tensor<6x2x16xf32>, tensor<6x2x16xf32>) -> (tensor<8x4x16xf32>, tensor<4x8xf32>)
  return %o : tensor<8x4x16xf32>
}

// -----

func.func @seq_major_key_length(%q: tensor<8x4x16xf32>, %k: tensor<6x4x16xf32>, %v: tensor<5x4x16xf32>) -> tensor<8x4x16xf32> {
  // expected-error @+2 {{tcc.attention: key [6,4,16] and value [5,4,16] differ in the key length (dimension -3): 6 vs 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %k, %v {scale = 1.0 : f64, seq_major = true} : (tensor<8x4x16xf32>, tensor<6x4x16xf32>, tensor<5x4x16xf32>) -> (tensor<8x4x16xf32>, tensor<4x8xf32>)
  return %o : tensor<8x4x16xf32>
}

// -----

// The lse of sequence-major operands is [entries..., Tq]: [H, Tq] here.
func.func @seq_major_lse(%q: tensor<8x4x16xf32>, %lse: tensor<8x4xf32>) -> tensor<8x4x16xf32> {
  // expected-error @+2 {{tcc.attention_grad: lse is 'tensor<8x4xf32>', expected 'tensor<4x8xf32>' (from query, key and value)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %q, %lse, %q {scale = 1.0 : f64, seq_major = true} : (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4xf32>, tensor<8x4x16xf32>) -> (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>)
  return %dq : tensor<8x4x16xf32>
}

// -----

func.func @seq_major_mask(%q: tensor<2x8x3x16xf32>, %m: tensor<2x1x8x8xf32>) -> tensor<2x8x3x16xf32> {
  // expected-error @+2 {{tcc.attention: the mask [2,1,8,8] must have batch dimensions all 1 or equal to the query's [2,3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %q, %q, %q, %m {scale = 1.0 : f64, seq_major = true} : (tensor<2x8x3x16xf32>, tensor<2x8x3x16xf32>, tensor<2x8x3x16xf32>, tensor<2x1x8x8xf32>) -> (tensor<2x8x3x16xf32>, tensor<2x3x8xf32>)
  return %o : tensor<2x8x3x16xf32>
}

// -----

// fused_qkv: one projection [B..., T, 3H, D], sequence-major.
func.func @fused_qkv_not_seq_major(%x: tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+2 {{tcc.attention: fused_qkv operands need the sequence-major layout (seq_major)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %x, %x, %x {scale = 1.0 : f64, fused_qkv = true} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xf32>
}

// -----

func.func @fused_qkv_three_values(%x: tensor<2x8x12x16xf32>, %y: tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+2 {{tcc.attention: fused_qkv: query, key and value must be one value, the projection [batch..., rows, 3 * heads, features]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = tcc.attention %x, %y, %x {scale = 1.0 : f64, seq_major = true, fused_qkv = true} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xf32>
}

// -----

func.func @fused_qkv_heads(%x: tensor<2x8x10x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+2 {{tcc.attention_grad: fused_qkv: the projection [2,8,10,16] needs rank >= 3 and a head dimension (-2) that is a multiple of 3 (query, key and value heads)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = tcc.attention_grad %x, %x, %x, %x, %x, %x {scale = 1.0 : f64, seq_major = true, fused_qkv = true} : (tensor<2x8x10x16xf32>, tensor<2x8x10x16xf32>, tensor<2x8x10x16xf32>, tensor<2x8x10x16xf32>, tensor<2x8x10x16xf32>, tensor<2x8x10x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  return %dq : tensor<2x8x4x16xf32>
}

// -----

func.func @column_sums_unfused(%q: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %o, %l = tcc.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  // expected-error @+2 {{tcc.attention_grad: column_sums needs fused_qkv (the sums are the projection gradient's)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %o, %l, %o {scale = 1.0 : f64, column_sums = true} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return %dq : tensor<2x8x16xf32>
}
