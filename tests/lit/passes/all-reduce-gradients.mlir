// RUN: tcc-opt %s --tcc-all-reduce-gradients --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-all-reduce-gradients=bucket-bytes=8 --split-input-file | FileCheck %s --check-prefix=SMALL

// DistributedDataParallel inside the step: the gradients, in the order the
// backward defines them, go into buckets; each bucket is one tcc.all_reduce
// right after its last gradient, and the return reads the averages.

// CHECK-LABEL: func.func @train_step
// CHECK:         %[[GB:.+]] = tcc.reduce_sum %{{.+}} {axes = array<i64: 0>}
// CHECK:         %[[G:.+]] = tcc.matmul
// CHECK-NEXT:    %[[R:.+]]:2 = tcc.all_reduce %[[GB]], %[[G]] {bucket = 0 : i64} : tensor<2xf32>, tensor<3x2xf32> -> tensor<2xf32>, tensor<3x2xf32>
// CHECK:         return %{{.+}}, %[[R]]#1, %[[R]]#0

// 8 bytes: the bias gradient (8 bytes) fills a bucket, the weight's (24)
// takes the next,
// each started as soon as its gradient exists.
// SMALL-LABEL: func.func @train_step
// SMALL:         %[[GB:.+]] = tcc.reduce_sum %{{.+}} {axes = array<i64: 0>}
// SMALL-NEXT:    %[[RB:.+]] = tcc.all_reduce %[[GB]] {bucket = 0 : i64}
// SMALL-NEXT:    %[[G:.+]] = tcc.matmul
// SMALL-NEXT:    %[[RW:.+]] = tcc.all_reduce %[[G]] {bucket = 1 : i64}
// SMALL:         return %{{.+}}, %[[RW]], %[[RB]]
func.func @train_step(%w: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<2xf32> {tcc.kind = "param", tcc.name = "b"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"},
        tensor<2xf32> {tcc.kind = "grad", tcc.name = "b"}) {
  %y = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = tcc.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<4x2xf32>
  %gb = tcc.reduce_sum %one {axes = array<i64: 0>} : tensor<4x2xf32> -> tensor<2xf32>
  %g = tcc.matmul %x, %one {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %l, %g, %gb : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}

// -----

// Gradient accumulation's mean, acc * (1/K): the sum is reduced and the
// multiply stays after it, where tcc-clip-gradients looks for it.
// CHECK-LABEL: func.func @train_step
// CHECK:         %[[S:.+]] = tcc.add %arg1, %arg1
// CHECK-NEXT:    %[[R:.+]] = tcc.all_reduce %[[S]] {bucket = 0 : i64} : tensor<3xf32> -> tensor<3xf32>
// CHECK:         %[[M:.+]] = tcc.mul %[[R]], %{{.+}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK:         return %[[M]]
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"},
                      %acc: tensor<3xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"})
    -> (tensor<3xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %half = tcc.constant dense<0.5> : tensor<f32>
  %s = tcc.add %acc, %acc : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %m = tcc.mul %s, %half : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %m : tensor<3xf32>
}

// -----

// No @train_step (an inference module): nothing to do.
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     tcc.all_reduce
func.func @forward(%w: tensor<3xf32>) -> tensor<3xf32> {
  return %w : tensor<3xf32>
}
