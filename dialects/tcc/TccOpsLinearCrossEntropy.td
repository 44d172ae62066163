//===- TccOpsLinearCrossEntropy.td - LM head + loss, fused -*- tablegen -*-===//
//
// "Cut cross-entropy": a language model's head matmul and its cross-entropy
// as one op, so the [rows, vocabulary] logits are never stored. Formed by
// tcc-cut-cross-entropy before autodiff (passes/CutCrossEntropy.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_LINEAR_CROSS_ENTROPY_TD
#define TCC_OPS_LINEAR_CROSS_ENTROPY_TD

def Tcc_LinearCrossEntropyOp : Tcc_DiffOp<"linear_cross_entropy"> {
  let summary = "softmax_cross_entropy(matmul(hidden, weight) + bias, labels) "
                "without the logits";
  let description = [{
    `hidden` is `[..., D]` (f32), `weight` `[D, V]` (`[V, D]` with
    `transpose_weight`, a torch Linear's layout), the optional `bias` `[V]`,
    `labels` i64 shaped like `hidden` without its last axis. `loss` is what
    `tcc.softmax_cross_entropy` (same `ignore_index` and `label_smoothing`)
    computes on `logits = hidden op(weight) + bias`; `lse` (f32, shaped like
    `labels`) is each row's log-sum-exp of its logits, which the backward
    reads. The kernels stream the vocabulary in slices of `block` columns:
    one GEMM per slice writes `[rows, block]` logits, which update each
    row's running maximum, sum of exponentials, label logit and (for label
    smoothing) logit sum; the full logits never exist. `lse` has no
    gradient.
    ```mlir
    %loss, %lse = tcc.linear_cross_entropy %h, %w, %labels, %b {transpose_weight = true, block = 2048 : i64} : (tensor<1024x128xf32>, tensor<256x128xf32>, tensor<1024xi64>, tensor<256xf32>) -> (tensor<f32>, tensor<1024xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$hidden, Tcc_FloatTensor:$weight,
                   Tcc_LabelTensor:$labels, Optional<Tcc_FloatTensor>:$bias,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_weight,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing,
                   DefaultValuedAttr<I64Attr, "2048">:$block);
  let results = (outs Tcc_ScalarFloatTensor:$loss, Tcc_FloatTensor:$lse);
  let assemblyFormat = "$hidden `,` $weight `,` $labels (`,` $bias^)? "
                       "attr-dict `:` functional-type(operands, results)";
}

def Tcc_LinearCrossEntropyGradOp
    : Tcc_InferOp<"linear_cross_entropy_grad"> {
  let summary = "Gradients of tcc.linear_cross_entropy, logits recomputed "
                "slice by slice";
  let description = [{
    `grad` is the gradient per counted position (the loss's gradient over
    the number of positions not labelled `ignore_index`, as
    `tcc.softmax_cross_entropy_grad` takes it). Per slice of `block`
    vocabulary columns the logits are recomputed (one GEMM), turned into
    `dlogits = grad * (exp(logits - lse) - (1 - S) * onehot - S / V)` (0 on
    ignored rows) in place, and then `hidden_grad += dlogits op(weight)^T`,
    the slice of `weight_grad` is `hidden^T dlogits` (transposed for
    `transpose_weight`) and the slice of `bias_grad` the column sums of
    `dlogits`. Results: `hidden_grad`, `weight_grad` and, with a bias,
    `bias_grad`, typed as those operands.
    ```mlir
    %dh, %dw = tcc.linear_cross_entropy_grad %g, %h, %w, %labels, %lse : (tensor<f32>, tensor<1024x128xf32>, tensor<128x256xf32>, tensor<1024xi64>, tensor<1024xf32>) -> (tensor<1024x128xf32>, tensor<128x256xf32>)
    ```
  }];
  let arguments = (ins Tcc_ScalarFloatTensor:$grad, Tcc_FloatTensor:$hidden,
                   Tcc_FloatTensor:$weight, Tcc_LabelTensor:$labels,
                   Tcc_FloatTensor:$lse, Optional<Tcc_FloatTensor>:$bias,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_weight,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing,
                   DefaultValuedAttr<I64Attr, "2048">:$block);
  let results = (outs Variadic<Tcc_FloatTensor>:$grads);
  let assemblyFormat = "$grad `,` $hidden `,` $weight `,` $labels `,` $lse "
                       "(`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

#endif // TCC_OPS_LINEAR_CROSS_ENTROPY_TD
