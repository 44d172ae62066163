// RUN: tcc-opt %s --tcc-apply-optimizer --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-apply-optimizer=optimizer=rmsprop --split-input-file 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=sgd lr=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not tcc-opt %s --tcc-apply-optimizer="momentum=0.9" --split-input-file 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=sgd momentum=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=NEGMOM
// RUN: not tcc-opt %s --tcc-apply-optimizer="beta2=1" --split-input-file 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not tcc-opt %s --tcc-apply-optimizer="eps=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=sgd nesterov=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=adam nesterov=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=NESTADAM
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=sgd beta1=0.5" --split-input-file 2>&1 | FileCheck %s --check-prefix=SGDBETA
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=lion eps=1e-6" --split-input-file 2>&1 | FileCheck %s --check-prefix=LIONEPS
// RUN: not tcc-opt %s --tcc-apply-optimizer="optimizer=adafactor beta1=0.9" --split-input-file 2>&1 | FileCheck %s --check-prefix=AFBETA

// NAME: error: tcc-apply-optimizer: unknown optimizer 'rmsprop' (valid: sgd, adam, adamw, lion, adafactor)
// LR: error: tcc-apply-optimizer: the learning rate must be positive, got 0
// MOMENTUM: error: tcc-apply-optimizer: momentum and nesterov are sgd options; adamw uses beta1/beta2
// NEGMOM: error: tcc-apply-optimizer: momentum must not be negative, got -1
// BETA: error: tcc-apply-optimizer: adamw needs beta1, beta2 in [0, 1), got 9.000000e-01, 1.000000e+00
// EPS: error: tcc-apply-optimizer: adamw needs eps > 0, got 0
// NESTEROV: error: tcc-apply-optimizer: nesterov needs a momentum above 0
// NESTADAM: error: tcc-apply-optimizer: momentum and nesterov are sgd options; adam uses beta1/beta2
// SGDBETA: error: tcc-apply-optimizer: beta1/beta2 are options of adam, adamw and lion, not sgd
// AFBETA: error: tcc-apply-optimizer: beta1/beta2 are options of adam, adamw and lion, not adafactor
// LIONEPS: error: tcc-apply-optimizer: eps is an option of adam, adamw and adafactor, not lion

// expected-error @+1 {{tcc-apply-optimizer: no func.func @train_step with a body (run tcc-build-loss and tcc-autodiff first)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-apply-optimizer: @train_step has no gradient results (run tcc-autodiff first)}}
  func.func @train_step(%p: tensor<2xf32> {tcc.kind = "param", tcc.name = "p"})
      -> (tensor<f32> {tcc.kind = "loss"}) {
    %l = tcc.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-apply-optimizer: gradient result #1 names 'q', which is not a param}}
  func.func @train_step(%p: tensor<2xf32> {tcc.kind = "param", tcc.name = "p"},
                        %q: tensor<2xf32> {tcc.kind = "input", tcc.name = "q"})
      -> (tensor<f32> {tcc.kind = "loss"}, tensor<2xf32> {tcc.kind = "grad", tcc.name = "q"}) {
    %l = tcc.constant dense<0.0> : tensor<f32>
    return %l, %q : tensor<f32>, tensor<2xf32>
  }
}

// -----

// expected-error @+1 {{tcc-apply-optimizer: an optimizer was already applied}}
module attributes {tcc.optimizer = {name = "sgd"}} {
  func.func @train_step(%p: tensor<2xf32> {tcc.kind = "param", tcc.name = "p"})
      -> (tensor<f32> {tcc.kind = "loss"}, tensor<2xf32> {tcc.kind = "grad", tcc.name = "p"}) {
    %l = tcc.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
}
