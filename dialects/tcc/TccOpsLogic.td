//===- TccOpsLogic.td - tcc ops: comparisons, logic, extrema -*- tablegen -*-===//
//
// Included from TccOps.td; shares its classes (Tcc_InferOp, Tcc_DiffOp, ...).
//
// One compare op with a predicate and one logic op with a kind cover ONNX's
// Equal/Less/Greater/... and And/Or/Xor/Not, rather than an op each: they
// share inference, kernels and checks. Element-wise maximum/minimum and the
// max/min reductions are differentiable; arg_max/arg_min are not.
//
// Inference, verifiers and gradient rules: TccOpsLogic.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_LOGIC_TD
#define TCC_OPS_LOGIC_TD

def Tcc_NumberTensor : RankedTensorOf<[AnyFloat, I64]>;

def Tcc_CompareOp : Tcc_InferOp<"compare"> {
  let summary = "Element-wise comparison with NumPy broadcasting";
  let description = [{
    `predicate` is one of `eq`, `lt`, `le`, `gt`, `ge` (`lhs < rhs` for
    `lt`). Both operands have one element type; the result is a bool tensor
    of the broadcast shape. Comparisons with NaN are false. Not
    differentiable (its result is not a float).
    ```mlir
    %m = tcc.compare "lt", %ids, %pad : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, Tcc_DataTensor:$lhs,
                   Tcc_DataTensor:$rhs);
  let results = (outs Tcc_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The predicate's number in the compare kernel's attribute
    /// (runtime/core/abi/KernelAttrs.h CompareAttrs), -1 if unknown.
    static int64_t predicateCode(::llvm::StringRef predicate);
  }];
}

def Tcc_LogicOp : Tcc_InferOp<"logic"> {
  let summary = "Element-wise and/or/xor of bools with NumPy broadcasting";
  let description = [{
    `kind` is one of `and`, `or`, `xor`. ONNX Not is `xor` with true.
    ```mlir
    %m = tcc.logic "and", %a, %b : (tensor<4x4xi1>, tensor<4xi1>) -> tensor<4x4xi1>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Tcc_BoolTensor:$lhs,
                   Tcc_BoolTensor:$rhs);
  let results = (outs Tcc_BoolTensor:$result);
  let assemblyFormat = "$kind `,` $lhs `,` $rhs attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kind's number in the logic kernel's attribute (LogicAttrs), -1
    /// if unknown.
    static int64_t kindCode(::llvm::StringRef kind);
  }];
}

class Tcc_ExtremumOp<string mnemonic, string what> : Tcc_DiffOp<mnemonic> {
  let summary = "Element-wise " # what # " with NumPy broadcasting";
  let description = [{
    NaN propagates. The gradient goes to the selected operand; on ties it
    is split half and half, as PyTorch's torch.maximum/minimum do.
    ```mlir
    %c = tcc.}] # mnemonic # [{ %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tcc_NumberTensor:$lhs, Tcc_NumberTensor:$rhs);
  let results = (outs Tcc_NumberTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Tcc_MaximumOp : Tcc_ExtremumOp<"maximum", "max(lhs, rhs)">;
def Tcc_MinimumOp : Tcc_ExtremumOp<"minimum", "min(lhs, rhs)">;

// The gradient goes evenly to every position that attains the extremum, as
// PyTorch's amax/amin do (TccOpsLogic.cpp).
def Tcc_ReduceMaxOp : Tcc_ReduceOp<"reduce_max", "Maximum">;
def Tcc_ReduceMinOp : Tcc_ReduceOp<"reduce_min", "Minimum">;

class Tcc_ArgExtremumOp<string mnemonic, string what> : Tcc_InferOp<mnemonic> {
  let summary = "Index of the " # what # " along one axis (i64)";
  let description = [{
    The result drops `axis`. Of equal values the first index is taken, the
    last with `select_last_index`; a NaN counts as the extremum. Not
    differentiable.
    ```mlir
    %i = tcc.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Tcc_NumberTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs Tcc_IndexTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Tcc_ArgMaxOp : Tcc_ArgExtremumOp<"arg_max", "maximum">;
def Tcc_ArgMinOp : Tcc_ArgExtremumOp<"arg_min", "minimum">;

#endif // TCC_OPS_LOGIC_TD
