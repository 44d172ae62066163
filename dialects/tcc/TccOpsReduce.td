//===- TccOpsReduce.td - tcc ops: products and scans -------*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_ReduceOp, Tcc_DiffOp).
//
// reduce_prod and cumsum are the reductions that do not decompose exactly
// into the others: a product through exp(sum(log|x|)) loses precision and
// the sign, a running sum needs a scan. Both have kernels; reduce_prod's
// gradient has its own (the product of every other element, from prefix and
// suffix products, so it is exact where x has zeros), cumsum's is a cumsum.
//
// Inference, verifiers and gradient rules: TccOpsReduce.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_REDUCE_TD
#define TCC_OPS_REDUCE_TD

def Tcc_ReduceProdOp : Tcc_ReduceOp<"reduce_prod", "Product">;

def Tcc_ReduceProdGradOp : Tcc_InferOp<"reduce_prod_grad",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Backward of tcc.reduce_prod: dy times the other elements' product";
  let description = [{
    `dx[i] = dy * prod(x[j] for j != i)` within each reduced group, computed
    as the product of the elements before i and of those after it (no
    division, so exact where x has zeros, as PyTorch's prod backward).
    `grad` has the reduction's result shape, with or without keepdims.
    ```mlir
    %dx = tcc.reduce_prod_grad %dy, %x {axes = array<i64: 1>} : tensor<4xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   DenseI64ArrayAttr:$axes);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $input attr-dict `:` type($grad) `,` type($input)";
  let hasVerifier = 1;
}

def Tcc_CumSumOp : Tcc_DiffOp<"cumsum", [AllTypesMatch<["input", "result"]>]> {
  let hasVerifier = 1;
  let summary = "Running sum along one axis";
  let description = [{
    `y[i] = sum(x[j] for j <= i)` along `axis`; `exclusive` leaves x[i] out
    (j < i), `reverse` sums from the end (j >= i). The gradient is the
    cumsum of dy in the other direction, with the same `exclusive`.
    ```mlir
    %y = tcc.cumsum %x {axis = 1 : i64, reverse = true} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tcc_GlobalNormOp : Tcc_Op<"global_norm", [Pure]> {
  let summary = "The L2 norm of all its operands together, as one f32 scalar";
  let description = [{
    `sqrt(sum over every operand of sum(x * x))`, the global norm
    `torch.nn.utils.clip_grad_norm_` measures, in one reduction over all the
    operands (any float types) with f64 accumulation in a fixed order, so
    it repeats bit for bit. tcc-clip-gradients makes it from the gradients
    after autodiff; it has no gradient rule.
    ```mlir
    %n = tcc.global_norm %g0, %g1 : tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Variadic<Tcc_FloatTensor>:$inputs);
  let results = (outs Tcc_F32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Tcc_AllReduceOp : Tcc_Op<"all_reduce", []> {
  let summary = "Gradients averaged over the ranks of a data-parallel run";
  let description = [{
    Each result is its operand averaged element-wise over the processes of
    a data-parallel run (`mpirun -np N`): the sum over the ranks divided by
    N; with one process, the operand itself. One op is one bucket of
    gradients that tcc-all-reduce-gradients makes after the backward; the
    code generator starts its reduction where the op stands and waits for
    it before the first reader of a result, so buckets reduce while the
    rest of the backward runs. `bucket` numbers the buckets of a function
    in the order every rank starts them. Not `Pure`: it communicates, so
    nothing may drop, merge or duplicate it.
    ```mlir
    %r0, %r1 = tcc.all_reduce %g0, %g1 {bucket = 0}
        : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Variadic<RankedTensorOf<[F32]>>:$inputs,
                   I64Attr:$bucket);
  let results = (outs Variadic<RankedTensorOf<[F32]>>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($results)";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "ValueRange":$inputs, "int64_t":$bucket), [{
      build($_builder, $_state, inputs.getTypes(), inputs,
            $_builder.getI64IntegerAttr(bucket));
    }]>
  ];
}

#endif // TCC_OPS_REDUCE_TD
