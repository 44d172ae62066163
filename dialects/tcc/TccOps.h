//===- TccOps.h - tcc ops ---------------------------------------*- C++ -*-===//
#ifndef TCC_DIALECTS_TCC_TCCOPS_H
#define TCC_DIALECTS_TCC_TCCOPS_H

#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/tcc/TccOps.h.inc"

namespace mlir::tcc {

/// The NumPy broadcast of two shapes, or failure when they are incompatible.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);

} // namespace mlir::tcc

#endif // TCC_DIALECTS_TCC_TCCOPS_H
