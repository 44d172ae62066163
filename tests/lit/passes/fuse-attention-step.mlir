// RUN: tcc-opt %s --tcc-train-pipeline="fuse-attention=true plan-memory=false fuse=false" | FileCheck %s
// RUN: tcc-opt %s --tcc-train-pipeline="plan-memory=false fuse=false" | FileCheck %s --check-prefix=OFF

// The pipeline fuses @forward's attention before autodiff, so the step's
// backward is tcc.attention_grad reading the forward's output and lse, and
// no probabilities are saved. The `* 1.0`s fold in the canonicalizer first.
// (--fuse-attention is on by default in `tcc compile`; the pipeline option
// defaults to off.)

// Q, K and V are [T, B*H, D] head splits, so the op reads them
// sequence-major (no transposes of its operands), and the gradients come
// back in that layout too: the backward transposes only the loss gradient
// (dO) into it.
// CHECK-LABEL: func.func @forward
// CHECK: tcc.attention {{.*}} {causal = true, scale = 5.000000e-01 : f64, seq_major = true}
// CHECK-NOT: tcc.softmax
// CHECK-LABEL: func.func @train_step
// CHECK: %[[O:.+]], %[[L:.+]] = tcc.attention %[[X:arg0]], %[[Y:arg1]], %[[Z:arg2]] {causal = true, scale = 5.000000e-01 : f64, seq_major = true}
// CHECK: %[[DO:.+]] = tcc.transpose %{{.+}} {perm = array<i64: 1, 0, 2>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
// CHECK: tcc.attention_grad %[[X]], %[[Y]], %[[Z]], %[[O]], %[[L]], %[[DO]] {causal = true, scale = 5.000000e-01 : f64, seq_major = true}
// CHECK-NOT: tcc.transpose
// CHECK-NOT: softmax_grad
// CHECK: tcc.adamw_update

// OFF-LABEL: func.func @train_step
// OFF: tcc.softmax
// OFF: tcc.softmax_grad
// OFF-NOT: tcc.attention
func.func @forward(%x: tensor<4x2x8xf32> {tcc.kind = "input", tcc.name = "x"},
                   %y: tensor<4x2x8xf32> {tcc.kind = "param", tcc.name = "y"},
                   %z: tensor<4x2x8xf32> {tcc.kind = "param", tcc.name = "z"})
    -> (tensor<2x4x8xf32> {tcc.name = "out"}) {
  %c = tcc.constant dense<2.0> : tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<f32>
  %mask = tcc.constant dense<[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]> : tensor<1x4x4xf32>
  %q = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %qs = tcc.div %q, %c : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %kt = tcc.transpose %y {perm = array<i64: 1, 2, 0>} : tensor<4x2x8xf32> -> tensor<2x8x4xf32>
  %s = tcc.matmul %qs, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %s1 = tcc.mul %s, %one : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m1 = tcc.mul %mask, %one : (tensor<1x4x4xf32>, tensor<f32>) -> tensor<1x4x4xf32>
  %s2 = tcc.add %s1, %m1 : (tensor<2x4x4xf32>, tensor<1x4x4xf32>) -> tensor<2x4x4xf32>
  %p = tcc.softmax %s2 {axis = 2 : i64} : tensor<2x4x4xf32>
  %v = tcc.transpose %z {perm = array<i64: 1, 0, 2>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
  %o = tcc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
