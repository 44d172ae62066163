//===- TccGradientsMath.cpp - Gradient rules of the math ops --------------===//
//
// Element-wise functions use one fused backward op each, fed with the
// forward value that makes the derivative cheapest (sigmoid and tanh their
// output, erf and gelu their input). layer_norm reuses its saved statistics;
// dropout reuses its mask, so nothing random is drawn again.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "runtime/core/prelude/UnaryFn.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                            double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

//===----------------------------------------------------------------------===//
// Element-wise functions
//===----------------------------------------------------------------------===//

SmallVector<Value> ExpOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {MulOp::create(b, getLoc(), grads[0], getResult())};
}

SmallVector<Value> LogOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {DivOp::create(b, getLoc(), grads[0], getInput())};
}

SmallVector<Value> SqrtOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {SqrtGradOp::create(b, getLoc(), grads[0], getResult())};
}

SmallVector<Value> TanhOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {TanhGradOp::create(b, getLoc(), grads[0], getResult())};
}

SmallVector<Value> SigmoidOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {SigmoidGradOp::create(b, getLoc(), grads[0], getResult())};
}

SmallVector<Value> ErfOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {ErfGradOp::create(b, getLoc(), grads[0], getInput())};
}

SmallVector<Value> GeluOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {
      GeluGradOp::create(b, getLoc(), grads[0], getInput(), getApproximate())};
}

// Piecewise-constant functions (sign, floor, ceil, round) have a zero
// gradient, as in PyTorch: a broadcast zero, which folds into its users,
// rather than a kernel that writes zeros.
SmallVector<Value> UnaryFnOp::buildGradients(OpBuilder &b, ValueRange grads) {
  int fn = getFnCode();
  if (fn == TCC_UFN_SIGN || fn == TCC_UFN_FLOOR || fn == TCC_UFN_CEIL ||
      fn == TCC_UFN_ROUND) {
    Value zero = scalarConstant(b, getLoc(), getType().getElementType(), 0.0);
    return {BroadcastToOp::create(b, getLoc(), getType(), zero)};
  }
  return {UnaryFnGradOp::create(b, getLoc(), grads[0], getInput(), getFnAttr(),
                                getAlphaAttr(), getBetaAttr())};
}

//===----------------------------------------------------------------------===//
// Remainder
//===----------------------------------------------------------------------===//

// d/dlhs = 1 and d/drhs = -trunc(lhs / rhs) (floor without fmod), as
// PyTorch's fmod and remainder. trunc(q) is q - fmod(q, 1): fmod is exact,
// so the difference is the integer part exactly, and no trunc op is needed.
SmallVector<Value> ModOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  Value dy = grads[0];
  Type et = typeOf(dy).getElementType();
  Value q = DivOp::create(b, loc, getLhs(), getRhs());
  Value one = scalarConstant(b, loc, et, 1.0);
  Value whole =
      getFmod()
          ? (Value)SubOp::create(b, loc, q, ModOp::create(b, loc, q, one, true))
          : (Value)UnaryFnOp::create(b, loc, q, b.getStringAttr("floor"),
                                     b.getF64FloatAttr(0.0),
                                     b.getF64FloatAttr(0.0));
  Value db = NegOp::create(b, loc, MulOp::create(b, loc, dy, whole));
  return {reduceToType(b, loc, dy, typeOf(getLhs())),
          reduceToType(b, loc, db, typeOf(getRhs()))};
}

//===----------------------------------------------------------------------===//
// Powers
//===----------------------------------------------------------------------===//

SmallVector<Value> PowScalarOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {PowScalarGradOp::create(b, getLoc(), grads[0], getInput(),
                                  getExponentAttr())};
}

// The backward op works on operands of the result's shape; broadcasting them
// first keeps its kernel element-wise, and the broadcast folds away when an
// operand already has that shape.
SmallVector<Value> PowOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  RankedTensorType type = getType();
  auto full = [&](Value v) -> Value {
    if (v.getType() == type)
      return v;
    return BroadcastToOp::create(b, loc, type, v);
  };
  auto g = PowGradOp::create(b, loc, grads[0], full(getLhs()), full(getRhs()));
  return {reduceToType(b, loc, g.getLhsGrad(), typeOf(getLhs())),
          reduceToType(b, loc, g.getRhsGrad(), typeOf(getRhs()))};
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

// y depends on x, scale and bias through layer_norm_grad. The statistics are
// results too (ONNX's optional Mean and InvStdDev); when something uses them,
// their gradients add to dx:
//   d mean / dx_i = 1/N,   d rstd / dx_i = -rstd^3 (x_i - mean) / N,
// with N the number of normalized elements.
SmallVector<Value> LayerNormOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  RankedTensorType xType = typeOf(getInput());
  Type f = xType.getElementType();
  Value dx, dscale, dbias;
  if (grads[0]) {
    auto g = LayerNormGradOp::create(b, loc, grads[0], getInput(), getScale(),
                                     getMean(), getRstd(), getAxis());
    dx = g.getInputGrad();
    dscale = g.getScaleGrad();
    dbias = g.getBiasGrad();
  } else {
    Value zero = scalarConstant(b, loc, f, 0.0);
    dscale = BroadcastToOp::create(b, loc, typeOf(getScale()), zero);
    dbias = BroadcastToOp::create(b, loc, typeOf(getBias()), zero);
  }
  int64_t n = 1;
  for (int64_t d = getAxis(); d < xType.getRank(); ++d)
    n *= xType.getDimSize(d);
  Value invN = scalarConstant(b, loc, f, 1.0 / double(n));
  auto addToDx = [&](Value term) {
    if (term.getType() != xType)
      term = BroadcastToOp::create(b, loc, xType, term);
    dx = dx ? AddOp::create(b, loc, dx, term).getResult() : term;
  };
  if (grads[1])
    addToDx(MulOp::create(b, loc, grads[1], invN));
  if (grads[2]) {
    Value centered = SubOp::create(b, loc, getInput(), getMean());
    Value cube = PowScalarOp::create(b, loc, getRstd(), b.getF64FloatAttr(3.0));
    Value k = MulOp::create(b, loc, grads[2], cube);
    k = MulOp::create(b, loc, k, scalarConstant(b, loc, f, -1.0 / double(n)));
    addToDx(MulOp::create(b, loc, centered, k));
  }
  return {dx, dscale, dbias};
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

// The mask already holds 0 or 1 / (1 - ratio). The step counter is an integer
// and gets no gradient; nothing flows back through the mask result.
SmallVector<Value> DropoutOp::buildGradients(OpBuilder &b, ValueRange grads) {
  if (!grads[0]) {
    Value zero =
        scalarConstant(b, getLoc(), typeOf(getInput()).getElementType(), 0.0);
    return {BroadcastToOp::create(b, getLoc(), typeOf(getInput()), zero),
            Value()};
  }
  return {MulOp::create(b, getLoc(), grads[0], getMask()), Value()};
}
