// RUN: tcc-opt %s --tcc-fuse --split-input-file | FileCheck %s

// A bf16 chain as tcc-mixed-precision writes it (a bias add and GELU in
// bf16, a cast up for an f32 op, a cast back down) is one region with the
// bf16 splat constant inside; the weight's cast for the matmul alone is not
// worth a region and stays a cast kernel.
// CHECK-LABEL: func.func @bf16_chain
// CHECK:       %[[W:.+]] = tcc.cast %arg2 : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK:       %[[F:.+]] = tcc.fused(%arg0, %arg1, %arg3) : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<4x8xf32>) -> tensor<4x8xbf16> {
// CHECK-NEXT:  ^bb0(%[[X:.+]]: tensor<4x8xbf16>, %[[B:.+]]: tensor<8xbf16>, %[[Y:.+]]: tensor<4x8xf32>):
// CHECK-NEXT:    %[[C:.+]] = tcc.constant dense<5.000000e-01> : tensor<bf16>
// CHECK-NEXT:    %[[S:.+]] = tcc.add %[[X]], %[[B]] : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT:    %[[G:.+]] = tcc.gelu %[[S]]
// CHECK-NEXT:    %[[M:.+]] = tcc.mul %[[G]], %[[C]]
// CHECK-NEXT:    %[[U:.+]] = tcc.cast %[[M]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[A:.+]] = tcc.add %[[U]], %[[Y]]
// CHECK-NEXT:    %[[D:.+]] = tcc.cast %[[A]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    tcc.yield %[[D]] : tensor<4x8xbf16>
// CHECK:       tcc.matmul %[[F]], %[[W]]
// CHECK-NOT:   tcc.fused
func.func @bf16_chain(%x: tensor<4x8xbf16>, %b: tensor<8xbf16>, %w: tensor<8x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %wb = tcc.cast %w : tensor<8x8xf32> -> tensor<8x8xbf16>
  %c = tcc.constant dense<0.5> : tensor<bf16>
  %0 = tcc.add %x, %b : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8xbf16>
  %2 = tcc.mul %1, %c : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %3 = tcc.cast %2 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %4 = tcc.add %3, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = tcc.cast %4 : tensor<4x8xf32> -> tensor<4x8xbf16>
  %6 = tcc.matmul %5, %wb : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %6 : tensor<4x8xbf16>
}

// -----

// f16 with f16 <-> bf16 casts, a 16-bit where and a broadcast row value.
// CHECK-LABEL: func.func @f16_chain
// CHECK:       tcc.fused(%arg0, %arg1, %arg2) : (tensor<3x16xf16>, tensor<3x1xf16>, tensor<3x16xi1>) -> tensor<3x16xbf16> {
// CHECK:         tcc.constant dense<2.000000e+00> : tensor<f16>
// CHECK:         tcc.div
// CHECK:         tcc.where
// CHECK:         tcc.cast %{{.+}} : tensor<3x16xf16> -> tensor<3x16xbf16>
// CHECK:         tcc.exp %{{.+}} : tensor<3x16xbf16>
// CHECK:         tcc.yield
// CHECK-NOT:   tcc.fused
func.func @f16_chain(%x: tensor<3x16xf16>, %r: tensor<3x1xf16>, %k: tensor<3x16xi1>) -> tensor<3x16xbf16> {
  %two = tcc.constant dense<2.0> : tensor<f16>
  %0 = tcc.div %x, %two : (tensor<3x16xf16>, tensor<f16>) -> tensor<3x16xf16>
  %1 = tcc.sub %0, %r : (tensor<3x16xf16>, tensor<3x1xf16>) -> tensor<3x16xf16>
  %2 = tcc.where %k, %1, %x : (tensor<3x16xi1>, tensor<3x16xf16>, tensor<3x16xf16>) -> tensor<3x16xf16>
  %3 = tcc.cast %2 : tensor<3x16xf16> -> tensor<3x16xbf16>
  %4 = tcc.exp %3 : tensor<3x16xbf16>
  return %4 : tensor<3x16xbf16>
}

// -----

// Row ops compute on f32 rows: a bf16 value reaches them through a cast
// that joins the region, and the cast of their result for the next matmul
// joins it too, so the region writes the bf16 tensor (the f32 result,
// read only by the cast, is not written at all).
// CHECK-LABEL: func.func @cast_around_rows
// CHECK:       %[[F:.+]] = tcc.fused(%arg0, %arg1) : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16> {
// CHECK:         tcc.add %{{.+}} : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>
// CHECK:         tcc.cast %{{.+}} : tensor<4x32xbf16> -> tensor<4x32xf32>
// CHECK:         tcc.softmax %{{.+}} : tensor<4x32xf32>
// CHECK:         tcc.cast %{{.+}} : tensor<4x32xf32> -> tensor<4x32xbf16>
// CHECK:         tcc.yield %{{.+}} : tensor<4x32xbf16>
// CHECK:       tcc.matmul %[[F]], %arg2
func.func @cast_around_rows(%x: tensor<4x32xbf16>, %m: tensor<4x32xbf16>, %v: tensor<32x8xbf16>) -> tensor<4x8xbf16> {
  %0 = tcc.add %x, %m : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>
  %1 = tcc.cast %0 : tensor<4x32xbf16> -> tensor<4x32xf32>
  %2 = tcc.softmax %1 {axis = 1 : i64} : tensor<4x32xf32>
  %3 = tcc.cast %2 : tensor<4x32xf32> -> tensor<4x32xbf16>
  %4 = tcc.matmul %3, %v : (tensor<4x32xbf16>, tensor<32x8xbf16>) -> tensor<4x8xbf16>
  return %4 : tensor<4x8xbf16>
}

// -----

// What stays out: a row op on a bf16 tensor (it joins nothing), a cast from
// an integer, and a lone cast (a conversion kernel does as well).
// CHECK-LABEL: func.func @stays_out
// CHECK:       tcc.softmax %arg0 {axis = 1 : i64} : tensor<4x32xbf16>
// CHECK:       tcc.cast %arg1 : tensor<4x32xi64> -> tensor<4x32xf32>
// CHECK:       tcc.cast %arg2 : tensor<4x32xf32> -> tensor<4x32xf16>
// CHECK-NOT:   tcc.fused
func.func @stays_out(%x: tensor<4x32xbf16>, %i: tensor<4x32xi64>, %y: tensor<4x32xf32>) -> (tensor<4x32xbf16>, tensor<4x32xf32>, tensor<4x32xf16>) {
  %0 = tcc.softmax %x {axis = 1 : i64} : tensor<4x32xbf16>
  %1 = tcc.cast %i : tensor<4x32xi64> -> tensor<4x32xf32>
  %2 = tcc.cast %y : tensor<4x32xf32> -> tensor<4x32xf16>
  return %0, %1, %2 : tensor<4x32xbf16>, tensor<4x32xf32>, tensor<4x32xf16>
}

// -----

// The forward widens the bf16 residual for its layer norm; the backward
// (after the loss) reads the widening again: each reader gets its own cast
// inside its region and reads the bf16 value, so that is what is kept
// across the loss - a column sum too (a region of the cast and the sum).
// CHECK-LABEL: func.func @widen_after_loss
// CHECK: %[[F:.+]]:2 = tcc.fused({{.*}}) : {{.*}} -> (tensor<4x8xbf16>, tensor<4x8xbf16>)
// CHECK: tcc.fused(%{{.+}}, %[[F]]#0) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK-DAG: tcc.cast %{{.+}} : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-DAG: tcc.mul
// CHECK: tcc.fused(%[[F]]#0) : (tensor<4x8xbf16>) -> tensor<8xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tcc.cast
// CHECK-NEXT: tcc.reduce_sum
func.func @widen_after_loss(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>, %w: tensor<8xf32>, %bias: tensor<8xf32>, %m: tensor<8x8xbf16>, %labels: tensor<4xi64>)
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<4x8xf32>, tensor<8xf32>) {
  %one = tcc.constant dense<1.000000e+00> : tensor<f32>
  %x16 = tcc.add %a, %b : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %x = tcc.cast %x16 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %y, %mean, %rstd = tcc.layer_norm %x, %w, %bias {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %y16 = tcc.cast %y : tensor<4x8xf32> -> tensor<4x8xbf16>
  %p = tcc.matmul %y16, %m : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %pf = tcc.cast %p : tensor<4x8xbf16> -> tensor<4x8xf32>
  %l = tcc.softmax_cross_entropy %pf, %labels : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %g = tcc.softmax_cross_entropy_grad %one, %pf, %labels : (tensor<f32>, tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %g16 = tcc.cast %g : tensor<4x8xf32> -> tensor<4x8xbf16>
  %d = tcc.matmul %g16, %m : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %df = tcc.cast %d : tensor<4x8xbf16> -> tensor<4x8xf32>
  %z = tcc.mul %df, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = tcc.reduce_sum %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %l, %z, %s : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>
}
