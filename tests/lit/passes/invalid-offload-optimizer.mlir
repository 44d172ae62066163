// RUN: tcc-opt %s --tcc-offload-optimizer --split-input-file -verify-diagnostics
// RUN: not tcc-opt %s --tcc-all-reduce-gradients --tcc-apply-optimizer --tcc-shard-optimizer-state=shards=2 --tcc-offload-optimizer --split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO

// The sharded update all-gathers its new shards: refused before anything
// moves (the first case; the others have no gradient results).
// ZERO: error: tcc-offload-optimizer: --offload-optimizer does not combine with --zero-shards: the sharded update gathers its shards over the ranks inside the step (drop one of the two)

// A step without an optimizer has nothing to move.
// expected-error @+1 {{tcc-offload-optimizer: @train_step has no optimizer update to offload}}
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"},
                      %x: tensor<3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<3xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %g = tcc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %g : tensor<3xf32>
}

// -----

// A metric of the new parameters would have to come back from the host.
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"},
                      %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"},
                      %x: tensor<3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<3xf32> {tcc.kind = "update", tcc.name = "w"},
        tensor<f32> {tcc.kind = "metric", tcc.name = "w_sum"}) {
  %g = tcc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %w1 = tcc.sgd_update %w, %g, %lr {weight_decay = 0.0 : f64} : tensor<3xf32>
  // expected-error @+1 {{tcc-offload-optimizer: result #1 ('w_sum') of @train_step depends on the optimizer update; only `update` results may}}
  %s = tcc.reduce_sum %w1 {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %w1, %s : tensor<3xf32>, tensor<f32>
}

// -----

// Communication cannot move to the host.
func.func @train_step(%w: tensor<3xf32> {tcc.kind = "param", tcc.name = "w"},
                      %lr: tensor<f32> {tcc.kind = "state", tcc.name = "optimizer.lr"},
                      %x: tensor<3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<3xf32> {tcc.kind = "update", tcc.name = "w"}) {
  %g = tcc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %w1 = tcc.sgd_update %w, %g, %lr {weight_decay = 0.0 : f64} : tensor<3xf32>
  // expected-error @+1 {{tcc-offload-optimizer: 'tcc.all_reduce' reads the optimizer update but has side effects; it cannot move to the host}}
  %r = tcc.all_reduce %w1 {bucket = 0} : tensor<3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}
