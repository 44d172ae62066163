//===- TccOpsIndex.td - tcc ops: element-wise indexing -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
// Gathers and scatters by per-element indices (ONNX GatherElements,
// ScatterElements, GatherND, ScatterND) and the indices of the k largest or
// smallest entries (ONNX TopK takes its values with gather_elements, so its
// gradient is gather_elements'). Indices are i64 data; a negative one counts
// from the end of its dimension and one outside `[-n, n)` is a run-time
// error naming it and its position.
//
// Inference and verifiers: TccOpsIndex.cpp; gradient rules:
// TccGradientsIndex.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_INDEX_TD
#define TCC_OPS_INDEX_TD

def Tcc_GatherElementsOp : Tcc_DiffOp<"gather_elements"> {
  let summary = "Takes one entry of `data` along `axis` per index";
  let description = [{
    ONNX GatherElements, torch.gather: `indices` has the rank of `data` and
    no larger a dimension off `axis`; the result has its shape, and
    `result[i] = data[i with i[axis] replaced by indices[i]]`. Only `data`
    gets a gradient: the result gradient scatter-added into zeros.
    ```mlir
    %y = tcc.gather_elements %x, %i {axis = 1 : i64} : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Tcc_DataTensor:$data, Tcc_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Tcc_ScatterElementsOp : Tcc_DiffOp<"scatter_elements"> {
  let summary = "A copy of `data` with `updates` written along `axis`";
  let description = [{
    ONNX ScatterElements: `indices` and `updates` have one shape, of the
    rank of `data` and no larger off `axis`; `updates[i]` goes to `i` with
    `i[axis]` replaced by `indices[i]`. `reduction` is `none` (replace; of
    repeated indices the last write wins), `add`, `mul`, `max` or `min`
    (combined with what is there, in index order). Differentiable for
    `none` and `add`: `data` gets the result gradient (zeroed where `none`
    overwrote it), `updates` the gradient gathered back.
    ```mlir
    %y = tcc.scatter_elements "add", %x, %i, %u {axis = 0 : i64} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins StrAttr:$reduction, Tcc_DataTensor:$data,
                   Tcc_IndexTensor:$indices, Tcc_DataTensor:$updates,
                   I64Attr:$axis);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat = "$reduction `,` $data `,` $indices `,` $updates "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The reduction's number in the kernels' ScatterAttrs
    /// (runtime/core/abi/KernelAttrs.h), -1 if unknown.
    static int64_t reductionCode(::llvm::StringRef reduction);
  }];
}

def Tcc_GatherNdOp : Tcc_DiffOp<"gather_nd"> {
  let summary = "Takes slices of `data` at index tuples";
  let description = [{
    ONNX GatherND: the last dimension `m` of `indices` holds tuples that
    index dimensions `[b, b + m)` of `data`, after `b = batch_dims` leading
    dimensions both share. The result has shape
    `indices.shape[:-1] + data.shape[b + m:]`. Only `data` gets a gradient
    (scatter_nd "add" into zeros).
    ```mlir
    %y = tcc.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins Tcc_DataTensor:$data, Tcc_IndexTensor:$indices,
                   I64Attr:$batch_dims);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Tcc_ScatterNdOp : Tcc_DiffOp<"scatter_nd"> {
  let summary = "A copy of `data` with slices of `updates` written at tuples";
  let description = [{
    ONNX ScatterND: each tuple in the last dimension (size `m`) of
    `indices` names a slice `data[t]` of shape `data.shape[m:]`, which
    `updates[j]` (shape `indices.shape[:-1] + data.shape[m:]`) replaces or
    is combined with (`reduction` as for scatter_elements), in index order.
    `batch_dims` leading dimensions are shared as in gather_nd (ONNX
    ScatterND has none; gather_nd's gradient uses them). Differentiable for
    `none` and `add`.
    ```mlir
    %y = tcc.scatter_nd "none", %x, %i, %u : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$reduction, Tcc_DataTensor:$data,
                   Tcc_IndexTensor:$indices, Tcc_DataTensor:$updates,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Tcc_DataTensor:$result);
  let assemblyFormat = "$reduction `,` $data `,` $indices `,` $updates "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_TopKOp : Tcc_InferOp<"top_k"> {
  let summary = "Indices of the k largest (or smallest) entries along an axis";
  let description = [{
    The result has `input`'s shape with `k` along `axis`: the indices of
    the largest entries (smallest unless `largest`), sorted from the most
    extreme, equal values by lower index first; NaN counts as the largest.
    Not differentiable: ONNX TopK's values are a gather_elements by these
    indices, which carries the gradient.
    ```mlir
    %i = tcc.top_k %x {axis = 1 : i64, k = 3 : i64, largest = true} : tensor<3x4xf32> -> tensor<3x3xi64>
    ```
  }];
  let arguments = (ins Tcc_NumberTensor:$input, I64Attr:$axis, I64Attr:$k,
                   DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs Tcc_IndexTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

#endif // TCC_OPS_INDEX_TD
