// RUN: tcc-opt %s --tcc-gemm-epilogue --split-input-file | FileCheck %s
// RUN: tcc-opt %s --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tcc-opt %s --tcc-gemm-epilogue=column-sums=true --split-input-file | FileCheck %s --check-prefix=COLS

// A linear + ReLU layer in f32 and its backward (the MLP's step).

// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xf32>, %[[W:[a-z0-9]+]]: tensor<16x4xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[DY:[a-z0-9]+]]: tensor<8x16xf32>
// CHECK:         %[[Y:.+]] = tcc.matmul_epilogue %[[X]], %[[W]] bias %[[B]] {epilogue = "bias_relu", transpose_rhs = true} : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
// The backward reads the ReLU's output, so the pre-activation is not kept.
// CHECK-NEXT:    %[[DZ:.+]] = tcc.relu_grad %[[DY]], %[[Y]] : tensor<8x16xf32>
// CHECK-NEXT:    %[[DW:.+]], %[[DB:.+]] = tcc.matmul_epilogue %[[DZ]], %[[X]] {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<16x4xf32>, tensor<16xf32>)
// CHECK-NEXT:    return %[[Y]], %[[DZ]], %[[DW]], %[[DB]]
// OFF-LABEL:   func.func @linear_relu
// OFF-NOT:     matmul_epilogue
// With column-sums (tcc-fuse's), the bias gradient of dy computed by a
// fusible op (the ReLU gradient) stays a sum, which joins that op's region;
// the weight gradient is a plain GEMM. Where dy is an argument, as below,
// the bias gradient still folds.
// COLS-LABEL:  func.func @linear_relu
// COLS:          tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias_relu", transpose_rhs = true}
// COLS-NEXT:     %[[DZ:.+]] = tcc.relu_grad
// COLS-NEXT:     tcc.reduce_sum %[[DZ]] {axes = array<i64: 0>}
// COLS-NEXT:     tcc.matmul %[[DZ]], %{{.+}} {transpose_lhs = true}
// COLS-LABEL:  func.func @bf16_bias
// COLS:          epilogue = "bgrad_rhs"
func.func @linear_relu(%x: tensor<8x4xf32>, %w: tensor<16x4xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x4xf32>, tensor<16xf32>) {
  %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %s = tcc.add %h, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y = tcc.relu %s : tensor<8x16xf32>
  %dz = tcc.relu_grad %dy, %s : tensor<8x16xf32>
  %db = tcc.reduce_sum %dz {axes = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  %dw = tcc.matmul %dz, %x {transpose_lhs = true} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return %y, %dz, %dw, %db : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x4xf32>, tensor<16xf32>
}

// -----

// bf16 (as tcc-mixed-precision leaves it): the bias is the add's lhs, the
// product batched; the weight gradient reads a reshape of dy and the bias
// gradient sums its exact f32 widening.

// CHECK-LABEL: func.func @bf16_bias
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x8x4xbf16>, %[[W:[a-z0-9]+]]: tensor<4x16xbf16>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[DY:[a-z0-9]+]]: tensor<2x8x16xbf16>
// CHECK:         %[[BH:.+]] = tcc.cast %[[B]] : tensor<16xf32> -> tensor<16xbf16>
// CHECK-NEXT:    %[[Y:.+]] = tcc.matmul_epilogue %[[X]], %[[W]] bias %[[BH]] {epilogue = "bias"} : (tensor<2x8x4xbf16>, tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<2x8x16xbf16>
// CHECK-NOT:     tcc.reduce_sum
// CHECK-DAG:     %[[X2:.+]] = tcc.reshape %[[X]] : tensor<2x8x4xbf16> -> tensor<16x4xbf16>
// CHECK-DAG:     %[[DY2:.+]] = tcc.reshape %[[DY]] : tensor<2x8x16xbf16> -> tensor<16x16xbf16>
// CHECK:         %[[DW:.+]], %[[DB:.+]] = tcc.matmul_epilogue %[[X2]], %[[DY2]] {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<16x4xbf16>, tensor<16x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xf32>)
// CHECK-NEXT:    return %[[Y]], %[[DW]], %[[DB]]
func.func @bf16_bias(%x: tensor<2x8x4xbf16>, %w: tensor<4x16xbf16>, %b: tensor<16xf32>, %dy: tensor<2x8x16xbf16>)
    -> (tensor<2x8x16xbf16>, tensor<4x16xbf16>, tensor<16xf32>) {
  %bh = tcc.cast %b : tensor<16xf32> -> tensor<16xbf16>
  %h = tcc.matmul %x, %w : (tensor<2x8x4xbf16>, tensor<4x16xbf16>) -> tensor<2x8x16xbf16>
  %y = tcc.add %bh, %h : (tensor<16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xbf16>
  %dyf = tcc.cast %dy : tensor<2x8x16xbf16> -> tensor<2x8x16xf32>
  %db = tcc.reduce_sum %dyf {axes = array<i64: 0, 1>} : tensor<2x8x16xf32> -> tensor<16xf32>
  %x2 = tcc.reshape %x : tensor<2x8x4xbf16> -> tensor<16x4xbf16>
  %dy2 = tcc.reshape %dy : tensor<2x8x16xbf16> -> tensor<16x16xbf16>
  %dw = tcc.matmul %x2, %dy2 {transpose_lhs = true} : (tensor<16x4xbf16>, tensor<16x16xbf16>) -> tensor<4x16xbf16>
  return %y, %dw, %db : tensor<2x8x16xbf16>, tensor<4x16xbf16>, tensor<16xf32>
}

// -----

// The bias gradient and its update come before the weight-gradient GEMM
// (as autodiff orders them): the fused op replaces the GEMM and the update
// moves after it.

// CHECK-LABEL: func.func @update_first
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xf32>, %[[DY:[a-z0-9]+]]: tensor<8x16xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>
// CHECK:         %[[DW:.+]], %[[DB:.+]] = tcc.matmul_epilogue %[[X]], %[[DY]] {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<8x4xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>)
// CHECK-NEXT:    %[[B1:.+]] = tcc.sgd_update %[[B]], %[[DB]]
// CHECK-NEXT:    return %[[DW]], %[[B1]]
func.func @update_first(%x: tensor<8x4xf32>, %dy: tensor<8x16xf32>, %b: tensor<16xf32>)
    -> (tensor<4x16xf32>, tensor<16xf32>) {
  %db = tcc.reduce_sum %dy {axes = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  %lr5 = tcc.constant dense<0.1> : tensor<f32>
  %b1 = tcc.sgd_update %b, %db, %lr5 {weight_decay = 0.0 : f64} : tensor<16xf32>
  %dw = tcc.matmul %x, %dy {transpose_lhs = true} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %dw, %b1 : tensor<4x16xf32>, tensor<16xf32>
}

// -----

// tanh GELU whose backward reads the pre-activation: GELU_AUX forward;
// the backward's gelu_grad of a matmul and its bias gradient: DGELU_BGRAD.

// CHECK-LABEL: func.func @gelu
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xf32>, %[[W:[a-z0-9]+]]: tensor<4x16xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[G:[a-z0-9]+]]: tensor<8x32xf32>, %[[W2:[a-z0-9]+]]: tensor<16x32xf32>
// CHECK:         %[[Y:.+]], %[[PRE:.+]] = tcc.matmul_epilogue %[[X]], %[[W]] bias %[[B]] {epilogue = "bias_gelu_tanh_aux"} : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK-NEXT:    %[[DS:.+]], %[[DB:.+]] = tcc.matmul_epilogue %[[G]], %[[W2]] preact %[[PRE]] {epilogue = "dgelu_tanh_bgrad", transpose_rhs = true} : (tensor<8x32xf32>, tensor<16x32xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NEXT:    return %[[Y]], %[[DS]], %[[DB]]
func.func @gelu(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>, %g: tensor<8x32xf32>, %w2: tensor<16x32xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) {
  %h = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s = tcc.add %h, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y = tcc.gelu %s {approximate = "tanh"} : tensor<8x16xf32>
  %dh = tcc.matmul %g, %w2 {transpose_rhs = true} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  %ds = tcc.gelu_grad %dh, %s {approximate = "tanh"} : tensor<8x16xf32>
  %db = tcc.reduce_sum %ds {axes = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  return %y, %ds, %db : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>
}

// -----

// tcc-pad-shapes' slice between the product and the bias add: the op runs
// on the padded shape and its result is sliced.

// CHECK-LABEL: func.func @padded
// CHECK:         %[[P:.+]] = tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias_relu"} : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[Y:.+]] = tcc.slice %[[P]] {sizes = array<i64: 5, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x16xf32> -> tensor<5x16xf32>
// CHECK-NEXT:    return %[[Y]]
func.func @padded(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<5x16xf32> {
  %h = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %hs = tcc.slice %h {sizes = array<i64: 5, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x16xf32> -> tensor<5x16xf32>
  %s = tcc.add %hs, %b : (tensor<5x16xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  %y = tcc.relu %s : tensor<5x16xf32>
  return %y : tensor<5x16xf32>
}

// -----

// A padded vocabulary (tcc-pad-shapes, 10 -> 16 columns) whose slice drops
// the pad columns before the bias add: the bias is zero-padded to the
// product's columns, the op runs on the padded shape and its result is
// sliced, so the loss reads the GEMM's output rather than a biased copy.

// CHECK-LABEL: func.func @padded_vocab
// CHECK:         %[[BP:.+]] = tcc.slice_grad %arg2 {shape = array<i64: 16>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<10xbf16> -> tensor<16xbf16>
// CHECK-NEXT:    %[[P:.+]] = tcc.matmul_epilogue %arg0, %arg1 bias %[[BP]] {epilogue = "bias"} : (tensor<2x8x4xbf16>, tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<2x8x16xbf16>
// CHECK-NEXT:    %[[Y:.+]] = tcc.slice %[[P]] {sizes = array<i64: 2, 8, 10>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x8x16xbf16> -> tensor<2x8x10xbf16>
// CHECK-NEXT:    return %[[Y]]
// A slice that takes other columns than a prefix places the bias at them.
// CHECK-LABEL: func.func @strided_columns
// CHECK:         %[[BP:.+]] = tcc.slice_grad %arg2 {shape = array<i64: 16>, starts = array<i64: 1>, steps = array<i64: 2>} : tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[P:.+]] = tcc.matmul_epilogue %arg0, %arg1 bias %[[BP]] {epilogue = "bias_relu"}
// CHECK-NEXT:    tcc.slice %[[P]] {sizes = array<i64: 8, 8>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
func.func @padded_vocab(%x: tensor<2x8x4xbf16>, %w: tensor<4x16xbf16>, %b: tensor<10xbf16>) -> tensor<2x8x10xbf16> {
  %h = tcc.matmul %x, %w : (tensor<2x8x4xbf16>, tensor<4x16xbf16>) -> tensor<2x8x16xbf16>
  %hs = tcc.slice %h {sizes = array<i64: 2, 8, 10>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x8x16xbf16> -> tensor<2x8x10xbf16>
  %s = tcc.add %b, %hs : (tensor<10xbf16>, tensor<2x8x10xbf16>) -> tensor<2x8x10xbf16>
  return %s : tensor<2x8x10xbf16>
}
func.func @strided_columns(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<8xf32>) -> tensor<8x8xf32> {
  %h = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %hs = tcc.slice %h {sizes = array<i64: 8, 8>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<8x16xf32> -> tensor<8x8xf32>
  %s = tcc.add %hs, %b : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %y = tcc.relu %s : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// Left alone: erf GELU (only the bias folds), a product with another user,
// a [1, N] bias, a batched rhs, a transposed lhs, a ReLU whose
// pre-activation has another user (the bias folds, the ReLU stays), and a
// bias gradient of f32 values the GEMM reads rounded to bf16.

// CHECK-LABEL: func.func @negative
// CHECK:         %[[S1:.+]] = tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias"}
// CHECK-NEXT:    tcc.gelu %[[S1]] : tensor<8x16xf32>
// CHECK-NEXT:    %[[H2:.+]] = tcc.matmul
// CHECK-NEXT:    tcc.add %[[H2]]
// CHECK-NEXT:    %[[H3:.+]] = tcc.matmul
// CHECK-NEXT:    tcc.add %[[H3]], %{{.+}} : (tensor<8x16xf32>, tensor<1x16xf32>)
// CHECK-NEXT:    %[[H4:.+]] = tcc.matmul
// CHECK-NEXT:    tcc.add %[[H4]]
// CHECK-NEXT:    %[[H5:.+]] = tcc.matmul %{{.+}}, %{{.+}} {transpose_lhs = true}
// CHECK-NEXT:    tcc.add %[[H5]]
// CHECK-NEXT:    %[[S6:.+]] = tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias"}
// CHECK-NEXT:    tcc.relu %[[S6]]
// CHECK-NEXT:    tcc.reduce_sum
// CHECK-NEXT:    tcc.cast
// CHECK-NEXT:    tcc.cast
// CHECK-NEXT:    tcc.matmul %{{.+}}, %{{.+}} {transpose_lhs = true} : (tensor<8x4xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK-NEXT:    return
func.func @negative(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>, %b2: tensor<1x16xf32>,
                    %xb: tensor<2x8x4xf32>, %wb: tensor<2x4x16xf32>, %xt: tensor<4x8xf32>, %dy: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<2x8x16xf32>, tensor<8x16xf32>,
        tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xbf16>, tensor<16xf32>) {
  %h1 = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s1 = tcc.add %h1, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y1 = tcc.gelu %s1 : tensor<8x16xf32>
  %h2 = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s2 = tcc.add %h2, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %h3 = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s3 = tcc.add %h3, %b2 : (tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
  %h4 = tcc.matmul %xb, %wb : (tensor<2x8x4xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %s4 = tcc.add %h4, %b : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h5 = tcc.matmul %xt, %w {transpose_lhs = true} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s5 = tcc.add %h5, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %h6 = tcc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s6 = tcc.add %h6, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y6 = tcc.relu %s6 : tensor<8x16xf32>
  %db = tcc.reduce_sum %dy {axes = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  %dyh = tcc.cast %dy : tensor<8x16xf32> -> tensor<8x16xbf16>
  %xh = tcc.cast %x : tensor<8x4xf32> -> tensor<8x4xbf16>
  %dw = tcc.matmul %xh, %dyh {transpose_lhs = true} : (tensor<8x4xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  return %y1, %h2, %s2, %s3, %s4, %s5, %s6, %y6, %dw, %db : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xbf16>, tensor<16xf32>
}

// -----

// A padded head's backward (tcc-pad-shapes and tcc-mixed-precision): the
// weight-gradient GEMM reads the zero-padded bf16 loss gradient, reshaped;
// the bias gradient sums the unpadded one. The op sums the padded columns
// too (zeros) and a slice takes the bias gradient back.

// CHECK-LABEL: func.func @padded_bias_grad
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xbf16>, %[[G:[a-z0-9]+]]: tensor<2x4x10xbf16>
// CHECK:         %[[GP:.+]] = tcc.slice_grad %[[G]]
// CHECK:         %[[G2:.+]] = tcc.reshape %[[GP]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK:         %[[DW:.+]], %[[DBP:.+]] = tcc.matmul_epilogue %[[G2]], %[[X]] {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xbf16>, tensor<16xf32>)
// CHECK-NEXT:    %[[DB:.+]] = tcc.slice %[[DBP]] {sizes = array<i64: 10>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<16xf32> -> tensor<10xf32>
// CHECK-NOT:     tcc.reduce_sum
// CHECK:         return %[[DW]], %[[DB]]
func.func @padded_bias_grad(%x: tensor<8x4xbf16>, %g: tensor<2x4x10xbf16>) -> (tensor<16x4xbf16>, tensor<10xf32>) {
  %gw = tcc.cast %g : tensor<2x4x10xbf16> -> tensor<2x4x10xf32>
  %db = tcc.reduce_sum %gw {axes = array<i64: 0, 1>} : tensor<2x4x10xf32> -> tensor<10xf32>
  %gp = tcc.slice_grad %g {shape = array<i64: 2, 4, 16>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x10xbf16> -> tensor<2x4x16xbf16>
  %g2 = tcc.reshape %gp : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dw = tcc.matmul %g2, %x {transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xbf16>
  return %dw, %db : tensor<16x4xbf16>, tensor<10xf32>
}

// -----

// A pad with a non-zero start (not a zero pad at the end) is not summed
// through: the sum stays.

// CHECK-LABEL: func.func @offset_pad_bias_grad
// CHECK:         tcc.reduce_sum
// CHECK:         tcc.matmul %
func.func @offset_pad_bias_grad(%x: tensor<8x4xbf16>, %g: tensor<8x10xbf16>) -> (tensor<16x4xbf16>, tensor<10xf32>) {
  %gw = tcc.cast %g : tensor<8x10xbf16> -> tensor<8x10xf32>
  %db = tcc.reduce_sum %gw {axes = array<i64: 0>} : tensor<8x10xf32> -> tensor<10xf32>
  %gp = tcc.slice_grad %g {shape = array<i64: 8, 16>, starts = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<8x10xbf16> -> tensor<8x16xbf16>
  %dw = tcc.matmul %gp, %x {transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xbf16>
  return %dw, %db : tensor<16x4xbf16>, tensor<10xf32>
}

// -----

// Weight gradients that tcc-mixed-precision made write f32 from bf16
// operands: the bias gradient folds in and the op keeps the f32 result. A
// forward form does not take such a GEMM (its epilogue would run on the
// 16-bit type): the f32 product and its f32 bias add stay as they are.

// CHECK-LABEL: func.func @f32_weight_gradient
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xbf16>, %[[W:[a-z0-9]+]]: tensor<16x4xbf16>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[DZ:[a-z0-9]+]]: tensor<8x16xbf16>
// CHECK:         %[[H:.+]] = tcc.matmul %[[X]], %[[W]] {transpose_rhs = true} : (tensor<8x4xbf16>, tensor<16x4xbf16>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[S:.+]] = tcc.add %[[H]], %[[B]]
// CHECK-NEXT:    %[[DW:.+]], %[[DB:.+]] = tcc.matmul_epilogue %[[DZ]], %[[X]] {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xf32>, tensor<16xf32>)
// CHECK-NEXT:    return %[[S]], %[[DW]], %[[DB]]
func.func @f32_weight_gradient(%x: tensor<8x4xbf16>, %w: tensor<16x4xbf16>, %b: tensor<16xf32>, %dz: tensor<8x16xbf16>)
    -> (tensor<8x16xf32>, tensor<16x4xf32>, tensor<16xf32>) {
  %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<8x4xbf16>, tensor<16x4xbf16>) -> tensor<8x16xf32>
  %s = tcc.add %h, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %dzf = tcc.cast %dz : tensor<8x16xbf16> -> tensor<8x16xf32>
  %db = tcc.reduce_sum %dzf {axes = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  %dw = tcc.matmul %dz, %x {transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xf32>
  return %s, %dw, %db : tensor<8x16xf32>, tensor<16x4xf32>, tensor<16xf32>
}

// -----

// A transpose that keeps the last axis last only reorders the rows the sum
// runs over (a sequence-major attention's output projection reads its
// gradient so): the bias gradient folds into the weight-gradient GEMM. One
// that moves the last axis sums other columns: that sum stays.

// CHECK-LABEL: func.func @transposed_rows
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x4xbf16>, %[[G:[a-z0-9]+]]: tensor<2x4x16xbf16>
// CHECK:         %[[T:.+]] = tcc.transpose %[[G]] {perm = array<i64: 1, 0, 2>}
// CHECK:         %[[R:.+]] = tcc.reshape %[[T]] : tensor<4x2x16xbf16> -> tensor<8x16xbf16>
// CHECK:         %[[DW:.+]], %[[DB:.+]] = tcc.matmul_epilogue %[[R]], %[[X]] {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xf32>, tensor<16xf32>)
// CHECK-NOT:     tcc.reduce_sum
// CHECK:         return %[[DW]], %[[DB]]
func.func @transposed_rows(%x: tensor<8x4xbf16>, %g: tensor<2x4x16xbf16>) -> (tensor<16x4xf32>, tensor<16xf32>) {
  %gw = tcc.cast %g : tensor<2x4x16xbf16> -> tensor<2x4x16xf32>
  %db = tcc.reduce_sum %gw {axes = array<i64: 0, 1>} : tensor<2x4x16xf32> -> tensor<16xf32>
  %t = tcc.transpose %g {perm = array<i64: 1, 0, 2>} : tensor<2x4x16xbf16> -> tensor<4x2x16xbf16>
  %r = tcc.reshape %t : tensor<4x2x16xbf16> -> tensor<8x16xbf16>
  %dw = tcc.matmul %r, %x {transpose_lhs = true} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> tensor<16x4xf32>
  return %dw, %db : tensor<16x4xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @transposed_columns
// CHECK:         tcc.reduce_sum
// CHECK:         tcc.matmul %
func.func @transposed_columns(%x: tensor<32x4xbf16>, %g: tensor<2x16x16xbf16>) -> (tensor<16x4xf32>, tensor<16xf32>) {
  %gw = tcc.cast %g : tensor<2x16x16xbf16> -> tensor<2x16x16xf32>
  %db = tcc.reduce_sum %gw {axes = array<i64: 0, 1>} : tensor<2x16x16xf32> -> tensor<16xf32>
  %t = tcc.transpose %g {perm = array<i64: 0, 2, 1>} : tensor<2x16x16xbf16> -> tensor<2x16x16xbf16>
  %r = tcc.reshape %t : tensor<2x16x16xbf16> -> tensor<32x16xbf16>
  %dw = tcc.matmul %r, %x {transpose_lhs = true} : (tensor<32x16xbf16>, tensor<32x4xbf16>) -> tensor<16x4xf32>
  return %dw, %db : tensor<16x4xf32>, tensor<16xf32>
}
