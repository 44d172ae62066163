// RUN: tcc-opt %s --tcc-lora="rank=2 alpha=4 targets=*" --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-lora="rank=2 targets=*" --tcc-build-loss --tcc-autodiff --tcc-apply-optimizer --split-input-file | FileCheck %s --check-prefix=STEP

// A Linear layer (Gemm transB: W is [out, in]): A [r, in] and B [out, r]
// follow W, x A^T B^T is scaled by alpha/r = 2 and added to the product;
// the bias, which `*` matches but which no product reads, gets no adapters
// and is frozen like the base weight.

// CHECK: module attributes {tcc.lora = {alpha = 4.000000e+00 : f64, rank = 2 : i64, targets = ["*"], weights = {fc.weight = "out,in"}}}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x8xf32> {tcc.kind = "frozen", tcc.name = "fc.weight"}
// CHECK-SAME: %[[A:[^:]+]]: tensor<2x8xf32> {tcc.init_seed = 0 : i64, tcc.init_uniform = array<f64: -0.35355339059327373, 0.35355339059327373>, tcc.kind = "param", tcc.name = "fc.weight.lora_A"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<3x2xf32> {tcc.init = dense<0.000000e+00> : tensor<3x2xf32>, tcc.kind = "param", tcc.name = "fc.weight.lora_B"}
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<3xf32> {tcc.kind = "frozen", tcc.name = "fc.bias"}
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"}
// CHECK: %[[Y:.+]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true}
// CHECK: %[[H:.+]] = tcc.matmul %[[X]], %[[A]] {transpose_rhs = true} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
// CHECK: %[[D:.+]] = tcc.matmul %[[H]], %[[B]] {transpose_rhs = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
// CHECK: %[[S:.+]] = tcc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[DS:.+]] = tcc.mul %[[D]], %[[S]]
// CHECK: %[[SUM:.+]] = tcc.add %[[Y]], %[[DS]]
// CHECK: tcc.add %[[SUM]], %[[BIAS]]

// The step differentiates and updates the adapters only: no gradient, no
// AdamW state for the frozen weight and bias.
// STEP-LABEL: func.func @train_step
// STEP-SAME: {tcc.kind = "frozen", tcc.name = "fc.weight"}
// STEP-NOT: "fc.weight.exp_avg"
// STEP-NOT: "fc.bias.exp_avg"
// STEP-SAME: {tcc.kind = "state", tcc.name = "fc.weight.lora_A.exp_avg"}
// STEP-NOT: {tcc.kind = "update", tcc.name = "fc.weight"}
// STEP-NOT: {tcc.kind = "update", tcc.name = "fc.bias"}
// STEP-SAME: {tcc.kind = "update", tcc.name = "fc.weight.lora_A"}
// STEP-NOT: {tcc.kind = "update", tcc.name = "fc.weight"}
// STEP-NOT: {tcc.kind = "update", tcc.name = "fc.bias"}
// STEP-SAME: {tcc.kind = "update", tcc.name = "fc.weight.lora_B"}
// STEP-NOT: {tcc.kind = "update", tcc.name = "fc.weight"}
// STEP-NOT: {tcc.kind = "update", tcc.name = "fc.bias"}
// STEP: return
module {
  func.func @forward(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"},
                     %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "fc.bias"},
                     %x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %y = tcc.add %h, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}

// -----

// A MatMul weight ([in, out]) read by two products on [N, T, in]: each
// gets the branch, from the one pair of adapters. The embedding table (a
// gather, not a product) is frozen and gets none, though `*` matches it.

// CHECK: tcc.lora = {{.*}}weights = {proj = "in,out"}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[E:[^:]+]]: tensor<10x8xf32> {tcc.kind = "frozen", tcc.name = "emb"}
// CHECK-SAME: %[[P:[^:]+]]: tensor<8x6xf32> {tcc.kind = "frozen", tcc.name = "proj"}
// CHECK-SAME: %[[A:[^:]+]]: tensor<2x8xf32> {{.*}}tcc.name = "proj.lora_A"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<6x2xf32> {{.*}}tcc.name = "proj.lora_B"}
// CHECK: %[[G:.+]] = tcc.gather %[[E]]
// CHECK: %[[Y1:.+]] = tcc.matmul %[[G]], %[[P]] :
// CHECK: %[[H1:.+]] = tcc.matmul %[[G]], %[[A]] {transpose_rhs = true} : (tensor<2x5x8xf32>, tensor<2x8xf32>) -> tensor<2x5x2xf32>
// CHECK: %[[D1:.+]] = tcc.matmul %[[H1]], %[[B]] {transpose_rhs = true} : (tensor<2x5x2xf32>, tensor<6x2xf32>) -> tensor<2x5x6xf32>
// CHECK: tcc.add %[[Y1]], {{%.+}}
// CHECK: %[[Y2:.+]] = tcc.matmul %[[G]], %[[P]] :
// CHECK: tcc.matmul %[[G]], %[[A]]
// CHECK: tcc.add %[[Y2]]
module {
  func.func @forward(%e: tensor<10x8xf32> {tcc.kind = "param", tcc.name = "emb"},
                     %p: tensor<8x6xf32> {tcc.kind = "param", tcc.name = "proj"},
                     %ids: tensor<2x5xi64> {tcc.kind = "input", tcc.name = "ids"})
      -> (tensor<2x5x6xf32> {tcc.name = "y"}) {
    %g = tcc.gather %e, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
    %y1 = tcc.matmul %g, %p : (tensor<2x5x8xf32>, tensor<8x6xf32>) -> tensor<2x5x6xf32>
    %y2 = tcc.matmul %g, %p : (tensor<2x5x8xf32>, tensor<8x6xf32>) -> tensor<2x5x6xf32>
    %y = tcc.add %y1, %y2 : (tensor<2x5x6xf32>, tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
    return %y : tensor<2x5x6xf32>
  }
}

// -----

// MatMul(x, Transpose(W)), as nn.TransformerEncoderLayer exports its linear
// layers, before the canonicalizer folds the transpose into the flag: W is
// [out, in] all the same, and the branch reads x.

// CHECK: tcc.lora = {{.*}}weights = {w = "out,in"}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x8xf32> {tcc.kind = "frozen", tcc.name = "w"}
// CHECK-SAME: %[[A:[^:]+]]: tensor<2x8xf32> {{.*}}tcc.name = "w.lora_A"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<3x2xf32> {{.*}}tcc.name = "w.lora_B"}
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK: %[[WT:.+]] = tcc.transpose %[[W]]
// CHECK: %[[Y:.+]] = tcc.matmul %[[X]], %[[WT]] :
// CHECK: %[[H:.+]] = tcc.matmul %[[X]], %[[A]] {transpose_rhs = true}
// CHECK: tcc.matmul %[[H]], %[[B]] {transpose_rhs = true}
// CHECK: tcc.add %[[Y]]
module {
  func.func @forward(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                     %x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %wt = tcc.transpose %w {perm = array<i64: 1, 0>} : tensor<3x8xf32> -> tensor<8x3xf32>
    %y = tcc.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
