// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// tcc.where and tcc.compare: round trip, broadcast shapes, errors.

// CHECK-LABEL: func.func @mask
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x8xi64>, %[[PAD:.+]]: tensor<i64>, %[[S:.+]]: tensor<2x4x8xf32>, %[[F:.+]]: tensor<f32>)
func.func @mask(%ids: tensor<2x8xi64>, %pad: tensor<i64>, %s: tensor<2x4x8xf32>, %f: tensor<f32>) -> tensor<2x4x8xf32> {
  // CHECK: %[[M:.+]] = tcc.compare "eq", %[[IDS]], %[[PAD]] : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
  %m = tcc.compare "eq", %ids, %pad : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
  // CHECK: %[[R:.+]] = tcc.reshape %[[M]] : tensor<2x8xi1> -> tensor<2x1x8xi1>
  %r = tcc.reshape %m : tensor<2x8xi1> -> tensor<2x1x8xi1>
  // CHECK: tcc.where %[[R]], %[[F]], %[[S]] : (tensor<2x1x8xi1>, tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = tcc.where %r, %f, %s : (tensor<2x1x8xi1>, tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// The result is as large as all three operands together.
// CHECK-LABEL: func.func @broadcast_all
// CHECK: tcc.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<3x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// CHECK: tcc.compare "eq", %{{.+}}, %{{.+}} : (tensor<1x4xf32>, tensor<3x1xf32>) -> tensor<3x4xi1>
func.func @broadcast_all(%c: tensor<3x1xi1>, %a: tensor<1x4xf32>, %b: tensor<f32>, %d: tensor<3x1xf32>) -> (tensor<3x4xf32>, tensor<3x4xi1>) {
  %y = tcc.where %c, %a, %b : (tensor<3x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %e = tcc.compare "eq", %a, %d : (tensor<1x4xf32>, tensor<3x1xf32>) -> tensor<3x4xi1>
  return %y, %e : tensor<3x4xf32>, tensor<3x4xi1>
}

// -----

func.func @where_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{tcc.where: element types differ ('f32' vs 'i64')}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = tcc.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @where_shapes(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{tcc.where: shapes [3], [4] and [4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = tcc.where %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @where_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %y = tcc.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @equal_types(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+2 {{tcc.compare: element types differ ('f32' vs 'i64')}}
  // expected-error @+1 {{failed to infer returned types}}
  %e = tcc.compare "eq", %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return %e : tensor<4xi1>
}
