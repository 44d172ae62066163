// RUN: tcc-opt %s --split-input-file --tcc-plan-memory | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory=strategy=original | FileCheck %s --check-prefix=ORIG
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory=strategy=feed | FileCheck %s --check-prefix=FEED
// RUN: not tcc-opt %s --split-input-file --tcc-plan-memory=strategy=bogus 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tcc-opt %s --split-input-file --tcc-plan-memory=group-updates=false | FileCheck %s --check-prefix=APART

// A two-layer MLP step with SGD as the pipeline leaves it: every update at
// the end, so the large gradient of w2 (8 KiB) lives through the whole
// backward of the first layer (temp peak 11268 bytes).
//
// feed: each weight gradient is made as soon as it can be and its update
// runs right after it, but after the last reader of the old w2 (%dr): the
// update is written in place, over w2. Peak 10756, at %dw2.
//
// greedy (the lowest, so auto's choice): after %dr, the first layer's
// backward frees more than it allocates, so it runs (and w1 is updated)
// before the 8 KiB %dw2 is made. At the peak (%dw2) live: r (an activation,
// 1024), dw2 (a gradient, 8192), loss + dy (516): 9732. Persistent: weights
// 10240, inputs 128 + 32, the scalar constant 4, the learning rate the
// updates read (optimizer state) 4.

func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                      %w1: tensor<64x8xf32> {tcc.kind = "param", tcc.name = "w1"},
                      %w2: tensor<32x64xf32> {tcc.kind = "param", tcc.name = "w2"},
                      %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"},
    %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
        tensor<64x8xf32> {tcc.kind = "update", tcc.name = "w1"},
        tensor<32x64xf32> {tcc.kind = "update", tcc.name = "w2"}) {
  %h = tcc.matmul %x, %w1 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<64x8xf32>) -> tensor<4x64xf32>
  %r = tcc.relu %h : tensor<4x64xf32>
  %y = tcc.matmul %r, %w2 {transpose_rhs = true} : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  %loss = tcc.softmax_cross_entropy %y, %labels : (tensor<4x32xf32>, tensor<4xi64>) -> tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<f32>
  %dy = tcc.softmax_cross_entropy_grad %one, %y, %labels : (tensor<f32>, tensor<4x32xf32>, tensor<4xi64>) -> tensor<4x32xf32>
  %dw2 = tcc.matmul %dy, %r {transpose_lhs = true} : (tensor<4x32xf32>, tensor<4x64xf32>) -> tensor<32x64xf32>
  %dr = tcc.matmul %dy, %w2 : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
  %dh = tcc.relu_grad %dr, %h : tensor<4x64xf32>
  %dw1 = tcc.matmul %dh, %x {transpose_lhs = true} : (tensor<4x64xf32>, tensor<4x8xf32>) -> tensor<64x8xf32>
  %w1n = tcc.sgd_update %w1, %dw1, %lr {weight_decay = 0.0 : f64} : tensor<64x8xf32>
  %w2n = tcc.sgd_update %w2, %dw2, %lr {weight_decay = 0.0 : f64} : tensor<32x64xf32>
  return %loss, %w1n, %w2n : tensor<f32>, tensor<64x8xf32>, tensor<32x64xf32>
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    tcc.memory = {activations = 1024 : i64, constants = 4 : i64, grad_accumulators = 0 : i64, gradients = 8192 : i64, inputs = 160 : i64, optimizer_state = 4 : i64, other_state = 0 : i64, peak = 20140 : i64, saved_activations = 2560 : i64, schedule = "greedy", temp_peak = 9732 : i64, temporaries = 516 : i64, weights = 10240 : i64}
// CHECK:         %[[DY:.+]] = tcc.softmax_cross_entropy_grad
// CHECK-NEXT:    %[[DR:.+]] = tcc.matmul %[[DY]], %{{[^ ]+}} :
// CHECK-NEXT:    %[[DH:.+]] = tcc.relu_grad %[[DR]]
// CHECK-NEXT:    %[[DW1:.+]] = tcc.matmul %[[DH]]
// CHECK-NEXT:    %[[W1N:.+]] = tcc.sgd_update %{{.+}}, %[[DW1]]
// CHECK-NEXT:    %[[DW2:.+]] = tcc.matmul %[[DY]], %{{.+}} {transpose_lhs = true}
// CHECK-NEXT:    %[[W2N:.+]] = tcc.sgd_update %{{.+}}, %[[DW2]]
// CHECK-NEXT:    return %{{.+}}, %[[W1N]], %[[W2N]]

// FEED-LABEL: func.func @train_step
// FEED-SAME:    schedule = "feed", temp_peak = 10756 : i64
// FEED:         %[[DW2:.+]] = tcc.matmul %{{.+}} {transpose_lhs = true} : (tensor<4x32xf32>, tensor<4x64xf32>) -> tensor<32x64xf32>
// FEED-NEXT:    %[[DR:.+]] = tcc.matmul
// FEED-NEXT:    %[[W2N:.+]] = tcc.sgd_update %{{.+}}, %[[DW2]]
// FEED-NEXT:    %[[DH:.+]] = tcc.relu_grad %[[DR]]

// ORIG-LABEL: func.func @train_step
// ORIG-SAME:    peak = 21676 : i64, {{.*}}schedule = "original", temp_peak = 11268 : i64
// ORIG:         tcc.relu_grad
// ORIG-NEXT:    tcc.matmul
// ORIG-NEXT:    tcc.sgd_update
// ORIG-NEXT:    tcc.sgd_update
// ORIG-NEXT:    return

// BAD: error: tcc-plan-memory: unknown strategy 'bogus' (valid: auto, original, hoist, feed, sink, greedy)

// -----

// A parameter read again after its gradient is complete (a shared weight):
// the update waits for that reader (%b), and the AdamW step counter (an
// update with no other input) runs first; the update then frees the
// gradient before the large %d is computed. AdamW state is optimizer state.

func.func @shared(%x: tensor<4x4xf32> {tcc.kind = "input", tcc.name = "x"},
                  %xt: tensor<64x4xf32> {tcc.kind = "input", tcc.name = "xt"},
                  %w: tensor<4x4xf32> {tcc.kind = "param", tcc.name = "w"},
                  %m: tensor<4x4xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"},
                  %v: tensor<4x4xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"},
                  %step: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"},
    %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"})
    -> (tensor<64x4xf32> {tcc.kind = "loss", tcc.name = "out"},
        tensor<4x4xf32> {tcc.kind = "update", tcc.name = "w"},
        tensor<4x4xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"},
        tensor<4x4xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"},
        tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"}) {
  %g = tcc.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = tcc.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = tcc.matmul %a, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = tcc.matmul %xt, %b : (tensor<64x4xf32>, tensor<4x4xf32>) -> tensor<64x4xf32>
  %one = tcc.constant dense<1.0> : tensor<f32>
  %t = tcc.add %step, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %wn, %mn, %vn = tcc.adamw_update %w, %g, %m, %v, %t, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4x4xf32>, tensor<f32>
  return %d, %wn, %mn, %vn, %t : tensor<64x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @shared
// CHECK-SAME:    optimizer_state = 136 : i64
// CHECK-SAME:    temp_peak = 1088 : i64
// CHECK:         tcc.constant
// CHECK-NEXT:    tcc.add
// CHECK-NEXT:    %[[G:.+]] = tcc.matmul %[[X:[^,]+]], %[[X]] :
// CHECK-NEXT:    %[[A:.+]] = tcc.matmul %[[X]], %[[W:[^ ]+]] :
// CHECK-NEXT:    %[[B:.+]] = tcc.matmul %[[A]], %[[W]] :
// CHECK-NEXT:    tcc.adamw_update %[[W]], %[[G]]
// CHECK-NEXT:    tcc.matmul %{{.+}}, %[[B]]
// CHECK-NEXT:    return

// ORIG-LABEL: func.func @shared
// ORIG-SAME:    temp_peak = 1152 : i64

// -----

// A bias's update is ready before its weight's (its gradient, a column sum
// of dy, needs no GEMM), so hoisting runs it first, apart from the weight's
// by %dx's GEMM and %dw's. group-updates moves it down beside the weight's
// (one multi-tensor AdamW launch on CUDA): its 64-byte gradient then lives
// through %dx, 128 KiB, within 1/1024 of the peak.

func.func @grouped(%x: tensor<1024x32xf32> {tcc.kind = "input", tcc.name = "x"},
                      %dy: tensor<1024x16xf32> {tcc.kind = "input", tcc.name = "dy"},
                      %w: tensor<16x32xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<16xf32> {tcc.kind = "param", tcc.name = "b"},
                      %mw: tensor<16x32xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"},
                      %vw: tensor<16x32xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"},
                      %mb: tensor<16xf32> {tcc.kind = "state", tcc.name = "b.exp_avg"},
                      %vb: tensor<16xf32> {tcc.kind = "state", tcc.name = "b.exp_avg_sq"},
                      %t: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"},
    %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
        tensor<16x32xf32> {tcc.kind = "update", tcc.name = "w"},
        tensor<16xf32> {tcc.kind = "update", tcc.name = "b"},
        tensor<16x32xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"},
        tensor<16x32xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"},
        tensor<16xf32> {tcc.kind = "update", tcc.name = "b.exp_avg"},
        tensor<16xf32> {tcc.kind = "update", tcc.name = "b.exp_avg_sq"},
        tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"}) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %t1 = tcc.add %t, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %db = tcc.reduce_sum %dy {axes = array<i64: 0>} : tensor<1024x16xf32> -> tensor<16xf32>
  %dx = tcc.matmul %dy, %w : (tensor<1024x16xf32>, tensor<16x32xf32>) -> tensor<1024x32xf32>
  %loss = tcc.reduce_sum %dx {axes = array<i64: 0, 1>} : tensor<1024x32xf32> -> tensor<f32>
  %dw = tcc.matmul %dy, %x {transpose_lhs = true} : (tensor<1024x16xf32>, tensor<1024x32xf32>) -> tensor<16x32xf32>
  %b1, %mb1, %vb1 = tcc.adamw_update %b, %db, %mb, %vb, %t1, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<16xf32>, tensor<f32>
  %w1, %mw1, %vw1 = tcc.adamw_update %w, %dw, %mw, %vw, %t1, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<16x32xf32>, tensor<f32>
  return %loss, %w1, %b1, %mw1, %vw1, %mb1, %vb1, %t1 : tensor<f32>, tensor<16x32xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @grouped
// CHECK:         %[[DB:.+]] = tcc.reduce_sum %arg1 {axes = array<i64: 0>}
// CHECK-NEXT:    tcc.matmul
// CHECK-NEXT:    tcc.reduce_sum
// CHECK-NEXT:    %[[DW:.+]] = tcc.matmul %arg1, %arg0 {transpose_lhs = true}
// CHECK-NEXT:    tcc.adamw_update %arg3, %[[DB]],
// CHECK-NEXT:    tcc.adamw_update %arg2, %[[DW]],

// APART-LABEL: func.func @grouped
// APART:         %[[DB:.+]] = tcc.reduce_sum %arg1 {axes = array<i64: 0>}
// APART-NEXT:    tcc.adamw_update %arg3, %[[DB]],
// APART-NEXT:    tcc.matmul

// -----

// The same at 64 rows: %dx is 8 KiB, and 64 bytes more at the peak are more
// than 1/1024 of it, so the bias's update stays where hoisting put it.

func.func @apart(%x: tensor<64x32xf32> {tcc.kind = "input", tcc.name = "x"},
                      %dy: tensor<64x16xf32> {tcc.kind = "input", tcc.name = "dy"},
                      %w: tensor<16x32xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<16xf32> {tcc.kind = "param", tcc.name = "b"},
                      %mw: tensor<16x32xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"},
                      %vw: tensor<16x32xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"},
                      %mb: tensor<16xf32> {tcc.kind = "state", tcc.name = "b.exp_avg"},
                      %vb: tensor<16xf32> {tcc.kind = "state", tcc.name = "b.exp_avg_sq"},
                      %t: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"},
    %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"})
    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
        tensor<16x32xf32> {tcc.kind = "update", tcc.name = "w"},
        tensor<16xf32> {tcc.kind = "update", tcc.name = "b"},
        tensor<16x32xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"},
        tensor<16x32xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"},
        tensor<16xf32> {tcc.kind = "update", tcc.name = "b.exp_avg"},
        tensor<16xf32> {tcc.kind = "update", tcc.name = "b.exp_avg_sq"},
        tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"}) {
  %one = tcc.constant dense<1.0> : tensor<f32>
  %t1 = tcc.add %t, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %db = tcc.reduce_sum %dy {axes = array<i64: 0>} : tensor<64x16xf32> -> tensor<16xf32>
  %dx = tcc.matmul %dy, %w : (tensor<64x16xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
  %loss = tcc.reduce_sum %dx {axes = array<i64: 0, 1>} : tensor<64x32xf32> -> tensor<f32>
  %dw = tcc.matmul %dy, %x {transpose_lhs = true} : (tensor<64x16xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  %b1, %mb1, %vb1 = tcc.adamw_update %b, %db, %mb, %vb, %t1, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<16xf32>, tensor<f32>
  %w1, %mw1, %vw1 = tcc.adamw_update %w, %dw, %mw, %vw, %t1, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<16x32xf32>, tensor<f32>
  return %loss, %w1, %b1, %mw1, %vw1, %mb1, %vb1, %t1 : tensor<f32>, tensor<16x32xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @apart
// CHECK:         %[[DB:.+]] = tcc.reduce_sum %arg1 {axes = array<i64: 0>}
// CHECK-NEXT:    tcc.adamw_update %arg3, %[[DB]],
// CHECK-NEXT:    tcc.matmul
