//===- TccOpsGemm.td - GEMMs with fused epilogues ----------*- tablegen -*-===//
//
// Included from TccOps.td. tcc-gemm-epilogue (passes/GemmEpilogue.cpp) forms
// these ops after autodiff from a tcc.matmul and the element-wise work or
// bias-gradient reduction around it; on the GPU each is one cuBLASLt call
// with the matching epilogue, on the CPU one OpenBLAS call with the
// epilogue fused around it (runtime/cpu/KernelsGemmEpilogue.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_GEMM_TD
#define TCC_OPS_GEMM_TD

def Tcc_MatmulEpilogueOp : Tcc_Op<"matmul_epilogue",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "Matrix product with a fused bias, activation or bias gradient";
  let description = [{
    `acc = op(lhs) op(rhs)` as `tcc.matmul` computes it (f32 accumulation),
    followed by `epilogue`:

    | epilogue | operands | `result` | `aux` |
    |---|---|---|---|
    | `bias` | `bias` | `acc + bias` | - |
    | `relu`, `bias_relu` | (`bias`) | `relu(acc (+ bias))` | - |
    | `gelu_tanh`, `bias_gelu_tanh` | (`bias`) | `gelu(acc (+ bias))`, tanh form | - |
    | `gelu_tanh_aux`, `bias_gelu_tanh_aux` | (`bias`) | the same | `acc (+ bias)` |
    | `bgrad_lhs` | | `acc` | `sum_k op(lhs)[m, k]` |
    | `bgrad_rhs` | | `acc` | `sum_k op(rhs)[k, n]` |
    | `dgelu_tanh` | `preact` | `gelu_grad(acc, preact)`, tanh form | - |
    | `dgelu_tanh_bgrad` | `preact` | the same | `result` summed over rows |

    Shapes are restricted to what cuBLASLt and OpenBLAS do in one call. The
    forward and `dgelu` forms take `lhs` `[..., M, K]` without
    `transpose_lhs` (its leading dimensions flatten into the rows) and a
    2-D `rhs` (`[K, N]`, or `[N, K]` with `transpose_rhs`); `result`,
    `preact` and a pre-activation `aux` are `[..., M, N]` and `bias` is
    `[N]`. The bias-gradient forms are a plain 2-D GEMM (the weight
    gradient of a linear layer): `bgrad_lhs` sums the transposed `lhs`
    (`[K, M]`, `transpose_lhs`) into `aux` `[M]`, `bgrad_rhs` the
    non-transposed `rhs` (`[K, N]`) into `aux` `[N]`;
    `dgelu_tanh_bgrad`'s `aux` is `[N]`.

    Operands and `result` share one element type (f32, bf16 or f16), so do
    `bias`, `preact` and a pre-activation `aux`; a bias gradient is that
    type or f32. The bias-gradient forms (`bgrad_lhs`, `bgrad_rhs`: a
    plain GEMM whose `result` is the accumulator) may also have an f32
    `result` for bf16 or f16 operands, as `tcc.matmul` may: a weight
    gradient the optimizer reads in f32, written without a 16-bit
    rounding. 16-bit results are rounded once, after the epilogue
    (cuBLASLt's behaviour). The op is produced after autodiff and is not
    differentiable.

    ```mlir
    %y = tcc.matmul_epilogue %x, %w bias %b {epilogue = "bias_relu", transpose_rhs = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    %dw, %db = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<256x128xbf16>, tensor<256x512xbf16>) -> (tensor<128x512xbf16>, tensor<512xf32>)
    %dw32, %db32 = tcc.matmul_epilogue %x, %dy {epilogue = "bgrad_rhs", transpose_lhs = true} : (tensor<256x128xbf16>, tensor<256x512xbf16>) -> (tensor<128x512xf32>, tensor<512xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$lhs, Tcc_FloatTensor:$rhs,
                   Optional<Tcc_FloatTensor>:$bias,
                   Optional<Tcc_FloatTensor>:$preact,
                   StrAttr:$epilogue,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Tcc_FloatTensor:$result,
                      Optional<Tcc_FloatTensor>:$aux);
  let assemblyFormat = "$lhs `,` $rhs (`bias` $bias^)? (`preact` $preact^)? "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TCC_OPS_GEMM_TD
