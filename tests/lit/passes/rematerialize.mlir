// RUN: tcc-opt %s --pass-pipeline="builtin.module(func.func(tcc-rematerialize{memory-budget=512 recompute=cheap}))" --split-input-file | FileCheck %s
// RUN: tcc-opt %s --pass-pipeline="builtin.module(func.func(tcc-rematerialize{memory-budget=1}))" --split-input-file | FileCheck %s --check-prefix=ALL
// RUN: tcc-opt %s --pass-pipeline="builtin.module(func.func(tcc-rematerialize{memory-budget=4096}))" --split-input-file | FileCheck %s --check-prefix=FITS
// RUN: tcc-opt %s --pass-pipeline="builtin.module(func.func(tcc-rematerialize))" --split-input-file | FileCheck %s --check-prefix=FITS

// Two layers, gelu after each matmul: 4 activations of 256 bytes (%1 and %3
// for gelu_grad, %2 for the weight gradient of w2, %4 for the loss
// gradient). With 512 bytes and only cheap recomputation, the matmul outputs
// stay and both gelus are recomputed, each right before its first use after
// the loss: %4's before mse_loss_grad, %2's only before the weight gradient
// that reads it, late in the backward.
// With 1 byte and recompute=all (ALL), the matmuls are recomputed too.
// With room for everything (FITS) or no budget, nothing changes.

func.func @train_step(%arg0: tensor<4x64xf32> {tcc.kind = "input", tcc.name = "x"}, %arg1: tensor<64x16xf32> {tcc.kind = "param", tcc.name = "w1"}, %arg2: tensor<16x16xf32> {tcc.kind = "param", tcc.name = "w2"}, %arg3: tensor<4x16xf32> {tcc.kind = "input", tcc.name = "labels"}) -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<64x16xf32> {tcc.kind = "update", tcc.name = "w1"}, tensor<16x16xf32> {tcc.kind = "update", tcc.name = "w2"}) {
  %0 = tcc.constant dense<1.000000e+00> : tensor<f32>
  %1 = tcc.matmul %arg0, %arg1 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  %2 = tcc.gelu %1 : tensor<4x16xf32>
  %3 = tcc.matmul %2, %arg2 : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %4 = tcc.gelu %3 : tensor<4x16xf32>
  %5 = tcc.mse_loss %4, %arg3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<f32>
  %6 = tcc.mse_loss_grad %0, %4, %arg3 : (tensor<f32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %7 = tcc.gelu_grad %6, %3 : tensor<4x16xf32>
  %8 = tcc.matmul %7, %arg2 {transpose_rhs = true} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %9 = tcc.matmul %2, %7 {transpose_lhs = true} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<16x16xf32>
  %10 = tcc.gelu_grad %8, %1 : tensor<4x16xf32>
  %11 = tcc.matmul %arg0, %10 {transpose_lhs = true} : (tensor<4x64xf32>, tensor<4x16xf32>) -> tensor<64x16xf32>
  %lr1 = tcc.constant dense<1.000000e-02> : tensor<f32>
  %12 = tcc.sgd_update %arg1, %11, %lr1 {weight_decay = 0.000000e+00 : f64} : tensor<64x16xf32>
  %lr2 = tcc.constant dense<1.000000e-02> : tensor<f32>
  %13 = tcc.sgd_update %arg2, %9, %lr2 {weight_decay = 0.000000e+00 : f64} : tensor<16x16xf32>
  return %5, %12, %13 : tensor<f32>, tensor<64x16xf32>, tensor<16x16xf32>
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<4x64xf32> {{.*}}, %[[W1:[^:]+]]: tensor<64x16xf32> {{.*}}, %[[W2:[^:]+]]: tensor<16x16xf32> {{.*}}, %[[T:[^:]+]]: tensor<4x16xf32>
// CHECK-SAME:    attributes {tcc.remat = {activation_bytes = 1024 : i64, budget = 512 : i64, kept_bytes = 512 : i64, recomputed_ops = 2 : i64}}
// CHECK:         %[[H1:.+]] = tcc.matmul %[[X]], %[[W1]]
// CHECK-NEXT:    %[[G1:.+]] = tcc.gelu %[[H1]]
// CHECK-NEXT:    %[[H2:.+]] = tcc.matmul %[[G1]], %[[W2]]
// CHECK-NEXT:    %[[G2:.+]] = tcc.gelu %[[H2]]
// CHECK-NEXT:    %[[LOSS:.+]] = tcc.mse_loss %[[G2]], %[[T]]
// CHECK-NEXT:    %[[G2R:.+]] = tcc.gelu %[[H2]]
// CHECK-NEXT:    %[[DY:.+]] = tcc.mse_loss_grad %{{.+}}, %[[G2R]], %[[T]]
// CHECK-NEXT:    %[[DH2:.+]] = tcc.gelu_grad %[[DY]], %[[H2]]
// CHECK-NEXT:    %[[DG1:.+]] = tcc.matmul %[[DH2]], %[[W2]] {transpose_rhs = true}
// CHECK-NEXT:    %[[G1R:.+]] = tcc.gelu %[[H1]]
// CHECK-NEXT:    tcc.matmul %[[G1R]], %[[DH2]] {transpose_lhs = true}
// CHECK-NEXT:    tcc.gelu_grad %[[DG1]], %[[H1]]

// ALL-LABEL: func.func @train_step
// ALL-SAME:    (%[[X:[^:]+]]: tensor<4x64xf32> {{.*}}, %[[W1:[^:]+]]: tensor<64x16xf32> {{.*}}, %[[W2:[^:]+]]: tensor<16x16xf32> {{.*}}, %[[T:[^:]+]]: tensor<4x16xf32>
// ALL-SAME:    attributes {tcc.remat = {activation_bytes = 1024 : i64, budget = 1 : i64, kept_bytes = 0 : i64, recomputed_ops = 4 : i64}}
// ALL:         tcc.mse_loss
// ALL-NEXT:    %[[H1R:.+]] = tcc.matmul %[[X]], %[[W1]]
// ALL-NEXT:    %[[G1R:.+]] = tcc.gelu %[[H1R]]
// ALL-NEXT:    %[[H2R:.+]] = tcc.matmul %[[G1R]], %[[W2]]
// ALL-NEXT:    %[[G2R:.+]] = tcc.gelu %[[H2R]]
// ALL-NEXT:    %[[DY:.+]] = tcc.mse_loss_grad %{{.+}}, %[[G2R]], %[[T]]
// ALL-NEXT:    %[[DH2:.+]] = tcc.gelu_grad %[[DY]], %[[H2R]]
// ALL-NEXT:    %[[DG1:.+]] = tcc.matmul %[[DH2]], %[[W2]] {transpose_rhs = true}
// ALL-NEXT:    tcc.matmul %[[G1R]], %[[DH2]] {transpose_lhs = true}
// ALL-NEXT:    tcc.gelu_grad %[[DG1]], %[[H1R]]

// FITS-LABEL: func.func @train_step
// FITS-NOT:     tcc.remat
// FITS:         tcc.mse_loss
// FITS-NEXT:    tcc.mse_loss_grad
// FITS-NOT:     tcc.gelu %
// FITS:         return

// -----

// A recomputed dropout keeps its mask: the clone has the same seed and ratio
// and reads the same `rng.step` argument (the counter's increment is a
// separate result), and the mask is a pure function of (seed, step, index).
// 1 KiB of activations: %1 (gelu_grad), %3 (softmax_grad), the dropout's
// result (mse_loss_grad) and mask (the backward's mul). Freeing 512 bytes:
// recomputing the dropout from the kept softmax output frees both of its
// results, the cheapest plan; within 512 bytes with cheap ops only this is
// the only plan.

func.func @train_step(%arg0: tensor<4x64xf32> {tcc.kind = "input", tcc.name = "x"}, %arg1: tensor<64x16xf32> {tcc.kind = "param", tcc.name = "w"}, %arg2: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"}, %arg3: tensor<4x16xf32> {tcc.kind = "input", tcc.name = "labels"}) -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<i64> {tcc.kind = "update", tcc.name = "rng.step"}, tensor<64x16xf32> {tcc.kind = "update", tcc.name = "w"}) {
  %0 = tcc.constant dense<1.000000e+00> : tensor<f32>
  %1 = tcc.matmul %arg0, %arg1 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  %2 = tcc.gelu %1 : tensor<4x16xf32>
  %3 = tcc.softmax %2 {axis = 1 : i64} : tensor<4x16xf32>
  %result, %mask = tcc.dropout %3, %arg2 {ratio = 2.500000e-01 : f64, seed = 3 : i64} : tensor<4x16xf32>, tensor<i64>
  %4 = tcc.mse_loss %result, %arg3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<f32>
  %5 = tcc.increment %arg2 : tensor<i64>
  %6 = tcc.mse_loss_grad %0, %result, %arg3 : (tensor<f32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %7 = tcc.mul %6, %mask : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %8 = tcc.softmax_grad %7, %3 {axis = 1 : i64} : tensor<4x16xf32>
  %9 = tcc.gelu_grad %8, %1 : tensor<4x16xf32>
  %10 = tcc.matmul %arg0, %9 {transpose_lhs = true} : (tensor<4x64xf32>, tensor<4x16xf32>) -> tensor<64x16xf32>
  %lr3 = tcc.constant dense<1.000000e-02> : tensor<f32>
  %11 = tcc.sgd_update %arg1, %10, %lr3 {weight_decay = 0.000000e+00 : f64} : tensor<64x16xf32>
  return %4, %5, %11 : tensor<f32>, tensor<i64>, tensor<64x16xf32>
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[STEP:[^:]+]]: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"}
// CHECK-SAME:    attributes {tcc.remat = {activation_bytes = 1024 : i64, budget = 512 : i64, kept_bytes = 512 : i64, recomputed_ops = 1 : i64}}
// CHECK:         %[[S:.+]] = tcc.softmax
// CHECK-NEXT:    %[[D:.+]], %{{.+}} = tcc.dropout %[[S]], %[[STEP]] {ratio = 2.500000e-01 : f64, seed = 3 : i64}
// CHECK-NEXT:    tcc.mse_loss %[[D]]
// CHECK-NEXT:    tcc.increment %[[STEP]]
// CHECK-NEXT:    %[[DR:.+]], %[[MR:.+]] = tcc.dropout %[[S]], %[[STEP]] {ratio = 2.500000e-01 : f64, seed = 3 : i64}
// CHECK-NEXT:    %[[DY:.+]] = tcc.mse_loss_grad %{{.+}}, %[[DR]]
// CHECK-NEXT:    tcc.mul %[[DY]], %[[MR]]
// CHECK-NEXT:    tcc.softmax_grad %{{.+}}, %[[S]]

// ALL-LABEL: func.func @train_step
// ALL-SAME:    kept_bytes = 0 : i64, recomputed_ops = 4 : i64
// ALL:         tcc.increment
// ALL-NEXT:    tcc.matmul
// ALL-NEXT:    tcc.gelu
// ALL-NEXT:    tcc.softmax
// ALL-NEXT:    tcc.dropout
// ALL-NEXT:    tcc.mse_loss_grad

// FITS-LABEL: func.func @train_step
// FITS-NOT:     tcc.remat
// FITS-COUNT-1: tcc.dropout
// FITS-NOT:     tcc.dropout

// -----

// Functions without a loss (@forward, the optimizer-only @train_step of
// gradient accumulation) are left alone.

func.func @forward(%arg0: tensor<4x16xf32> {tcc.kind = "input", tcc.name = "x"}) -> (tensor<4x16xf32> {tcc.name = "y"}) {
  %0 = tcc.gelu %arg0 : tensor<4x16xf32>
  %1 = tcc.gelu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK-NOT:     tcc.remat
// CHECK-COUNT-2: tcc.gelu
// CHECK-NEXT:    return
