//===- TccOpsConv.cpp - Shape rules of convolution, pooling, batch norm ---===//
//
// One shape rule per op family, written once as a function that returns an
// error text (empty on success): the forward ops infer their result types
// with it and the gradient ops, whose result types are explicit, verify them
// against it.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"
#include "runtime/core/abi/WindowGeometry.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <string>

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

namespace {
/// The spatial attributes of a 2-D window op: kernel [kh, kw], strides
/// [sh, sw], pads [top, left, bottom, right], dilations [dh, dw].
struct Window2d {
  ArrayRef<int64_t> kernel, strides, pads, dilations;
  bool ceil = false;
};
} // namespace

/// Checks the attribute arrays of `w`; "" when valid.
static std::string checkWindow(const Window2d &w) {
  auto allAtLeast = [](ArrayRef<int64_t> a, int64_t lo) {
    return llvm::all_of(a, [&](int64_t v) { return v >= lo; });
  };
  if (w.kernel.size() != 2 || !allAtLeast(w.kernel, 1))
    return "kernel_shape must be 2 positive sizes, got " + shapeStr(w.kernel);
  if (w.strides.size() != 2 || !allAtLeast(w.strides, 1))
    return "strides must be 2 positive values, got " + shapeStr(w.strides);
  if (w.dilations.size() != 2 || !allAtLeast(w.dilations, 1))
    return "dilations must be 2 positive values, got " + shapeStr(w.dilations);
  if (w.pads.size() != 4 || !allAtLeast(w.pads, 0))
    return "pads must be 4 non-negative values [top, left, bottom, right], "
           "got " +
           shapeStr(w.pads);
  return "";
}

// The output extent along one axis: the kernels' own formula
// (runtime/core/abi/WindowGeometry.h), so the verifier and the runtime's
// checks agree on every shape.
using ::tcc::rt::abi::windowOut;

/// The [N, C, OH, OW] result of sliding `w` over `in` ([N, C, H, W]), with
/// `channels` output channels; "" when valid.
static std::string windowShape(ArrayRef<int64_t> in, const Window2d &w,
                               int64_t channels,
                               SmallVectorImpl<int64_t> &out) {
  std::string err = checkWindow(w);
  if (!err.empty())
    return err;
  if (in.size() != 4)
    return "input must be [N, C, H, W], got " + shapeStr(in);
  int64_t oh = windowOut(in[2], w.kernel[0], w.strides[0], w.pads[0], w.pads[2],
                         w.dilations[0], w.ceil);
  int64_t ow = windowOut(in[3], w.kernel[1], w.strides[1], w.pads[1], w.pads[3],
                         w.dilations[1], w.ceil);
  if (oh < 1 || ow < 1)
    return "the window " + shapeStr(w.kernel) + " (dilations " +
           shapeStr(w.dilations) + ", pads " + shapeStr(w.pads) +
           ") does not fit the input " + shapeStr(in);
  out.assign({in[0], channels, oh, ow});
  return "";
}

/// The conv2d result shape for input `x` and weight `wt`; "" when valid.
static std::string convShape(ArrayRef<int64_t> x, ArrayRef<int64_t> wt,
                             ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                             ArrayRef<int64_t> dilations, int64_t groups,
                             SmallVectorImpl<int64_t> &out) {
  if (x.size() != 4 || wt.size() != 4)
    return "input and weight must be rank 4 ([N, C, H, W] and [O, C / "
           "groups, kH, kW]), got " +
           shapeStr(x) + " and " + shapeStr(wt);
  if (groups < 1 || x[1] % groups || wt[0] % groups)
    return "groups = " + std::to_string(groups) +
           " must be positive and divide the input channels (" +
           std::to_string(x[1]) + ") and output channels (" +
           std::to_string(wt[0]) + ")";
  if (wt[1] * groups != x[1])
    return "weight " + shapeStr(wt) + " expects " +
           std::to_string(wt[1] * groups) + " input channels, input " +
           shapeStr(x) + " has " + std::to_string(x[1]);
  Window2d w{wt.drop_front(2), strides, pads, dilations, false};
  return windowShape(x, w, wt[0], out);
}

static LogicalResult checkSameElementType(std::optional<Location> loc,
                                          StringRef name, ValueRange values) {
  for (Value v : values)
    if (rankedType(v).getElementType() !=
        rankedType(values[0]).getElementType())
      return emitOptionalError(loc, "tcc.", name, ": element types differ");
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

LogicalResult
Conv2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attrs,
                           OpaqueProperties props, RegionRange regions,
                           SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<Conv2dOp>(operands, attrs, props, regions);
  const auto &p = adaptor.getProperties();
  if (!p.strides || !p.pads || !p.dilations || !p.groups)
    return emitOptionalError(loc, "tcc.conv2d: requires attributes 'strides', "
                                  "'pads', 'dilations' and 'groups'");
  if (failed(checkSameElementType(loc, "conv2d", operands)))
    return failure();
  auto x = rankedType(adaptor.getInput()), w = rankedType(adaptor.getWeight());
  SmallVector<int64_t> shape;
  std::string err = convShape(x.getShape(), w.getShape(), adaptor.getStrides(),
                              adaptor.getPads(), adaptor.getDilations(),
                              p.groups.getInt(), shape);
  if (!err.empty())
    return emitOptionalError(loc, "tcc.conv2d: ", err);
  if (Value bias = adaptor.getBias()) {
    auto b = rankedType(bias);
    if (b.getRank() != 1 || b.getDimSize(0) != w.getDimSize(0))
      return emitOptionalError(loc, "tcc.conv2d: bias has shape ",
                               shapeStr(b.getShape()), ", expected [",
                               w.getDimSize(0), "]");
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

/// Checks that convolving an input of `x` with a weight of `w` gives `dy`.
static LogicalResult verifyConvGrad(Operation *op, RankedTensorType x,
                                    RankedTensorType w, RankedTensorType dy,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> pads,
                                    ArrayRef<int64_t> dilations,
                                    int64_t groups) {
  if (x.getElementType() != w.getElementType() ||
      x.getElementType() != dy.getElementType())
    return op->emitOpError("element types differ");
  SmallVector<int64_t> shape;
  std::string err = convShape(x.getShape(), w.getShape(), strides, pads,
                              dilations, groups, shape);
  if (!err.empty())
    return op->emitOpError(err);
  if (ArrayRef<int64_t>(shape) != dy.getShape())
    return op->emitOpError("the convolution of ")
           << shapeStr(x.getShape()) << " by " << shapeStr(w.getShape())
           << " gives " << shapeStr(shape) << ", but the gradient is "
           << shapeStr(dy.getShape());
  return success();
}

LogicalResult Conv2dGradInputOp::verify() {
  return verifyConvGrad(*this, rankedType(getResult()), rankedType(getWeight()),
                        rankedType(getGrad()), getStrides(), getPads(),
                        getDilations(), getGroups());
}

LogicalResult Conv2dGradWeightOp::verify() {
  return verifyConvGrad(*this, rankedType(getInput()), rankedType(getResult()),
                        rankedType(getGrad()), getStrides(), getPads(),
                        getDilations(), getGroups());
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

static bool flagSet(BoolAttr a) { return a && a.getValue(); }

LogicalResult
MaxPool2dOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                              ValueRange operands, DictionaryAttr attrs,
                              OpaqueProperties props, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<MaxPool2dOp>(operands, attrs, props, regions);
  const auto &p = adaptor.getProperties();
  if (!p.kernel_shape || !p.strides || !p.pads || !p.dilations)
    return emitOptionalError(loc, "tcc.max_pool2d: requires attributes "
                                  "'kernel_shape', 'strides', 'pads' and "
                                  "'dilations'");
  auto x = rankedType(adaptor.getInput());
  Window2d w{adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
             adaptor.getDilations(), flagSet(p.ceil_mode)};
  SmallVector<int64_t> shape;
  std::string err = windowShape(x.getShape(), w,
                                x.getRank() == 4 ? x.getDimSize(1) : 0, shape);
  if (!err.empty())
    return emitOptionalError(loc, "tcc.max_pool2d: ", err);
  // Padding never wins, so every window must overlap the input.
  for (int a = 0; a < 2; ++a)
    if (w.pads[a] >= w.dilations[a] * (w.kernel[a] - 1) + 1 ||
        w.pads[a + 2] >= w.dilations[a] * (w.kernel[a] - 1) + 1)
      return emitOptionalError(loc, "tcc.max_pool2d: pads ", shapeStr(w.pads),
                               " must be smaller than the dilated window ",
                               shapeStr(w.kernel));
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  results.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult MaxPool2dGradOp::verify() {
  auto dy = rankedType(getGrad()), idx = rankedType(getIndices()),
       dx = rankedType(getResult());
  if (dy.getShape() != idx.getShape())
    return emitOpError("grad ")
           << shapeStr(dy.getShape()) << " and indices "
           << shapeStr(idx.getShape()) << " differ in shape";
  if (dy.getElementType() != dx.getElementType())
    return emitOpError("element types differ");
  if (dy.getRank() != 4 || dx.getRank() != 4 ||
      dy.getDimSize(0) != dx.getDimSize(0) ||
      dy.getDimSize(1) != dx.getDimSize(1))
    return emitOpError("grad ") << shapeStr(dy.getShape()) << " and result "
                                << shapeStr(dx.getShape())
                                << " must be [N, C, ...] with the same N and C";
  return success();
}

LogicalResult
AvgPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              ValueRange operands, DictionaryAttr attrs,
                              OpaqueProperties props, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<AvgPool2dOp>(operands, attrs, props, regions);
  const auto &p = adaptor.getProperties();
  if (!p.kernel_shape || !p.strides || !p.pads)
    return emitOptionalError(loc, "tcc.avg_pool2d: requires attributes "
                                  "'kernel_shape', 'strides' and 'pads'");
  auto x = rankedType(adaptor.getInput());
  static const int64_t one[2] = {1, 1};
  Window2d w{adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
             one, flagSet(p.ceil_mode)};
  SmallVector<int64_t> shape;
  std::string err = windowShape(x.getShape(), w,
                                x.getRank() == 4 ? x.getDimSize(1) : 0, shape);
  if (!err.empty())
    return emitOptionalError(loc, "tcc.avg_pool2d: ", err);
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult AvgPool2dGradOp::verify() {
  auto dy = rankedType(getGrad()), dx = rankedType(getResult());
  if (dy.getElementType() != dx.getElementType())
    return emitOpError("element types differ");
  static const int64_t one[2] = {1, 1};
  Window2d w{getKernelShape(), getStrides(), getPads(), one, getCeilMode()};
  SmallVector<int64_t> shape;
  std::string err = windowShape(
      dx.getShape(), w, dx.getRank() == 4 ? dx.getDimSize(1) : 0, shape);
  if (!err.empty())
    return emitOpError(err);
  if (ArrayRef<int64_t>(shape) != dy.getShape())
    return emitOpError("pooling ")
           << shapeStr(dx.getShape()) << " gives " << shapeStr(shape)
           << ", but the gradient is " << shapeStr(dy.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// Checks `x` is [N, C, ...] and every value of `perChannel` is [C].
static LogicalResult checkBatchNorm(StringRef name, std::optional<Location> loc,
                                    RankedTensorType x, ValueRange perChannel) {
  if (x.getRank() < 2)
    return emitOptionalError(loc, "tcc.", name,
                             ": input must be [N, C, ...], got ",
                             shapeStr(x.getShape()));
  for (Value v : perChannel) {
    auto t = rankedType(v);
    if (t.getElementType() != x.getElementType())
      return emitOptionalError(loc, "tcc.", name, ": element types differ");
    if (t.getRank() != 1 || t.getDimSize(0) != x.getDimSize(1))
      return emitOptionalError(loc, "tcc.", name, ": per-channel operand has ",
                               "shape ", shapeStr(t.getShape()), ", expected [",
                               x.getDimSize(1), "]");
  }
  return success();
}

LogicalResult
BatchNormTrainOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   ValueRange operands, DictionaryAttr,
                                   OpaqueProperties, RegionRange,
                                   SmallVectorImpl<Type> &results) {
  auto x = rankedType(operands[0]);
  if (failed(checkBatchNorm("batch_norm_train", loc, x, operands.drop_front())))
    return failure();
  auto stats = RankedTensorType::get({x.getDimSize(1)}, x.getElementType());
  results.append({x, stats, stats});
  return success();
}

LogicalResult BatchNormTrainGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &results) {
  auto dy = rankedType(operands[0]), x = rankedType(operands[1]);
  if (dy != x)
    return emitOptionalError(loc, "tcc.batch_norm_train_grad: grad ", dy,
                             " and input ", x, " differ");
  if (failed(checkBatchNorm("batch_norm_train_grad", loc, x,
                            operands.drop_front(2))))
    return failure();
  auto stats = RankedTensorType::get({x.getDimSize(1)}, x.getElementType());
  results.append({x, stats, stats});
  return success();
}
