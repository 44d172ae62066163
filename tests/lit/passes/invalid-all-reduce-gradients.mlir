// RUN: tcc-opt %s --tcc-all-reduce-gradients --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-all-reduce-gradients=bucket-bytes=0 --split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: tcc-all-reduce-gradients: bucket-bytes must be positive, got 0

// A gradient that is not computed in the step (an argument) has no
// temporary to average in place.
// expected-error @+1 {{tcc-all-reduce-gradients: gradient result #0 ('w') is not an f32 value computed in the step}}
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"})
    -> (tensor<3xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  return %w : tensor<3xf32>
}

// -----

func.func @mismatch(%g: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{results must have the operands' types}}
  %r = tcc.all_reduce %g {bucket = 0} : tensor<3xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative(%g: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{bucket must be non-negative, got -1}}
  %r = tcc.all_reduce %g {bucket = -1} : tensor<3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}
