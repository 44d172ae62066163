//===- KernelOfOp.h - The kernel and attributes one op lowers to -*- C++
//-*-===//
//
// The schedule builder's table from dialect ops to kernel calls: which
// kernel of runtime/core/abi/KernelList.def runs an op, and the typed
// attributes it reads (KernelAttrs.h), taken from the op's attributes.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_KERNELOFOP_H
#define TCC_COMPILER_CODEGEN_KERNELOFOP_H

#include "runtime/core/Artifact.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace tcc {

/// Fills the kernel name and attributes of `in` for `op`; an error on `op`
/// when no kernel runs it.
mlir::LogicalResult describeKernel(mlir::Operation *op, rt::Instr &in);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_KERNELOFOP_H
