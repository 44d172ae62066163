// RUN: tcc-opt %s --tcc-mixed-precision=precision=bf16 --split-input-file | FileCheck %s --check-prefix=BF16
// RUN: tcc-opt %s --tcc-mixed-precision="precision=fp16 growth-interval=3" --split-input-file | FileCheck %s --check-prefix=FP16
// RUN: tcc-opt %s --tcc-mixed-precision=precision=fp32 --split-input-file | FileCheck %s --check-prefix=FP32

// A linear layer + ReLU trained with AdamW (the output of the training
// pipeline up to the optimizer), with a data-dependent embedding gather and
// a constant scale to show which ops follow a low operand.

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                     %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %y = tcc.add %h, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
  func.func @train_step(%arg0: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"}, %arg1: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"}, %arg2: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"}, %arg3: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"}, %arg4: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"}, %arg5: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"}, %arg6: tensor<3xf32> {tcc.kind = "state", tcc.name = "b.exp_avg"}, %arg7: tensor<3xf32> {tcc.kind = "state", tcc.name = "b.exp_avg_sq"}, %arg8: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"}, %rng: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"}) -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b.exp_avg"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b.exp_avg_sq"}, tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"}, tensor<i64> {tcc.kind = "update", tcc.name = "rng.step"}) {
    %0 = tcc.constant dense<1.000000e+00> : tensor<f32>
    %half = tcc.constant dense<5.000000e-01> : tensor<4x3xf32>
    %1 = tcc.matmul %arg0, %arg1 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %2 = tcc.add %1, %arg2 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %3 = tcc.relu %2 : tensor<4x3xf32>
    %s = tcc.mul %3, %half : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = tcc.softmax_cross_entropy %s, %arg3 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    %5 = tcc.softmax_cross_entropy_grad %0, %s, %arg3 : (tensor<f32>, tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %ds = tcc.mul %5, %half : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %6 = tcc.relu_grad %ds, %2 : tensor<4x3xf32>
    %7 = tcc.reduce_sum %6 {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
    %8 = tcc.matmul %6, %arg0 {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %9 = tcc.add %arg8, %0 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %lr14 = tcc.constant dense<1.000000e-03> : tensor<f32>
    %new_param, %new_exp_avg, %new_exp_avg_sq = tcc.adamw_update %arg1, %8, %arg4, %arg5, %9, %lr14 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    %lr15 = tcc.constant dense<1.000000e-03> : tensor<f32>
    %new_param_0, %new_exp_avg_1, %new_exp_avg_sq_2 = tcc.adamw_update %arg2, %7, %arg6, %arg7, %9, %lr15 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : tensor<3xf32>, tensor<f32>
    %r = tcc.increment %rng : tensor<i64>
    return %4, %new_param, %new_param_0, %new_exp_avg, %new_exp_avg_sq, %new_exp_avg_1, %new_exp_avg_sq_2, %9, %r : tensor<f32>, tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<i64>
  }
}

// @forward: the GEMM and the bias add that follows it run in bf16; the
// result is cast back, so the signature is unchanged.
// BF16-LABEL: func.func @forward
// BF16-SAME:    -> (tensor<4x3xf32> {tcc.name = "y"})
// BF16-DAG:     %[[B:.+]] = tcc.cast %{{.+}} : tensor<3xf32> -> tensor<3xbf16>
// BF16-DAG:     %[[W:.+]] = tcc.cast %{{.+}} : tensor<3x8xf32> -> tensor<3x8xbf16>
// BF16-DAG:     %[[X:.+]] = tcc.cast %{{.+}} : tensor<4x8xf32> -> tensor<4x8xbf16>
// BF16:         %[[H:.+]] = tcc.matmul %[[X]], %[[W]] {{.*}} -> tensor<4x3xbf16>
// BF16:         %[[Y:.+]] = tcc.add %[[H]], %[[B]] : (tensor<4x3xbf16>, tensor<3xbf16>) -> tensor<4x3xbf16>
// BF16:         %[[R:.+]] = tcc.cast %[[Y]] : tensor<4x3xbf16> -> tensor<4x3xf32>
// BF16:         return %[[R]] : tensor<4x3xf32>

// @train_step: parameters stay f32 and are cast where a GEMM reads them;
// the constant a bf16 mul reads is rounded at compile time; the loss and
// its gradient are f32; the backward's ReLU gradient and GEMM are bf16; the
// bias gradient's reduction is f32; the weight gradient's GEMM writes f32
// for AdamW (bf16 operands, no cast). No loss scaling for bf16.
// BF16-LABEL: func.func @train_step
// BF16-NOT:     loss_scale
// BF16-DAG:     %[[HALFL:.+]] = tcc.constant dense<5.000000e-01> : tensor<4x3xbf16>
// BF16-DAG:     %[[HALF:.+]] = tcc.constant dense<5.000000e-01> : tensor<4x3xf32>
// BF16:         %[[MM:.+]] = tcc.matmul {{.*}} -> tensor<4x3xbf16>
// BF16:         %[[ADD:.+]] = tcc.add %[[MM]], {{.*}} -> tensor<4x3xbf16>
// BF16:         %[[RELU:.+]] = tcc.relu %[[ADD]] : tensor<4x3xbf16>
// BF16:         %[[S:.+]] = tcc.mul %[[RELU]], %[[HALFL]] : (tensor<4x3xbf16>, tensor<4x3xbf16>) -> tensor<4x3xbf16>
// BF16:         %[[SF:.+]] = tcc.cast %[[S]] : tensor<4x3xbf16> -> tensor<4x3xf32>
// BF16:         %[[LOSS:.+]] = tcc.softmax_cross_entropy %[[SF]], %{{.+}} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
// BF16:         %[[G:.+]] = tcc.softmax_cross_entropy_grad %{{.+}}, %[[SF]], %{{.+}} -> tensor<4x3xf32>
// BF16:         %[[DS:.+]] = tcc.mul %[[G]], %[[HALF]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// BF16:         %[[DSL:.+]] = tcc.cast %[[DS]] : tensor<4x3xf32> -> tensor<4x3xbf16>
// BF16:         %[[DR:.+]] = tcc.relu_grad %[[DSL]], %[[ADD]] : tensor<4x3xbf16>
// BF16:         %[[DRF:.+]] = tcc.cast %[[DR]] : tensor<4x3xbf16> -> tensor<4x3xf32>
// BF16:         %[[DB:.+]] = tcc.reduce_sum %[[DRF]] {{.*}} : tensor<4x3xf32> -> tensor<3xf32>
// BF16:         %[[DW:.+]] = tcc.matmul %[[DR]], {{.*}} : (tensor<4x3xbf16>, tensor<4x8xbf16>) -> tensor<3x8xf32>
// BF16-NOT:     tcc.cast %[[DW]]
// BF16:         tcc.adamw_update %{{.+}}, %[[DW]], {{.*}} : tensor<3x8xf32>, tensor<f32>
// BF16:         tcc.adamw_update %{{.+}}, %[[DB]], {{.*}} : tensor<3xf32>, tensor<f32>

// fp16: the same casts to f16, plus dynamic loss scaling. The seed of the
// backward is scaled; every gradient is summed into the finiteness check,
// after the backward; each AdamW update then unscales its gradient and
// keeps its old values on a step with an Inf/NaN gradient itself (`unscale
// 1/scale if finite`: no multiply of the gradient, no where over the
// parameter and moments); the AdamW step (not rng.step) gets a where.
// FP16-LABEL: func.func @forward
// FP16:         tcc.matmul {{.*}} -> tensor<4x3xf16>
// FP16-LABEL: func.func @train_step
// FP16-SAME:    %[[W:[^:]+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"}
// FP16-SAME:    %[[STEP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"}
// FP16-SAME:    %[[RNG:[^:]+]]: tensor<i64> {tcc.kind = "state", tcc.name = "rng.step"}
// FP16-SAME:    %[[SCALE:[^:]+]]: tensor<f32> {tcc.init = dense<6.553600e+04> : tensor<f32>, tcc.kind = "state", tcc.name = "loss_scale"}
// FP16-SAME:    %[[GOOD:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "loss_scale.good_steps"}
// FP16-SAME:    %[[SKIP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "loss_scale.skipped"})
// FP16-SAME:    tensor<f32> {tcc.kind = "update", tcc.name = "loss_scale"}, tensor<f32> {tcc.kind = "update", tcc.name = "loss_scale.good_steps"}, tensor<f32> {tcc.kind = "update", tcc.name = "loss_scale.skipped"})
// FP16:         %[[SEED:.+]] = tcc.mul %{{.+}}, %[[SCALE]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16:         tcc.softmax_cross_entropy_grad %[[SEED]],
// FP16:         %[[DW:.+]] = tcc.cast %{{.+}} : tensor<3x8xf16> -> tensor<3x8xf32>
// FP16:         %[[INV:.+]] = tcc.div %{{.+}}, %[[SCALE]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16:         %[[SUMW:.+]] = tcc.reduce_sum %[[DW]] {axes = array<i64: 0, 1>} : tensor<3x8xf32> -> tensor<f32>
// FP16:         %[[SUM:.+]] = tcc.add %[[SUMW]], %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16:         %[[Z:.+]] = tcc.mul %[[SUM]], %[[ZERO:.+]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16:         %[[FINITE:.+]] = tcc.compare "eq", %[[Z]], %[[ZERO]] : (tensor<f32>, tensor<f32>) -> tensor<i1>
// FP16:         %[[NEWW:.+]], %[[NEWM:.+]], %{{.+}} = tcc.adamw_update %[[W]], %[[DW]], {{.*}} unscale %[[INV]] if %[[FINITE]] {
// FP16:         tcc.adamw_update {{.*}} unscale %[[INV]] if %[[FINITE]] {
// FP16-NOT:     tcc.where %[[FINITE]], %new
// FP16:         %[[KEEPSTEP:.+]] = tcc.where %[[FINITE]], %{{.+}}, %[[STEP]] : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
// The scale: doubled after growth-interval (3) finite steps, halved on a skip.
// FP16:         %[[GOOD1:.+]] = tcc.add %[[GOOD]], %{{.+}}
// FP16:         %[[THREE:.+]] = tcc.constant dense<3.000000e+00> : tensor<f32>
// FP16:         %[[GROW:.+]] = tcc.compare "eq", %[[GOOD1]], %[[THREE]]
// FP16:         %[[DOUBLE:.+]] = tcc.mul %[[SCALE]], %{{.+}}
// FP16:         %[[GROWN:.+]] = tcc.where %[[GROW]], %[[DOUBLE]], %[[SCALE]]
// FP16:         %[[HALVED:.+]] = tcc.mul %[[SCALE]], %{{.+}}
// FP16:         %[[NEWSCALE:.+]] = tcc.where %[[FINITE]], %[[GROWN]], %[[HALVED]]
// FP16:         %[[RESET:.+]] = tcc.where %[[GROW]], %[[ZERO]], %[[GOOD1]]
// FP16:         %[[NEWGOOD:.+]] = tcc.where %[[FINITE]], %[[RESET]], %[[ZERO]]
// FP16:         %[[SKIP1:.+]] = tcc.add %[[SKIP]], %{{.+}}
// FP16:         %[[NEWSKIP:.+]] = tcc.where %[[FINITE]], %[[SKIP]], %[[SKIP1]]
// FP16:         return %{{.+}}, %[[NEWW]], {{.*}}, %[[KEEPSTEP]], %{{.+}}, %[[NEWSCALE]], %[[NEWGOOD]], %[[NEWSKIP]] :

// fp32: nothing changes.
// FP32-NOT:     bf16
// FP32-NOT:     f16
// FP32-NOT:     loss_scale

// -----

// With gradient accumulation (fp16): the seed is scaled where the loss is
// (@accumulate_step); the check and the scale update happen in @train_step.
module attributes {tcc.batch = 4 : i64} {
  func.func @accumulate_step(%x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"},
                             %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"},
                             %acc: tensor<4x3xf32> {tcc.kind = "state", tcc.name = "x.grad_acc"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<4x3xf32> {tcc.kind = "update", tcc.name = "x.grad_acc"}) {
    %one = tcc.constant dense<1.000000e+00> : tensor<f32>
    %l = tcc.softmax_cross_entropy %x, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    %g = tcc.softmax_cross_entropy_grad %one, %x, %labels : (tensor<f32>, tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %a = tcc.add %acc, %g : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    return %l, %a : tensor<f32>, tensor<4x3xf32>
  }
  func.func @train_step(%p: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "x"},
                        %acc: tensor<4x3xf32> {tcc.kind = "state", tcc.name = "x.grad_acc"})
      -> (tensor<4x3xf32> {tcc.kind = "update", tcc.name = "x"},
          tensor<4x3xf32> {tcc.kind = "update", tcc.name = "x.grad_acc"}) {
    %lr16 = tcc.constant dense<1.000000e-01> : tensor<f32>
    %new = tcc.sgd_update %p, %acc, %lr16 {weight_decay = 0.000000e+00 : f64} : tensor<4x3xf32>
    %zero = tcc.constant dense<0.000000e+00> : tensor<4x3xf32>
    return %new, %zero : tensor<4x3xf32>, tensor<4x3xf32>
  }
}

// FP16-LABEL: func.func @accumulate_step
// FP16-SAME:    tcc.name = "loss_scale"
// FP16:         %[[SEED:.+]] = tcc.mul %{{.+}}, %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FP16:         tcc.softmax_cross_entropy_grad %[[SEED]],
// FP16-NOT:     tcc.where
// FP16-LABEL: func.func @train_step
// FP16-SAME:    %[[P:[^:]+]]: tensor<4x3xf32> {tcc.kind = "param", tcc.name = "x"}
// FP16-SAME:    tcc.name = "loss_scale"
// FP16:         %[[NEW:.+]] = tcc.sgd_update %[[P]],
// FP16:         %[[KEEP:.+]] = tcc.where %{{.+}}, %[[NEW]], %[[P]]
// The accumulator is reset whatever happens.
// FP16-NOT:     tcc.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<i1>, tensor<4x3xf32>
// FP16:         return %[[KEEP]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :

// -----

// Fused attention computes like a GEMM: query, key, value (and the
// backward's out and dout) in the low type; the mask and the log-sum-exp
// stay f32; the output and the gradients are low.
module attributes {tcc.batch = 2 : i64} {
  func.func @forward(%q: tensor<2x4x8xf32> {tcc.kind = "input", tcc.name = "q"},
                     %m: tensor<4x4xf32> {tcc.kind = "input", tcc.name = "m"},
                     %w: tensor<8x8xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<2x4x8xf32> {tcc.name = "o"}, tensor<2x4xf32> {tcc.name = "lse"},
          tensor<2x4x8xf32> {tcc.name = "dq"}) {
    %k = tcc.matmul %q, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %o, %lse = tcc.attention %q, %k, %q, %m {scale = 0.5 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
    %dq, %dk, %dv = tcc.attention_grad %q, %k, %q, %o, %lse, %o, %m {scale = 0.5 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    return %o, %lse, %dq : tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>
  }
}

// BF16-LABEL: func.func @forward
// BF16-SAME:    (%[[Q:[^:]+]]: tensor<2x4x8xf32> {{.*}}, %[[M:[^:]+]]: tensor<4x4xf32>
// BF16:         %[[QL:.+]] = tcc.cast %[[Q]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// BF16:         %[[K:.+]] = tcc.matmul %[[QL]], {{.*}} -> tensor<2x4x8xbf16>
// BF16:         %[[O:.+]], %[[L:.+]] = tcc.attention %[[QL]], %[[K]], %[[QL]], %[[M]] {scale = 5.000000e-01 : f64} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<4x4xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
// BF16:         %[[OF:.+]] = tcc.cast %[[O]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// BF16:         %[[G:.+]]:3 = tcc.attention_grad %[[QL]], %[[K]], %[[QL]], %[[O]], %[[L]], %[[O]], %[[M]] {scale = 5.000000e-01 : f64} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4xf32>, tensor<2x4x8xbf16>, tensor<4x4xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>)
// BF16:         %[[DQF:.+]] = tcc.cast %[[G]]#0 : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// BF16:         return %[[OF]], %[[L]], %[[DQF]]
// FP16-LABEL: func.func @forward
// FP16:         tcc.attention {{.*}} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<4x4xf32>) -> (tensor<2x4x8xf16>, tensor<2x4xf32>)
// FP16:         tcc.attention_grad {{.*}} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<2x4x8xf16>, tensor<4x4xf32>) -> (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>)

// -----

// A padded head (as tcc-pad-shapes leaves it): the bias gradient of the
// layer before the loss sums the bf16 loss gradient the weight-gradient GEMM
// reads (as every bias gradient does), so tcc-gemm-epilogue can take
// it into that GEMM. Other column sums (of x, of a gradient no GEMM reads)
// stay f32.
module attributes {tcc.batch = 4 : i64} {
  func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                        %w: tensor<10x8xf32> {tcc.kind = "param", tcc.name = "w"},
                        %b: tensor<10xf32> {tcc.kind = "param", tcc.name = "b"},
                        %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<16x8xf32>, tensor<10xf32>, tensor<8xf32>, tensor<3xf32>) {
    %one = tcc.constant dense<1.000000e+00> : tensor<f32>
    %wp = tcc.slice_grad %w {shape = array<i64: 16, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<10x8xf32> -> tensor<16x8xf32>
    %h = tcc.matmul %x, %wp {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %hs = tcc.slice %h {sizes = array<i64: 4, 10>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x10xf32>
    %y = tcc.add %hs, %b : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
    %l = tcc.softmax_cross_entropy %y, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %g = tcc.softmax_cross_entropy_grad %one, %y, %labels : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
    %db = tcc.reduce_sum %g {axes = array<i64: 0>} : tensor<4x10xf32> -> tensor<10xf32>
    %gp = tcc.slice_grad %g {shape = array<i64: 4, 16>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x10xf32> -> tensor<4x16xf32>
    %dw = tcc.matmul %gp, %x {transpose_lhs = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %xs = tcc.reduce_sum %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    %z = tcc.constant dense<1.000000e+00> : tensor<4x3xf32>
    %lz = tcc.softmax_cross_entropy %z, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    %gz = tcc.softmax_cross_entropy_grad %one, %z, %labels : (tensor<f32>, tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %zs = tcc.reduce_sum %gz {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
    return %l, %dw, %db, %xs, %zs : tensor<f32>, tensor<16x8xf32>, tensor<10xf32>, tensor<8xf32>, tensor<3xf32>
  }
}

// BF16-LABEL: func.func @train_step
// BF16-SAME:    (%[[X:[^:]+]]: tensor<4x8xf32>
// BF16:         %[[G:.+]] = tcc.softmax_cross_entropy_grad %{{.+}} -> tensor<4x10xf32>
// BF16-DAG:     %[[GL:.+]] = tcc.cast %[[G]] : tensor<4x10xf32> -> tensor<4x10xbf16>
// BF16-DAG:     %[[GW:.+]] = tcc.cast %[[GL]] : tensor<4x10xbf16> -> tensor<4x10xf32>
// BF16-DAG:     %[[DB:.+]] = tcc.reduce_sum %[[GW]] {axes = array<i64: 0>} : tensor<4x10xf32> -> tensor<10xf32>
// BF16-DAG:     %[[XS:.+]] = tcc.reduce_sum %[[X]] {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
// BF16-DAG:     %[[GZ:.+]] = tcc.softmax_cross_entropy_grad %{{.+}} -> tensor<4x3xf32>
// BF16-DAG:     %[[ZS:.+]] = tcc.reduce_sum %[[GZ]] {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
// BF16:         return %{{.+}}, %{{.+}}, %[[DB]], %[[XS]], %[[ZS]]

// -----

// A residual branch: its output's gradient is f32 (the residual add passes
// on the f32 gradient the layer norm's backward adds to), its GEMMs read
// that gradient in bf16, and its bias gradient sums the same bf16 values,
// as autocast's does (there the gradient of a 16-bit GEMM output is
// 16-bit). A sum of a forward value a GEMM reads (the input) keeps f32.
module attributes {tcc.batch = 2 : i64} {
  func.func @train_step(%x: tensor<2x4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                        %w: tensor<8x8xf32> {tcc.kind = "param", tcc.name = "w"},
                        %b: tensor<8xf32> {tcc.kind = "param", tcc.name = "b"},
                        %g0: tensor<8xf32> {tcc.kind = "param", tcc.name = "g0"},
                        %b0: tensor<8xf32> {tcc.kind = "param", tcc.name = "b0"},
                        %labels: tensor<2x4xi64> {tcc.kind = "input", tcc.name = "labels"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %one = tcc.constant dense<1.000000e+00> : tensor<f32>
    %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %hb = tcc.add %h, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %r = tcc.add %x, %hb : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %n, %mean, %rstd = tcc.layer_norm %r, %g0, %b0 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
    %l = tcc.softmax_cross_entropy %n, %labels : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32>
    %g = tcc.softmax_cross_entropy_grad %one, %n, %labels : (tensor<f32>, tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %dr, %dg0, %db0 = tcc.layer_norm_grad %g, %r, %g0, %mean, %rstd {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %db = tcc.reduce_sum %dr {axes = array<i64: 0, 1>} : tensor<2x4x8xf32> -> tensor<8xf32>
    %dr2 = tcc.reshape %dr : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %x2 = tcc.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %dw = tcc.matmul %dr2, %x2 {transpose_lhs = true} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %xs = tcc.reduce_sum %x {axes = array<i64: 0, 1>} : tensor<2x4x8xf32> -> tensor<8xf32>
    return %l, %dw, %db, %xs : tensor<f32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// BF16-LABEL: func.func @train_step
// BF16-SAME:    (%[[X:[^:]+]]: tensor<2x4x8xf32>
// BF16:         %[[DR:.+]], %{{.+}}, %{{.+}} = tcc.layer_norm_grad
// BF16-DAG:     %[[DRL:.+]] = tcc.cast %[[DR]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// BF16-DAG:     %[[DRW:.+]] = tcc.cast %[[DRL]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// BF16-DAG:     %[[DB:.+]] = tcc.reduce_sum %[[DRW]] {axes = array<i64: 0, 1>} : tensor<2x4x8xf32> -> tensor<8xf32>
// BF16-DAG:     %[[XS:.+]] = tcc.reduce_sum %[[X]] {axes = array<i64: 0, 1>} : tensor<2x4x8xf32> -> tensor<8xf32>
// BF16:         return %{{.+}}, %{{.+}}, %[[DB]], %[[XS]]
// FP16-LABEL: func.func @train_step(%{{[^:]+}}: tensor<2x4x8xf32>
// FP16:         %[[DR:.+]], %{{.+}}, %{{.+}} = tcc.layer_norm_grad
// FP16-DAG:     %[[DRL:.+]] = tcc.cast %[[DR]] : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
// FP16-DAG:     %[[DRW:.+]] = tcc.cast %[[DRL]] : tensor<2x4x8xf16> -> tensor<2x4x8xf32>
// FP16-DAG:     tcc.reduce_sum %[[DRW]] {axes = array<i64: 0, 1>} : tensor<2x4x8xf32> -> tensor<8xf32>
// FP32-LABEL: func.func @train_step
// FP32-NOT:     tcc.cast

// -----

// Weight gradients straight from the GEMM in f32 (bf16) only where the
// 16-bit product is read by nothing but its cast for an optimizer update or
// the return: %dw1 (SGD) and %y (returned) are; %dw2's product also feeds
// a 16-bit op (the cast stays), and %h's cast feeds the loss (the cast
// joins the loss's fused region; an f32 product would be stored at twice
// the bytes). fp16 keeps f16 products (an overflow must skip the step).
module attributes {tcc.batch = 4 : i64} {
  func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                        %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                        %v: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "v"},
                        %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "v"},
          tensor<3x8xf32> {tcc.name = "dw2_relu"},
          tensor<4x3xf32> {tcc.name = "y"}) {
    %one = tcc.constant dense<1.000000e+00> : tensor<f32>
    %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %l = tcc.softmax_cross_entropy %h, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    %g = tcc.softmax_cross_entropy_grad %one, %h, %labels : (tensor<f32>, tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %gr = tcc.relu %g : tensor<4x3xf32>
    %dw1 = tcc.matmul %gr, %x {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %dw2 = tcc.matmul %gr, %x {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %r = tcc.relu %dw2 : tensor<3x8xf32>
    %lr17 = tcc.constant dense<1.000000e-01> : tensor<f32>
    %nw = tcc.sgd_update %w, %dw1, %lr17 {weight_decay = 0.000000e+00 : f64} : tensor<3x8xf32>
    %lr18 = tcc.constant dense<1.000000e-01> : tensor<f32>
    %nv = tcc.sgd_update %v, %dw2, %lr18 {weight_decay = 0.000000e+00 : f64} : tensor<3x8xf32>
    %y = tcc.matmul %x, %v {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    return %l, %nw, %nv, %r, %y : tensor<f32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<4x3xf32>
  }
}

// BF16-LABEL: func.func @train_step
// BF16:         %[[H:.+]] = tcc.matmul {{.*}} -> tensor<4x3xbf16>
// BF16:         %[[HF:.+]] = tcc.cast %[[H]] : tensor<4x3xbf16> -> tensor<4x3xf32>
// BF16:         tcc.softmax_cross_entropy %[[HF]]
// BF16:         %[[DW1:.+]] = tcc.matmul {{.*}} : (tensor<4x3xbf16>, tensor<4x8xbf16>) -> tensor<3x8xf32>
// BF16:         %[[DW2:.+]] = tcc.matmul {{.*}} : (tensor<4x3xbf16>, tensor<4x8xbf16>) -> tensor<3x8xbf16>
// BF16:         %[[DW2F:.+]] = tcc.cast %[[DW2]] : tensor<3x8xbf16> -> tensor<3x8xf32>
// BF16:         tcc.relu %[[DW2]] : tensor<3x8xbf16>
// BF16:         tcc.sgd_update %{{.+}}, %[[DW1]], {{.*}} : tensor<3x8xf32>
// BF16:         tcc.sgd_update %{{.+}}, %[[DW2F]], {{.*}} : tensor<3x8xf32>
// BF16:         %[[Y:.+]] = tcc.matmul {{.*}} : (tensor<4x8xbf16>, tensor<3x8xbf16>) -> tensor<4x3xf32>
// BF16-NOT:     tcc.cast %[[Y]]
// BF16:         return %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[Y]] :
// FP16-LABEL: func.func @train_step
// FP16:         %[[DW1:.+]] = tcc.matmul {{.*}} : (tensor<4x3xf16>, tensor<4x8xf16>) -> tensor<3x8xf16>
// FP16:         tcc.cast %[[DW1]] : tensor<3x8xf16> -> tensor<3x8xf32>
// FP16:         %[[Y:.+]] = tcc.matmul {{.*}} : (tensor<4x8xf16>, tensor<3x8xf16>) -> tensor<4x3xf16>
// FP16:         tcc.cast %[[Y]] : tensor<4x3xf16> -> tensor<4x3xf32>

// -----

// Gradient accumulation: the micro-batch's weight gradient comes out of a
// bf16 GEMM, but the sum into the f32 accumulator stays f32 (a bf16 running
// sum would round every micro-step).
module attributes {tcc.batch = 4 : i64} {
  func.func @accumulate_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                             %dy: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "dy"},
                             %acc: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"})
      -> (tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w.grad_acc"}) {
    %g = tcc.matmul %dy, %x {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %a = tcc.add %acc, %g : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
    return %a : tensor<3x8xf32>
  }
}

// BF16-LABEL: func.func @accumulate_step
// BF16-SAME:    %[[ACC:[^:]+]]: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"}
// BF16:         %[[G:.+]] = tcc.matmul {{.*}} -> tensor<3x8xbf16>
// BF16:         %[[GF:.+]] = tcc.cast %[[G]] : tensor<3x8xbf16> -> tensor<3x8xf32>
// BF16:         %[[A:.+]] = tcc.add %[[ACC]], %[[GF]] : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
// BF16:         return %[[A]]

// -----

// A padded weight's gradient (tcc-pad-shapes' rows dropped by a slice) is
// written in f32 by its GEMM too; the slice then moves f32.
module attributes {tcc.batch = 4 : i64} {
  func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                        %g: tensor<4x16xf32> {tcc.kind = "input", tcc.name = "g"},
                        %w: tensor<10x8xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<10x8xf32> {tcc.kind = "update", tcc.name = "w"}) {
    %dwp = tcc.matmul %g, %x {transpose_lhs = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %dw = tcc.slice %dwp {sizes = array<i64: 10, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<16x8xf32> -> tensor<10x8xf32>
    %lr19 = tcc.constant dense<1.000000e-01> : tensor<f32>
    %new = tcc.sgd_update %w, %dw, %lr19 {weight_decay = 0.000000e+00 : f64} : tensor<10x8xf32>
    return %new : tensor<10x8xf32>
  }
}

// BF16-LABEL: func.func @train_step
// BF16:         %[[DWP:.+]] = tcc.matmul %{{.+}}, %{{.+}} {transpose_lhs = true} : (tensor<4x16xbf16>, tensor<4x8xbf16>) -> tensor<16x8xf32>
// BF16-NEXT:    %[[DW:.+]] = tcc.slice %[[DWP]] {{.*}} : tensor<16x8xf32> -> tensor<10x8xf32>
// BF16:         tcc.sgd_update %{{.+}}, %[[DW]]
