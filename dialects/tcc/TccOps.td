//===- TccOps.td - tcc op definitions ----------------------*- tablegen -*-===//
//
// Ops are functional (value semantics on ranked, statically shaped tensors).
// Shapes are inferred wherever the operands determine them, so builders need
// no result types and the verifier rejects inconsistent shapes.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_TD
#define TCC_OPS_TD

include "dialects/tcc/TccDialect.td"
include "dialects/tcc/TccInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

def Tcc_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Tcc_LabelTensor : RankedTensorOf<[I64]>;
def Tcc_ScalarFloatTensor : 0DTensorOf<[AnyFloat]>;
// Scalars of one type, which assembly formats can leave their types out of.
def Tcc_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
def Tcc_BoolScalar : 0DTensorOf<[I1]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI1Type())">;

class Tcc_InferOp<string mnemonic, list<Trait> traits = []>
    : Tcc_Op<mnemonic, !listconcat([Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>], traits)>;

class Tcc_DiffOp<string mnemonic, list<Trait> traits = []>
    : Tcc_InferOp<mnemonic, !listconcat([
        DeclareOpInterfaceMethods<Tcc_GradientOpInterface>], traits)>;

//===----------------------------------------------------------------------===//
// Constants and layout
//===----------------------------------------------------------------------===//

def Tcc_ConstantOp : Tcc_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let description = [{
    Example:
    ```mlir
    %c = tcc.constant dense<1.0> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Tcc_ReshapeOp : Tcc_Op<"reshape",
    [Pure, DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]> {
  let summary = "Reinterprets a tensor with another static shape";
  let description = [{
    Element order is kept; the element count must not change.
    ```mlir
    %r = tcc.reshape %x : tensor<4x8x8xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tcc_BroadcastToOp : Tcc_Op<"broadcast_to",
    [Pure, DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]> {
  let summary = "Broadcasts a tensor to a larger shape (NumPy rules)";
  let description = [{
    Dimensions are aligned from the right; each input dimension is 1 or
    equal to the result's.
    ```mlir
    %b = tcc.broadcast_to %bias : tensor<10xf32> -> tensor<32x10xf32>
    ```
  }];
  // Any element type: masks and indices broadcast too (ONNX Expand).
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tcc_TransposeOp : Tcc_DiffOp<"transpose"> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    `result.shape[i] = input.shape[perm[i]]`.
    ```mlir
    %t = tcc.transpose %x {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// Whether `perm` leaves every dimension in place.
    static bool isIdentityPerm(::llvm::ArrayRef<int64_t> perm);
    /// The one permutation of transpose(transpose(x, first), then): its
    /// dim i is x's dim first[then[i]].
    static ::llvm::SmallVector<int64_t>
    composePerms(::llvm::ArrayRef<int64_t> first, ::llvm::ArrayRef<int64_t> then);
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Tcc_MatmulOp : Tcc_DiffOp<"matmul"> {
  let summary = "Matrix product over the last two dimensions, optionally transposed";
  let description = [{
    `lhs` is `[..., M, K]` (`[..., K, M]` with `transpose_lhs`), `rhs` is
    `[..., K, N]` (`[..., N, K]` with `transpose_rhs`); leading batch
    dimensions broadcast. Both operands have rank 2 or more.

    Both operands have one element type, and the result (inferred when not
    given) has it too, except that bf16 or f16 operands may produce an f32
    result: the f32 accumulator written without rounding to 16 bits
    (cuBLASLt's "16-bit in, f32 out"). tcc-mixed-precision makes such
    GEMMs for weight gradients, which the optimizer reads in f32.
    ```mlir
    %y = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<32x64xf32>, tensor<10x64xf32>) -> tensor<32x10xf32>
    %dw = tcc.matmul %dy, %x {transpose_lhs = true} : (tensor<32x10xbf16>, tensor<32x64xbf16>) -> tensor<10x64xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$lhs, Tcc_FloatTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The inferred type, or f32 in place of an inferred bf16/f16 element
    /// type (TccOps.cpp).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

class Tcc_BinaryOp<string mnemonic, string expr> : Tcc_DiffOp<mnemonic> {
  let summary = "Element-wise " # expr # " with NumPy broadcasting";
  let description = [{
    Operands broadcast against each other (aligned from the right, each
    dimension 1 or equal); the result has the broadcast shape.
    ```mlir
    %c = tcc.}] # mnemonic # [{ %a, %b : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$lhs, Tcc_FloatTensor:$rhs);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

// A sum of zero pads that tile one axis becomes a concat
// (TccPatternsCast.cpp).
def Tcc_AddOp : Tcc_BinaryOp<"add", "lhs + rhs"> { let hasCanonicalizer = 1; }
def Tcc_SubOp : Tcc_BinaryOp<"sub", "lhs - rhs">;
// x * 1 and x / 1 fold to x (exact; TccOps.cpp).
def Tcc_MulOp : Tcc_BinaryOp<"mul", "lhs * rhs"> { let hasFolder = 1; }
def Tcc_DivOp : Tcc_BinaryOp<"div", "lhs / rhs"> { let hasFolder = 1; }

class Tcc_UnaryOp<string mnemonic, string expr, list<Trait> traits = []>
    : Tcc_InferOp<mnemonic, traits> {
  let summary = "Element-wise " # expr;
  let description = [{
    ```mlir
    %y = tcc.}] # mnemonic # [{ %x : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tcc_NegOp : Tcc_UnaryOp<"neg", "-x",
    [DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]>;
def Tcc_ReluOp : Tcc_UnaryOp<"relu", "max(x, 0)",
    [DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]>;

def Tcc_ReluGradOp : Tcc_InferOp<"relu_grad",
    [AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "Gradient of relu: `input > 0 ? grad : 0`";
  let description = [{
    ```mlir
    %dx = tcc.relu_grad %dy, %x : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Tcc_ReduceOp<string mnemonic, string what> : Tcc_DiffOp<mnemonic> {
  let summary = what # " over the given axes";
  let description = [{
    `axes` are sorted, unique and non-negative; with `keepdims` the reduced
    dimensions stay as size 1, otherwise they are dropped.
    ```mlir
    %s = tcc.}] # mnemonic # [{ %x {axes = array<i64: 0>} : tensor<32x10xf32> -> tensor<10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Tcc_ReduceSumOp : Tcc_ReduceOp<"reduce_sum", "Sum"> {
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// Whether it sums every axis but the last, without keepdims: a column
    /// sum, such as a bias gradient (TccOps.cpp).
    bool sumsAllButLastAxis();
  }];
}
def Tcc_ReduceMeanOp : Tcc_ReduceOp<"reduce_mean", "Mean">;

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

class Tcc_SoftmaxLikeOp<string mnemonic, string what> : Tcc_DiffOp<mnemonic> {
  let summary = what # " along one axis";
  let description = [{
    ```mlir
    %y = tcc.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tcc_SoftmaxOp : Tcc_SoftmaxLikeOp<"softmax", "Softmax">;
def Tcc_LogSoftmaxOp : Tcc_SoftmaxLikeOp<"log_softmax", "Log-softmax">;

class Tcc_SoftmaxLikeGradOp<string mnemonic, string expr>
    : Tcc_InferOp<mnemonic, [AllTypesMatch<["grad", "output", "result"]>]> {
  let summary = "Backward of a softmax-like op given its output: " # expr;
  let description = [{
    ```mlir
    %dx = tcc.}] # mnemonic # [{ %dy, %y {axis = 1 : i64} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$output,
                   I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tcc_SoftmaxGradOp
    : Tcc_SoftmaxLikeGradOp<"softmax_grad", "y * (dy - sum(dy * y))">;
def Tcc_LogSoftmaxGradOp
    : Tcc_SoftmaxLikeGradOp<"log_softmax_grad", "dy - exp(y) * sum(dy)">;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Tcc_SoftmaxCrossEntropyOp : Tcc_DiffOp<"softmax_cross_entropy"> {
  let summary = "Mean cross-entropy of softmax(logits) against integer labels";
  let description = [{
    Classes lie on the last axis of `logits`; `labels` has the shape of
    `logits` without it. As PyTorch's `CrossEntropyLoss(ignore_index,
    label_smoothing)`: a position whose label is `ignore_index` adds nothing
    and is not counted; each counted position adds
    `(1 - S) * -log p[label] + S * mean_c(-log p[c])` (S the
    `label_smoothing`, in [0, 1]); the result is their mean, and 0 (not
    PyTorch's NaN) when no position counts: a batch of padding leaves the
    weights alone instead of poisoning them.
    ```mlir
    %l = tcc.softmax_cross_entropy %logits, %labels {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$logits, Tcc_LabelTensor:$labels,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Tcc_ScalarFloatTensor:$result);
  let assemblyFormat =
      "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_SoftmaxCrossEntropyGradOp : Tcc_InferOp<"softmax_cross_entropy_grad"> {
  let summary = "Gradient of softmax_cross_entropy with respect to the logits";
  let description = [{
    `grad * (softmax(logits) - (1 - S) * onehot(labels) - S / classes)` at
    each counted position, 0 at one whose label is `ignore_index`. `grad` is
    the gradient per position: the loss's gradient divided by the number of
    counted positions, which the gradient rule computes from the labels (so
    a fused region need not count them before its first row).
    ```mlir
    %d = tcc.softmax_cross_entropy_grad %dl, %logits, %labels : (tensor<f32>, tensor<32x10xf32>, tensor<32xi64>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_ScalarFloatTensor:$grad, Tcc_FloatTensor:$logits,
                   Tcc_LabelTensor:$labels,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $logits `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_MseLossOp : Tcc_DiffOp<"mse_loss"> {
  let summary = "Mean squared error";
  let description = [{
    ```mlir
    %l = tcc.mse_loss %pred, %target : (tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$prediction, Tcc_FloatTensor:$target);
  let results = (outs Tcc_ScalarFloatTensor:$result);
  let assemblyFormat =
      "$prediction `,` $target attr-dict `:` functional-type(operands, results)";
}

def Tcc_MseLossGradOp : Tcc_InferOp<"mse_loss_grad"> {
  let summary = "Gradient of mse_loss with respect to the prediction";
  let description = [{
    `grad * 2 * (prediction - target) / numel`.
    ```mlir
    %d = tcc.mse_loss_grad %dl, %pred, %target : (tensor<f32>, tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<32x1xf32>
    ```
  }];
  let arguments = (ins Tcc_ScalarFloatTensor:$grad, Tcc_FloatTensor:$prediction,
                   Tcc_FloatTensor:$target);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $prediction `,` $target attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates (functional; the compiler turns them into in-place updates)
//===----------------------------------------------------------------------===//

def Tcc_SgdUpdateOp : Tcc_InferOp<"sgd_update",
    [AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "Plain SGD: `param - lr * (grad + weight_decay * param)`";
  let description = [{
    `lr` is a scalar tensor (the state `optimizer.lr`, which the train loop
    may change between steps), not an attribute.
    ```mlir
    %p1 = tcc.sgd_update %p, %g, %lr {weight_decay = 0.0 : f64} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                   Tcc_F32Scalar:$lr, F64Attr:$weight_decay);
  let results = (outs Tcc_FloatTensor:$new_param);
  let assemblyFormat = "$param `,` $grad `,` $lr attr-dict `:` type($param)";
}

def Tcc_SgdMomentumUpdateOp : Tcc_InferOp<"sgd_momentum_update",
    [AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                    "new_momentum_buffer"]>]> {
  let summary = "SGD with momentum, as torch.optim.SGD (dampening 0)";
  let description = [{
    `d = grad + wd * param; buf' = momentum * buf + d; param' = param - lr * buf'`;
    with `nesterov`, `param' = param - lr * (d + momentum * buf')`.
    ```mlir
    %p1, %b1 = tcc.sgd_momentum_update %p, %g, %b, %lr {momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                   Tcc_FloatTensor:$momentum_buffer, Tcc_F32Scalar:$lr,
                   F64Attr:$momentum, F64Attr:$weight_decay,
                   UnitAttr:$nesterov);
  let results = (outs Tcc_FloatTensor:$new_param,
                      Tcc_FloatTensor:$new_momentum_buffer);
  let assemblyFormat =
      "$param `,` $grad `,` $momentum_buffer `,` $lr attr-dict `:` type($param)";
}

def Tcc_LionUpdateOp : Tcc_InferOp<"lion_update",
    [AllTypesMatch<["param", "grad", "exp_avg", "new_param",
                    "new_exp_avg"]>]> {
  let summary = "Lion (Chen et al. 2023, \"Symbolic Discovery of "
                "Optimization Algorithms\")";
  let description = [{
    `u = sign(beta1 * m + (1 - beta1) * g); param' = param * (1 - lr * wd)
    - lr * u; m' = beta2 * m + (1 - beta2) * g`.
    ```mlir
    %p1, %m1 = tcc.lion_update %p, %g, %m, %lr {beta1 = 0.9 : f64, beta2 = 0.99 : f64, weight_decay = 0.0 : f64} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                   Tcc_FloatTensor:$exp_avg, Tcc_F32Scalar:$lr,
                   F64Attr:$beta1, F64Attr:$beta2, F64Attr:$weight_decay);
  let results = (outs Tcc_FloatTensor:$new_param,
                      Tcc_FloatTensor:$new_exp_avg);
  let assemblyFormat =
      "$param `,` $grad `,` $exp_avg `,` $lr attr-dict `:` type($param)";
}

def Tcc_AdafactorUpdateOp : Tcc_Op<"adafactor_update",
    [Pure, AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "Adafactor update, as torch.optim.Adafactor (PyTorch 2.5)";
  let description = [{
    `step` is the 1-based step count (beta2_t = 1 - step^beta2_decay, rho =
    min(lr, 1/sqrt(step))), `lr` the learning rate (f32 scalar state). The
    second moment is factored for a parameter of rank >= 2: `moments` are
    its row factor (the parameter's shape with the last dimension 1) and
    column factor (the second-to-last dimension 1); for a lower rank it is
    one tensor of the parameter's shape. `eps1` clamps the variance estimate
    (squared) and its row mean, `eps2` the parameter's RMS in the step size,
    `d` the update's RMS.
    ```mlir
    %p1, %r1, %c1 = tcc.adafactor_update %p, %g, %t, %lr moments(%r, %c) {beta2_decay = -8.0e-1 : f64, d = 1.0 : f64, eps1 = 1.1920929e-07 : f64, eps2 = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<4x8xf32>, tensor<f32>, tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x1xf32>, tensor<1x8xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                   Tcc_ScalarFloatTensor:$step, Tcc_F32Scalar:$lr,
                   Variadic<Tcc_FloatTensor>:$moments, F64Attr:$beta2_decay,
                   F64Attr:$eps1, F64Attr:$eps2, F64Attr:$d,
                   F64Attr:$weight_decay);
  let results = (outs Tcc_FloatTensor:$new_param,
                      Variadic<Tcc_FloatTensor>:$new_moments);
  let assemblyFormat = "$param `,` $grad `,` $step `,` $lr `moments` `(` "
                       "$moments `)` attr-dict `:` type($param) `,` "
                       "type($step) `,` type($moments) `->` "
                       "type($new_moments)";
  let builders = [
    OpBuilder<(ins "Value":$param, "Value":$grad, "Value":$step, "Value":$lr,
                   "ValueRange":$moments, "double":$beta2_decay,
                   "double":$eps1, "double":$eps2, "double":$d,
                   "double":$weight_decay)>
  ];
  let hasVerifier = 1;
}

def Tcc_AdamWUpdateOp : Tcc_Op<"adamw_update",
    [Pure, AttrSizedOperandSegments,
     AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq",
                    "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "AdamW update, as torch.optim.AdamW (or Adam)";
  let description = [{
    `step` is a scalar holding the 1-based step count used for bias
    correction, `lr` the learning rate (an f32 scalar tensor: the state
    `optimizer.lr`, which the train loop may change between steps). With
    `l2_decay` the weight decay is torch.optim.Adam's (added to the
    gradient) instead of AdamW's decoupled `param * (1 - lr * wd)`.
    ```mlir
    %p1, %m1, %v1 = tcc.adamw_update %p, %g, %m, %v, %t, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<10xf32>, tensor<f32>
    ```
    With a fourth result (`-> tensor<10xbf16>`), the update also writes the
    new parameter rounded to bf16 or f16, exactly what a `tcc.cast` of
    `new_param` gives: tcc-shadow-weights keeps that copy as state for the
    next step's GEMMs, so they need not cast the f32 master weight again.
    ```mlir
    %p1, %m1, %v1, %lo = tcc.adamw_update %p, %g, %m, %v, %t, %lr {...} : tensor<10xf32>, tensor<f32> -> tensor<10xbf16>
    ```
    With `unscale %inv if %finite` (fp16 loss scaling, tcc-mixed-precision),
    the gradient is `grad * inv_scale` (rounded to f32, as a `tcc.mul`
    gives), and when `finite` is false the update leaves everything as it
    was: every result is its old value (the 16-bit copy the rounding of the
    old parameter, which is what the copy holds). PyTorch's fused AdamW
    takes `grad_scale` and `found_inf` the same way.
    ```mlir
    %p1, %m1, %v1 = tcc.adamw_update %p, %g, %m, %v, %t, %lr unscale %inv if %ok {...} : tensor<10xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                   Tcc_FloatTensor:$exp_avg, Tcc_FloatTensor:$exp_avg_sq,
                   Tcc_ScalarFloatTensor:$step, Tcc_F32Scalar:$lr,
                   Optional<Tcc_F32Scalar>:$inv_scale,
                   Optional<Tcc_BoolScalar>:$finite,
                   F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                   F64Attr:$weight_decay, UnitAttr:$l2_decay);
  let results = (outs Tcc_FloatTensor:$new_param, Tcc_FloatTensor:$new_exp_avg,
                      Tcc_FloatTensor:$new_exp_avg_sq,
                      Optional<Tcc_FloatTensor>:$new_param_low);
  let assemblyFormat = "$param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step "
                       "`,` $lr "
                       "(`unscale` $inv_scale^ `if` $finite)? "
                       "attr-dict `:` type($param) `,` type($step) "
                       "(`->` type($new_param_low)^)?";
  let builders = [
    // The update without a 16-bit copy: every result has the param's type.
    OpBuilder<(ins "Value":$param, "Value":$grad, "Value":$exp_avg,
                   "Value":$exp_avg_sq, "Value":$step, "Value":$lr,
                   "double":$beta1, "double":$beta2, "double":$eps,
                   "double":$weight_decay, "bool":$l2_decay,
                   CArg<"Type", "Type()">:$lowType,
                   CArg<"Value", "Value()">:$invScale,
                   CArg<"Value", "Value()">:$finite)>
  ];
  let hasVerifier = 1;
}

include "dialects/tcc/TccOpsShape.td"
include "dialects/tcc/TccOpsMath.td"
include "dialects/tcc/TccOpsConv.td"
include "dialects/tcc/TccOpsFused.td"
include "dialects/tcc/TccOpsGemm.td"
include "dialects/tcc/TccOpsAttention.td"
include "dialects/tcc/TccOpsLogic.td"
include "dialects/tcc/TccOpsReduce.td"
include "dialects/tcc/TccOpsIndex.td"
include "dialects/tcc/TccOpsLinearCrossEntropy.td"

#endif // TCC_OPS_TD
