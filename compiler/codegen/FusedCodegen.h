//===- FusedCodegen.h - C++ for tcc.fused regions ---------------*- C++ -*-===//
//
// Every tcc.fused op of a module becomes one C++ function in one translation
// unit, which HostCompile.h turns into the shared object the artifact
// carries. The ABI between that code and the runtime is documented in
// runtime/cpu/FusedLibrary.h.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_FUSEDCODEGEN_H
#define TCC_COMPILER_CODEGEN_FUSEDCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace tcc {

/// Numbers the tcc.fused ops of `module` (their `kernel` attribute, in walk
/// order) and returns the C++ source of all their kernels, or emits an error
/// on an op it cannot generate. The source defines `tcc_fused_count` = 0
/// when there is none.
mlir::FailureOr<std::string> generateFusedSource(mlir::ModuleOp module);

/// Source for the given ops only (numbered 0..n-1, `kernel` set); for tests.
mlir::FailureOr<std::string>
generateFusedSource(llvm::ArrayRef<mlir::Operation *> fusedOps);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_FUSEDCODEGEN_H
