// RUN: tcc-opt %s --split-input-file --tcc-test-print-memory -o /dev/null 2>&1 | FileCheck %s

// MemoryModel (passes/MemoryModel.h): the dependence graph, update chains
// and temporaries of a function, and the memory `simulate` predicts for its
// block order (ops #0..#9; `end` is the return).
//
// A one-layer step with SGD momentum. Dependences: data, plus #1 -> #8
// because the update overwrites w in place after its other reader (the
// forward matmul). The whole backward (#3..#7) feeds only w's update; the
// chain waits for #1 and #0 outside it. Updates (#8's two results, #9) and
// the scalar constant 1.0 are not temporaries; the 2x4 splat 0.5 is (it is
// broadcast into one at run time). Temporaries, bytes, life:
//   t0 %0 relu   128  #0..#7   (read by the weight gradient)
//   t1 %1 logits  32  #1..#4
//   t2 %2 loss     4  #2..end  (returned)
//   t3 %4 dy      32  #4..#6
//   t4 %5 splat   32  #5..#6
//   t5 %6 dy/2    32  #6..#7
//   t6 %7 dw     256  #7..#8   (a gradient: the update's operand)
// Live bytes after each op: 128 160 164 164 196 196 228 420 260 4 (4 at the
// end). Peak 420 at #7: t0 (an activation: made before the loss at #2, read
// after it) 128, t6 (gradient) 256, t2 + t5 (temporaries) 36. All
// activations: t0 + t1 = 160.
// Persistent: weights (w 16x4 f32) 256, optimizer state (the momentum
// buffer, an optimizer update's target, and the learning rate it reads)
// 260, other state (rng.step, i64) 8, inputs (x 2x16 f32 128, labels 2 x
// i64 16) 144, constants 4: 672. Peak 672 + 420 = 1092.

// CHECK-LABEL: memory @train_step: 10 ops, 7 temps{{$}}
// CHECK-NEXT:    #0 %0 = tcc.relu: preds []{{$}}
// CHECK-NEXT:    #1 %1 = tcc.matmul: preds [#0]{{$}}
// CHECK-NEXT:    #2 %2 = tcc.softmax_cross_entropy: preds [#1]{{$}}
// CHECK-NEXT:    #3 %3 = tcc.constant: preds [], feeds update #8{{$}}
// CHECK-NEXT:    #4 %4 = tcc.softmax_cross_entropy_grad: preds [#3, #1], feeds update #8{{$}}
// CHECK-NEXT:    #5 %5 = tcc.constant: preds [], feeds update #8{{$}}
// CHECK-NEXT:    #6 %6 = tcc.mul: preds [#4, #5], feeds update #8{{$}}
// CHECK-NEXT:    #7 %7 = tcc.matmul: preds [#0, #6], feeds update #8{{$}}
// CHECK-NEXT:    #8 %{{.+}}, %{{.+}} = tcc.sgd_momentum_update: preds [#7, #1], update, chain inputs [#1, #0]{{$}}
// CHECK-NEXT:    #9 %{{.+}} = tcc.increment: preds [], update, chain inputs []{{$}}
// CHECK-NEXT:    temp 0: def #0, 128 bytes, users [#1, #7], live #0..#7{{$}}
// CHECK-NEXT:    temp 1: def #1, 32 bytes, users [#2, #4], live #1..#4{{$}}
// CHECK-NEXT:    temp 2: def #2, 4 bytes, returned, users [], live #2..end{{$}}
// CHECK-NEXT:    temp 3: def #4, 32 bytes, users [#6], live #4..#6{{$}}
// CHECK-NEXT:    temp 4: def #5, 32 bytes, users [#6], live #5..#6{{$}}
// CHECK-NEXT:    temp 5: def #6, 32 bytes, users [#7], live #6..#7{{$}}
// CHECK-NEXT:    temp 6: def #7, 256 bytes, gradient, users [#8], live #7..#8{{$}}
// CHECK-NEXT:    persistent: weights 256, weight_copies 0, optimizer_state 260, grad_accumulators 0, other_state 8, inputs 144, constants 4 (total 672){{$}}
// CHECK-NEXT:    at the peak: activations 128, gradients 256, temporaries 36 (temp_peak 420){{$}}
// CHECK-NEXT:    saved_activations 160{{$}}
// CHECK-NEXT:    peak 1092{{$}}
func.func @train_step(%x: tensor<2x16xf32> {tcc.kind = "input", tcc.name = "x"},
                      %w: tensor<16x4xf32> {tcc.kind = "param", tcc.name = "w"},
                      %labels: tensor<2xi64> {tcc.kind = "input", tcc.name = "labels"},
                      %buf: tensor<16x4xf32> {tcc.kind = "state", tcc.name = "w.momentum_buffer"},
                      %s: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"},
                      %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
        tensor<16x4xf32> {tcc.kind = "update", tcc.name = "w"},
        tensor<16x4xf32> {tcc.kind = "update", tcc.name = "w.momentum_buffer"},
        tensor<i64> {tcc.kind = "update", tcc.name = "rng.step"}) {
  %0 = tcc.relu %x : tensor<2x16xf32>
  %1 = tcc.matmul %0, %w : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  %2 = tcc.softmax_cross_entropy %1, %labels : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %3 = tcc.constant dense<1.0> : tensor<f32>
  %4 = tcc.softmax_cross_entropy_grad %3, %1, %labels : (tensor<f32>, tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %5 = tcc.constant dense<0.5> : tensor<2x4xf32>
  %6 = tcc.mul %4, %5 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %7 = tcc.matmul %0, %6 {transpose_lhs = true} : (tensor<2x16xf32>, tensor<2x4xf32>) -> tensor<16x4xf32>
  %8:2 = tcc.sgd_momentum_update %w, %7, %buf, %lr {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<16x4xf32>
  %9 = tcc.increment %s : tensor<i64>
  return %2, %8#0, %8#1, %9 : tensor<f32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<i64>
}

// -----

// No loss, no updates: nothing is an activation or a gradient, and no op
// belongs to an update chain. The non-splat constant is persistent (32
// bytes); %3, read twice by one op, has one reader. Lives (8 x f32 = 32
// bytes each): %1 #1..#3, %2 #2..end and %4 #4..end (returned), %3 #3..#4.
// Live after each op: 0 32 64 96 96 (64 at the end): the peak, 96, is first
// reached at #3 (%1, %2, %3).

// CHECK-LABEL: memory @forward: 5 ops, 4 temps{{$}}
// CHECK-NEXT:    #0 %0 = tcc.constant: preds []{{$}}
// CHECK-NEXT:    #1 %1 = tcc.add: preds [#0]{{$}}
// CHECK-NEXT:    #2 %2 = tcc.exp: preds [#1]{{$}}
// CHECK-NEXT:    #3 %3 = tcc.neg: preds [#1]{{$}}
// CHECK-NEXT:    #4 %4 = tcc.mul: preds [#3]{{$}}
// CHECK-NEXT:    temp 0: def #1, 32 bytes, users [#2, #3], live #1..#3{{$}}
// CHECK-NEXT:    temp 1: def #2, 32 bytes, returned, users [], live #2..end{{$}}
// CHECK-NEXT:    temp 2: def #3, 32 bytes, users [#4], live #3..#4{{$}}
// CHECK-NEXT:    temp 3: def #4, 32 bytes, returned, users [], live #4..end{{$}}
// CHECK-NEXT:    persistent: weights 0, weight_copies 0, optimizer_state 0, grad_accumulators 0, other_state 0, inputs 32, constants 32 (total 64){{$}}
// CHECK-NEXT:    at the peak: activations 0, gradients 0, temporaries 96 (temp_peak 96){{$}}
// CHECK-NEXT:    saved_activations 0{{$}}
// CHECK-NEXT:    peak 160{{$}}
func.func @forward(%x: tensor<8xf32> {tcc.kind = "input", tcc.name = "x"}) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = tcc.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %1 = tcc.add %x, %0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = tcc.exp %1 : tensor<8xf32>
  %3 = tcc.neg %1 : tensor<8xf32>
  %4 = tcc.mul %3, %3 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %2, %4 : tensor<8xf32>, tensor<8xf32>
}
