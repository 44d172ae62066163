//===- TccDialect.td - The tcc dialect ---------------------*- tablegen -*-===//
#ifndef TCC_DIALECT_TD
#define TCC_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tcc_Dialect : Dialect {
  let name = "tcc";
  let summary = "Training-oriented tensor ops for the tcc compiler";
  let description = [{
    A small op set on ranked, statically shaped tensors: what a forward pass,
    its loss, its reverse-mode derivative and an optimizer update need. ONNX
    breadth lives in the frontend's op table, which maps onto these ops.
  }];
  let cppNamespace = "::mlir::tcc";
  let hasConstantMaterializer = 1;
}

class Tcc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tcc_Dialect, mnemonic, traits>;

#endif // TCC_DIALECT_TD
