// RUN: tcc-opt %s --tcc-cut-cross-entropy --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-cut-cross-entropy=block=4 --tcc-autodiff \
// RUN:   --split-input-file | FileCheck %s --check-prefix=GRAD
// RUN: tcc-opt %s --tcc-cut-cross-entropy=min-classes=11 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=MIN

// The GPT example's head as torch.onnx.export writes nn.Linear(d, vocab):
// MatMul by the transposed [V, D] weight, then the bias added first. The
// weight is read in place (transpose_weight), ignore_index and
// label_smoothing carry over, and the matmul, add and transpose go.
// CHECK: module attributes {tcc.cut_cross_entropy = "fused 1 head matmul + cross-entropy (vocabulary blocks of 2048; the logits are not stored)"}
// A head of fewer classes than min-classes is left alone.
// MIN: module attributes {tcc.cut_cross_entropy = "not applied: 10 classes, fewer than min-classes 11 (small logits cost little to store)"}
// MIN: tcc.softmax_cross_entropy
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[H:[^:]+]]: tensor<2x3x4xf32> {{.*}}, %[[W:[^:]+]]: tensor<10x4xf32> {{.*}}, %[[B:[^:]+]]: tensor<10xf32> {{.*}}, %[[Y:[^:]+]]: tensor<2x3xi64>
// CHECK-NOT: tcc.matmul
// CHECK: %[[L:.+]], %{{.+}} = tcc.linear_cross_entropy %[[H]], %[[W]], %[[Y]], %[[B]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64, transpose_weight = true} : (tensor<2x3x4xf32>, tensor<10x4xf32>, tensor<2x3xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<2x3xf32>)
// CHECK-NEXT: return %[[L]]
// The backward recomputes the logits: no [N, V] tensor is saved.
// GRAD-LABEL: func.func @train_step
// GRAD: %[[L:.+]], %[[LSE:.+]] = tcc.linear_cross_entropy
// GRAD-NOT: tcc.softmax_cross_entropy
// GRAD: %{{.+}}:3 = tcc.linear_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[LSE]], %{{.+}} {block = 4 : i64, ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64, transpose_weight = true} : (tensor<f32>, tensor<2x3x4xf32>, tensor<10x4xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<10xf32>) -> (tensor<2x3x4xf32>, tensor<10x4xf32>, tensor<10xf32>)
func.func @train_step(%h: tensor<2x3x4xf32> {tcc.kind = "param", tcc.name = "h"},
                      %w: tensor<10x4xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<10xf32> {tcc.kind = "param", tcc.name = "b"},
                      %y: tensor<2x3xi64> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}) {
  %t = tcc.transpose %w {perm = array<i64: 1, 0>} : tensor<10x4xf32> -> tensor<4x10xf32>
  %m = tcc.matmul %h, %t : (tensor<2x3x4xf32>, tensor<4x10xf32>) -> tensor<2x3x10xf32>
  %l = tcc.add %b, %m : (tensor<10xf32>, tensor<2x3x10xf32>) -> tensor<2x3x10xf32>
  %loss = tcc.softmax_cross_entropy %l, %y {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<2x3x10xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A [D, V] weight without a bias: the weight is read as it is.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[H:[^:]+]]: tensor<6x4xf32> {{.*}}, %[[W:[^:]+]]: tensor<4x10xf32> {{.*}}, %[[Y:[^:]+]]: tensor<6xi64>
// CHECK: tcc.linear_cross_entropy %[[H]], %[[W]], %[[Y]] : (tensor<6x4xf32>, tensor<4x10xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6xf32>)
// GRAD-LABEL: func.func @train_step
// GRAD: %{{.+}}:2 = tcc.linear_cross_entropy_grad
// GRAD-SAME: -> (tensor<6x4xf32>, tensor<4x10xf32>)
func.func @train_step(%h: tensor<6x4xf32> {tcc.kind = "param", tcc.name = "h"},
                      %w: tensor<4x10xf32> {tcc.kind = "param", tcc.name = "w"},
                      %y: tensor<6xi64> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}) {
  %m = tcc.matmul %h, %w : (tensor<6x4xf32>, tensor<4x10xf32>) -> tensor<6x10xf32>
  %loss = tcc.softmax_cross_entropy %m, %y : (tensor<6x10xf32>, tensor<6xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Logits that are also returned would still be computed and stored: left
// alone, and the reason is recorded for --report.
// CHECK: module attributes {tcc.cut_cross_entropy = "not applied: the logits have another user (an output or a second loss)"}
// CHECK-LABEL: func.func @train_step
// CHECK: tcc.matmul
// CHECK: tcc.softmax_cross_entropy
// CHECK-NOT: tcc.linear_cross_entropy
func.func @train_step(%h: tensor<6x4xf32> {tcc.kind = "param", tcc.name = "h"},
                      %w: tensor<4x10xf32> {tcc.kind = "param", tcc.name = "w"},
                      %y: tensor<6xi64> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<6x10xf32>) {
  %m = tcc.matmul %h, %w : (tensor<6x4xf32>, tensor<4x10xf32>) -> tensor<6x10xf32>
  %loss = tcc.softmax_cross_entropy %m, %y : (tensor<6x10xf32>, tensor<6xi64>) -> tensor<f32>
  return %loss, %m : tensor<f32>, tensor<6x10xf32>
}
