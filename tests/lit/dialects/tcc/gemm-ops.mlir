// RUN: tcc-opt %s | tcc-opt | FileCheck %s

// Every operand and result form of tcc.matmul_epilogue round-trips.

// CHECK-LABEL: func.func @forward
// CHECK: %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias_relu", transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK: %{{.+}}, %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} bias %{{.+}} {epilogue = "bias_gelu_tanh_aux"} : (tensor<8x4xbf16>, tensor<4x16xbf16>, tensor<16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>)
// CHECK: %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} {epilogue = "gelu_tanh"} : (tensor<8x4xf16>, tensor<4x16xf16>) -> tensor<8x16xf16>
func.func @forward(%x: tensor<2x8x4xf32>, %w: tensor<16x4xf32>, %b: tensor<16xf32>,
                   %xh: tensor<8x4xbf16>, %wh: tensor<4x16xbf16>, %bh: tensor<16xbf16>,
                   %xf: tensor<8x4xf16>, %wf: tensor<4x16xf16>)
    -> (tensor<2x8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf16>) {
  %y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "bias_relu", transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %g, %pre = tcc.matmul_epilogue %xh, %wh bias %bh {epilogue = "bias_gelu_tanh_aux"} : (tensor<8x4xbf16>, tensor<4x16xbf16>, tensor<16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>)
  %h = tcc.matmul_epilogue %xf, %wf {epilogue = "gelu_tanh"} : (tensor<8x4xf16>, tensor<4x16xf16>) -> tensor<8x16xf16>
  return %y, %g, %pre, %h : tensor<2x8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf16>
}

// CHECK-LABEL: func.func @backward
// CHECK: %{{.+}}, %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xf32>)
// CHECK: %{{.+}}, %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<32x16xf32>, tensor<32x4xf32>) -> (tensor<16x4xf32>, tensor<16xf32>)
// CHECK: %{{.+}}, %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} preact %{{.+}} {epilogue = "dgelu_tanh_bgrad", transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>)
// CHECK: %{{.+}}, %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xf32>, tensor<16xf32>)
// CHECK: %{{.+}}, %{{.+}} = tcc.matmul_epilogue %{{.+}}, %{{.+}} {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<32x16xf16>, tensor<32x4xf16>) -> (tensor<16x4xf32>, tensor<16xf16>)
func.func @backward(%x: tensor<32x4xbf16>, %dy: tensor<32x16xbf16>,
                    %x2: tensor<32x4xf32>, %dy2: tensor<32x16xf32>,
                    %g: tensor<2x8x4xf32>, %w: tensor<16x4xf32>, %z: tensor<2x8x16xf32>)
    -> (tensor<4x16xbf16>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf32>, tensor<2x8x16xf32>, tensor<16xf32>,
        tensor<4x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf16>) {
  %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xf32>)
  %dw2, %db2 = tcc.matmul_epilogue %dy2, %x2 {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<32x16xf32>, tensor<32x4xf32>) -> (tensor<16x4xf32>, tensor<16xf32>)
  %dx, %db3 = tcc.matmul_epilogue %g, %w preact %z {epilogue = "dgelu_tanh_bgrad", transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>)
  // Weight gradients in f32 from 16-bit operands.
  %dw4, %db4 = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<32x4xbf16>, tensor<32x16xbf16>) -> (tensor<4x16xf32>, tensor<16xf32>)
  %dyh = tcc.cast %dy2 : tensor<32x16xf32> -> tensor<32x16xf16>
  %xh = tcc.cast %x2 : tensor<32x4xf32> -> tensor<32x4xf16>
  %dw5, %db5 = tcc.matmul_epilogue %dyh, %xh {epilogue = "bgrad_lhs", transpose_lhs = true} : (tensor<32x16xf16>, tensor<32x4xf16>) -> (tensor<16x4xf32>, tensor<16xf16>)
  return %dw, %db, %dw2, %db2, %dx, %db3, %dw4, %db4, %dw5, %db5 : tensor<4x16xbf16>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf16>
}
