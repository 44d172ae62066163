//===- TccDialect.cpp - The tcc dialect -----------------------------------===//
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"

using namespace mlir;
using namespace mlir::tcc;

#include "dialects/tcc/TccDialect.cpp.inc"
#include "dialects/tcc/TccInterfaces.cpp.inc"

void TccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/tcc/TccOps.cpp.inc"
      >();
}

Operation *TccDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
