//===- TccOpsFused.cpp - tcc.fused and tcc.yield --------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tcc;

void FusedOp::build(OpBuilder &b, OperationState &state, TypeRange resultTypes,
                    ValueRange inputs) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  Region *body = state.addRegion();
  Block *block = new Block();
  for (Value v : inputs)
    block->addArgument(v.getType(), v.getLoc());
  body->push_back(block);
}

LogicalResult FusedOp::verify() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << block.getNumArguments() << " arguments but the op has "
           << getInputs().size() << " operands";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(block.getArguments(), getInputs())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError("body argument #")
             << i << " has type " << std::get<0>(pair).getType()
             << " but operand #" << i << " has type "
             << std::get<1>(pair).getType();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("body must end with tcc.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().size()
           << " values whose types differ from the op's result types";
  if (auto pairs = getInPlace()) {
    ArrayRef<int64_t> p = *pairs;
    if (p.size() % 2)
      return emitOpError("in_place has ")
             << p.size() << " entries; it lists (result, operand) pairs";
    for (size_t k = 0; k < p.size(); k += 2) {
      int64_t r = p[k], i = p[k + 1];
      if (r < 0 || r >= (int64_t)getNumResults() || i < 0 ||
          i >= (int64_t)getInputs().size())
        return emitOpError("in_place pair (")
               << r << ", " << i << ") names no result/operand (the op has "
               << getNumResults() << " results and " << getInputs().size()
               << " operands)";
      auto rt = cast<ShapedType>(getResult(r).getType());
      auto it = cast<ShapedType>(getInputs()[i].getType());
      if (rt.getElementType() != it.getElementType() ||
          rt.getNumElements() != it.getNumElements())
        return emitOpError("in_place pair (")
               << r << ", " << i << "): result " << rt
               << " cannot be written over operand " << it
               << " (element type and count must match)";
    }
  }
  return success();
}
