// RUN: tcc-opt %s --pass-pipeline="builtin.module(func.func(tcc-rematerialize{memory-budget=1}))" | FileCheck %s
// RUN: not tcc-opt %s --pass-pipeline="builtin.module(func.func(tcc-rematerialize{memory-budget=1 recompute=cheap}))" 2>&1 | FileCheck %s --check-prefix=CHEAP

// tcc.attention is priced like a GEMM (its FLOPs plus the row pass): with
// recompute=all it is recomputed in the backward, both results at once;
// with recompute=cheap it never is, and its outputs (out, lse) are part of
// the minimum the error names. Activations: q (a reshape of a GEMM
// output, 256 B), out (256 B), lse (16 B).

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    tcc.remat = {activation_bytes = 528 : i64, budget = 1 : i64, kept_bytes = 0 : i64, recomputed_ops = 3 : i64}
// CHECK:         tcc.mse_loss
// CHECK-NEXT:    %[[H:.+]] = tcc.matmul
// CHECK-NEXT:    %[[Q:.+]] = tcc.reshape %[[H]]
// CHECK-NEXT:    %[[O:.+]], %[[L:.+]] = tcc.attention %[[Q]], %[[Q]], %[[Q]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT:    %[[DO:.+]] = tcc.mse_loss_grad %{{.+}}, %[[O]], %{{.+}}
// CHECK-NEXT:    tcc.attention_grad %[[Q]], %[[Q]], %[[Q]], %[[O]], %[[L]], %[[DO]]

// CHEAP: error: memory budget of 1 bytes (1 B) is below the 528 B (528 bytes) of activations that any schedule of @train_step must keep (outputs of tcc.matmul, tcc.attention, which are not recomputed with recompute=cheap)

func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                      %w: tensor<8x16xf32> {tcc.kind = "param", tcc.name = "w"},
                      %t: tensor<1x4x16xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
        tensor<8x16xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %one = tcc.constant dense<1.000000e+00> : tensor<f32>
  %h = tcc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %q = tcc.reshape %h : tensor<4x16xf32> -> tensor<1x4x16xf32>
  %o, %lse = tcc.attention %q, %q, %q {scale = 0.25 : f64, causal = true} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16xf32>, tensor<1x4xf32>)
  %l = tcc.mse_loss %o, %t : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<f32>
  %do = tcc.mse_loss_grad %one, %o, %t : (tensor<f32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %dq, %dk, %dv = tcc.attention_grad %q, %q, %q, %o, %lse, %do {scale = 0.25 : f64, causal = true} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>)
  %s1 = tcc.add %dq, %dk : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %s2 = tcc.add %s1, %dv : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %g = tcc.reshape %s2 : tensor<1x4x16xf32> -> tensor<4x16xf32>
  %dw = tcc.matmul %x, %g {transpose_lhs = true} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %l, %dw : tensor<f32>, tensor<8x16xf32>
}
