// RUN: tcc-opt %s --tcc-build-loss=loss=output:loss | FileCheck %s

// --loss output:NAME: the model's own scalar output `loss` is the loss. No
// labels argument is added, the other outputs and what only they use go,
// and the target stays a data input. The first output need not be a float
// (here an i64 argmax), as a built-in loss would need.

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
                     %t: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "t"},
                     %w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<4xi64> {tcc.name = "class"}, tensor<f32> {tcc.name = "loss"}) {
    %y = tcc.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %c = tcc.arg_max %y {axis = 1 : i64} : tensor<4x3xf32> -> tensor<4xi64>
    %d = tcc.sub %y, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %l = tcc.reduce_sum %d {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
    return %c, %l : tensor<4xi64>, tensor<f32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK:         tcc.arg_max
// CHECK:         return %{{.+}}, %{{.+}} : tensor<4xi64>, tensor<f32>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:.+]]: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
// CHECK-SAME:     %[[T:.+]]: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "t"},
// CHECK-SAME:     %[[W:.+]]: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"})
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"})
// CHECK-NEXT:    %[[Y:.+]] = tcc.mul %[[X]], %[[W]]
// CHECK-NEXT:    %[[D:.+]] = tcc.sub %[[Y]], %[[T]]
// CHECK-NEXT:    %[[L:.+]] = tcc.reduce_sum %[[D]]
// CHECK-NEXT:    return %[[L]] : tensor<f32>
