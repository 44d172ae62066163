//===- TccOpsAttention.td - Fused scaled dot-product attention -*- tablegen -*-===//
//
// Included from TccOps.td. tcc-fuse-attention (passes/FuseAttention.cpp)
// forms tcc.attention from matmul(softmax(scale * q k^T + mask), v) before
// autodiff; its gradient rule builds tcc.attention_grad, which recomputes the
// probabilities from the saved log-sum-exp instead of saving them, so no
// [..., Tq, Tk] tensor outlives a kernel (runtime/cpu/KernelsAttention.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_ATTENTION_TD
#define TCC_OPS_ATTENTION_TD

def Tcc_AttentionOp : Tcc_DiffOp<"attention"> {
  let summary = "Scaled dot-product attention with its row log-sum-exp";
  let description = [{
    Leading dimensions of `query`, `key` and `value` are batch dimensions
    (equal in all three, rank >= 3). Per batch entry, with
    `query` `[Tq, D]`, `key` `[Tk, D]` and `value` `[Tk, Dv]`:

        s[i, j]  = scale * sum_d query[i, d] key[j, d] + mask[i, j]
                   (-inf where causal and j > i)
        lse[i]   = log(sum_j exp(s[i, j]))        (max-shifted, f32)
        result   = softmax(s) value               [Tq, Dv]

    With `seq_major`, the operands keep the layout attention's inputs have
    before the usual head transposes: `query` `[B..., Tq, H, D]`, `key`
    `[B..., Tk, H, D]`, `value` `[B..., Tk, H, Dv]`, `result`
    `[B..., Tq, H, Dv]` (B... may be empty: nn.MultiheadAttention's
    `[T, N*H, D]`). The batch entries are then `(B..., H)`: the op computes
    exactly what the packed form does on the operands transposed to
    `[B..., H, T, D]`, with the result transposed back; `lse` is
    `[B..., H, Tq]` and the mask's batch dimensions are `(B..., H)`. The
    kernels read and write the strided rows in place, so no transpose is
    materialized (tcc-fuse-attention folds them into this attribute).

    With `fused_qkv` (sequence-major only), `query`, `key` and `value` are one
    value, the fused projection `[B..., Tq, 3 * H, D]` as a QKV GEMM writes
    it: heads `[0, H)` are the query's, `[H, 2H)` the key's and `[2H, 3H)`
    the value's (Tk = Tq, Dv = D). The op computes what it computes on the
    three slices, read in place (tcc-pack-attention forms it after autodiff,
    so that no slice of the projection is copied).

    `mask` (optional, always f32) has rank 2 or the rank of `lse` plus one;
    it broadcasts to `[batch..., Tq, Tk]`: its batch dimensions are all 1
    or all equal to the batch entries' dimensions, each of its last two is
    1 or full. `query`, `key`,
    `value` and `result` share one element type (f32, bf16 or f16); `lse`
    is always f32. A row whose scores are all -inf gives NaN, as softmax of
    it does. The backward (tcc.attention_grad) reads `lse` and recomputes
    the probabilities; `lse` itself has no gradient and neither has `mask`.
    ```mlir
    %o, %lse = tcc.attention %q, %k, %v {scale = 0.125 : f64, causal = true} : (tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x64x32xf32>) -> (tensor<16x64x32xf32>, tensor<16x64xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$query, Tcc_FloatTensor:$key,
                   Tcc_FloatTensor:$value, Optional<Tcc_FloatTensor>:$mask,
                   F64Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<BoolAttr, "false">:$seq_major,
                   DefaultValuedAttr<BoolAttr, "false">:$fused_qkv);
  let results = (outs Tcc_FloatTensor:$result, Tcc_FloatTensor:$lse);
  let assemblyFormat = "$query `,` $key `,` $value (`,` $mask^)? attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_AttentionGradOp : Tcc_InferOp<"attention_grad"> {
  let summary = "Backward of tcc.attention from its output and log-sum-exp";
  let description = [{
    Recomputes `P = exp(s - lse)` per batch entry (`s` as tcc.attention
    defines it, same `scale`, `causal` and `mask`), then with
    `D[i] = sum_d grad[i, d] out[i, d]`:

        value_grad = P^T grad
        dS         = P * (grad value^T - D[i]) * scale
        query_grad = dS key,   key_grad = dS^T query

    `out` and `grad` have the forward result's type, `lse` is f32
    `[batch..., Tq]`; the results have the types of `query`, `key`,
    `value`. `seq_major` and `fused_qkv` are the forward's layout (see
    tcc.attention); with `fused_qkv` the one result is the projection's
    gradient, `[B..., Tq, 3 * H, D]` (each third the gradient of that
    third), written in place of the three and their concatenation.

    With `column_sums` (fused_qkv only) a second result, f32 `[3 * H * D]`,
    holds the sums of that gradient's columns over every leading axis (the
    projection's bias gradient), added while the kernel still holds the
    gradient instead of by a pass that reads it again. Rows are summed in
    slices of 64 positions of one sequence, in the order
    runtime/core/AttentionColumnSums.h fixes (tcc-pack-attention folds a
    bias gradient's reduce_sum into it).
    ```mlir
    %dq, %dk, %dv = tcc.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.125 : f64, causal = true} : (tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x64xf32>, tensor<16x64x32xf32>) -> (tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x64x32xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$query, Tcc_FloatTensor:$key,
                   Tcc_FloatTensor:$value, Tcc_FloatTensor:$out,
                   Tcc_FloatTensor:$lse, Tcc_FloatTensor:$grad,
                   Optional<Tcc_FloatTensor>:$mask, F64Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<BoolAttr, "false">:$seq_major,
                   DefaultValuedAttr<BoolAttr, "false">:$fused_qkv,
                   DefaultValuedAttr<BoolAttr, "false">:$column_sums);
  // query_grad, key_grad, value_grad; with fused_qkv, the projection's (and
  // with column_sums its column sums).
  let results = (outs Variadic<Tcc_FloatTensor>:$grads);
  let assemblyFormat = "$query `,` $key `,` $value `,` $out `,` $lse `,` $grad "
                       "(`,` $mask^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TCC_OPS_ATTENTION_TD
