// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tcc-opt %s --split-input-file --verify-diagnostics --canonicalize | FileCheck %s --check-prefix=CANON

// tcc.cast between f32, i64 and i1; tcc.broadcast_to of non-float tensors.

// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%[[M:.+]]: tensor<2x8xi1>, %[[IDS:.+]]: tensor<2x8xi64>, %[[X:.+]]: tensor<2x8xf32>)
func.func @casts(%m: tensor<2x8xi1>, %ids: tensor<2x8xi64>, %x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi64>, tensor<2x8xi1>, tensor<4x2x8xi1>) {
  // CHECK: tcc.cast %[[M]] : tensor<2x8xi1> -> tensor<2x8xf32>
  %a = tcc.cast %m : tensor<2x8xi1> -> tensor<2x8xf32>
  // CHECK: tcc.cast %[[IDS]] : tensor<2x8xi64> -> tensor<2x8xf32>
  %b = tcc.cast %ids : tensor<2x8xi64> -> tensor<2x8xf32>
  // CHECK: tcc.cast %[[X]] : tensor<2x8xf32> -> tensor<2x8xi64>
  %c = tcc.cast %x : tensor<2x8xf32> -> tensor<2x8xi64>
  // CHECK: tcc.cast %[[X]] : tensor<2x8xf32> -> tensor<2x8xi1>
  %d = tcc.cast %x : tensor<2x8xf32> -> tensor<2x8xi1>
  // CHECK: tcc.broadcast_to %[[M]] : tensor<2x8xi1> -> tensor<4x2x8xi1>
  %e = tcc.broadcast_to %m : tensor<2x8xi1> -> tensor<4x2x8xi1>
  return %a, %b, %c, %d, %e : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi64>, tensor<2x8xi1>, tensor<4x2x8xi1>
}

// -----

// A cast to the same type is its input.
// CANON-LABEL: func.func @same
// CANON-SAME: (%[[X:.+]]: tensor<3xi64>)
// CANON-NEXT: return %[[X]]
func.func @same(%x: tensor<3xi64>) -> tensor<3xi64> {
  %y = tcc.cast %x : tensor<3xi64> -> tensor<3xi64>
  return %y : tensor<3xi64>
}

// -----

func.func @cast_shape(%x: tensor<2x8xf32>) -> tensor<16xi64> {
  // expected-error @+1 {{'tcc.cast' op changes the shape from [2,8] to [16]}}
  %y = tcc.cast %x : tensor<2x8xf32> -> tensor<16xi64>
  return %y : tensor<16xi64>
}

// -----

func.func @cast_type(%x: tensor<2xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 1-bit signless integer values}}
  %y = tcc.cast %x : tensor<2xf32> -> tensor<2xi32>
  return %y : tensor<2xi32>
}

// -----

// Between float types (tcc-mixed-precision's casts).
// CHECK-LABEL: func.func @cast_float
// CHECK:         tcc.cast %{{.+}} : tensor<2xf32> -> tensor<2xbf16>
// CHECK:         tcc.cast %{{.+}} : tensor<2xbf16> -> tensor<2xf16>
func.func @cast_float(%x: tensor<2xf32>) -> tensor<2xf16> {
  %b = tcc.cast %x : tensor<2xf32> -> tensor<2xbf16>
  %h = tcc.cast %b : tensor<2xbf16> -> tensor<2xf16>
  return %h : tensor<2xf16>
}
