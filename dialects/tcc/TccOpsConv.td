//===- TccOpsConv.td - tcc ops: convolution, pooling, batch norm -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
// Layout is NCHW throughout. Spatial attributes follow ONNX: `pads` is
// [top, left, bottom, right] (begins, then ends), `strides` and `dilations`
// are [h, w]. Output sizes are
//   out = floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1
// (ceil instead of floor with `ceil_mode`, where, as in PyTorch, a last
// window that would start in the end padding is dropped).
//
// The gradient ops take their result type explicitly: an input extent is not
// determined by the output extent when the stride is larger than 1, so their
// verifiers check the type against the forward shape rule instead.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_CONV_TD
#define TCC_OPS_CONV_TD

def Tcc_PoolIndexTensor : RankedTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

def Tcc_Conv2dOp : Tcc_DiffOp<"conv2d"> {
  let summary = "2-D convolution (cross-correlation), NCHW, with groups";
  let description = [{
    `input` is `[N, C, H, W]`, `weight` is `[O, C / groups, kH, kW]` and the
    optional `bias` is `[O]`; the result is `[N, O, OH, OW]`. `C` and `O` are
    multiples of `groups`; output channel `o` sees the input channels of group
    `o / (O / groups)`. As ONNX Conv and torch.nn.Conv2d.
    ```mlir
    %y = tcc.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$weight,
                   Optional<Tcc_FloatTensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

def Tcc_Conv2dGradInputOp : Tcc_Op<"conv2d_grad_input", [Pure,
    DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]> {
  let summary = "Gradient of conv2d with respect to its input (col2im)";
  let description = [{
    `grad` is the result gradient `[N, O, OH, OW]`, `weight` the convolution's
    weight; the attributes are the convolution's. The result has the
    convolution input's type, which must give `grad`'s shape. It is also the
    transposed convolution (ONNX ConvTranspose, torch.nn.ConvTranspose2d),
    so it has gradients itself: conv2d of the result's gradient for `grad`,
    and conv2d_grad_weight with the roles of input and gradient swapped for
    `weight`.
    ```mlir
    %dx = tcc.conv2d_grad_input %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<8x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$weight,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_Conv2dGradWeightOp : Tcc_Op<"conv2d_grad_weight", [Pure]> {
  let summary = "Gradient of conv2d with respect to its weight";
  let description = [{
    `grad` is the result gradient `[N, O, OH, OW]`, `input` the convolution's
    input; the attributes are the convolution's. The result has the weight's
    type `[O, C / groups, kH, kW]`.
    ```mlir
    %dw = tcc.conv2d_grad_weight %dy, %x {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<8x16x16x16xf32>, tensor<8x3x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

def Tcc_MaxPool2dOp : Tcc_DiffOp<"max_pool2d"> {
  let summary = "2-D max pooling, NCHW, returning the argmax of each window";
  let description = [{
    Padding never wins: windows are clipped to the input. `indices` holds,
    for each output element, the position `h * W + w` of its maximum within
    its `[H, W]` plane (the first one on ties, NaN beating everything, as
    PyTorch); the gradient routes through it. As ONNX MaxPool and
    torch.nn.MaxPool2d.
    ```mlir
    %y, %i = tcc.max_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<8x64x16x16xf32> -> tensor<8x64x8x8xf32>, tensor<8x64x8x8xi64>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Tcc_FloatTensor:$result, Tcc_PoolIndexTensor:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result) "
                       "`,` type($indices)";
}

def Tcc_MaxPool2dGradOp : Tcc_Op<"max_pool2d_grad", [Pure]> {
  let summary = "Gradient of max_pool2d: scatters `grad` to the argmax positions";
  let description = [{
    `result[n, c].flat[indices[n, c, i, j]] += grad[n, c, i, j]`, zero
    elsewhere. The result has the pooling input's type.
    ```mlir
    %dx = tcc.max_pool2d_grad %dy, %i : (tensor<8x64x8x8xf32>, tensor<8x64x8x8xi64>) -> tensor<8x64x16x16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_PoolIndexTensor:$indices);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_AvgPool2dOp : Tcc_DiffOp<"avg_pool2d"> {
  let summary = "2-D average pooling, NCHW";
  let description = [{
    With `count_include_pad` the divisor counts padded positions (but, as
    PyTorch, not the part of a ceil-mode window past the end padding);
    otherwise only the input elements in the window. As ONNX AveragePool and
    torch.nn.AvgPool2d.
    ```mlir
    %y = tcc.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<8x64x16x16xf32> -> tensor<8x64x8x8xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Tcc_AvgPool2dGradOp : Tcc_Op<"avg_pool2d_grad", [Pure]> {
  let summary = "Gradient of avg_pool2d with respect to its input";
  let description = [{
    Spreads each result gradient evenly (by the forward's divisor) over its
    window. The attributes are the forward's; the result has its input type.
    ```mlir
    %dx = tcc.avg_pool2d_grad %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<8x64x8x8xf32> -> tensor<8x64x16x16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

def Tcc_BatchNormTrainOp : Tcc_DiffOp<"batch_norm_train"> {
  let summary = "Batch normalization with the statistics of the batch";
  let description = [{
    `input` is `[N, C, ...]`; `scale` and `bias` are `[C]`. With `mean` and
    `var` the mean and the population (biased) variance of each channel over
    all axes but 1,
    `result = (input - mean) / sqrt(var + epsilon) * scale + bias`.
    `mean` and `var` are results too, for the running statistics (which the
    frontend updates with ordinary element-wise ops) and the backward.
    ```mlir
    %y, %m, %v = tcc.batch_norm_train %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$scale,
                   Tcc_FloatTensor:$bias, F64Attr:$epsilon);
  let results = (outs Tcc_FloatTensor:$result, Tcc_FloatTensor:$mean,
                      Tcc_FloatTensor:$var);
  let assemblyFormat = "$input `,` $scale `,` $bias attr-dict `:` "
                       "functional-type(operands, results)";
}

def Tcc_BatchNormTrainGradOp : Tcc_InferOp<"batch_norm_train_grad"> {
  let summary = "Backward of batch_norm_train through the batch statistics";
  let description = [{
    Given the result gradient `grad`, the forward's `input`, `scale` and its
    `mean` and `var` results, returns the gradients of `input`, `scale` and
    `bias`. With `xhat = (input - mean) * istd`, `istd = 1/sqrt(var + eps)`
    and `M` the elements per channel:
    `dbias = sum(grad)`, `dscale = sum(grad * xhat)`,
    `dinput = scale * istd * (grad - dbias / M - xhat * dscale / M)`.
    ```mlir
    %dx, %dg, %db = tcc.batch_norm_train_grad %dy, %x, %g, %m, %v {epsilon = 1.0e-5 : f64} : (tensor<8x16x4x4xf32>, tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   Tcc_FloatTensor:$scale, Tcc_FloatTensor:$mean,
                   Tcc_FloatTensor:$var, F64Attr:$epsilon);
  let results = (outs Tcc_FloatTensor:$input_grad, Tcc_FloatTensor:$scale_grad,
                      Tcc_FloatTensor:$bias_grad);
  let assemblyFormat = "$grad `,` $input `,` $scale `,` $mean `,` $var "
                       "attr-dict `:` functional-type(operands, results)";
}

#endif // TCC_OPS_CONV_TD
