// RUN: tcc-opt %s --tcc-trim-conv-taps="gemm=false" --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-trim-conv-taps --split-input-file | FileCheck %s --check-prefix=GEMM

// A 3x3 convolution with pad 1 on a 1x1 map (ResNet's last stage at 32x32)
// only reads its centre tap: a 1x1 convolution on the centre slice, no pads.
// CHECK-LABEL: func.func @centre_only
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8x1x1xf32>, %[[W:[^:]+]]: tensor<6x8x3x3xf32>, %[[B:[^:]+]]: tensor<6xf32>)
// CHECK-NEXT: %[[C:.+]] = tcc.slice %[[W]] {sizes = array<i64: 6, 8, 1, 1>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>} : tensor<6x8x3x3xf32> -> tensor<6x8x1x1xf32>
// CHECK-NEXT: %[[Y:.+]] = tcc.conv2d %[[X]], %[[C]], %[[B]] {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x8x1x1xf32>, tensor<6x8x1x1xf32>, tensor<6xf32>) -> tensor<4x6x1x1xf32>
// CHECK-NEXT: return %[[Y]]
// With gemm, the 1x1 result is a GEMM of the flattened input and weight.
// GEMM-LABEL: func.func @centre_only
// GEMM-SAME: (%[[X:[^:]+]]: tensor<4x8x1x1xf32>, %[[W:[^:]+]]: tensor<6x8x3x3xf32>, %[[B:[^:]+]]: tensor<6xf32>)
// GEMM-NEXT: %[[C:.+]] = tcc.slice %[[W]] {sizes = array<i64: 6, 8, 1, 1>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}
// GEMM-NEXT: %[[R:.+]] = tcc.reshape %[[X]] : tensor<4x8x1x1xf32> -> tensor<4x8xf32>
// GEMM-NEXT: %[[WR:.+]] = tcc.reshape %[[C]] : tensor<6x8x1x1xf32> -> tensor<6x8xf32>
// GEMM-NEXT: %[[M:.+]] = tcc.matmul %[[R]], %[[WR]] {transpose_rhs = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
// GEMM-NEXT: %[[A:.+]] = tcc.add %[[M]], %[[B]] : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// GEMM-NEXT: %[[Y:.+]] = tcc.reshape %[[A]] : tensor<4x6xf32> -> tensor<4x6x1x1xf32>
// GEMM-NEXT: return %[[Y]]
func.func @centre_only(%x: tensor<4x8x1x1xf32>, %w: tensor<6x8x3x3xf32>, %b: tensor<6xf32>) -> tensor<4x6x1x1xf32> {
  %y = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x8x1x1xf32>, tensor<6x8x3x3xf32>, tensor<6xf32>) -> tensor<4x6x1x1xf32>
  return %y : tensor<4x6x1x1xf32>
}

// -----

// Stride 2 from 2x2 to 1x1 with pad 1: the single output reads input rows
// and columns 0 and 1 through taps 1 and 2; tap 0 only sees the top/left
// padding. The window keeps taps 1..2 and starts at the input's corner.
// CHECK-LABEL: func.func @stride2_to_1x1
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x2x2xf32>, %[[W:[^:]+]]: tensor<8x4x3x3xf32>)
// CHECK-NEXT: %[[C:.+]] = tcc.slice %[[W]] {sizes = array<i64: 8, 4, 2, 2>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: %[[Y:.+]] = tcc.conv2d %[[X]], %[[C]] {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x2x2xf32>, tensor<8x4x2x2xf32>) -> tensor<2x8x1x1xf32>
// GEMM-LABEL: func.func @stride2_to_1x1
// GEMM: %[[C:.+]] = tcc.slice %{{.+}} {sizes = array<i64: 8, 4, 2, 2>, starts = array<i64: 0, 0, 1, 1>
// GEMM-NEXT: %[[R:.+]] = tcc.reshape %{{.+}} : tensor<2x4x2x2xf32> -> tensor<2x16xf32>
// GEMM-NEXT: %[[WR:.+]] = tcc.reshape %[[C]] : tensor<8x4x2x2xf32> -> tensor<8x16xf32>
// GEMM-NEXT: tcc.matmul %[[R]], %[[WR]] {transpose_rhs = true} : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
func.func @stride2_to_1x1(%x: tensor<2x4x2x2xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32> {
  %y = tcc.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32>
  return %y : tensor<2x8x1x1xf32>
}

// -----

// One axis only: rows of a 1x5 map (H 1) keep the centre tap, columns keep
// all three and their pads; groups carry over.
// CHECK-LABEL: func.func @rows_only
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x1x5xf32>, %[[W:[^:]+]]: tensor<6x2x3x3xf32>)
// CHECK-NEXT: %[[C:.+]] = tcc.slice %[[W]] {sizes = array<i64: 6, 2, 1, 3>, starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: tcc.conv2d %[[X]], %[[C]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x1x5xf32>, tensor<6x2x1x3xf32>) -> tensor<2x6x1x5xf32>
func.func @rows_only(%x: tensor<2x4x1x5xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x6x1x5xf32> {
  %y = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x1x5xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x1x5xf32>
  return %y : tensor<2x6x1x5xf32>
}

// -----

// Asymmetric padding: pad 2 on top and 0 below a 2-row map with a 3-row
// kernel, stride 1: output rows 0..1 read taps 2 (row 0) and 1..2 (row 0..1);
// tap 0 never reads. Kernel rows 1..2, top pad 1, bottom pad 0.
// CHECK-LABEL: func.func @asymmetric
// CHECK: tcc.slice %{{.+}} {sizes = array<i64: 3, 2, 2, 1>, starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK: tcc.conv2d {{.+}} {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x4xf32>, tensor<3x2x2x1xf32>) -> tensor<1x3x2x4xf32>
func.func @asymmetric(%x: tensor<1x2x2x4xf32>, %w: tensor<3x2x3x1xf32>) -> tensor<1x3x2x4xf32> {
  %y = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x2x4xf32>, tensor<3x2x3x1xf32>) -> tensor<1x3x2x4xf32>
  return %y : tensor<1x3x2x4xf32>
}

// -----

// Every tap reads the input for some output: ResNet's 3x3 convolutions on
// 8x8 and 2x2 maps, and the stride-2 one from 4x4 to 2x2, stay as they are.
// CHECK-LABEL: func.func @all_taps_live
// CHECK-NOT: tcc.slice
// CHECK: tcc.conv2d {{.+}} pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
// CHECK: tcc.conv2d {{.+}} pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x2x2xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x2x2xf32>
// CHECK: tcc.conv2d {{.+}} pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x2x2xf32>
// CHECK-NOT: tcc.slice
func.func @all_taps_live(%a: tensor<2x4x8x8xf32>, %b: tensor<2x4x2x2xf32>, %c: tensor<2x4x4x4xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) {
  %ya = tcc.conv2d %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %yb = tcc.conv2d %b, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x2x2xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x2x2xf32>
  %yc = tcc.conv2d %c, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x2x2xf32>
  return %ya, %yb, %yc : tensor<2x4x8x8xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>
}

// -----

// Dilation 2 on 3 rows with pad 1: only tap 1 (row 1) reads, but dropping
// tap 0 would need a top pad of -1, so the rows stay; the columns (a 1-wide
// map, pad 2, dilation 2) keep tap 1 with pads 0.
// CHECK-LABEL: func.func @dilated
// CHECK-NEXT: %[[C:.+]] = tcc.slice %{{.+}} {sizes = array<i64: 2, 2, 3, 1>, starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: tcc.conv2d %{{.+}}, %[[C]] {dilations = array<i64: 2, 2>, groups = 1 : i64, pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x1xf32>, tensor<2x2x3x1xf32>) -> tensor<1x2x1x1xf32>
func.func @dilated(%x: tensor<1x2x3x1xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x1x1xf32> {
  %y = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 2, 1, 2>, dilations = array<i64: 2, 2>, groups = 1 : i64} : (tensor<1x2x3x1xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x1x1xf32>
  return %y : tensor<1x2x1x1xf32>
}

// -----

// No tap ever reads the input (the result is the bias): left alone.
// CHECK-LABEL: func.func @only_padding
// CHECK-NOT: tcc.slice
// CHECK: tcc.conv2d
func.func @only_padding(%x: tensor<1x2x1x1xf32>, %w: tensor<2x2x3x3xf32>, %b: tensor<2xf32>) -> tensor<1x2x1x1xf32> {
  %y = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 3, 3>, dilations = array<i64: 2, 2>, groups = 1 : i64} : (tensor<1x2x1x1xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x1x1xf32>
  return %y : tensor<1x2x1x1xf32>
}

// -----

// A 1x1 stride-2 shortcut from 2x2 to 1x1 reads the input's first position
// only: a slice of the input, then a GEMM. With two groups it stays.
// GEMM-LABEL: func.func @shortcut
// GEMM-SAME: (%[[X:[^:]+]]: tensor<2x4x2x2xf32>, %[[W:[^:]+]]: tensor<8x4x1x1xf32>, %[[WG:[^:]+]]: tensor<8x2x1x1xf32>)
// GEMM: %[[S:.+]] = tcc.slice %[[X]] {sizes = array<i64: 2, 4, 1, 1>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// GEMM-NEXT: %[[R:.+]] = tcc.reshape %[[S]] : tensor<2x4x1x1xf32> -> tensor<2x4xf32>
// GEMM-NEXT: %[[WR:.+]] = tcc.reshape %[[W]] : tensor<8x4x1x1xf32> -> tensor<8x4xf32>
// GEMM-NEXT: tcc.matmul %[[R]], %[[WR]] {transpose_rhs = true}
// GEMM: tcc.conv2d %[[X]], %[[WG]] {{.+}} groups = 2 : i64
// CHECK-LABEL: func.func @shortcut
// CHECK-NOT: tcc.slice
// CHECK-NOT: tcc.matmul
func.func @shortcut(%x: tensor<2x4x2x2xf32>, %w: tensor<8x4x1x1xf32>, %wg: tensor<8x2x1x1xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>) {
  %y = tcc.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x2x2xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x1x1xf32>
  %z = tcc.conv2d %x, %wg {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x2x2xf32>, tensor<8x2x1x1xf32>) -> tensor<2x8x1x1xf32>
  return %y, %z : tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>
}
