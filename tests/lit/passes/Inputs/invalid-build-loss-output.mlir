// --tcc-build-loss=loss=output:loss errors (run from invalid-build-loss.mlir).

module {
  // expected-error @+1 {{tcc-build-loss: --loss output:loss: the model has no output named 'loss' (outputs: y, z)}}
  func.func @forward(%x: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "x"})
      -> (tensor<2x3xf32> {tcc.name = "y"}, tensor<2x3xf32> {tcc.name = "z"}) {
    return %x, %x : tensor<2x3xf32>, tensor<2x3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: --loss output:loss: the output is 'tensor<2x3xf32>'; a loss must be a float scalar (rank 0), such as a reduced NegativeLogLikelihoodLoss or SoftmaxCrossEntropyLoss}}
  func.func @forward(%x: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "x"})
      -> (tensor<2x3xf32> {tcc.name = "loss"}) {
    return %x : tensor<2x3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{tcc-build-loss: --loss output:loss: the output is 'tensor<i64>'; a loss must be a float scalar}}
  func.func @forward(%x: tensor<2x3xf32> {tcc.kind = "param", tcc.name = "x"},
                     %n: tensor<i64> {tcc.kind = "input", tcc.name = "n"})
      -> (tensor<2x3xf32> {tcc.name = "y"}, tensor<i64> {tcc.name = "loss"}) {
    return %x, %n : tensor<2x3xf32>, tensor<i64>
  }
}
