//===- TccGradientsConv.cpp - Gradient rules: conv, pooling, batch norm ---===//
//
// Convolution and pooling have dedicated backward ops (col2im, argmax
// scatter, window spreading); batch norm's backward through the batch
// statistics is one fused op, plus element-wise terms for gradients that
// reach its mean and variance results directly (the running statistics do
// not reach the loss, so those terms are rarely built).
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

SmallVector<Value> Conv2dOp::buildGradients(OpBuilder &b, ValueRange grads) {
  Location loc = getLoc();
  Value g = grads[0];
  Value dx = Conv2dGradInputOp::create(
      b, loc, getInput().getType(), g, getWeight(), getStridesAttr(),
      getPadsAttr(), getDilationsAttr(), getGroupsAttr());
  Value dw = Conv2dGradWeightOp::create(
      b, loc, getWeight().getType(), g, getInput(), getStridesAttr(),
      getPadsAttr(), getDilationsAttr(), getGroupsAttr());
  SmallVector<Value> out{dx, dw};
  if (getBias())
    out.push_back(ReduceSumOp::create(b, loc, g, ArrayRef<int64_t>{0, 2, 3},
                                      /*keepdims=*/false));
  return out;
}

// The op is linear in each operand: out[n, c, i, j] sums
// grad[n, o, oh, ow] * weight[o, c, kh, kw] over the taps that land on
// (i, j), the same pairs a convolution of `out` with `weight` visits. So
// d grad = conv2d(dout, weight), and d weight pairs `grad` (as the
// convolution's result gradient) with dout (as its input).
SmallVector<Value> Conv2dGradInputOp::buildGradients(OpBuilder &b,
                                                     ValueRange grads) {
  Location loc = getLoc();
  Value g = grads[0];
  Value dgrad = Conv2dOp::create(b, loc, getGrad().getType(), g, getWeight(),
                                 Value(), getStridesAttr(), getPadsAttr(),
                                 getDilationsAttr(), getGroupsAttr());
  Value dw = Conv2dGradWeightOp::create(
      b, loc, getWeight().getType(), getGrad(), g, getStridesAttr(),
      getPadsAttr(), getDilationsAttr(), getGroupsAttr());
  return {dgrad, dw};
}

SmallVector<Value> MaxPool2dOp::buildGradients(OpBuilder &b, ValueRange grads) {
  // The indices are integers: only the pooled values carry a gradient.
  if (!grads[0])
    return {Value()};
  return {MaxPool2dGradOp::create(b, getLoc(), getInput().getType(), grads[0],
                                  getIndices())};
}

SmallVector<Value> AvgPool2dOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {AvgPool2dGradOp::create(b, getLoc(), getInput().getType(), grads[0],
                                  getKernelShapeAttr(), getStridesAttr(),
                                  getPadsAttr(), getCeilModeAttr(),
                                  getCountIncludePadAttr())};
}

SmallVector<Value> BatchNormTrainOp::buildGradients(OpBuilder &b,
                                                    ValueRange grads) {
  Location loc = getLoc();
  RankedTensorType xt = typeOf(getInput()), ct = typeOf(getScale());
  Value dx, dscale, dbias;
  if (grads[0]) {
    auto g =
        BatchNormTrainGradOp::create(b, loc, grads[0], getInput(), getScale(),
                                     getMean(), getVar(), getEpsilonAttr());
    dx = g.getInputGrad();
    dscale = g.getScaleGrad();
    dbias = g.getBiasGrad();
  } else {
    // Only the statistics are used: scale and bias do not affect them.
    dscale = splat(b, loc, ct, 0.0);
    dbias = splat(b, loc, ct, 0.0);
  }
  // The statistics as [1, C, 1, ...] so they broadcast against the input.
  SmallVector<int64_t> bshape(xt.getRank(), 1);
  bshape[1] = xt.getDimSize(1);
  auto bt = RankedTensorType::get(bshape, xt.getElementType());
  double perChannel = double(xt.getNumElements()) / xt.getDimSize(1);
  auto addTerm = [&](Value term) {
    if (typeOf(term) != xt)
      term = BroadcastToOp::create(b, loc, xt, term);
    dx = dx ? AddOp::create(b, loc, dx, term).getResult() : term;
  };
  auto scalar = [&](double v) {
    return splat(b, loc, RankedTensorType::get({}, xt.getElementType()), v);
  };
  // d mean / d x = 1 / M.
  if (grads[1]) {
    Value dm = ReshapeOp::create(b, loc, bt, grads[1]);
    addTerm(MulOp::create(b, loc, dm, scalar(1.0 / perChannel)));
  }
  // d var / d x = 2 (x - mean) / M (the mean's own dependence sums to 0).
  if (grads[2]) {
    Value dv = ReshapeOp::create(b, loc, bt, grads[2]);
    Value centered = SubOp::create(b, loc, getInput(),
                                   ReshapeOp::create(b, loc, bt, getMean()));
    Value scale = MulOp::create(b, loc, dv, scalar(2.0 / perChannel));
    addTerm(MulOp::create(b, loc, centered, scale));
  }
  return {dx, dscale, dbias};
}
