//===- TccDialect.h - The tcc dialect ---------------------------*- C++ -*-===//
#ifndef TCC_DIALECTS_TCC_TCCDIALECT_H
#define TCC_DIALECTS_TCC_TCCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/tcc/TccDialect.h.inc"

#endif // TCC_DIALECTS_TCC_TCCDIALECT_H
