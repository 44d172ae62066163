// RUN: tcc-opt %s --tcc-apply-optimizer --split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: tcc-opt %s --tcc-apply-optimizer="lr=0.01 beta1=0.8 beta2=0.5 eps=1e-6 weight-decay=0" --split-input-file | FileCheck %s --check-prefix=ADAMWC
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=sgd" --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=sgd lr=0.5 momentum=0.9 weight-decay=0.25" --split-input-file | FileCheck %s --check-prefix=MOM

// Two params with gradients (stand-in constants); @forward is untouched.

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"})
      -> (tensor<3x8xf32> {tcc.name = "y"}) {
    return %w : tensor<3x8xf32>
  }
  func.func @train_step(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                        %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"},
                        %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "fc.bias"},
                        %labels: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<3x8xf32> {tcc.kind = "grad", tcc.name = "fc.weight"},
          tensor<3xf32> {tcc.kind = "grad", tcc.name = "fc.bias"}) {
    %y = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %l = tcc.softmax_cross_entropy %y, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    %gw = tcc.constant dense<0.5> : tensor<3x8xf32>
    %gb = tcc.constant dense<0.25> : tensor<3xf32>
    return %l, %gw, %gb : tensor<f32>, tensor<3x8xf32>, tensor<3xf32>
  }
}

// AdamW with the defaults: per-param exp_avg/exp_avg_sq, then the shared
// step, incremented once and fed to every update.
// ADAMW:       module attributes {tcc.batch = 4 : i64, tcc.optimizer = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899{{[0-9]*}} : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, name = "adamw", weight_decay = 1.000000e-02 : f64}}
// ADAMW-LABEL: func.func @forward
// ADAMW-SAME:    -> (tensor<3x8xf32> {tcc.name = "y"})
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME:    (%[[X:[^:]+]]: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
// ADAMW-SAME:     %[[W:[^:]+]]: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"},
// ADAMW-SAME:     %[[B:[^:]+]]: tensor<3xf32> {tcc.kind = "param", tcc.name = "fc.bias"},
// ADAMW-SAME:     %[[LABELS:[^:]+]]: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"},
// ADAMW-SAME:     %[[WM:[^:]+]]: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "fc.weight.exp_avg"},
// ADAMW-SAME:     %[[WV:[^:]+]]: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "fc.weight.exp_avg_sq"},
// ADAMW-SAME:     %[[BM:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "fc.bias.exp_avg"},
// ADAMW-SAME:     %[[BV:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "fc.bias.exp_avg_sq"},
// ADAMW-SAME:     %[[STEP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"},
// ADAMW-SAME:     %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<1.000000e-03> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// ADAMW-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
// ADAMW-SAME:        tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight"},
// ADAMW-SAME:        tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias"},
// ADAMW-SAME:        tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight.exp_avg"},
// ADAMW-SAME:        tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight.exp_avg_sq"},
// ADAMW-SAME:        tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias.exp_avg"},
// ADAMW-SAME:        tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias.exp_avg_sq"},
// ADAMW-SAME:        tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"})
// ADAMW:         %[[L:.+]] = tcc.softmax_cross_entropy
// ADAMW-NEXT:    %[[GW:.+]] = tcc.constant dense<5.000000e-01>
// ADAMW-NEXT:    %[[GB:.+]] = tcc.constant dense<2.500000e-01>
// ADAMW-NEXT:    %[[ONE:.+]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// ADAMW-NEXT:    %[[T1:.+]] = tcc.add %[[STEP]], %[[ONE]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// ADAMW-NEXT:    %[[W1:[^,]+]], %[[WM1:[^,]+]], %[[WV1:[^ ]+]] = tcc.adamw_update %[[W]], %[[GW]], %[[WM]], %[[WV]], %[[T1]], %[[LR]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899{{[0-9]*}} : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : tensor<3x8xf32>, tensor<f32>
// ADAMW-NEXT:    %[[B1:[^,]+]], %[[BM1:[^,]+]], %[[BV1:[^ ]+]] = tcc.adamw_update %[[B]], %[[GB]], %[[BM]], %[[BV]], %[[T1]], %[[LR]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899{{[0-9]*}} : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : tensor<3xf32>, tensor<f32>
// ADAMW-NEXT:    return %[[L]], %[[W1]], %[[B1]], %[[WM1]], %[[WV1]], %[[BM1]], %[[BV1]], %[[T1]] :

// ADAMWC: tcc.optimizer = {beta1 = 8.000000e-01 : f64, beta2 = 5.000000e-01 : f64, eps = 9.99999{{[0-9]*}}E-7 : f64, lr = 1.000000e-02 : f64, name = "adamw", weight_decay = 0.000000e+00 : f64}
// ADAMWC-LABEL: func.func @train_step
// ADAMWC-SAME:    tcc.name = "optimizer.lr"
// ADAMWC:         tcc.adamw_update {{.+}} {beta1 = 8.000000e-01 : f64, beta2 = 5.000000e-01 : f64, eps = 9.99999{{[0-9]*}}E-7 : f64, weight_decay = 0.000000e+00 : f64} : tensor<3x8xf32>, tensor<f32>

// Plain SGD with the defaults: no state.
// SGD:       tcc.optimizer = {lr = 1.000000e-02 : f64, momentum = 0.000000e+00 : f64, name = "sgd", weight_decay = 0.000000e+00 : f64}
// SGD-LABEL: func.func @train_step
// SGD-SAME:    (%[[X:[^:]+]]: tensor<4x8xf32> {{[^)]+}}, %[[W:[^:]+]]: tensor<3x8xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<3xf32> {{[^)]+}}, %[[LABELS:[^:]+]]: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"},
// SGD-SAME:     %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<{{[^>]+}}> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// SGD-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias"})
// SGD:         %[[GW:.+]] = tcc.constant dense<5.000000e-01>
// SGD-NEXT:    %[[GB:.+]] = tcc.constant dense<2.500000e-01>
// SGD-NEXT:    %[[W1:.+]] = tcc.sgd_update %[[W]], %[[GW]], %[[LR]] {weight_decay = 0.000000e+00 : f64} : tensor<3x8xf32>
// SGD-NEXT:    %[[B1:.+]] = tcc.sgd_update %[[B]], %[[GB]], %[[LR]] {weight_decay = 0.000000e+00 : f64} : tensor<3xf32>
// SGD-NEXT:    return %{{.+}}, %[[W1]], %[[B1]] : tensor<f32>, tensor<3x8xf32>, tensor<3xf32>

// SGD with momentum: one momentum buffer per param.
// MOM:       tcc.optimizer = {lr = 5.000000e-01 : f64, momentum = 9.000000e-01 : f64, name = "sgd", weight_decay = 2.500000e-01 : f64}
// MOM-LABEL: func.func @train_step
// MOM-SAME:    %[[LABELS:[^:]+]]: tensor<4xi64> {tcc.kind = "input", tcc.name = "labels"},
// MOM-SAME:    %[[WBUF:[^:]+]]: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "fc.weight.momentum_buffer"},
// MOM-SAME:    %[[BBUF:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "fc.bias.momentum_buffer"},
// MOM-SAME:    %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<5.000000e-01> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// MOM-SAME:    -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight.momentum_buffer"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias.momentum_buffer"})
// MOM:         %[[W1:[^,]+]], %[[WB1:[^ ]+]] = tcc.sgd_momentum_update %{{.+}}, %{{.+}}, %[[WBUF]], %[[LR]] {momentum = 9.000000e-01 : f64, weight_decay = 2.500000e-01 : f64} : tensor<3x8xf32>
// MOM-NEXT:    %[[B1:[^,]+]], %[[BB1:[^ ]+]] = tcc.sgd_momentum_update %{{.+}}, %{{.+}}, %[[BBUF]], %[[LR]] {{{.+}}} : tensor<3xf32>
// MOM-NEXT:    return %{{.+}}, %[[W1]], %[[B1]], %[[WB1]], %[[BB1]] :

// -----

// Gradients listed in another order than the params, after an extra result:
// non-grad results stay first, updates follow the gradients' order.

func.func @train_step(%a: tensor<2xf32> {tcc.kind = "param", tcc.name = "a"},
                      %b: tensor<5xf32> {tcc.kind = "param", tcc.name = "b"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<2xf32> {tcc.name = "extra"},
        tensor<5xf32> {tcc.kind = "grad", tcc.name = "b"},
        tensor<2xf32> {tcc.kind = "grad", tcc.name = "a"}) {
  %l = tcc.constant dense<0.0> : tensor<f32>
  return %l, %a, %b, %a : tensor<f32>, tensor<2xf32>, tensor<5xf32>, tensor<2xf32>
}

// SGD-LABEL: func.func @train_step
// SGD-SAME:    (%[[A:[^:]+]]: tensor<2xf32> {{[^)]+}}, %[[B:[^:]+]]: tensor<5xf32> {{[^)]+}})
// SGD-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<2xf32> {tcc.name = "extra"}, tensor<5xf32> {tcc.kind = "update", tcc.name = "b"}, tensor<2xf32> {tcc.kind = "update", tcc.name = "a"})
// SGD:         %[[B1:.+]] = tcc.sgd_update %[[B]], %[[B]]
// SGD-NEXT:    %[[A1:.+]] = tcc.sgd_update %[[A]], %[[A]]
// SGD-NEXT:    return %{{.+}}, %[[A]], %[[B1]], %[[A1]] :

// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME:    %{{[^:]+}}: tensor<5xf32> {tcc.kind = "state", tcc.name = "b.exp_avg"}, %{{[^:]+}}: tensor<5xf32> {tcc.kind = "state", tcc.name = "b.exp_avg_sq"},
// ADAMW-SAME:    %{{[^:]+}}: tensor<2xf32> {tcc.kind = "state", tcc.name = "a.exp_avg"}, %{{[^:]+}}: tensor<2xf32> {tcc.kind = "state", tcc.name = "a.exp_avg_sq"},
// ADAMW-SAME:    %{{[^:]+}}: tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"},
// ADAMW-SAME:    %{{[^:]+}}: tensor<f32> {{{.*}}tcc.name = "optimizer.lr"})

// -----

// A running-statistic update (not a gradient) passes through unchanged,
// before the parameter updates; the statistic gets no optimizer state.

func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"},
                      %rm: tensor<3xf32> {tcc.kind = "state", tcc.name = "bn.running_mean"})
    -> (tensor<f32> {tcc.kind = "loss"},
        tensor<3xf32> {tcc.kind = "update", tcc.name = "bn.running_mean"},
        tensor<3xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %l = tcc.constant dense<0.0> : tensor<f32>
  %new = tcc.neg %rm : tensor<3xf32>
  return %l, %new, %w : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// SGD-LABEL: func.func @train_step
// SGD-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "bn.running_mean"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "w"})
// SGD:         %[[NEW:.+]] = tcc.neg
// SGD:         %[[W1:.+]] = tcc.sgd_update
// SGD-NEXT:    return %{{.+}}, %[[NEW]], %[[W1]] :

// ADAMW-LABEL: func.func @train_step
// ADAMW-NOT:     bn.running_mean.exp_avg
// ADAMW-SAME:    %{{[^:]+}}: tensor<3xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"}
// ADAMW-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "bn.running_mean"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "w"},
