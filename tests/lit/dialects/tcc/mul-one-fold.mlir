// RUN: tcc-opt %s --canonicalize --split-input-file | FileCheck %s

// x * 1 and x / 1 fold to x (exact in IEEE arithmetic) when the 1 does not
// widen x by broadcasting. torch.onnx.export writes them for baddbmm's
// alpha and beta in nn.MultiheadAttention (scores * 1.0, mask * 1.0).

// CHECK-LABEL: func.func @folds
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[H:.+]]: tensor<3xbf16>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[H]]
func.func @folds(%x: tensor<2x4xf32>, %h: tensor<3xbf16>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3xbf16>) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %ones = tcc.constant dense<1.0> : tensor<2x4xf32>
  %oneh = tcc.constant dense<1.0> : tensor<bf16>
  %a = tcc.mul %x, %one : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %b = tcc.mul %ones, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = tcc.div %x, %one : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %d = tcc.mul %h, %oneh : (tensor<3xbf16>, tensor<bf16>) -> tensor<3xbf16>
  return %a, %b, %c, %d : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3xbf16>
}

// -----

// A broadcasting 1 widens x; 1.5, 1 / x and a non-splat constant are not
// the identity.
// CHECK-LABEL: func.func @kept
// CHECK: tcc.mul %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: tcc.mul %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: tcc.div %{{.+}}, %{{.+}} : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: tcc.mul %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @kept(%x: tensor<4xf32>)
    -> (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %ones = tcc.constant dense<1.0> : tensor<3x4xf32>
  %c15 = tcc.constant dense<1.5> : tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<f32>
  %mixed = tcc.constant dense<[1.0, 1.0, 1.0, 2.0]> : tensor<4xf32>
  %a = tcc.mul %x, %ones : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %b = tcc.mul %x, %c15 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %c = tcc.div %one, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %d = tcc.mul %x, %mixed : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c, %d : tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
