// RUN: tcc-opt %s --split-input-file --tcc-test-print-activations -o /dev/null 2>&1 | FileCheck %s

// ActivationAnalysis (passes/ActivationAnalysis.h): the values computed
// before the loss op and read by an op after it, with their run-time bytes.
//
//   %0  constant, read after the loss:      not (stored in the artifact)
//   %1  read only before the loss:          not (by relu, cast and nothing else)
//   %2  f32 16x8, read by mse_loss_grad:    512 bytes
//   %3  i1 16x8, read after the loss:       1024 bytes (bools are stored as
//                                           i64: 128 * 8, not 128 * 1)
//   %4  bf16 16x8, read after the loss:     256 bytes (2 per element)
//   %5  only returned (rng.step's update):  not (an output, not saved)
// Total 512 + 1024 + 256 = 1792 bytes = 1.75 KiB. Block arguments (%x, %w,
// %t) are never listed; nothing after the loss op (%6) is.

// CHECK-LABEL: activations @train_step: loss %6 = tcc.mse_loss (tensor<f32>){{$}}
// CHECK-NEXT:    %0 = tcc.constant (tensor<f32>): not an activation{{$}}
// CHECK-NEXT:    %1 = tcc.matmul (tensor<16x8xf32>): not an activation{{$}}
// CHECK-NEXT:    %2 = tcc.relu (tensor<16x8xf32>): activation, 512 bytes (512 B){{$}}
// CHECK-NEXT:    %3 = tcc.cast (tensor<16x8xi1>): activation, 1024 bytes (1.00 KiB){{$}}
// CHECK-NEXT:    %4 = tcc.cast (tensor<16x8xbf16>): activation, 256 bytes (256 B){{$}}
// CHECK-NEXT:    %5 = tcc.increment (tensor<i64>): not an activation{{$}}
// CHECK-NEXT:    total: 3 activations, 1792 bytes (1.75 KiB){{$}}
func.func @train_step(%x: tensor<16x8xf32> {tcc.kind = "input", tcc.name = "x"},
                      %w: tensor<8x8xf32> {tcc.kind = "param", tcc.name = "w"},
                      %t: tensor<16x8xf32> {tcc.kind = "input", tcc.name = "labels"},
                      %s: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
        tensor<8x8xf32> {tcc.kind = "grad", tcc.name = "w"},
        tensor<i64> {tcc.kind = "update", tcc.name = "rng.step"}) {
  %0 = tcc.constant dense<1.0> : tensor<f32>
  %1 = tcc.matmul %x, %w : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %2 = tcc.relu %1 : tensor<16x8xf32>
  %3 = tcc.cast %1 : tensor<16x8xf32> -> tensor<16x8xi1>
  %4 = tcc.cast %2 : tensor<16x8xf32> -> tensor<16x8xbf16>
  %5 = tcc.increment %s : tensor<i64>
  %6 = tcc.mse_loss %2, %t : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<f32>
  %7 = tcc.mse_loss_grad %0, %2, %t : (tensor<f32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %8 = tcc.cast %3 : tensor<16x8xi1> -> tensor<16x8xf32>
  %9 = tcc.mul %7, %8 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %10 = tcc.cast %4 : tensor<16x8xbf16> -> tensor<16x8xf32>
  %11 = tcc.add %9, %10 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %12 = tcc.matmul %x, %11 {transpose_lhs = true} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  return %6, %12, %5 : tensor<f32>, tensor<8x8xf32>, tensor<i64>
}

// -----

// A loss with no backward after it: the values before it are read only
// before it (or, %1, only returned), so there are no activations.

// CHECK-LABEL: activations @eval_loss: loss %2 = tcc.mse_loss (tensor<f32>){{$}}
// CHECK-NEXT:    %0 = tcc.exp (tensor<4x4xf32>): not an activation{{$}}
// CHECK-NEXT:    %1 = tcc.neg (tensor<4x4xf32>): not an activation{{$}}
// CHECK-NEXT:    total: 0 activations, 0 bytes (0 B){{$}}
func.func @eval_loss(%x: tensor<4x4xf32> {tcc.kind = "input", tcc.name = "x"},
                     %t: tensor<4x4xf32> {tcc.kind = "input", tcc.name = "labels"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<4x4xf32> {tcc.name = "y"}) {
  %0 = tcc.exp %x : tensor<4x4xf32>
  %1 = tcc.neg %0 : tensor<4x4xf32>
  %2 = tcc.mse_loss %0, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<f32>
  return %2, %1 : tensor<f32>, tensor<4x4xf32>
}

// -----

// Nothing to analyze: no result of kind `loss` (@forward), or a `loss`
// result that no op of the body produces (here an argument passed through).

// CHECK-LABEL: activations @forward: no loss result{{$}}
// CHECK-NOT:   total:
// CHECK:       activations @passthrough: no loss result{{$}}
// CHECK-NOT:   total:
func.func @forward(%x: tensor<4x4xf32> {tcc.kind = "input", tcc.name = "x"}) -> (tensor<4x4xf32> {tcc.name = "y"}) {
  %0 = tcc.exp %x : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
func.func @passthrough(%l: tensor<f32> {tcc.kind = "input", tcc.name = "l"}, %x: tensor<4x4xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<4x4xf32> {tcc.name = "y"}) {
  %0 = tcc.exp %x : tensor<4x4xf32>
  return %l, %0 : tensor<f32>, tensor<4x4xf32>
}
