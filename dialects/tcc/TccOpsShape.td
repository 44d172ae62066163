//===- TccOpsShape.td - tcc ops: data movement and shape -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
// Gathers, slices, concatenation, selection and element-type casts. Shape
// arithmetic (ONNX Shape, Gather on shapes, Range, ...) never reaches these
// ops: the frontend folds it at import, since every shape is static. Booleans
// are i1 tensors in the IR; the runtime stores them as i64 0/1
// (docs/ARCHITECTURE.md).
//
// Inference and verifiers: TccOpsShape.cpp; gradient rules:
// TccGradientsShape.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_SHAPE_TD
#define TCC_OPS_SHAPE_TD

/// The element types a tensor can have at run time (bool stored as i64).
def Tcc_DataTensor : RankedTensorOf<[F32, BF16, F16, I64, I1]>;
def Tcc_IndexTensor : RankedTensorOf<[I64]>;
def Tcc_BoolTensor : RankedTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Gather and its gradient
//===----------------------------------------------------------------------===//

def Tcc_GatherOp : Tcc_DiffOp<"gather"> {
  let summary = "Takes entries of `data` along `axis` at the given indices";
  let description = [{
    ONNX Gather (PyTorch `nn.Embedding` with `axis = 0`): the result has
    shape `data.shape[:axis] + indices.shape + data.shape[axis+1:]`. A
    negative index counts from the end of the axis; an index outside
    `[-n, n)` is a run-time error naming it and its position. Only `data`
    gets a gradient (`tcc.gather_grad`).
    ```mlir
    %e = tcc.gather %w, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Tcc_DataTensor:$data, Tcc_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Tcc_GatherGradOp : Tcc_InferOp<"gather_grad"> {
  let summary = "Gradient of gather: scatter-adds `grad` into zeros";
  let description = [{
    The result has the gathered tensor's shape: `grad`'s with the indexed
    dimensions replaced by one dimension of `size` along `axis`. Each slice
    of `grad` is added to the row its index names, so repeated indices (the
    same token twice) accumulate.
    ```mlir
    %dw = tcc.gather_grad %dy, %ids {axis = 0 : i64, size = 50 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<50x16xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_IndexTensor:$indices,
                   I64Attr:$axis, I64Attr:$size);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Concat, slice
//===----------------------------------------------------------------------===//

def Tcc_ConcatOp : Tcc_DiffOp<"concat"> {
  let summary = "Joins tensors along one axis";
  let description = [{
    All inputs have the same rank, element type and dimensions except along
    `axis`. The gradient of each input is its slice of the result's.
    ```mlir
    %c = tcc.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Tcc_DataTensor>:$inputs, I64Attr:$axis);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasFolder = 1;
}

def Tcc_SliceOp : Tcc_DiffOp<"slice"> {
  let summary = "A strided window of a tensor";
  let description = [{
    One entry per dimension in each of `starts`, `sizes` and `steps`:
    result index `i` along dimension `d` reads input index
    `starts[d] + i * steps[d]`. Steps are non-zero and may be negative; every
    index read lies inside the input (the frontend resolves ONNX's negative
    and clamped bounds). The result's shape is `sizes`.
    ```mlir
    %s = tcc.slice %x {starts = array<i64: 0, 4>, sizes = array<i64: 2, 3>, steps = array<i64: 1, -1>} : tensor<2x5xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Tcc_DataTensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$steps);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tcc_SliceGradOp : Tcc_InferOp<"slice_grad"> {
  let summary = "Gradient of slice: `grad` written into zeros of `shape`";
  let description = [{
    The inverse placement of `tcc.slice` with the same `starts` and `steps`:
    the result has shape `shape`, holds `grad` at the positions the slice
    read and zero elsewhere. With zero starts and unit steps it is a zero
    pad at the end of each dimension (tcc-pad-shapes uses it so).
    ```mlir
    %dx = tcc.slice_grad %dy {shape = array<i64: 2, 5>, starts = array<i64: 0, 4>, steps = array<i64: 1, -1>} : tensor<2x3xf32> -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, DenseI64ArrayAttr:$shape,
                   DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// Whether it is a zero pad at the end of the last axis only: zero
    /// starts, unit steps, every other dimension kept (TccOpsShape.cpp).
    bool padsLastAxisOnly();
  }];
}

//===----------------------------------------------------------------------===//
// Selection, comparison, casts
//===----------------------------------------------------------------------===//

def Tcc_WhereOp : Tcc_DiffOp<"where"> {
  let summary = "Element-wise `condition ? lhs : rhs` with NumPy broadcasting";
  let description = [{
    The three operands broadcast together; `lhs` and `rhs` have one element
    type, which the result has. Gradients flow to `lhs` where the condition
    holds and to `rhs` where it does not; the condition gets none.
    ```mlir
    %y = tcc.where %mask, %x, %fill : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
    ```
  }];
  let arguments = (ins Tcc_BoolTensor:$condition, Tcc_DataTensor:$lhs,
                   Tcc_DataTensor:$rhs);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat =
      "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Tcc_CastOp : Tcc_Op<"cast", [Pure]> {
  let summary = "Converts the element type (f32, bf16, f16, i64, i1), keeping the shape";
  let description = [{
    As ONNX Cast: float to integer truncates toward zero (NaN becomes 0 and
    values beyond the i64 range saturate), anything to bool is `x != 0`, bool
    to a number is 0 or 1. Between float types it rounds to nearest-even
    (Inf and NaN stay; f16 overflows to Inf and has subnormals); these casts
    are inserted by tcc-mixed-precision after differentiation. Not
    differentiable.
    ```mlir
    %f = tcc.cast %mask : tensor<2x8xi1> -> tensor<2x8xf32>
    %h = tcc.cast %x : tensor<2x8xf32> -> tensor<2x8xbf16>
    ```
  }];
  let arguments = (ins Tcc_DataTensor:$input);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// Whether it widens bf16 or f16 to f32, which is exact
    /// (TccOpsShape.cpp).
    bool isExactWidening();
    /// The 16-bit value `v` widens exactly, if `v` is such a cast; else
    /// `v` itself.
    static ::mlir::Value beforeExactWidening(::mlir::Value v);
  }];
}

#endif // TCC_OPS_SHAPE_TD
