// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-apply-optimizer=optimizer=adafactor --tcc-shard-optimizer-state --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-all-reduce-gradients --tcc-apply-optimizer --tcc-shard-optimizer-state=shards=1 --split-input-file 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not tcc-opt %s --tcc-apply-optimizer --tcc-shard-optimizer-state --split-input-file 2>&1 | FileCheck %s --check-prefix=NOBUCKETS

// ONE: error: tcc-shard-optimizer-state: shards must be at least 2, got 1
// NOBUCKETS: error: tcc-shard-optimizer-state: @train_step has no tcc.all_reduce buckets (run tcc-all-reduce-gradients first)

// Adafactor's factored moments cannot be split element-wise.
func.func @train_step(%w: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %one = tcc.constant dense<1.0> : tensor<4x2xf32>
  %g = tcc.matmul %x, %one {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  // expected-error @+1 {{tcc-shard-optimizer-state: adafactor cannot be sharded: its factored second moment averages over whole rows and columns and its step size and update clipping take the RMS of the whole parameter and update, which a rank's flat shard does not hold (its state is already small: use adamw, adam, lion or sgd with --zero-shards, or adafactor without it)}}
  return %g : tensor<3x2xf32>
}

// -----

func.func @bad_shard(%g: tensor<3x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a shard of [3,2] among 2 ranks is tensor<3xf32>, got [4]}}
  %r = tcc.reduce_scatter %g {bucket = 0, shards = 2} : tensor<3x2xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @bad_gather(%s: tensor<2xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{a shard of [3,2] among 2 ranks is tensor<3xf32>, got [2]}}
  %r = tcc.all_gather %s {bucket = 0, shards = 2} : tensor<2xf32> -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// -----

func.func @zero_shards(%p: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{shards must be at least 1, got 0}}
  %r = tcc.shard_slice %p {shards = 0} : tensor<3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

func.func @norm_of_matrix(%s: tensor<3x2xf32>) -> tensor<f32> {
  // expected-error @+1 {{operands are 1-D shards, got [3,2]}}
  %n = tcc.sharded_global_norm %s {shards = 2} : tensor<3x2xf32>
  return %n : tensor<f32>
}

// -----

func.func @norm_of_zero_shards(%s: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{shards must be at least 1, got 0}}
  %n = tcc.sharded_global_norm %s {shards = 0} : tensor<3xf32>
  return %n : tensor<f32>
}
