//===- TccInterfaces.td - tcc op interfaces ----------------*- tablegen -*-===//
#ifndef TCC_INTERFACES_TD
#define TCC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tcc_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::tcc";
  let description = [{
    The reverse-mode gradient rule of an op. `tcc-autodiff` walks a function
    backwards and asks each op for the gradients of its operands given the
    gradients of its results; the rule lives with the op, not in the pass.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds ops at the builder's insertion point that compute the gradient
        of each operand. `resultGrads` has one entry per result; an entry is
        null when nothing depends on that result. Returns one value per
        operand, null for operands with no gradient (integer labels, say).
        Each returned value has exactly its operand's type.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads)>,
  ];
}

#endif // TCC_INTERFACES_TD
