// RUN: tcc-opt %s --tcc-train-pipeline="data-parallel=true zero-shards=2 precision=fp16 optimizer=sgd plan-memory=false fuse=false" | FileCheck %s
// RUN: tcc-opt %s --tcc-train-pipeline="data-parallel=true zero-shards=2 precision=fp16 clip-grad-norm=1.0 plan-memory=false fuse=false" | FileCheck %s --check-prefix=CLIP

// fp16 loss scaling of a sharded step (tcc-shard-optimizer-state, then
// tcc-mixed-precision): each update unscales its rank's gradient shard, and
// the overflow check is the finiteness of tcc.sharded_global_norm of the
// shards, which every rank computes from every rank's shards, so all skip
// the same steps (a sum of its own shards would let them disagree). The
// parameters keep their old value on a skip: the where reads the
// all-gathered update.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[^:]+]]: tensor<16x8xf32> {tcc.kind = "param", tcc.name = "fc1.weight"}
// CHECK-SAME:    %[[SCALE:[^:]+]]: tensor<f32> {tcc.init = dense<6.553600e+04> : tensor<f32>, tcc.kind = "state", tcc.name = "loss_scale"}
// CHECK:         %[[GS:.+]]:2 = tcc.reduce_scatter {{.+}} {bucket = 0 : i64, shards = 2 : i64} : tensor<16xf32>, tensor<16x8xf32> -> tensor<8xf32>, tensor<64xf32>
// CHECK:         %[[INV:.+]] = tcc.div %{{.+}}, %[[SCALE]]
// CHECK-NEXT:    %[[G:.+]] = tcc.mul %[[GS]]#1, %[[INV]] : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
// CHECK-NEXT:    %[[P:.+]] = tcc.sgd_update %{{.+}}, %[[G]], {{.+}} : tensor<64xf32>
// CHECK:         %[[PF:.+]]:2 = tcc.all_gather %{{.+}}, %[[P]] {bucket = 1 : i64, shards = 2 : i64} : tensor<8xf32>, tensor<64xf32> -> tensor<16xf32>, tensor<16x8xf32>
// CHECK-NOT:     tcc.reduce_sum
// CHECK:         %[[N:.+]] = tcc.sharded_global_norm %[[GS]]#1, %[[GS]]#0 {shards = 2 : i64} : tensor<64xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[Z:.+]] = tcc.mul %[[N]], %[[ZERO:[^ ]+]]
// CHECK-NEXT:    %[[FINITE:.+]] = tcc.compare "eq", %[[Z]], %[[ZERO]]
// CHECK-NEXT:    tcc.where %[[FINITE]], %[[PF]]#1, %[[W]] : (tensor<i1>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>

// With clipping the norm is the clipping's, unscaled; the coefficient joins
// the unscaling factor of AdamW's shard update.
// CLIP-LABEL: func.func @train_step
// CLIP:         %[[GS:.+]]:2 = tcc.reduce_scatter
// CLIP:         %[[N:.+]] = tcc.sharded_global_norm %[[GS]]#1, %[[GS]]#0 {shards = 2 : i64}
// CLIP-NEXT:    %[[U:.+]] = tcc.mul %[[N]], %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CLIP-NOT:     tcc.sharded_global_norm
// CLIP:         tcc.adamw_update %{{.+}}, %{{.+}}, {{.+}} : tensor<64xf32>, tensor<f32>
// CLIP:         tcc.compare "eq", %{{.+}}, %{{.+}}
// CLIP-NOT:     tcc.sharded_global_norm

module attributes {tcc.batch = 4 : i64} {
  func.func @forward(%x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"},
                     %w1: tensor<16x8xf32> {tcc.kind = "param", tcc.name = "fc1.weight"},
                     %b1: tensor<16xf32> {tcc.kind = "param", tcc.name = "fc1.bias"})
      -> (tensor<4x16xf32> {tcc.name = "logits"}) {
    %h = tcc.matmul %x, %w1 {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %hb = tcc.add %h, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %hb : tensor<4x16xf32>
  }
}
