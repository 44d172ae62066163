//===- TccOpsMath.td - tcc ops: math, activations, normalization -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
// Shape inference and verifiers are in TccOpsMath.cpp, gradient rules in
// TccGradientsMath.cpp.
//
// Gradients of the element-wise functions are one fused op each
// (`tcc.sigmoid_grad %dy, %y`...) rather than chains of tcc.mul/tcc.sub: one
// kernel and no temporaries. They take whichever of the forward's input or
// output makes the derivative cheapest, as PyTorch's autograd does.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_MATH_TD
#define TCC_OPS_MATH_TD

//===----------------------------------------------------------------------===//
// Element-wise functions
//===----------------------------------------------------------------------===//

class Tcc_MathUnaryOp<string mnemonic, string expr>
    : Tcc_UnaryOp<mnemonic, expr,
                  [DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]>;

def Tcc_ExpOp : Tcc_MathUnaryOp<"exp", "exp(x)">;
def Tcc_LogOp : Tcc_MathUnaryOp<"log", "natural logarithm log(x)">;
def Tcc_SqrtOp : Tcc_MathUnaryOp<"sqrt", "sqrt(x)">;
def Tcc_TanhOp : Tcc_MathUnaryOp<"tanh", "tanh(x)">;
def Tcc_SigmoidOp : Tcc_MathUnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Tcc_ErfOp : Tcc_MathUnaryOp<"erf", "Gauss error function erf(x)">;

/// `result = f(grad, value)` element by element, all three of one type.
class Tcc_UnaryGradOp<string mnemonic, string value, string expr>
    : Tcc_InferOp<mnemonic, [AllTypesMatch<["grad", value, "result"]>]> {
  let summary = "Backward of an element-wise function: " # expr;
  let description = [{
    ```mlir
    %dx = tcc.}] # mnemonic # [{ %dy, %v : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$value);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $value attr-dict `:` type($result)";
}

def Tcc_SqrtGradOp
    : Tcc_UnaryGradOp<"sqrt_grad", "value", "dy / (2 * y), y = sqrt(x)">;
def Tcc_TanhGradOp
    : Tcc_UnaryGradOp<"tanh_grad", "value", "dy * (1 - y * y), y = tanh(x)">;
def Tcc_SigmoidGradOp
    : Tcc_UnaryGradOp<"sigmoid_grad", "value",
                      "dy * y * (1 - y), y = sigmoid(x)">;
def Tcc_ErfGradOp
    : Tcc_UnaryGradOp<"erf_grad", "value",
                      "dy * 2 / sqrt(pi) * exp(-x * x) (value is x)">;

//===----------------------------------------------------------------------===//
// Powers
//===----------------------------------------------------------------------===//

def Tcc_PowOp : Tcc_BinaryOp<"pow", "lhs ^ rhs"> {
  let hasCanonicalizer = 1;
}

def Tcc_PowGradOp : Tcc_InferOp<"pow_grad",
    [AllTypesMatch<["grad", "lhs", "rhs", "lhs_grad", "rhs_grad"]>]> {
  let summary = "Backward of tcc.pow on operands of the result's shape";
  let description = [{
    `lhs_grad = dy * rhs * lhs^(rhs - 1)` and
    `rhs_grad = dy * lhs^rhs * log(lhs)`, which is 0 where `lhs == 0` and
    `rhs >= 0` (PyTorch's convention; the limit of the product there).
    The gradient rule broadcasts the operands to the result's shape first and
    reduces the two gradients back to the operands' shapes afterwards.
    ```mlir
    %da, %db = tcc.pow_grad %dy, %a, %b : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$lhs,
                   Tcc_FloatTensor:$rhs);
  let results = (outs Tcc_FloatTensor:$lhs_grad, Tcc_FloatTensor:$rhs_grad);
  let assemblyFormat = "$grad `,` $lhs `,` $rhs attr-dict `:` type($grad)";
}

def Tcc_PowScalarOp : Tcc_InferOp<"pow_scalar",
    [AllTypesMatch<["input", "result"]>,
     DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]> {
  let summary = "Element-wise power by a constant exponent";
  let description = [{
    `x ^ exponent`, as `std::pow`. This is the form of ONNX `Pow` with a
    constant exponent (`x ** 2`, `x.pow(0.5)`...): the kernel computes the
    common exponents 2, 3, 0.5, 1, -1 and -0.5 without `pow`, and the gradient
    `dy * exponent * x^(exponent - 1)` needs no logarithm. An exponent of 1
    folds away.
    ```mlir
    %y = tcc.pow_scalar %x {exponent = 2.0 : f64} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, F64Attr:$exponent);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Tcc_PowScalarGradOp : Tcc_InferOp<"pow_scalar_grad",
    [AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "Backward of tcc.pow_scalar: dy * exponent * x^(exponent - 1)";
  let description = [{
    Zero everywhere for an exponent of 0, as in PyTorch (rather than the
    `0 * x^-1` that is NaN at `x = 0`).
    ```mlir
    %dx = tcc.pow_scalar_grad %dy, %x {exponent = 3.0 : f64} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   F64Attr:$exponent);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Remainder
//===----------------------------------------------------------------------===//

def Tcc_ModOp : Tcc_DiffOp<"mod"> {
  let summary = "Element-wise remainder with NumPy broadcasting";
  let description = [{
    With `fmod` the remainder of truncated division, which has the sign of
    `lhs` (C's fmod, numpy.fmod); without, that of floored division, with
    the sign of `rhs` (Python's %, numpy.mod). Both operands have one
    element type, a float or i64; an integer remainder by 0 is 0 (numpy's
    answer; ONNX leaves it undefined). For floats the gradient is `dy` for
    `lhs` and `-dy * trunc(lhs / rhs)` (floor without `fmod`) for `rhs`, as
    torch.fmod and torch.remainder.
    ```mlir
    %r = tcc.mod %a, %b {fmod = true} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat, I64]>:$lhs,
                   RankedTensorOf<[AnyFloat, I64]>:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let results = (outs RankedTensorOf<[AnyFloat, I64]>:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// The unary function family
//===----------------------------------------------------------------------===//

// One op for many element-wise functions with at most two parameters; the
// functions, their math and their gradients are the one list of
// runtime/core/prelude/UnaryFn.h, which the kernels and the generated code
// share. A new function is a row there, not an op here.
class Tcc_UnaryFnBase<string mnemonic, list<Trait> traits = []>
    : Tcc_InferOp<mnemonic, traits> {
  code unaryFnDecl = [{
    /// The function's code in UnaryFn.h's list (the verifier checked it).
    int getFnCode();
  }];
  let extraClassDeclaration = unaryFnDecl;
  let hasVerifier = 1;
}

def Tcc_UnaryFnOp : Tcc_UnaryFnBase<"unary_fn",
    [AllTypesMatch<["input", "result"]>,
     DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]> {
  let summary = "Element-wise function `fn` of UnaryFn.h's list";
  let description = [{
    `fn` is one of abs, sign, floor, ceil, round (half to even), sin, cos,
    hard_swish, hard_sigmoid (`max(0, min(1, alpha * x + beta))`),
    leaky_relu (alpha), elu (alpha), selu (alpha, gamma in `beta`),
    softplus, mish, clip (`min(max(x, alpha), beta)`; infinite bounds where
    absent). Formulas and gradients are PyTorch's.
    ```mlir
    %y = tcc.unary_fn "elu" %x {alpha = 1.0 : f64} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, StrAttr:$fn,
                   DefaultValuedAttr<F64Attr, "0.0">:$alpha,
                   DefaultValuedAttr<F64Attr, "0.0">:$beta);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$fn $input attr-dict `:` type($input)";
}

def Tcc_UnaryFnGradOp : Tcc_UnaryFnBase<"unary_fn_grad",
    [AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "Backward of tcc.unary_fn given its input: dy * fn'(x)";
  let description = [{
    ```mlir
    %dx = tcc.unary_fn_grad "elu" %dy, %x {alpha = 1.0 : f64} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   StrAttr:$fn, DefaultValuedAttr<F64Attr, "0.0">:$alpha,
                   DefaultValuedAttr<F64Attr, "0.0">:$beta);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$fn $grad `,` $input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

def Tcc_GeluOp : Tcc_InferOp<"gelu",
    [AllTypesMatch<["input", "result"]>,
     DeclareOpInterfaceMethods<Tcc_GradientOpInterface>]> {
  let summary = "Gaussian error linear unit, as torch.nn.GELU";
  let description = [{
    `approximate = "none"`: `x * 0.5 * (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`:
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.
    ONNX exports of `nn.GELU` arrive as these subgraphs of element-wise ops;
    this op's canonicalization patterns (rooted at the final `tcc.mul`)
    recognize them: one kernel in the forward and one in the backward instead
    of five to nine each way.
    ```mlir
    %y = tcc.gelu %x {approximate = "tanh"} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tcc_GeluGradOp : Tcc_InferOp<"gelu_grad",
    [AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "Backward of tcc.gelu given its input";
  let description = [{
    ```mlir
    %dx = tcc.gelu_grad %dy, %x {approximate = "none"} : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

def Tcc_LayerNormOp : Tcc_DiffOp<"layer_norm"> {
  let summary = "Layer normalization over the trailing dimensions from `axis`";
  let description = [{
    Normalizes over dimensions `[axis, rank)`, as ONNX LayerNormalization
    and `torch.nn.LayerNorm`:
    `y = (x - mean) * rstd * scale + bias` with the biased variance and
    `rstd = 1 / sqrt(var + epsilon)`. `scale` and `bias` have the normalized
    shape `x.shape[axis:]`. `mean` and `rstd` are returned with shape
    `x.shape[:axis] + [1] * (rank - axis)` (ONNX's Mean and InvStdDev), so the
    backward (`tcc.layer_norm_grad`) does not recompute them.
    ```mlir
    %y, %mean, %rstd = tcc.layer_norm %x, %scale, %bias {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$scale,
                   Tcc_FloatTensor:$bias, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Tcc_FloatTensor:$result, Tcc_FloatTensor:$mean,
                      Tcc_FloatTensor:$rstd);
  let assemblyFormat =
      "$input `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)";
}

def Tcc_LayerNormGradOp : Tcc_InferOp<"layer_norm_grad"> {
  let summary = "Backward of tcc.layer_norm from its saved mean and rstd";
  let description = [{
    With `xhat = (x - mean) * rstd` and `g = dy * scale`, over the normalized
    dimensions: `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`; over the
    other dimensions: `scale_grad = sum(dy * xhat)`, `bias_grad = sum(dy)`.
    ```mlir
    %dx, %dscale, %dbias = tcc.layer_norm_grad %dy, %x, %scale, %mean, %rstd {axis = 1 : i64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<8x1xf32>, tensor<8x1xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   Tcc_FloatTensor:$scale, Tcc_FloatTensor:$mean,
                   Tcc_FloatTensor:$rstd, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$input_grad, Tcc_FloatTensor:$scale_grad,
                      Tcc_FloatTensor:$bias_grad);
  let assemblyFormat =
      "$grad `,` $input `,` $scale `,` $mean `,` $rstd attr-dict `:` functional-type(operands, results)";
}

def Tcc_LayerNormParamGradOp : Tcc_Op<"layer_norm_param_grad", [Pure]> {
  let summary = "The scale and bias gradients of tcc.layer_norm, alone";
  let description = [{
    `scale_grad = sum(dy * xhat)` and `bias_grad = sum(dy)` over the
    dimensions before `axis`, with `xhat = (x - mean) * rstd`: the column
    sums of tcc.layer_norm_grad without its `dx`. tcc-fuse writes it when it
    expands a layer norm's backward (dx joins an element-wise region; these
    sums read dy and x once, where a region would write `dy * xhat` and `dy`
    out for two reductions). `grad` and `input` may be of any float type
    (the 16-bit values a bf16 model stores, before their exact f32
    widening); `mean` and `rstd` are f32, the results f32 of the normalized
    shape.
    ```mlir
    %dscale, %dbias = tcc.layer_norm_param_grad %dy, %x, %mean, %rstd {axis = 1 : i64} : (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x1xf32>, tensor<8x1xf32>) -> (tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$grad, Tcc_FloatTensor:$input,
                   Tcc_FloatTensor:$mean, Tcc_FloatTensor:$rstd, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$scale_grad, Tcc_FloatTensor:$bias_grad);
  let assemblyFormat =
      "$grad `,` $input `,` $mean `,` $rstd attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dropout and its random-number state
//===----------------------------------------------------------------------===//

def Tcc_DropoutOp : Tcc_DiffOp<"dropout"> {
  let summary = "Training-mode dropout with a counter-based random mask";
  let description = [{
    Zeroes each element with probability `ratio` and scales the others by
    `1 / (1 - ratio)`: `result = input * mask`, where `mask` (also returned,
    for the backward: `dx = dy * mask`) holds 0 or `1 / (1 - ratio)`.

    Element `i` is dropped when the top 32 bits of
    `splitmix64(key + (i + 1) * 0x9E3779B97F4A7C15)` are below
    `ratio * 2^32`, with `key = splitmix64(seed ^ splitmix64(step))`: a pure
    function of (`seed`, `step`, `i`). `seed` is fixed per op at compile
    time; `step` is runtime data (the `rng.step` state tensor, advanced once
    per training step), so a mask is never redrawn, runs reproduce exactly,
    and a run restarted from a saved step continues the same sequence. The op
    is therefore Pure: recomputing it gives the same mask.
    ```mlir
    %y, %mask = tcc.dropout %x, %step {ratio = 1.0e-01 : f64, seed = 7 : i64} : tensor<8x16xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins Tcc_FloatTensor:$input, 0DTensorOf<[I64]>:$step,
                   F64Attr:$ratio, I64Attr:$seed);
  let results = (outs Tcc_FloatTensor:$result, Tcc_FloatTensor:$mask);
  let assemblyFormat =
      "$input `,` $step attr-dict `:` type($input) `,` type($step)";
  let hasVerifier = 1;
}

def Tcc_IncrementOp : Tcc_InferOp<"increment",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Adds one to an integer counter";
  let description = [{
    Advances a step counter such as `rng.step`, the random-number state of
    `tcc.dropout`, once per training step. 64-bit, so it never saturates
    (an f32 counter would stop at 2^24).
    ```mlir
    %next = tcc.increment %step : tensor<i64>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$input);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}


//===----------------------------------------------------------------------===//
// Random numbers (ONNX RandomNormal*, RandomUniform*, Bernoulli)
//===----------------------------------------------------------------------===//

def Tcc_RandomOp : Tcc_Op<"random", [Pure]> {
  let summary = "Counter-based normal or uniform random numbers";
  let description = [{
    Fills `result` with draws from tcc.dropout's generator: element `i`
    takes `bits = splitmix64(key + (i + 1) * 0x9E3779B97F4A7C15)`,
    `key = splitmix64(seed ^ splitmix64(step))`. Uniform (`normal` false):
    `low + (high - low) * u`, `u = (bits >> 40) * 2^-24` in [0, 1), with
    `low = a`, `high = b`. Normal (`normal` true): Box-Muller on the two
    32-bit halves, `u1 = ((bits >> 32) + 1) * 2^-32` in (0, 1] (no log 0) and
    `u2 = (bits & 0xFFFFFFFF) * 2^-32`, `z = sqrt(-2 ln u1) cos(2 pi u2)`,
    result `a + b * z` (mean `a`, scale `b`). A pure function of (`seed`,
    `step`, `i`), so recomputing it draws the same values; it has no
    gradient (nothing flows into random values).
    ```mlir
    %z = tcc.random %step {normal, a = 0.0 : f64, b = 1.0 : f64, seed = 7 : i64} : tensor<i64> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$step, UnitAttr:$normal, F64Attr:$a,
                   F64Attr:$b, I64Attr:$seed);
  let results = (outs TensorOf<[F32]>:$result);
  let assemblyFormat = "$step attr-dict `:` type($step) `->` type($result)";
  let hasVerifier = 1;
}

#endif // TCC_OPS_MATH_TD
