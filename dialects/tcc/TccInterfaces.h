//===- TccInterfaces.h - tcc op interfaces ----------------------*- C++ -*-===//
#ifndef TCC_DIALECTS_TCC_TCCINTERFACES_H
#define TCC_DIALECTS_TCC_TCCINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include "dialects/tcc/TccInterfaces.h.inc"

#endif // TCC_DIALECTS_TCC_TCCINTERFACES_H
