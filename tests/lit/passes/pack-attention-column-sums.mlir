// RUN: tcc-opt %s --tcc-pack-attention=column-sums=true --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-pack-attention --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tcc-opt %s --tcc-gemm-epilogue=column-sums=true --split-input-file | FileCheck %s --check-prefix=GEMM
// RUN: tcc-opt %s --tcc-gemm-epilogue --split-input-file | FileCheck %s --check-prefix=GEMM-OFF

// tcc-pack-attention's column-sums: a bf16 QKV projection [B, T, 3E] (B 2,
// T 4, H 2, D 4) whose bias gradient sums the merged gradient (widened to
// f32) over B and T. The packed attention_grad writes those sums as its
// second result; the sum and its widening are gone, and the weight
// gradient's GEMM reads the gradient as before. Without the option the
// sum stays. tcc-gemm-epilogue (which runs first) leaves that sum out of
// the weight gradient's GEMM under the same option, and folds it
// otherwise.

// CHECK-LABEL: func.func @bias_grad
// CHECK:         %[[P:.+]] = tcc.reshape %arg0 : tensor<2x4x24xbf16> -> tensor<2x4x6x4xbf16>
// CHECK:         %[[G:.+]]:2 = tcc.attention_grad %[[P]], %[[P]], %[[P]], {{.+}} {causal = true, column_sums = true, fused_qkv = true, scale = 5.000000e-01 : f64, seq_major = true} : {{.+}} -> (tensor<2x4x6x4xbf16>, tensor<24xf32>)
// CHECK:         %[[DX:.+]] = tcc.reshape %[[G]]#0 : tensor<2x4x6x4xbf16> -> tensor<2x4x24xbf16>
// CHECK-NOT:     tcc.reduce_sum
// CHECK-NOT:     tcc.cast
// CHECK:         %[[R:.+]] = tcc.reshape %[[DX]] : tensor<2x4x24xbf16> -> tensor<8x24xbf16>
// CHECK:         %[[DW:.+]] = tcc.matmul %[[R]], %arg2 {transpose_lhs = true}
// CHECK:         return {{.+}}, %[[DW]], %[[G]]#1

// OFF-LABEL: func.func @bias_grad
// OFF:         tcc.attention_grad {{.+}} {causal = true, fused_qkv = true, scale = 5.000000e-01 : f64, seq_major = true} : {{.+}} -> tensor<2x4x6x4xbf16>
// OFF:         tcc.reduce_sum

// GEMM-LABEL:    func.func @bias_grad
// GEMM-NOT:      matmul_epilogue
// GEMM:          tcc.reduce_sum
// GEMM-OFF-LABEL: func.func @bias_grad
// GEMM-OFF:        tcc.matmul_epilogue {{.+}} {epilogue = "bgrad_lhs", transpose_lhs = true}
// GEMM-OFF-NOT:    tcc.reduce_sum
func.func @bias_grad(%x: tensor<2x4x24xbf16>, %do: tensor<2x4x2x4xbf16>, %a: tensor<8x16xbf16>) -> (tensor<2x4x2x4xbf16>, tensor<24x16xf32>, tensor<24xf32>) {
  %q0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xbf16> -> tensor<2x4x8xbf16>
  %k0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xbf16> -> tensor<2x4x8xbf16>
  %v0 = tcc.slice %x {sizes = array<i64: 2, 4, 8>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xbf16> -> tensor<2x4x8xbf16>
  %q = tcc.reshape %q0 : tensor<2x4x8xbf16> -> tensor<2x4x2x4xbf16>
  %k = tcc.reshape %k0 : tensor<2x4x8xbf16> -> tensor<2x4x2x4xbf16>
  %v = tcc.reshape %v0 : tensor<2x4x8xbf16> -> tensor<2x4x2x4xbf16>
  %o, %lse = tcc.attention %q, %k, %v {scale = 0.5 : f64, causal = true, seq_major = true} : (tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>) -> (tensor<2x4x2x4xbf16>, tensor<2x2x4xf32>)
  %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64, causal = true, seq_major = true} : (tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x2x4xf32>, tensor<2x4x2x4xbf16>) -> (tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>)
  %dq0 = tcc.reshape %dq : tensor<2x4x2x4xbf16> -> tensor<2x4x8xbf16>
  %dk0 = tcc.reshape %dk : tensor<2x4x2x4xbf16> -> tensor<2x4x8xbf16>
  %dv0 = tcc.reshape %dv : tensor<2x4x2x4xbf16> -> tensor<2x4x8xbf16>
  %dx = tcc.concat %dq0, %dk0, %dv0 {axis = 2 : i64} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x24xbf16>
  %dxw = tcc.cast %dx : tensor<2x4x24xbf16> -> tensor<2x4x24xf32>
  %db = tcc.reduce_sum %dxw {axes = array<i64: 0, 1>} : tensor<2x4x24xf32> -> tensor<24xf32>
  %r = tcc.reshape %dx : tensor<2x4x24xbf16> -> tensor<8x24xbf16>
  %dw = tcc.matmul %r, %a {transpose_lhs = true} : (tensor<8x24xbf16>, tensor<8x16xbf16>) -> tensor<24x16xf32>
  return %o, %dw, %db : tensor<2x4x2x4xbf16>, tensor<24x16xf32>, tensor<24xf32>
}

// -----

// Left alone: a sum over B only (not every leading axis), and a bf16 sum
// (the op writes f32 sums). The gradient still packs.

// CHECK-LABEL: func.func @other_sums
// CHECK:         tcc.attention_grad {{.+}} {causal = true, fused_qkv = true, scale = 5.000000e-01 : f64, seq_major = true} : {{.+}} -> tensor<2x4x6x4xf32>
// CHECK:         tcc.reduce_sum {{.+}} {axes = array<i64: 0>}
// GEMM-LABEL:    func.func @other_sums
// GEMM:          tcc.reduce_sum {{.+}} {axes = array<i64: 0>}
// GEMM-OFF-LABEL: func.func @other_sums
func.func @other_sums(%x: tensor<2x4x24xf32>, %do: tensor<2x4x2x4xf32>) -> (tensor<2x4x2x4xf32>, tensor<4x24xf32>) {
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
  %s = tcc.reduce_sum %dx {axes = array<i64: 0>} : tensor<2x4x24xf32> -> tensor<4x24xf32>
  return %o, %s : tensor<2x4x2x4xf32>, tensor<4x24xf32>
}
