// RUN: tcc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// tcc.compare, tcc.logic, tcc.maximum/minimum, tcc.reduce_max/min,
// tcc.arg_max/arg_min: round trip, inferred shapes, errors.

// CHECK-LABEL: func.func @round_trip
// CHECK: tcc.compare "lt", %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK: tcc.logic "xor", %{{.+}}, %{{.+}} : (tensor<2x3xi1>, tensor<i1>) -> tensor<2x3xi1>
// CHECK: tcc.maximum %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: tcc.minimum %{{.+}}, %{{.+}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK: tcc.reduce_max %{{.+}} {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
// CHECK: tcc.reduce_min %{{.+}} {axes = array<i64: 0>, keepdims = true} : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK: tcc.arg_max %{{.+}} {axis = 1 : i64, select_last_index = true} : tensor<2x3xf32> -> tensor<2xi64>
// CHECK: tcc.arg_min %{{.+}} {axis = 0 : i64} : tensor<2x3xf32> -> tensor<3xi64>
func.func @round_trip(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %t: tensor<i1>, %i: tensor<2xi64>)
    -> (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>, tensor<1x3xf32>, tensor<2xi64>, tensor<3xi64>) {
  %c = tcc.compare "lt", %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %n = tcc.logic "xor", %c, %t : (tensor<2x3xi1>, tensor<i1>) -> tensor<2x3xi1>
  %m = tcc.maximum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %k = tcc.minimum %i, %i : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %r = tcc.reduce_max %a {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
  %s = tcc.reduce_min %a {axes = array<i64: 0>, keepdims = true} : tensor<2x3xf32> -> tensor<1x3xf32>
  %x = tcc.arg_max %a {axis = 1 : i64, select_last_index = true} : tensor<2x3xf32> -> tensor<2xi64>
  %y = tcc.arg_min %a {axis = 0 : i64} : tensor<2x3xf32> -> tensor<3xi64>
  return %n, %m, %k, %r, %s, %x, %y : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>, tensor<1x3xf32>, tensor<2xi64>, tensor<3xi64>
}

// -----

func.func @bad_predicate(%a: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'tcc.compare' op has predicate 'ne', expected eq, lt, le, gt or ge}}
  %e = tcc.compare "ne", %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %e : tensor<4xi1>
}

// -----

func.func @bad_kind(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'tcc.logic' op has kind 'nand', expected and, or or xor}}
  %e = tcc.logic "nand", %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %e : tensor<4xi1>
}

// -----

func.func @logic_floats(%a: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %e = tcc.logic "and", %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %e : tensor<4xi1>
}

// -----

func.func @maximum_types(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{tcc.maximum: element types differ ('f32' vs 'i64')}}
  // expected-error @+1 {{failed to infer returned types}}
  %e = tcc.maximum %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

func.func @arg_axis(%a: tensor<4xf32>) -> tensor<i64> {
  // expected-error @+2 {{tcc.arg_max: axis 1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %e = tcc.arg_max %a {axis = 1 : i64} : tensor<4xf32> -> tensor<i64>
  return %e : tensor<i64>
}
