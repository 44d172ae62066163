// RUN: tcc-opt %s --tcc-build-loss --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-build-loss=loss=hinge --split-input-file 2>&1 | FileCheck %s --check-prefix=BADLOSS
// RUN: not tcc-opt %s --tcc-build-loss=loss=output: --split-input-file 2>&1 | FileCheck %s --check-prefix=NONAME
// RUN: tcc-opt %S/Inputs/invalid-build-loss-output.mlir --tcc-build-loss=loss=output:loss --split-input-file -verify-diagnostics

// RUN: not tcc-opt %s --tcc-build-loss="label-smoothing=1.5" --split-input-file 2>&1 | FileCheck %s --check-prefix=SMOOTH
// RUN: not tcc-opt %s --tcc-build-loss="label-smoothing=-0.1" --split-input-file 2>&1 | FileCheck %s --check-prefix=SMOOTHNEG
// RUN: not tcc-opt %s --tcc-build-loss="loss=mse ignore-index=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=MSEIGNORE
// RUN: not tcc-opt %s --tcc-build-loss="loss=mse label-smoothing=0.1" --split-input-file 2>&1 | FileCheck %s --check-prefix=MSESMOOTH
// RUN: not tcc-opt %S/Inputs/invalid-build-loss-output.mlir --tcc-build-loss="loss=output:loss label-smoothing=0.1" --split-input-file 2>&1 | FileCheck %s --check-prefix=OUTSMOOTH

// SMOOTH: error: tcc-build-loss: label-smoothing must be in [0, 1], got 1.5
// SMOOTHNEG: error: tcc-build-loss: label-smoothing must be in [0, 1], got -0.1
// MSEIGNORE: error: tcc-build-loss: ignore-index applies to the cross_entropy loss only, not to 'mse'
// MSESMOOTH: error: tcc-build-loss: label-smoothing applies to the cross_entropy loss only, not to 'mse'
// OUTSMOOTH: error: tcc-build-loss: label-smoothing applies to the cross_entropy loss only, not to 'output:loss'
// BADLOSS: error: tcc-build-loss: unknown loss 'hinge' (valid: cross_entropy, mse, output:NAME)
// NONAME: error: tcc-build-loss: --loss output:NAME needs the name of a graph output after 'output:'

// expected-error @+1 {{tcc-build-loss: no func.func @forward with a body}}
module {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    return %x : tensor<2x3xf32>
  }
}

// -----

// expected-error @+1 {{tcc-build-loss: @train_step already exists}}
module {
  func.func @forward(%x: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "x"}) -> tensor<2x3xf32> {
    return %x : tensor<2x3xf32>
  }
  func.func @train_step() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: cross_entropy needs a class axis, but the first result of @forward is rank 0 ('tensor<f32>')}}
  func.func @forward(%x: tensor<f32> {tcc.kind = "param", tcc.name = "x"}) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: the first result of @forward must be a float tensor, got 'tensor<2x3xi64>'}}
  func.func @forward(%x: tensor<2x3xi64> {tcc.kind = "input", tcc.name = "x"}) -> tensor<2x3xi64> {
    return %x : tensor<2x3xi64>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: @forward has no result}}
  func.func @forward(%x: tensor<2x3xf32> {tcc.kind = "input", tcc.name = "x"}) {
    return
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: @forward already has an argument named 'labels'}}
  func.func @forward(%x: tensor<2x3xf32> {tcc.kind = "input", tcc.name = "labels"}) -> tensor<2x3xf32> {
    return %x : tensor<2x3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: result #0 of @forward is an update of 'rm', which is not a state argument of its type (and result 0 must be the model's output)}}
  func.func @forward(%rm: tensor<2xf32> {tcc.kind = "state", tcc.name = "rm"})
      -> (tensor<2xf32> {tcc.kind = "update", tcc.name = "rm"}) {
    return %rm : tensor<2xf32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: result #1 of @forward is an update of 'w', which is not a state argument of its type}}
  func.func @forward(%w: tensor<2xf32> {tcc.kind = "param", tcc.name = "w"})
      -> (tensor<2xf32> {tcc.name = "y"}, tensor<2xf32> {tcc.kind = "update", tcc.name = "w"}) {
    return %w, %w : tensor<2xf32>, tensor<2xf32>
  }
}
