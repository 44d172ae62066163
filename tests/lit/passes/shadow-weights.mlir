// RUN: tcc-opt %s --tcc-shadow-weights --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-shadow-weights --tcc-plan-memory --split-input-file | FileCheck %s --check-prefix=MEM

// A bf16 linear layer after tcc-mixed-precision: the step casts w and b for
// its GEMM and bias add, @accumulate_step casts w too, @forward keeps its own
// cast. Both updates are returned as the parameters' new values.

module {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %xl = tcc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %wl = tcc.cast %w : tensor<3x8xf32> -> tensor<3x8xbf16>
    %h = tcc.matmul %xl, %wl {transpose_rhs = true} : (tensor<4x8xbf16>, tensor<3x8xbf16>) -> tensor<4x3xbf16>
    %y = tcc.cast %h : tensor<4x3xbf16> -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
  func.func @accumulate_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                             %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<4x3xbf16> {tcc.kind = "loss", tcc.name = "loss"}) {
    %xl = tcc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %wl = tcc.cast %w : tensor<3x8xf32> -> tensor<3x8xbf16>
    %h = tcc.matmul %xl, %wl {transpose_rhs = true} : (tensor<4x8xbf16>, tensor<3x8xbf16>) -> tensor<4x3xbf16>
    return %h : tensor<4x3xbf16>
  }
  func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                        %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                        %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                        %g: tensor<3x8xf32> {tcc.kind = "input", tcc.name = "gw"},
                        %gb: tensor<3xf32> {tcc.kind = "input", tcc.name = "gb"},
                        %m: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"},
                        %v: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"},
                        %mb: tensor<3xf32> {tcc.kind = "state", tcc.name = "b.exp_avg"},
                        %vb: tensor<3xf32> {tcc.kind = "state", tcc.name = "b.exp_avg_sq"},
                        %t: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"})
      -> (tensor<4x3xbf16> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w"},
          tensor<3xf32> {tcc.kind = "update", tcc.name = "b"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"}) {
    %xl = tcc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %wl = tcc.cast %w : tensor<3x8xf32> -> tensor<3x8xbf16>
    %bl = tcc.cast %b : tensor<3xf32> -> tensor<3xbf16>
    %h = tcc.matmul %xl, %wl {transpose_rhs = true} : (tensor<4x8xbf16>, tensor<3x8xbf16>) -> tensor<4x3xbf16>
    %y = tcc.add %h, %bl : (tensor<4x3xbf16>, tensor<3xbf16>) -> tensor<4x3xbf16>
    %lr20 = tcc.constant dense<1.0e-03> : tensor<f32>
    %w1, %m1, %v1 = tcc.adamw_update %w, %g, %m, %v, %t, %lr20 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    %lr21 = tcc.constant dense<1.0e-03> : tensor<f32>
    %b1, %mb1, %vb1 = tcc.adamw_update %b, %gb, %mb, %vb, %t, %lr21 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3xf32>, tensor<f32>
    return %y, %w1, %b1, %m1, %v1 : tensor<4x3xbf16>, tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK:         tcc.cast %{{.+}} : tensor<3x8xf32> -> tensor<3x8xbf16>
// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME:    %[[AW:[^:]+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[AS:[^:]+]]: tensor<3x8xbf16> {tcc.kind = "state", tcc.name = "w.bf16", tcc.shadow_of = "w"}
// CHECK-NOT:     tcc.cast %[[AW]]
// CHECK:         tcc.matmul %{{.+}}, %[[AS]]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"}
// CHECK-SAME:    %[[WS:[^:]+]]: tensor<3x8xbf16> {tcc.kind = "state", tcc.name = "w.bf16", tcc.shadow_of = "w"}
// CHECK-SAME:    %[[BS:[^:]+]]: tensor<3xbf16> {tcc.kind = "state", tcc.name = "b.bf16", tcc.shadow_of = "b"}
// CHECK-SAME:    tensor<3x8xbf16> {tcc.kind = "update", tcc.name = "w.bf16"}
// CHECK-SAME:    tensor<3xbf16> {tcc.kind = "update", tcc.name = "b.bf16"}
// CHECK-NOT:     tcc.cast %[[W]]
// CHECK-NOT:     tcc.cast %[[B]]
// CHECK:         %[[H:.+]] = tcc.matmul %{{.+}}, %[[WS]]
// CHECK:         tcc.add %[[H]], %[[BS]]
// CHECK:         %[[W1:[^,]+]], %{{[^,]+}}, %{{[^,]+}}, %[[WL:[^ ]+]] = tcc.adamw_update %[[W]], {{.*}} : tensor<3x8xf32>, tensor<f32> -> tensor<3x8xbf16>
// CHECK:         %[[B1:[^,]+]], %{{[^,]+}}, %{{[^,]+}}, %[[BL:[^ ]+]] = tcc.adamw_update %[[B]], {{.*}} : tensor<3xf32>, tensor<f32> -> tensor<3xbf16>
// CHECK:         return %{{.+}}, %[[W1]], %[[B1]], %{{.+}}, %{{.+}}, %[[WL]], %[[BL]] :

// The memory anatomy counts the copies (bf16 3x8 and 3: 54 bytes) apart
// from the weights and the optimizer state.
// MEM-LABEL: func.func @train_step
// MEM-SAME:    optimizer_state = 220 : i64
// MEM-SAME:    weight_copies = 54 : i64, weights = 108 : i64

// -----

// Gradient accumulation: the forward and backward run in @accumulate_step,
// @train_step only updates. The copy is still written by the update and read
// by @accumulate_step's GEMM.

module {
  func.func @accumulate_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                             %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<4x3xbf16> {tcc.kind = "loss", tcc.name = "loss"}) {
    %xl = tcc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %wl = tcc.cast %w : tensor<3x8xf32> -> tensor<3x8xbf16>
    %h = tcc.matmul %xl, %wl {transpose_rhs = true} : (tensor<4x8xbf16>, tensor<3x8xbf16>) -> tensor<4x3xbf16>
    return %h : tensor<4x3xbf16>
  }
  func.func @train_step(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                        %g: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"},
                        %m: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"},
                        %v: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"},
                        %t: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"})
      -> (tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w"}) {
    %lr22 = tcc.constant dense<1.0e-03> : tensor<f32>
    %w1, %m1, %v1 = tcc.adamw_update %w, %g, %m, %v, %t, %lr22 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    return %w1 : tensor<3x8xf32>
  }
}

// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME:    %[[AS:[^:]+]]: tensor<3x8xbf16> {tcc.kind = "state", tcc.name = "w.bf16", tcc.shadow_of = "w"}
// CHECK-NOT:     tcc.cast %{{.+}} : tensor<3x8xf32>
// CHECK:         tcc.matmul %{{.+}}, %[[AS]]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    tensor<3x8xbf16> {tcc.kind = "state", tcc.name = "w.bf16", tcc.shadow_of = "w"}
// CHECK-SAME:    tensor<3x8xbf16> {tcc.kind = "update", tcc.name = "w.bf16"}
// CHECK:         %[[W1:[^,]+]], %{{[^,]+}}, %{{[^,]+}}, %[[WL:[^ ]+]] = tcc.adamw_update {{.*}} -> tensor<3x8xbf16>
// CHECK:         return %[[W1]], %[[WL]] :

// -----

// fp16 loss scaling returns where(finite, new, old) as w's value: w's copy
// gets the same where. Left as they are: a parameter read through a view
// (e's pad), a parameter no GEMM reads in 16 bits (n), and a parameter whose
// copy's name is taken (u).

module {
  func.func @train_step(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                        %e: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "e"},
                        %n: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "n"},
                        %u: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "u"},
                        %taken: tensor<3x8xbf16> {tcc.kind = "input", tcc.name = "u.bf16"},
                        %g: tensor<3x8xf32> {tcc.kind = "input", tcc.name = "g"},
                        %ok: tensor<i1> {tcc.kind = "input", tcc.name = "finite"},
                        %m: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "m"},
                        %t: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"})
      -> (tensor<3x8xbf16> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<4x8xbf16> {tcc.kind = "loss", tcc.name = "loss2"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "w"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "e"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "n"},
          tensor<3x8xf32> {tcc.kind = "update", tcc.name = "u"}) {
    %wl = tcc.cast %w : tensor<3x8xf32> -> tensor<3x8xbf16>
    %ep = tcc.slice_grad %e {shape = array<i64: 4, 8>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<3x8xf32> -> tensor<4x8xf32>
    %el = tcc.cast %ep : tensor<4x8xf32> -> tensor<4x8xbf16>
    %ul = tcc.cast %u : tensor<3x8xf32> -> tensor<3x8xbf16>
    %s = tcc.add %wl, %ul : (tensor<3x8xbf16>, tensor<3x8xbf16>) -> tensor<3x8xbf16>
    %s2 = tcc.add %s, %taken : (tensor<3x8xbf16>, tensor<3x8xbf16>) -> tensor<3x8xbf16>
    %lr23 = tcc.constant dense<1.0e-03> : tensor<f32>
    %w1, %m1, %v1 = tcc.adamw_update %w, %g, %m, %m, %t, %lr23 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    %wk = tcc.where %ok, %w1, %w : (tensor<i1>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
    %lr24 = tcc.constant dense<1.0e-03> : tensor<f32>
    %e1, %m2, %v2 = tcc.adamw_update %e, %g, %m, %m, %t, %lr24 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    %lr25 = tcc.constant dense<1.0e-03> : tensor<f32>
    %n1, %m3, %v3 = tcc.adamw_update %n, %g, %m, %m, %t, %lr25 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    %lr26 = tcc.constant dense<1.0e-03> : tensor<f32>
    %u1, %m4, %v4 = tcc.adamw_update %u, %g, %m, %m, %t, %lr26 {beta1 = 9.0e-01 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 1.0e-02 : f64} : tensor<3x8xf32>, tensor<f32>
    return %s2, %el, %wk, %e1, %n1, %u1 : tensor<3x8xbf16>, tensor<4x8xbf16>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[OK:[^:]+]]: tensor<i1> {tcc.kind = "input", tcc.name = "finite"}
// CHECK-SAME:    %[[WS:[^:]+]]: tensor<3x8xbf16> {tcc.kind = "state", tcc.name = "w.bf16", tcc.shadow_of = "w"})
// CHECK-SAME:    tensor<3x8xbf16> {tcc.kind = "update", tcc.name = "w.bf16"})
// CHECK-NOT:     tcc.cast %[[W]]
// CHECK:         tcc.cast %{{.+}} : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK:         tcc.cast %{{.+}} : tensor<3x8xf32> -> tensor<3x8xbf16>
// CHECK:         %[[W1:[^,]+]], %{{[^,]+}}, %{{[^,]+}}, %[[WL:[^ ]+]] = tcc.adamw_update %[[W]], {{.*}} -> tensor<3x8xbf16>
// CHECK:         %[[KEEP:.+]] = tcc.where %[[OK]], %[[W1]], %[[W]]
// CHECK-NOT:     tcc.adamw_update {{.*}} -> tensor
// CHECK:         %[[KEEPL:.+]] = tcc.where %[[OK]], %[[WL]], %[[WS]]
// CHECK:         return %{{.+}}, %{{.+}}, %[[KEEP]], {{.*}}, %[[KEEPL]] :
