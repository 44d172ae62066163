// RUN: tcc-opt %s | tcc-opt | FileCheck %s

// CHECK-LABEL: func.func @roundtrip
// CHECK:       %[[R:.+]]:2 = tcc.fused(%arg0, %arg1) {in_place = array<i64: 0, 0>, kernel = 3 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
// CHECK-NEXT:  ^bb0(%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8xf32>):
// CHECK:         tcc.yield %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK:       return %[[R]]#0, %[[R]]#1
func.func @roundtrip(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %r:2 = tcc.fused(%x, %b) {in_place = array<i64: 0, 0>, kernel = 3 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
    %s = tcc.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %m = tcc.reduce_mean %s {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    tcc.yield %s, %m : tensor<4x8xf32>, tensor<4x1xf32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x1xf32>
}
