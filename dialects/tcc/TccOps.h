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

#include <optional>

#define GET_OP_CLASSES
#include "dialects/tcc/TccOps.h.inc"

namespace mlir::tcc {

/// The NumPy broadcast of two shapes, or failure when they are incompatible.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);

/// Sums the gradient `grad` of a broadcast result over the dimensions that
/// broadcasting added to reach its shape from `target`'s, then reshapes to
/// `target` exactly (gradient rules of broadcasting ops).
Value reduceToType(OpBuilder &b, Location loc, Value grad,
                   RankedTensorType target);

/// The gradient per counted position of a mean cross-entropy whose loss has
/// gradient `grad`: grad / max(1, positions not labelled `ignoreIndex`),
/// counted from `labels` (softmax_cross_entropy, linear_cross_entropy).
Value crossEntropyGradPerPosition(OpBuilder &b, Location loc, Value grad,
                                  Value labels, IntegerAttr ignoreIndex);

/// The value of a splat float constant, or nullopt (pattern matching of
/// scale factors and exporters' constants).
std::optional<double> splatFloat(Value v);

/// Adds transpose(reshape(x)) -> reshape(transpose(x)) where that shrinks
/// the transpose (TccPatternsLayout.cpp; part of tcc.transpose's
/// canonicalization).
void populateTransposeLayoutPatterns(RewritePatternSet &patterns,
                                     MLIRContext *ctx);

} // namespace mlir::tcc

#endif // TCC_DIALECTS_TCC_TCCOPS_H
