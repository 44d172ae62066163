// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-apply-optimizer=optimizer=adamw --tcc-shard-optimizer-state=shards=2 --split-input-file | FileCheck %s
// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-apply-optimizer=optimizer=lion --tcc-shard-optimizer-state=shards=4 --split-input-file | FileCheck %s --check-prefix=LION
// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-apply-optimizer="optimizer=sgd momentum=0.9" --tcc-shard-optimizer-state=shards=3 --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-clip-gradients=max-norm=1 --tcc-apply-optimizer=optimizer=adamw --tcc-shard-optimizer-state=shards=2 --split-input-file | FileCheck %s --check-prefix=CLIP
// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-clip-gradients=track=true --tcc-apply-optimizer=optimizer=adamw --tcc-shard-optimizer-state=shards=2 --split-input-file | FileCheck %s --check-prefix=TRACK
// RUN: tcc-opt %s --tcc-all-reduce-gradients --tcc-clip-gradients=max-norm=1 --tcc-apply-optimizer="optimizer=sgd momentum=0.9" --tcc-shard-optimizer-state=shards=3 --split-input-file | FileCheck %s --check-prefix=CLIPACC
// RUN: tcc-opt %s --tcc-all-reduce-gradients=bucket-bytes=4 --tcc-apply-optimizer=optimizer=adamw --tcc-shard-optimizer-state=shards=2 --split-input-file | FileCheck %s --check-prefix=TWO

// ZeRO stage 1: the bucket is reduce-scattered (each result this rank's
// 1-D shard of ceil(n/N) elements), each update runs on the shard of its
// parameter with state arguments of the shard's type, and the parameters'
// updates are one all-gather of the bucket's new shards, after the last of
// its updates (bucket 1, after the reduce-scatter's 0). The step counter and the
// learning rate stay whole; the module records which state is sharded.

// CHECK:       module attributes {{{.*}}tcc.zero = {shards = 2 : i64, states = {b.exp_avg = "b", b.exp_avg_sq = "b", w.exp_avg = "w", w.exp_avg_sq = "w"}}}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"}
// CHECK-SAME:    %[[WM:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "w.exp_avg"}
// CHECK-SAME:    %[[WV:[^:]+]]: tensor<3xf32> {tcc.kind = "state", tcc.name = "w.exp_avg_sq"}
// CHECK-SAME:    %[[BM:[^:]+]]: tensor<2xf32> {tcc.kind = "state", tcc.name = "b.exp_avg"}
// CHECK-SAME:    %[[BV:[^:]+]]: tensor<2xf32> {tcc.kind = "state", tcc.name = "b.exp_avg_sq"}
// CHECK-SAME:    tensor<f32> {tcc.kind = "state", tcc.name = "adamw.step"}
// CHECK-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "update", tcc.name = "w"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "b"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "w.exp_avg"}, tensor<3xf32> {tcc.kind = "update", tcc.name = "w.exp_avg_sq"}, tensor<2xf32> {tcc.kind = "update", tcc.name = "b.exp_avg"}, tensor<2xf32> {tcc.kind = "update", tcc.name = "b.exp_avg_sq"}, tensor<f32> {tcc.kind = "update", tcc.name = "adamw.step"})
// CHECK-NOT:     tcc.all_reduce
// CHECK:         %[[GS:.+]]:2 = tcc.reduce_scatter %{{.+}}, %{{.+}} {bucket = 0 : i64, shards = 2 : i64} : tensor<3xf32>, tensor<3x2xf32> -> tensor<2xf32>, tensor<3xf32>
// CHECK:         %[[WS:.+]] = tcc.shard_slice %[[W]] {shards = 2 : i64} : tensor<3x2xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[WP:[^,]+]], %[[WM1:[^,]+]], %[[WV1:[^ ]+]] = tcc.adamw_update %[[WS]], %[[GS]]#1, %[[WM]], %[[WV]], {{.+}} : tensor<3xf32>, tensor<f32>
// CHECK-NEXT:    %[[BS:.+]] = tcc.shard_slice %[[B]] {shards = 2 : i64} : tensor<3xf32> -> tensor<2xf32>
// CHECK-NEXT:    %[[BP:[^,]+]], %[[BM1:[^,]+]], %[[BV1:[^ ]+]] = tcc.adamw_update %[[BS]], %[[GS]]#0, %[[BM]], %[[BV]], {{.+}} : tensor<2xf32>, tensor<f32>
// CHECK-NEXT:    %[[F:.+]]:2 = tcc.all_gather %[[BP]], %[[WP]] {bucket = 1 : i64, shards = 2 : i64} : tensor<2xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<3x2xf32>
// CHECK-NEXT:    return %{{.+}}, %[[F]]#1, %[[F]]#0, %[[WM1]], %[[WV1]], %[[BM1]], %[[BV1]], %{{.+}} :

// Clipping: the global norm is taken of the shards over the ranks
// (tcc.sharded_global_norm), the coefficient multiplies each shard, and the
// update reads the clipped shard; grad_norm is the sharded norm.
// CLIP-LABEL: func.func @train_step
// CLIP-SAME:    -> (tensor<f32> {tcc.kind = "loss"}, tensor<f32> {tcc.kind = "metric", tcc.name = "grad_norm"}
// CLIP-NOT:     tcc.global_norm
// CLIP:         %[[GS:.+]]:2 = tcc.reduce_scatter {{.+}} {bucket = 0 : i64, shards = 2 : i64} : tensor<3xf32>, tensor<3x2xf32> -> tensor<2xf32>, tensor<3xf32>
// CLIP-NEXT:    %[[N:.+]] = tcc.sharded_global_norm %[[GS]]#1, %[[GS]]#0 {shards = 2 : i64} : tensor<3xf32>, tensor<2xf32>
// CLIP:         %[[C:.+]] = tcc.minimum
// CLIP-NEXT:    %[[WC:.+]] = tcc.mul %[[GS]]#1, %[[C]] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CLIP-NEXT:    %[[BC:.+]] = tcc.mul %[[GS]]#0, %[[C]] : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CLIP:         %[[WS:.+]] = tcc.shard_slice %arg0 {shards = 2 : i64} : tensor<3x2xf32> -> tensor<3xf32>
// CLIP-NEXT:    tcc.adamw_update %[[WS]], %[[WC]], {{.+}} : tensor<3xf32>, tensor<f32>
// CLIP:         tcc.adamw_update %{{.+}}, %[[BC]], {{.+}} : tensor<2xf32>, tensor<f32>
// CLIP:         return %{{.+}}, %[[N]], {{.+}}

// --track-grad-norm: the sharded norm is returned, nothing multiplied.
// TRACK-LABEL: func.func @train_step
// TRACK:         %[[GS:.+]]:2 = tcc.reduce_scatter
// TRACK-NEXT:    %[[N:.+]] = tcc.sharded_global_norm %[[GS]]#1, %[[GS]]#0 {shards = 2 : i64}
// TRACK-NOT:     tcc.mul
// TRACK:         tcc.adamw_update %{{.+}}, %[[GS]]#1, {{.+}} : tensor<3xf32>, tensor<f32>
// TRACK:         return %{{.+}}, %[[N]], {{.+}}

// One bucket per gradient: one all-gather each, numbered after the
// reduce-scatters (buckets 0 and 1), each after its bucket's update.
// TWO-LABEL: func.func @train_step
// TWO:         %[[R0:.+]] = tcc.reduce_scatter {{.+}} {bucket = 0 : i64, shards = 2 : i64}
// TWO:         %[[R1:.+]] = tcc.reduce_scatter {{.+}} {bucket = 1 : i64, shards = 2 : i64}
// TWO:         %[[W:[^,]+]], {{.+}} = tcc.adamw_update %{{.+}}, %[[R1]],
// TWO-NEXT:    tcc.all_gather %[[W]] {bucket = 3 : i64, shards = 2 : i64}
// TWO:         %[[B:[^,]+]], {{.+}} = tcc.adamw_update %{{.+}}, %[[R0]],
// TWO-NEXT:    tcc.all_gather %[[B]] {bucket = 2 : i64, shards = 2 : i64}

// 4 shards of 3 elements: 1 each (the last rank owns none); Lion's one
// moment.
// LION:         tcc.reduce_scatter {{.+}} {bucket = 0 : i64, shards = 4 : i64} : tensor<3xf32>, tensor<3x2xf32> -> tensor<1xf32>, tensor<2xf32>
// LION:         tcc.lion_update {{.+}} : tensor<2xf32>
// LION:         tcc.lion_update {{.+}} : tensor<1xf32>
func.func @train_step(%w: tensor<3x2xf32> {tcc.kind = "param", tcc.name = "w"},
                      %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                      %x: tensor<4x3xf32> {tcc.kind = "input", tcc.name = "x"})
    -> (tensor<f32> {tcc.kind = "loss"}, tensor<3x2xf32> {tcc.kind = "grad", tcc.name = "w"},
        tensor<3xf32> {tcc.kind = "grad", tcc.name = "b"}) {
  %l = tcc.reduce_sum %x {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
  %one = tcc.constant dense<1.0> : tensor<4x2xf32>
  %gb = tcc.reduce_sum %x {axes = array<i64: 0>} : tensor<4x3xf32> -> tensor<3xf32>
  %g = tcc.matmul %x, %one {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %l, %g, %gb : tensor<f32>, tensor<3x2xf32>, tensor<3xf32>
}

// -----

// Gradient accumulation's mean (acc * 1/K) is taken of the shard, after
// the reduce-scatter; SGD's momentum buffer is sharded (5 elements in 3
// shards: 2 each).
// SGD-LABEL: func.func @train_step
// SGD-SAME:    tensor<2xf32> {tcc.kind = "state", tcc.name = "w.momentum_buffer"}
// SGD:         %[[S:.+]] = tcc.add
// SGD-NEXT:    %[[R:.+]] = tcc.reduce_scatter %[[S]] {bucket = 0 : i64, shards = 3 : i64} : tensor<5xf32> -> tensor<2xf32>
// SGD-NEXT:    %[[M:.+]] = tcc.mul %[[R]], %{{.+}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// SGD-NEXT:    %[[P:.+]] = tcc.shard_slice %arg0 {shards = 3 : i64} : tensor<5xf32> -> tensor<2xf32>
// SGD-NEXT:    tcc.sgd_momentum_update %[[P]], %[[M]], {{.+}} : tensor<2xf32>
// SGD-NEXT:    tcc.all_gather {{.+}} : tensor<2xf32> -> tensor<5xf32>
// With clipping, the norm is of the scattered accumulators (times 1/K),
// and the update reads the shard's mean times the coefficient.
// CLIPACC-LABEL: func.func @train_step
// CLIPACC:         %[[R:.+]] = tcc.reduce_scatter %{{.+}} {bucket = 0 : i64, shards = 3 : i64} : tensor<5xf32> -> tensor<2xf32>
// CLIPACC-NEXT:    %[[M:.+]] = tcc.mul %[[R]], %{{.+}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CLIPACC:         %[[N:.+]] = tcc.sharded_global_norm %[[R]] {shards = 3 : i64} : tensor<2xf32>
// CLIPACC-NEXT:    %[[NK:.+]] = tcc.mul %[[N]], %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CLIPACC:         %[[C:.+]] = tcc.minimum
// CLIPACC-NEXT:    %[[G:.+]] = tcc.mul %[[M]], %[[C]] : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CLIPACC-NEXT:    %[[P:.+]] = tcc.shard_slice %arg0 {shards = 3 : i64} : tensor<5xf32> -> tensor<2xf32>
// CLIPACC-NEXT:    tcc.sgd_momentum_update %[[P]], %[[G]], {{.+}} : tensor<2xf32>
// CLIPACC:         return %[[NK]],
func.func @train_step(%w: tensor<5xf32> {tcc.kind = "param", tcc.name = "w"},
                      %acc: tensor<5xf32> {tcc.kind = "state", tcc.name = "w.grad_acc"})
    -> (tensor<5xf32> {tcc.kind = "grad", tcc.name = "w"}) {
  %half = tcc.constant dense<0.5> : tensor<f32>
  %s = tcc.add %acc, %acc : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %m = tcc.mul %s, %half : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
  return %m : tensor<5xf32>
}
