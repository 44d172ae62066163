//===- TccOpsFused.td - Fused regions -----------------------*- tablegen -*-===//
//
// tcc-fuse groups chains of element-wise ops and row normalizations into one
// tcc.fused op each; the CPU code generator turns every such op into one
// generated C++ function (compiler/codegen/FusedCodegen.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_OPS_FUSED_TD
#define TCC_OPS_FUSED_TD

def Tcc_FusedOp : Tcc_Op<"fused", [IsolatedFromAbove, Pure, SingleBlock]> {
  let summary = "A region of element-wise and row ops run as one kernel";
  let description = [{
    The body is one block of ordinary tcc ops on whole tensors. Its arguments
    mirror the operands and its `tcc.yield` gives the results. The op is not
    differentiable: tcc-fuse forms it after autodiff. `kernel`, set by the
    code generator, is the index of the generated function in the artifact's
    host library. `in_place`, also set by the code generator, lists pairs
    `[result, operand, ...]`: the generated code may write that result over
    that operand's bytes (same element type and count, every read of the
    operand's element before the write of the result's), so the memory plan
    may give both one buffer when the operand dies at this op.
    ```mlir
    %y = tcc.fused(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %s = tcc.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %r = tcc.relu %s : tensor<4x8xf32>
      tcc.yield %r : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                   OptionalAttr<I64Attr>:$kernel,
                   OptionalAttr<DenseI64ArrayAttr>:$in_place);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "`(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "TypeRange":$resultTypes, "ValueRange":$inputs)>
  ];
}

def Tcc_YieldOp : Tcc_Op<"yield", [Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "Terminates a tcc.fused body with its results";
  let description = [{
    ```mlir
    tcc.yield %r, %s : tensor<4x8xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // TCC_OPS_FUSED_TD
