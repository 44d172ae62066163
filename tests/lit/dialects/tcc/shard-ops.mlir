// RUN: tcc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The sharded optimizer state's collectives (tcc-shard-optimizer-state): an
// all-gather is one bucket of shards, each result the whole tensor.
// CHECK-LABEL: func.func @bucket
// CHECK: %{{.+}}:2 = tcc.all_gather %arg0, %arg1 {bucket = 3 : i64, shards = 2 : i64} : tensor<16xf32>, tensor<3xf32> -> tensor<4x8xf32>, tensor<5xf32>
func.func @bucket(%a: tensor<16xf32>, %b: tensor<3xf32>) -> (tensor<4x8xf32>, tensor<5xf32>) {
  %p:2 = tcc.all_gather %a, %b {bucket = 3, shards = 2} : tensor<16xf32>, tensor<3xf32> -> tensor<4x8xf32>, tensor<5xf32>
  return %p#0, %p#1 : tensor<4x8xf32>, tensor<5xf32>
}

// -----

func.func @count(%a: tensor<16xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tcc.all_gather' op needs one result per operand}}
  %p = tcc.all_gather %a, %b {bucket = 0, shards = 2} : tensor<16xf32>, tensor<3xf32> -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

func.func @shard(%a: tensor<15xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tcc.all_gather' op a shard of}}
  %p = tcc.all_gather %a {bucket = 0, shards = 2} : tensor<15xf32> -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

func.func @bucket_negative(%a: tensor<16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tcc.all_gather' op bucket must be non-negative, got -1}}
  %p = tcc.all_gather %a {bucket = -1, shards = 2} : tensor<16xf32> -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}
