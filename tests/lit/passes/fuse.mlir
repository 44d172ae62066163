// RUN: tcc-opt %s --tcc-fuse --split-input-file | FileCheck %s

// An element-wise chain with a broadcast bias and an inlined constant is one
// region; the matmul stays outside and splits the chain in two.
// CHECK-LABEL: func.func @chain
// CHECK:       %[[A:.+]] = tcc.fused(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:  ^bb0(%[[X:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8xf32>):
// CHECK-NEXT:    %[[S:.+]] = tcc.add %[[X]], %[[B]]
// CHECK-NEXT:    %[[G:.+]] = tcc.gelu %[[S]]
// CHECK-NEXT:    tcc.yield %[[G]]
// CHECK:       %[[M:.+]] = tcc.matmul %[[A]], %arg2
// CHECK:       tcc.fused(%[[M]]) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK:         tcc.constant dense<2.000000e+00>
// CHECK:         tcc.softmax
// CHECK:         tcc.mul
// CHECK:         tcc.yield
// CHECK-NOT:   tcc.fused
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8xf32>
  %2 = tcc.matmul %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = tcc.softmax %2 {axis = 1 : i64} : tensor<4x8xf32>
  %c = tcc.constant dense<2.0> : tensor<f32>
  %4 = tcc.mul %3, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// A value used outside the region is also a result of it.
// CHECK-LABEL: func.func @two_results
// CHECK:       %[[F:.+]]:2 = tcc.fused(%arg0) : (tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>)
// CHECK:         tcc.yield
// CHECK:       tcc.matmul %[[F]]#0
// CHECK:       return %{{.+}}, %[[F]]#1
func.func @two_results(%x: tensor<3x5xf32>, %w: tensor<5x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = tcc.exp %x : tensor<3x5xf32>
  %1 = tcc.neg %0 : tensor<3x5xf32>
  %2 = tcc.matmul %0, %w : (tensor<3x5xf32>, tensor<5x5xf32>) -> tensor<3x5xf32>
  return %2, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// exp -> matmul -> add(_, exp): putting the add with the exp would need the
// matmul inside the region and outside it at once (a cycle), so the add gets
// its own region.
// CHECK-LABEL: func.func @no_cycle
// CHECK:       %[[E:.+]] = tcc.fused(%arg0)
// CHECK:         tcc.exp
// CHECK:       %[[M:.+]] = tcc.matmul %[[E]], %arg1
// CHECK:       tcc.fused(%[[M]], %[[E]])
// CHECK:         tcc.add
func.func @no_cycle(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tcc.exp %x : tensor<4x4xf32>
  %1 = tcc.matmul %0, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = tcc.add %1, %0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// Row ops over the last axis join element-wise ops; row statistics
// ([..., 1] values) broadcast back over the row inside the region. Inputs
// broadcast in the middle dims.
// CHECK-LABEL: func.func @row_ops
// CHECK:       tcc.fused(%arg0, %arg1, %arg2) : (tensor<2x3x16xf32>, tensor<1x3x16xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
// CHECK:         tcc.add
// CHECK:         tcc.reduce_mean
// CHECK:         tcc.sub
// CHECK:         tcc.log_softmax
// CHECK:         tcc.mul
// CHECK:         tcc.yield
// CHECK-NOT:   tcc.fused
func.func @row_ops(%x: tensor<2x3x16xf32>, %m: tensor<1x3x16xf32>, %b: tensor<16xf32>) -> tensor<2x3x16xf32> {
  %0 = tcc.add %x, %m : (tensor<2x3x16xf32>, tensor<1x3x16xf32>) -> tensor<2x3x16xf32>
  %1 = tcc.reduce_mean %0 {axes = array<i64: 2>, keepdims = true} : tensor<2x3x16xf32> -> tensor<2x3x1xf32>
  %2 = tcc.sub %0, %1 : (tensor<2x3x16xf32>, tensor<2x3x1xf32>) -> tensor<2x3x16xf32>
  %3 = tcc.log_softmax %2 {axis = 2 : i64} : tensor<2x3x16xf32>
  %4 = tcc.mul %3, %b : (tensor<2x3x16xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  return %4 : tensor<2x3x16xf32>
}

// -----

// Softmax over a non-last axis and reductions over leading axes are not
// fusible; a row value cannot be read through another broadcast (the
// reduce over axis 0 reads the region's result in a different layout).
// CHECK-LABEL: func.func @not_fused
// CHECK:       tcc.softmax %arg0 {axis = 0 : i64}
// CHECK:       tcc.fused
// CHECK:         tcc.exp
// CHECK:       tcc.reduce_sum %{{.+}} {axes = array<i64: 0>}
func.func @not_fused(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>) {
  %0 = tcc.softmax %x {axis = 0 : i64} : tensor<4x6xf32>
  %1 = tcc.exp %0 : tensor<4x6xf32>
  %2 = tcc.reduce_sum %1 {axes = array<i64: 0>} : tensor<4x6xf32> -> tensor<6xf32>
  return %1, %2 : tensor<4x6xf32>, tensor<6xf32>
}

// -----

// The loss and its gradient share one region with the logits' bias add;
// the scalar loss is a result, never read inside.
// CHECK-LABEL: func.func @cross_entropy
// CHECK:       %[[F:.+]]:2 = tcc.fused(%arg0, %arg1, %arg2) : (tensor<6x10xf32>, tensor<10xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6x10xf32>)
// CHECK:         tcc.add
// CHECK:         tcc.softmax_cross_entropy
// CHECK:         tcc.softmax_cross_entropy_grad
func.func @cross_entropy(%l: tensor<6x10xf32>, %b: tensor<10xf32>, %y: tensor<6xi64>) -> (tensor<f32>, tensor<6x10xf32>) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %l, %b : (tensor<6x10xf32>, tensor<10xf32>) -> tensor<6x10xf32>
  %1 = tcc.softmax_cross_entropy %0, %y : (tensor<6x10xf32>, tensor<6xi64>) -> tensor<f32>
  %2 = tcc.softmax_cross_entropy_grad %one, %0, %y : (tensor<f32>, tensor<6x10xf32>, tensor<6xi64>) -> tensor<6x10xf32>
  return %1, %2 : tensor<f32>, tensor<6x10xf32>
}

// -----

// A region does not span the loss of a training step unless it holds the
// loss: the gelu recomputed after the loss (as tcc-rematerialize places it)
// stays out of the forward's region, so the forward's gelu output can die
// before the loss.
// CHECK-LABEL: func.func @train_step
// CHECK:       %[[FWD:.+]] = tcc.fused(%arg0, %arg1)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:    tcc.add
// CHECK-NEXT:    tcc.gelu
// CHECK-NEXT:    tcc.yield
// CHECK:       tcc.mse_loss
// CHECK:       tcc.fused
// CHECK:         tcc.gelu
// CHECK:         tcc.gelu_grad
func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                      %b: tensor<8xf32> {tcc.kind = "param", tcc.name = "b"},
                      %t: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<4x8xf32> {tcc.kind = "grad", tcc.name = "b"}) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tcc.gelu %0 : tensor<4x8xf32>
  %2 = tcc.mse_loss %1, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  %3 = tcc.gelu %0 : tensor<4x8xf32>
  %4 = tcc.mse_loss_grad %one, %3, %t : (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = tcc.gelu_grad %4, %0 : tensor<4x8xf32>
  return %2, %5 : tensor<f32>, tensor<4x8xf32>
}

// -----

// layer_norm_grad over the last axis is expanded: dx's ops and one
// layer_norm_param_grad for the scale and bias gradients (column sums over
// the rows), which joins dx's region: one pass reads dy and x for all
// three (no dy * xhat or dy written out for the sums).
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-NOT:   tcc.layer_norm_grad
// CHECK-NOT:   tcc.reduce_sum
// CHECK:       %[[F:.+]]:3 = tcc.fused
// CHECK:         tcc.reduce_mean
// CHECK:         %[[S:.+]], %[[B:.+]] = tcc.layer_norm_param_grad %{{.+}} {axis = 2 : i64}
// CHECK:         tcc.yield %{{[^,]+}}, %[[S]], %[[B]] : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NOT:   tcc.layer_norm_param_grad
// CHECK:       return %[[F]]#0, %[[F]]#1, %[[F]]#2
func.func @layer_norm_grad(%dy: tensor<2x3x8xf32>, %x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %mean: tensor<2x3x1xf32>, %rstd: tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = tcc.layer_norm_grad %dy, %x, %g, %mean, %rstd {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %dg, %db : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A bf16 model's layer norm runs in f32 on exact widenings of its 16-bit
// dy and x: the column sums read the 16-bit values (the region's inputs),
// so the region writes no f32 copy of either.
// CHECK-LABEL: func.func @layer_norm_grad_bf16
// CHECK:       tcc.fused(%arg0, %arg1, %arg3, %arg4, %arg2) : (tensor<6x8xbf16>, tensor<6x8xbf16>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<8xf32>) -> (tensor<6x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:  ^bb0(%[[DY:[^:]+]]: tensor<6x8xbf16>, %[[X:[^:]+]]: tensor<6x8xbf16>, %[[M:[^:]+]]: tensor<6x1xf32>, %[[R:[^:]+]]: tensor<6x1xf32>,
// CHECK:         tcc.layer_norm_param_grad %[[DY]], %[[X]], %[[M]], %[[R]] {axis = 1 : i64} : (tensor<6x8xbf16>, tensor<6x8xbf16>, tensor<6x1xf32>, tensor<6x1xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK:         tcc.yield %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} : tensor<6x8xf32>, tensor<8xf32>, tensor<8xf32>
func.func @layer_norm_grad_bf16(%dy16: tensor<6x8xbf16>, %x16: tensor<6x8xbf16>, %g: tensor<8xf32>, %mean: tensor<6x1xf32>, %rstd: tensor<6x1xf32>) -> (tensor<6x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dy = tcc.cast %dy16 : tensor<6x8xbf16> -> tensor<6x8xf32>
  %x = tcc.cast %x16 : tensor<6x8xbf16> -> tensor<6x8xf32>
  %dx, %dg, %db = tcc.layer_norm_grad %dy, %x, %g, %mean, %rstd {axis = 1 : i64} : (tensor<6x8xf32>, tensor<6x8xf32>, tensor<8xf32>, tensor<6x1xf32>, tensor<6x1xf32>) -> (tensor<6x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %dg, %db : tensor<6x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Rows wider than kMaxColSumCols: the column sums stay the library's
// kernel, outside dx's region.
// CHECK-LABEL: func.func @layer_norm_grad_wide
// CHECK:       tcc.fused
// CHECK:         tcc.yield %{{[^,]+}} : tensor<2x4096xf32>
// CHECK:       tcc.layer_norm_param_grad %arg0, %arg1, %arg3, %arg4 {axis = 1 : i64}
func.func @layer_norm_grad_wide(%dy: tensor<2x4096xf32>, %x: tensor<2x4096xf32>, %g: tensor<4096xf32>, %mean: tensor<2x1xf32>, %rstd: tensor<2x1xf32>) -> (tensor<2x4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %dx, %dg, %db = tcc.layer_norm_grad %dy, %x, %g, %mean, %rstd {axis = 1 : i64} : (tensor<2x4096xf32>, tensor<2x4096xf32>, tensor<4096xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<2x4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
  return %dx, %dg, %db : tensor<2x4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// -----

// A bias gradient (a sum over every leading axis) joins the region that
// computes its dy as a column sum; a sum of a value no region computes
// stays the library's kernel.
// CHECK-LABEL: func.func @bias_grad_column_sum
// CHECK:       %[[F:.+]]:2 = tcc.fused
// CHECK:         %[[D:.+]] = tcc.relu_grad
// CHECK:         %[[S:.+]] = tcc.reduce_sum %[[D]] {axes = array<i64: 0, 1>}
// CHECK:         tcc.yield %[[D]], %[[S]] : tensor<2x3x8xf32>, tensor<8xf32>
// CHECK:       %[[A:.+]] = tcc.reduce_sum %arg0 {axes = array<i64: 0, 1>}
// CHECK:       return %[[F]]#0, %[[F]]#1, %[[A]]
func.func @bias_grad_column_sum(%dy: tensor<2x3x8xf32>, %y: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %d = tcc.relu_grad %dy, %y : tensor<2x3x8xf32>
  %s = tcc.reduce_sum %d {axes = array<i64: 0, 1>} : tensor<2x3x8xf32> -> tensor<8xf32>
  %a = tcc.reduce_sum %dy {axes = array<i64: 0, 1>} : tensor<2x3x8xf32> -> tensor<8xf32>
  return %d, %s, %a : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Data movement alone is not worth a generated kernel.
// CHECK-LABEL: func.func @reshape_only
// CHECK-NOT:   tcc.fused
func.func @reshape_only(%x: tensor<4x6xf32>) -> tensor<24xf32> {
  %0 = tcc.reshape %x : tensor<4x6xf32> -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

// A reshape whose operand and result both leave the region stays outside
// (a copy the memory plan can do in place), instead of making the region
// write the same values to two buffers.
// CHECK-LABEL: func.func @escaping_reshape
// CHECK:       %[[F:.+]] = tcc.fused(%arg0)
// CHECK-NOT:     tcc.reshape
// CHECK:         tcc.yield
// CHECK:       %[[R:.+]] = tcc.reshape %[[F]] : tensor<2x2x8xf32> -> tensor<4x8xf32>
// CHECK:       return %[[F]], %[[R]]
func.func @escaping_reshape(%x: tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, tensor<4x8xf32>) {
  %0 = tcc.exp %x : tensor<2x2x8xf32>
  %1 = tcc.reshape %0 : tensor<2x2x8xf32> -> tensor<4x8xf32>
  return %0, %1 : tensor<2x2x8xf32>, tensor<4x8xf32>
}

// -----

// Float maximum/minimum are element-wise and join a region; an integer
// maximum and a comparison (an i1 result) stay kernels.
// CHECK-LABEL: func.func @extrema
// CHECK:       tcc.fused(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:  ^bb0(%[[X:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8xf32>):
// CHECK-NEXT:    %[[M:.+]] = tcc.maximum %[[X]], %[[B]]
// CHECK-NEXT:    %[[N:.+]] = tcc.minimum %[[M]], %[[X]]
// CHECK-NEXT:    %[[S:.+]] = tcc.add %[[N]], %[[B]]
// CHECK-NEXT:    tcc.yield %[[S]]
// CHECK:       tcc.maximum %arg2, %arg2 : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK:       tcc.compare "gt", %arg0, %arg1
// CHECK-NOT:   tcc.fused
func.func @extrema(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>, tensor<4x8xi1>) {
  %0 = tcc.maximum %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tcc.minimum %0, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tcc.add %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = tcc.maximum %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %4 = tcc.compare "gt", %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  return %2, %3, %4 : tensor<4x8xf32>, tensor<4xi64>, tensor<4x8xi1>
}
