// RUN: tcc-opt %s --tcc-pack-attention --split-input-file | FileCheck %s

// A fused QKV projection [B, T, 3E] sliced into q, k and v and split into
// heads [B, T, H, D] (H 2, D 4): the attention and its gradient read the
// projection's head split [B, T, 3H, D] itself; the slices are gone. The
// gradient writes the projection's gradient: the concatenation of the
// three is a reshape of it.

// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[X:.+]]: tensor<2x4x24xf32>, %[[DO:.+]]: tensor<2x4x2x4xf32>)
// CHECK-NEXT:    %[[P:.+]] = tcc.reshape %[[X]] : tensor<2x4x24xf32> -> tensor<2x4x6x4xf32>
// CHECK-NOT:     tcc.slice
// CHECK:         %[[O:.+]], %[[L:.+]] = tcc.attention %[[P]], %[[P]], %[[P]] {causal = true, fused_qkv = true, scale = 5.000000e-01 : f64, seq_major = true} : (tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT:    %[[G:.+]] = tcc.attention_grad %[[P]], %[[P]], %[[P]], %[[O]], %[[L]], %[[DO]] {causal = true, fused_qkv = true, scale = 5.000000e-01 : f64, seq_major = true} : {{.+}} -> tensor<2x4x6x4xf32>
// CHECK-NEXT:    %[[DX:.+]] = tcc.reshape %[[G]] : tensor<2x4x6x4xf32> -> tensor<2x4x24xf32>
// CHECK-NEXT:    return %[[O]], %[[DX]]
func.func @step(%x: tensor<2x4x24xf32>, %do: tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x4x24xf32>) {
  %q0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %k0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %v0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %q = tcc.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %k = tcc.reshape %k0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %v = tcc.reshape %v0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %o, %lse = tcc.attention %q, %k, %v {scale = 0.5 : f64, causal = true, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x2x4xf32>)
  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64, causal = true, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>)
  %dq0 = tcc.reshape %dq : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %dk0 = tcc.reshape %dk : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %dv0 = tcc.reshape %dv : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %dx = tcc.concat %dq0, %dk0, %dv0 {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  return %o, %dx : tensor<2x4x2x4xf32>, tensor<2x4x24xf32>
}

// -----

// bf16 [B, T, H, D] (B 3, T 2, H 2, D 4) with a mask; a slice read
// elsewhere too stays for that reader.

// CHECK-LABEL: func.func @masked
// CHECK:         %[[P:.+]] = tcc.reshape %arg0 : tensor<3x2x24xbf16> -> tensor<3x2x6x4xbf16>
// CHECK:         %[[V0:.+]] = tcc.slice %arg0 {sizes = array<i64: 3, 2, 8>, starts = array<i64: 0, 0, 16>
// CHECK:         tcc.attention %[[P]], %[[P]], %[[P]], %arg1 {fused_qkv = true, scale = 5.000000e-01 : f64, seq_major = true}
// CHECK:         return {{.+}}, %[[V0]]
func.func @masked(%x: tensor<3x2x24xbf16>, %m: tensor<2x2xf32>) -> (tensor<3x2x2x4xbf16>, tensor<3x2x8xbf16>) {
  %q0 = tcc.slice %x {sizes = array<i64: 3, 2, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<3x2x24xbf16> -> tensor<3x2x8xbf16>
  %k0 = tcc.slice %x {sizes = array<i64: 3, 2, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<3x2x24xbf16> -> tensor<3x2x8xbf16>
  %v0 = tcc.slice %x {sizes = array<i64: 3, 2, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<3x2x24xbf16> -> tensor<3x2x8xbf16>
  %q = tcc.reshape %q0 : tensor<3x2x8xbf16> -> tensor<3x2x2x4xbf16>
  %k = tcc.reshape %k0 : tensor<3x2x8xbf16> -> tensor<3x2x2x4xbf16>
  %v = tcc.reshape %v0 : tensor<3x2x8xbf16> -> tensor<3x2x2x4xbf16>
  %o, %lse = tcc.attention %q, %k, %v, %m {scale = 0.5 : f64, seq_major = true} : (tensor<3x2x2x4xbf16>, tensor<3x2x2x4xbf16>, tensor<3x2x2x4xbf16>, tensor<2x2xf32>) -> (tensor<3x2x2x4xbf16>, tensor<3x2x2xf32>)
  return %o, %v0 : tensor<3x2x2x4xbf16>, tensor<3x2x8xbf16>
}

// -----

// Left alone: q and k swapped, not sequence-major, thirds of two different
// values, and nn.MultiheadAttention's [T, N * H, D] split of a [T, N, 3E]
// projection (its q heads are not one run per row of the projection).

// CHECK-LABEL: func.func @negative
// CHECK-NOT:     fused_qkv
func.func @negative(%x: tensor<2x4x24xf32>, %y: tensor<2x4x24xf32>, %w: tensor<2x4x8xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) {
  %q0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %k0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %v0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %q = tcc.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %k = tcc.reshape %k0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %v = tcc.reshape %v0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %o1, %l1 = tcc.attention %k, %q, %v {scale = 0.5 : f64, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x2x4xf32>)
  %qp = tcc.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %kp = tcc.reshape %k0 : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %vp = tcc.reshape %v0 : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %o2, %l2 = tcc.attention %qp, %kp, %vp {scale = 0.5 : f64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4xf32>)
  %o2r = tcc.reshape %o2 : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %y0 = tcc.slice %y {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %ky = tcc.reshape %y0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %o3, %l3 = tcc.attention %q, %ky, %v {scale = 0.5 : f64, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x2x4xf32>)
  %qm = tcc.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %km = tcc.reshape %k0 : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %vm = tcc.reshape %v0 : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %o4, %l4 = tcc.attention %qm, %km, %vm {scale = 0.5 : f64, seq_major = true} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<8x2xf32>)
  %o4r = tcc.reshape %o4 : tensor<2x8x4xf32> -> tensor<2x4x2x4xf32>
  %s = tcc.add %o3, %o4r : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  return %o1, %o2r, %s : tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>
}

// -----

// A gradient of q read elsewhere too: the forward reads the projection, the
// backward keeps its three results and the slices it reads.

// CHECK-LABEL: func.func @grad_used_elsewhere
// CHECK:         tcc.attention %[[P:.+]], %[[P]], %[[P]] {fused_qkv = true
// CHECK:         tcc.attention_grad %[[Q:[^,]+]], %[[K:[^,]+]], %[[V:[^,]+]], {{.+}} {scale = 5.000000e-01 : f64, seq_major = true}
// CHECK:         tcc.concat
func.func @grad_used_elsewhere(%x: tensor<2x4x24xf32>, %do: tensor<2x4x2x4xf32>) -> (tensor<2x4x24xf32>, tensor<2x4x2x4xf32>) {
  %q0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %k0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %v0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %q = tcc.reshape %q0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %k = tcc.reshape %k0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %v = tcc.reshape %v0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %o, %lse = tcc.attention %q, %k, %v {scale = 0.5 : f64, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x2x4xf32>)
  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64, seq_major = true} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x2x4xf32>, tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>)
  %dq0 = tcc.reshape %dq : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %dk0 = tcc.reshape %dk : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %dv0 = tcc.reshape %dv : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %dx = tcc.concat %dq0, %dk0, %dv0 {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %s = tcc.add %dq, %o : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  return %dx, %s : tensor<2x4x24xf32>, tensor<2x4x2x4xf32>
}
