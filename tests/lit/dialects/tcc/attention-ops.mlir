// RUN: tcc-opt %s | tcc-opt | FileCheck %s

// tcc.attention and tcc.attention_grad round-trip with and without a mask,
// causal, at rank 3 and 4, with D != Dv and Tq != Tk, in f32 and bf16 (the
// mask and lse stay f32).

// Sequence-major operands: [T, N, D] (nn.MultiheadAttention's head split)
// and [B, T, H, D] with a per-entry mask; lse is [entries..., Tq].
// CHECK-LABEL: func.func @seq_major
// CHECK: tcc.attention %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.250000e-01 : f64, seq_major = true} : (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>) -> (tensor<8x4x16xf32>, tensor<4x8xf32>)
// CHECK: tcc.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 5.000000e-01 : f64, seq_major = true} : (tensor<2x5x3x4xbf16>, tensor<2x7x3x4xbf16>, tensor<2x7x3x6xbf16>, tensor<2x3x5x7xf32>) -> (tensor<2x5x3x6xbf16>, tensor<2x3x5xf32>)
// CHECK: tcc.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.250000e-01 : f64, seq_major = true} : (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<4x8xf32>, tensor<8x4x16xf32>) -> (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>)
func.func @seq_major(%q: tensor<8x4x16xf32>, %q4: tensor<2x5x3x4xbf16>,
                     %k4: tensor<2x7x3x4xbf16>, %v4: tensor<2x7x3x6xbf16>,
                     %m4: tensor<2x3x5x7xf32>)
    -> (tensor<8x4x16xf32>, tensor<2x5x3x6xbf16>) {
  %o, %lse = tcc.attention %q, %q, %q {scale = 0.125 : f64, causal = true, seq_major = true} : (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>) -> (tensor<8x4x16xf32>, tensor<4x8xf32>)
  %o4, %lse4 = tcc.attention %q4, %k4, %v4, %m4 {scale = 0.5 : f64, seq_major = true} : (tensor<2x5x3x4xbf16>, tensor<2x7x3x4xbf16>, tensor<2x7x3x6xbf16>, tensor<2x3x5x7xf32>) -> (tensor<2x5x3x6xbf16>, tensor<2x3x5xf32>)
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %o, %lse, %o {scale = 0.125 : f64, causal = true, seq_major = true} : (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<4x8xf32>, tensor<8x4x16xf32>) -> (tensor<8x4x16xf32>, tensor<8x4x16xf32>, tensor<8x4x16xf32>)
  return %dq, %o4 : tensor<8x4x16xf32>, tensor<2x5x3x6xbf16>
}

// q, k and v inside one fused QKV projection [B, T, 3H, D]: the results
// are those of its thirds [B, T, H, D]; the gradient is the projection's.
// CHECK-LABEL: func.func @fused_qkv
// CHECK: tcc.attention %[[X:.+]], %[[X]], %[[X]] {causal = true, fused_qkv = true, scale = 1.250000e-01 : f64, seq_major = true} : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
// CHECK: tcc.attention_grad %[[X]], %[[X]], %[[X]], %{{.+}}, %{{.+}}, %{{.+}} {causal = true, fused_qkv = true, scale = 1.250000e-01 : f64, seq_major = true} : {{.+}} -> tensor<2x8x12x16xbf16>
func.func @fused_qkv(%x: tensor<2x8x12x16xbf16>) -> tensor<2x8x12x16xbf16> {
  %o, %lse = tcc.attention %x, %x, %x {scale = 0.125 : f64, causal = true, seq_major = true, fused_qkv = true} : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  %dx = tcc.attention_grad %x, %x, %x, %o, %lse, %o {scale = 0.125 : f64, causal = true, seq_major = true, fused_qkv = true} : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>, tensor<2x8x4x16xbf16>) -> tensor<2x8x12x16xbf16>
  return %dx : tensor<2x8x12x16xbf16>
}

// With column_sums, also the projection gradient's column sums: f32 [3HD].
// CHECK-LABEL: func.func @fused_qkv_column_sums
// CHECK: %{{.+}}:2 = tcc.attention_grad {{.+}} {column_sums = true, fused_qkv = true, scale = 1.250000e-01 : f64, seq_major = true} : {{.+}} -> (tensor<2x8x12x16xbf16>, tensor<192xf32>)
func.func @fused_qkv_column_sums(%x: tensor<2x8x12x16xbf16>, %o: tensor<2x8x4x16xbf16>, %lse: tensor<2x4x8xf32>) -> (tensor<2x8x12x16xbf16>, tensor<192xf32>) {
  %dx, %db = tcc.attention_grad %x, %x, %x, %o, %lse, %o {scale = 0.125 : f64, seq_major = true, fused_qkv = true, column_sums = true} : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x12x16xbf16>, tensor<192xf32>)
  return %dx, %db : tensor<2x8x12x16xbf16>, tensor<192xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK: %{{.+}}, %{{.+}} = tcc.attention %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.250000e-01 : f64} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>)
// CHECK: %{{.+}}, %{{.+}} = tcc.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 5.000000e-01 : f64} : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x6xf32>, tensor<2x3x1x7xf32>) -> (tensor<2x3x5x6xf32>, tensor<2x3x5xf32>)
// CHECK: %{{.+}}, %{{.+}} = tcc.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.000000e+00 : f64} : (tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<8x8xf32>) -> (tensor<4x8x16xbf16>, tensor<4x8xf32>)
func.func @forward(%q: tensor<4x8x16xf32>, %q4: tensor<2x3x5x4xf32>,
                   %k4: tensor<2x3x7x4xf32>, %v4: tensor<2x3x7x6xf32>,
                   %m4: tensor<2x3x1x7xf32>, %qh: tensor<4x8x16xbf16>,
                   %m: tensor<8x8xf32>)
    -> (tensor<4x8x16xf32>, tensor<2x3x5x6xf32>, tensor<4x8x16xbf16>) {
  %o, %lse = tcc.attention %q, %q, %q {scale = 0.125 : f64, causal = true} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>)
  %o4, %lse4 = tcc.attention %q4, %k4, %v4, %m4 {scale = 0.5 : f64} : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x6xf32>, tensor<2x3x1x7xf32>) -> (tensor<2x3x5x6xf32>, tensor<2x3x5xf32>)
  %oh, %lseh = tcc.attention %qh, %qh, %qh, %m {scale = 1.0 : f64, causal = false} : (tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<8x8xf32>) -> (tensor<4x8x16xbf16>, tensor<4x8xf32>)
  return %o, %o4, %oh : tensor<4x8x16xf32>, tensor<2x3x5x6xf32>, tensor<4x8x16xbf16>
}

// CHECK-LABEL: func.func @backward
// CHECK: %{{.+}}:3 = tcc.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.250000e-01 : f64} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>)
// CHECK: %{{.+}}:3 = tcc.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 5.000000e-01 : f64} : (tensor<2x3x5x4xf16>, tensor<2x3x7x4xf16>, tensor<2x3x7x6xf16>, tensor<2x3x5x6xf16>, tensor<2x3x5xf32>, tensor<2x3x5x6xf16>, tensor<1x1x5x7xf32>) -> (tensor<2x3x5x4xf16>, tensor<2x3x7x4xf16>, tensor<2x3x7x6xf16>)
func.func @backward(%q: tensor<4x8x16xf32>, %lse: tensor<4x8xf32>,
                    %q4: tensor<2x3x5x4xf16>, %k4: tensor<2x3x7x4xf16>,
                    %v4: tensor<2x3x7x6xf16>, %o4: tensor<2x3x5x6xf16>,
                    %lse4: tensor<2x3x5xf32>, %m4: tensor<1x1x5x7xf32>)
    -> (tensor<4x8x16xf32>, tensor<2x3x7x4xf16>) {
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %q, %lse, %q {scale = 0.125 : f64, causal = true} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>)
  %dq4, %dk4, %dv4 = tcc.attention_grad %q4, %k4, %v4, %o4, %lse4, %o4, %m4 {scale = 0.5 : f64} : (tensor<2x3x5x4xf16>, tensor<2x3x7x4xf16>, tensor<2x3x7x6xf16>, tensor<2x3x5x6xf16>, tensor<2x3x5xf32>, tensor<2x3x5x6xf16>, tensor<1x1x5x7xf32>) -> (tensor<2x3x5x4xf16>, tensor<2x3x7x4xf16>, tensor<2x3x7x6xf16>)
  return %dq, %dk4 : tensor<4x8x16xf32>, tensor<2x3x7x4xf16>
}
