// RUN: tcc-opt %s --tcc-apply-optimizer --tcc-shard-optimizer-state --split-input-file -verify-diagnostics

// tcc-shard-optimizer-state's refusals of the readers of an averaged
// gradient (the buckets are written here, as tcc-all-reduce-gradients
// makes them): a rank holds only its shard of it, which its update
// (through multiplies by scalars) and clipping's global norm can use, and
// nothing else.

// An averaged gradient that something besides its update and the norm
// reads (here a metric) would need the whole gradient.
func.func @train_step(%w: tensor<4xf32> {tcc.kind = "param", tcc.name = "w"},
                      %x: tensor<4xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "metric", tcc.name = "g_sum"},
        tensor<4xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  // expected-error @+1 {{tcc-shard-optimizer-state: an averaged gradient is read by several ops}}
  %r = tcc.all_reduce %x {bucket = 0} : tensor<4xf32> -> tensor<4xf32>
  %s = tcc.reduce_sum %r {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %s, %r : tensor<f32>, tensor<4xf32>
}

// -----

// A global norm of a value that is not an averaged gradient: no rank holds
// the shards of it.
func.func @train_step(%w: tensor<4xf32> {tcc.kind = "param", tcc.name = "w"},
                      %x: tensor<4xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "metric", tcc.name = "n"},
        tensor<4xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %r = tcc.all_reduce %x {bucket = 0} : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{tcc-shard-optimizer-state: the global norm reads a value that is not an averaged gradient, and a rank holds only its shards of those}}
  %n = tcc.global_norm %r, %x : tensor<4xf32>, tensor<4xf32>
  return %n, %r : tensor<f32>, tensor<4xf32>
}
