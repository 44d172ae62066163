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

// Sharded optimizer state (ZeRO stage 1, tcc-shard-optimizer-state): rank r
// of N owns elements [r*c, min(n, (r+1)*c)) of every parameter of n
// elements, c = ceil(n / N); a shard is a 1-D tensor of c elements whose
// tail past n is zero on the last ranks.

def Tcc_ReduceScatterOp : Tcc_Op<"reduce_scatter", []> {
  let summary = "This rank's shard of gradients averaged over the ranks";
  let description = [{
    Result i is the rank's shard (`shards` = N ranks) of operand i averaged
    element-wise over the ranks of a data-parallel run: a 1-D tensor of
    ceil(n_i / N) elements, zero past the operand's end. One op is one
    bucket of gradients (as tcc.all_reduce's), numbered by `bucket`. Not
    `Pure`: it communicates. A run with a number of ranks other than N is an
    error at run time.
    ```mlir
    %s0, %s1 = tcc.reduce_scatter %g0, %g1 {bucket = 0, shards = 2}
        : tensor<4x8xf32>, tensor<5xf32> -> tensor<16xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins Variadic<RankedTensorOf<[F32]>>:$inputs,
                   I64Attr:$bucket, I64Attr:$shards);
  let results = (outs Variadic<RankedTensorOf<[F32]>>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($results)";
  let hasVerifier = 1;
}

def Tcc_ShardSliceOp : Tcc_Op<"shard_slice", []> {
  let summary = "This rank's shard of a tensor";
  let description = [{
    The 1-D shard of `input` that this rank owns among `shards` ranks
    (the rank is read at run time), zero past the input's end. The sharded
    optimizer update reads the parameter through it.
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, I64Attr:$shards);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_AllGatherOp : Tcc_Op<"all_gather", []> {
  let summary = "Tensors made of every rank's shards";
  let description = [{
    The inverse of tcc.shard_slice, for a bucket of tensors: operand i is
    this rank's shard among `shards` ranks, result i (of any shape of n_i
    elements, c_i = ceil(n_i / N)) is every rank's shard of it in rank
    order, each rank's padding dropped. One op writes the whole parameters
    of a gradient bucket after their sharded updates, as one collective
    that the code generator starts where the op stands and waits for
    before the first reader of a result (or at the end of the step);
    `bucket` numbers it among the function's buckets. Not `Pure`: it
    communicates.
    ```mlir
    %p0, %p1 = tcc.all_gather %u0, %u1 {bucket = 2, shards = 2}
        : tensor<16xf32>, tensor<3xf32> -> tensor<4x8xf32>, tensor<5xf32>
    ```
  }];
  let arguments = (ins Variadic<RankedTensorOf<[F32]>>:$inputs,
                   I64Attr:$bucket, I64Attr:$shards);
  let results = (outs Variadic<RankedTensorOf<[F32]>>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($results)";
  let hasVerifier = 1;
}

def Tcc_ShardedGlobalNormOp : Tcc_Op<"sharded_global_norm", []> {
  let summary = "The global norm of gradients each rank holds a shard of";
  let description = [{
    tcc.global_norm of the whole gradients when each of `shards` ranks holds
    only its 1-D shards of them (tcc.reduce_scatter's results, or scalar
    multiples of them): each rank sums the squares of its shards' elements
    in f64 (the zero padding past a gradient's end adds nothing, and the
    shards are disjoint, so every element counts once), the ranks exchange
    these partial sums, and every rank adds them in rank order and takes
    the square root, so all ranks get the same f32 bits. Gradient clipping
    and the fp16 loss scaler's overflow check of a sharded step
    (tcc-shard-optimizer-state, tcc-mixed-precision). Not `Pure`: it
    communicates.
    ```mlir
    %n = tcc.sharded_global_norm %s0, %s1 {shards = 2}
        : tensor<16xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins Variadic<RankedTensorOf<[F32]>>:$inputs,
                   I64Attr:$shards);
  let results = (outs Tcc_F32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

#endif // TCC_OPS_REDUCE_TD
