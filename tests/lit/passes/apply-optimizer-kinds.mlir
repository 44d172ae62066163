// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=adam weight-decay=0.1" | FileCheck %s --check-prefix=ADAM
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=lion" | FileCheck %s --check-prefix=LION
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=lion beta1=0.5 beta2=0.75 weight-decay=0.5 lr=0.25" | FileCheck %s --check-prefix=LIONC
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=sgd momentum=0.9 nesterov=true" | FileCheck %s --check-prefix=NESTEROV
// RUN: tcc-opt %s --tcc-apply-optimizer="optimizer=adafactor weight-decay=0.1 no-decay=ln.*" | FileCheck %s --check-prefix=ADAFACTOR
// RUN: tcc-opt %s --tcc-apply-optimizer="no-decay=1d" | FileCheck %s --check-prefix=ONED
// RUN: tcc-opt %s --tcc-apply-optimizer="no-decay=*.bias,emb*" | FileCheck %s --check-prefix=GLOB
// RUN: not tcc-opt %s --tcc-apply-optimizer="no-decay=fc.bias,nothing*" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tcc-opt %s --tcc-apply-optimizer="no-decay=[a" 2>&1 | FileCheck %s --check-prefix=BADGLOB

// NOMATCH: error: tcc-apply-optimizer: no-decay pattern 'nothing*' matches no trained parameter
// BADGLOB: error: tcc-apply-optimizer: no-decay pattern '[a' is not a valid glob

// The optimizers besides plain AdamW/SGD, and parameter groups: a weight
// (rank 2), a bias and a norm scale (rank 1), an embedding (rank 2).

module {
  func.func @train_step(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "fc.weight"},
                        %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "fc.bias"},
                        %s: tensor<8xf32> {tcc.kind = "param", tcc.name = "ln.scale"},
                        %e: tensor<5x8xf32> {tcc.kind = "param", tcc.name = "emb.weight"})
      -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"},
          tensor<3x8xf32> {tcc.kind = "grad", tcc.name = "fc.weight"},
          tensor<3xf32> {tcc.kind = "grad", tcc.name = "fc.bias"},
          tensor<8xf32> {tcc.kind = "grad", tcc.name = "ln.scale"},
          tensor<5x8xf32> {tcc.kind = "grad", tcc.name = "emb.weight"}) {
    %l = tcc.constant dense<0.0> : tensor<f32>
    return %l, %w, %b, %s, %e : tensor<f32>, tensor<3x8xf32>, tensor<3xf32>, tensor<8xf32>, tensor<5x8xf32>
  }
}

// Adam: AdamW's kernel with the decay added to the gradient (l2_decay), its
// own step counter, default lr 1e-3.
// ADAM:       tcc.optimizer = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899{{[0-9]*}} : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, name = "adam", weight_decay = 1.000000e-01 : f64}
// ADAM:       tcc.name = "emb.weight.exp_avg_sq"}, %[[STEP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "adam.step"}, %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<1.000000e-03> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// ADAM:       %[[T1:.+]] = tcc.add %[[STEP]]
// ADAM-COUNT-4: tcc.adamw_update {{.+}}, %[[T1]], %[[LR]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899{{[0-9]*}} : f64, eps = 1.000000e-08 : f64, l2_decay, weight_decay = 1.000000e-01 : f64}

// Lion: one moment per parameter, default betas 0.9, 0.99 and lr 1e-4, no
// decay by default.
// LION:       tcc.optimizer = {beta1 = 9.000000e-01 : f64, beta2 = 0.98999{{[0-9]*}} : f64, lr = 1.000000e-04 : f64, name = "lion", weight_decay = 0.000000e+00 : f64}
// LION:       %[[WM:[^:]+]]: tensor<3x8xf32> {tcc.kind = "state", tcc.name = "fc.weight.exp_avg"}
// LION-SAME:  tcc.name = "emb.weight.exp_avg"}, %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<{{[^>]+}}> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// LION-SAME:  -> (tensor<f32> {tcc.kind = "loss", tcc.name = "loss"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "fc.bias"}, tensor<8xf32> {tcc.kind = "update", tcc.name = "ln.scale"}, tensor<5x8xf32> {tcc.kind = "update", tcc.name = "emb.weight"}, tensor<3x8xf32> {tcc.kind = "update", tcc.name = "fc.weight.exp_avg"},
// LION:       tcc.lion_update %{{.+}}, %{{.+}}, %[[WM]], %[[LR]] {beta1 = 9.000000e-01 : f64, beta2 = 0.98999{{[0-9]*}} : f64, weight_decay = 0.000000e+00 : f64} : tensor<3x8xf32>
// LION-COUNT-3: tcc.lion_update
// LION-NOT:   optimizer.lr"}

// LIONC:      tcc.optimizer = {beta1 = 5.000000e-01 : f64, beta2 = 7.500000e-01 : f64, lr = 2.500000e-01 : f64, name = "lion", weight_decay = 5.000000e-01 : f64}
// LIONC-COUNT-4: tcc.lion_update {{.+}} {beta1 = 5.000000e-01 : f64, beta2 = 7.500000e-01 : f64, weight_decay = 5.000000e-01 : f64}

// NESTEROV:   tcc.optimizer = {lr = 1.000000e-02 : f64, momentum = 9.000000e-01 : f64, name = "sgd", nesterov = "true", weight_decay = 0.000000e+00 : f64}
// NESTEROV-COUNT-4: tcc.sgd_momentum_update {{.+}} {momentum = 9.000000e-01 : f64, nesterov, weight_decay = 0.000000e+00 : f64}

// Adafactor: factored second moments (row and column factors of the last
// two dimensions) for the rank-2 weights, a full one for rank 1; its step.
// ADAFACTOR:  tcc.optimizer = {beta2_decay = -8.000000e-01 : f64, d = 1.000000e+00 : f64, eps = 1.1920928{{[0-9]*}}E-7 : f64, eps2 = 1.000000e-03 : f64, lr = 1.000000e-02 : f64, name = "adafactor", no_decay = "ln.*", weight_decay = 1.000000e-01 : f64}
// ADAFACTOR:  %[[WR:[^:]+]]: tensor<3x1xf32> {tcc.kind = "state", tcc.name = "fc.weight.row_var"}, %[[WC:[^:]+]]: tensor<1x8xf32> {tcc.kind = "state", tcc.name = "fc.weight.col_var"}, %[[BV:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "fc.bias.variance"}, %{{[^:]+}}: tensor<8xf32> {tcc.kind = "state", tcc.name = "ln.scale.variance"}, %{{[^:]+}}: tensor<5x1xf32> {tcc.kind = "state", tcc.name = "emb.weight.row_var"}, %{{[^:]+}}: tensor<1x8xf32> {tcc.kind = "state", tcc.name = "emb.weight.col_var"}, %[[STEP:[^:]+]]: tensor<f32> {tcc.kind = "state", tcc.name = "adafactor.step"}, %[[LR:[^:]+]]: tensor<f32> {tcc.init = dense<{{[^>]+}}> : tensor<f32>, tcc.kind = "state", tcc.name = "optimizer.lr"})
// ADAFACTOR:  %[[T1:.+]] = tcc.add %[[STEP]]
// ADAFACTOR:  tcc.adafactor_update %{{[^,]+}}, %{{[^,]+}}, %[[T1]], %[[LR]] moments(%[[WR]], %[[WC]]) {beta2_decay = -8.000000e-01 : f64, d = 1.000000e+00 : f64, eps1 = 1.1920928{{[0-9]*}}E-7 : f64, eps2 = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64} : tensor<3x8xf32>, tensor<f32>, tensor<3x1xf32>, tensor<1x8xf32> -> tensor<3x1xf32>, tensor<1x8xf32>
// ADAFACTOR-NEXT: tcc.adafactor_update %{{[^,]+}}, %{{[^,]+}}, %[[T1]], %[[LR]] moments(%[[BV]]) {{{.*}}weight_decay = 1.000000e-01 : f64} : tensor<3xf32>, tensor<f32>, tensor<3xf32> -> tensor<3xf32>
// ADAFACTOR-NEXT: tcc.adafactor_update {{.*}}weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<f32>, tensor<8xf32>
// ADAFACTOR-NEXT: tcc.adafactor_update {{.*}} : tensor<5x8xf32>, tensor<f32>, tensor<5x1xf32>, tensor<1x8xf32>

// `1d`: the bias and the norm scale get no decay, the weights 0.01.
// ONED:       no_decay = "1d"
// ONED:       tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 1.000000e-02 : f64} : tensor<3x8xf32>
// ONED-NEXT:  tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 0.000000e+00 : f64} : tensor<3xf32>
// ONED-NEXT:  tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 0.000000e+00 : f64} : tensor<8xf32>
// ONED-NEXT:  tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 1.000000e-02 : f64} : tensor<5x8xf32>

// Globs: the bias and the embedding.
// GLOB:       no_decay = "*.bias,emb*"
// GLOB:       tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 1.000000e-02 : f64} : tensor<3x8xf32>
// GLOB-NEXT:  tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 0.000000e+00 : f64} : tensor<3xf32>
// GLOB-NEXT:  tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 1.000000e-02 : f64} : tensor<8xf32>
// GLOB-NEXT:  tcc.adamw_update %{{[^,]+}}, {{.+}} {{{.*}}weight_decay = 0.000000e+00 : f64} : tensor<5x8xf32>
