// A Linear layer (W [out, in] = [3, 8]) for invalid-lora.mlir's option errors.
module {
  func.func @forward(%w: tensor<3x8xf32> {tcc.kind = "param", tcc.name = "w"},
                     %b: tensor<3xf32> {tcc.kind = "param", tcc.name = "b"},
                     %x: tensor<4x8xf32> {tcc.kind = "input", tcc.name = "x"})
      -> (tensor<4x3xf32> {tcc.name = "y"}) {
    %h = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    %y = tcc.add %h, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
