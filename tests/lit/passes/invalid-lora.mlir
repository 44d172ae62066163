// RUN: tcc-opt %s --tcc-lora="rank=2 targets=w*" --split-input-file -verify-diagnostics
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=0 targets=w" 2>&1 | FileCheck %s --check-prefix=RANK0
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=2" 2>&1 | FileCheck %s --check-prefix=NOTARGET
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=2 targets=[" 2>&1 | FileCheck %s --check-prefix=BADGLOB
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=2 targets=w,nope*" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=2 targets=b" 2>&1 | FileCheck %s --check-prefix=BIAS
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=4 targets=w" 2>&1 | FileCheck %s --check-prefix=BIGRANK
// RUN: not tcc-opt %S/Inputs/lora-linear.mlir --tcc-lora="rank=2 targets=w" --tcc-build-loss --tcc-lora="rank=2 targets=w" 2>&1 | FileCheck %s --check-prefix=TWICE

// RANK0: error: tcc-lora: the LoRA rank must be at least 1, got 0
// NOTARGET: error: tcc-lora: no LoRA target patterns
// BADGLOB: error: tcc-lora: LoRA target '[' is not a valid pattern
// NOMATCH: error: tcc-lora: LoRA target 'nope*' matches no weight product (the weights the model reads as a MatMul, Gemm or Linear weight: w)
// BIAS: error: tcc-lora: LoRA target 'b' matches no weight product (the weights the model reads as a MatMul, Gemm or Linear weight: w)
// BIGRANK: error: tcc-lora: LoRA rank 4 exceeds min(in, out) = 3 of 'w' (in 8, out 3)
// TWICE: error: tcc-lora: @train_step already exists; the adapters are added to @forward before tcc-build-loss

// expected-error @+1 {{tcc-lora: no func.func @forward with a body}}
module {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    return %x : tensor<2x3xf32>
  }
}

// -----

// A convolution's weight is refused by name: adapters are for products.
module {
  func.func @forward(
      // expected-error @+1 {{tcc-lora: LoRA target 'w*' matches 'wconv', the weight of a convolution (tcc.conv2d); adapters are added to matrix products (MatMul, Gemm, Linear) only}}
      %w: tensor<4x3x1x1xf32> {tcc.kind = "param", tcc.name = "wconv"},
      %b: tensor<4xf32> {tcc.kind = "param", tcc.name = "bconv"},
      %x: tensor<2x3x5x5xf32> {tcc.kind = "input", tcc.name = "x"})
      -> (tensor<2x4x5x5xf32> {tcc.name = "y"}) {
    %y = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x5x5xf32>, tensor<4x3x1x1xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
    return %y : tensor<2x4x5x5xf32>
  }
}

// -----

// A tied weight (an embedding table that is also the output projection):
// merging the adapter would change the embedding too.
module {
  func.func @forward(
      // expected-error @+1 {{tcc-lora: LoRA target 'w*' matches 'wte', the weight of a matrix product that is also read by 'tcc.gather' (a tied weight): merging an adapter into it would change that read too}}
      %e: tensor<10x8xf32> {tcc.kind = "param", tcc.name = "wte"},
      %ids: tensor<2x5xi64> {tcc.kind = "input", tcc.name = "ids"})
      -> (tensor<2x5x10xf32> {tcc.name = "y"}) {
    %g = tcc.gather %e, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
    %y = tcc.matmul %g, %e {transpose_rhs = true} : (tensor<2x5x8xf32>, tensor<10x8xf32>) -> tensor<2x5x10xf32>
    return %y : tensor<2x5x10xf32>
  }
}

// -----

module {
  func.func @forward(
      // expected-error @+1 {{tcc-lora: LoRA target 'w*' matches 'w', which matrix products read both as stored and transposed}}
      %w: tensor<8x8xf32> {tcc.kind = "param", tcc.name = "w"},
      %x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"})
      -> (tensor<4x8xf32> {tcc.name = "y"}) {
    %h = tcc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = tcc.matmul %h, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// An adapter's name is taken already.
module {
  func.func @forward(
      // expected-error @+1 {{tcc-lora: the model already has an input or initializer named 'w.lora_A', the name of an adapter of 'w'}}
      %w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
      %a: tensor<3xf32> {tcc.kind = "param", tcc.name = "w.lora_A"},
      %x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %y = tcc.add %h, %a : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
