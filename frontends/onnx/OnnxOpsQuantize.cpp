//===- OnnxOpsQuantize.cpp - Builders: QuantizeLinear, DequantizeLinear ---===//
//
// Both decompose into float32 tcc ops, computing what ONNX's reference
// does in float32: Dequantize is (float(x) - float(zero_point)) * scale;
// Quantize is clamp(round_half_even(x / scale) + zero_point) to the
// integer type, an integer-valued float32 that converts to int64 exactly.
// Quantized tensors are 8- or 16-bit integers, which float32 holds exactly;
// block quantization (opset 21's block_size) and float8/int4 types are
// refused.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static std::string str(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// Input `i` (any numeric type) as float32: integers convert exactly
/// (checked by the caller), floats are themselves.
static FailureOr<Value> asF32(NodeImporter &node, unsigned i) {
  FailureOr<Value> v = node.anyInput(i);
  if (failed(v))
    return failure();
  if (typeOf(*v).getElementType().isF32())
    return *v;
  auto t =
      RankedTensorType::get(typeOf(*v).getShape(), node.builder().getF32Type());
  return CastOp::create(node.builder(), node.loc(), t, *v).getResult();
}

/// A per-tensor (scalar) or per-axis (1-D, along attribute `axis` of the
/// input of shape `xShape`) parameter, reshaped to broadcast against it.
static FailureOr<Value> alongAxis(NodeImporter &node, Value p,
                                  ArrayRef<int64_t> xShape, int64_t axisAttr,
                                  StringRef what) {
  RankedTensorType t = typeOf(p);
  if (t.getNumElements() == 1 && t.getRank() <= 1)
    return node.reshape(p, {});
  int64_t rank = xShape.size();
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", axisAttr, rank);
  if (failed(axis))
    return failure();
  if (t.getRank() != 1 || t.getDimSize(0) != xShape[*axis])
    return node.emitError() << what << " has shape " << shapeStr(t.getShape())
                            << "; expected a scalar or [" << xShape[*axis]
                            << "] (the size of axis " << *axis << ")";
  SmallVector<int64_t> shape(rank, 1);
  shape[*axis] = xShape[*axis];
  return node.reshape(p, shape);
}

/// The `axis` attribute (normalized where a parameter is per-axis); no
/// block quantization.
static FailureOr<int64_t> quantAxis(NodeImporter &node) {
  FailureOr<int64_t> blockSize = node.intAttr("block_size", 0);
  FailureOr<int64_t> axis = node.intAttr("axis", 1);
  if (failed(blockSize) || failed(axis))
    return failure();
  if (*blockSize != 0)
    return node.emitUnsupported("block_size")
           << "block quantization (block_size = " << *blockSize
           << ") is not supported";
  return *axis;
}

/// Whether `t` is an integer type float32 holds exactly (8 or 16 bits).
static bool smallInt(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && it.getWidth() > 1 && it.getWidth() <= 16;
}

// Opset 10 (per-tensor), 13 (axis: per-axis scales), 19 (float16/bfloat16
// scales and float8 types), 21 (block_size), 23, 24, 25 types.
LogicalResult mlir::tcc::importDequantizeLinear(NodeImporter &node) {
  FailureOr<Type> xType = node.declaredType(0);
  FailureOr<RankedTensorType> shaped = node.inputType(0);
  if (failed(xType) || failed(shaped))
    return failure();
  bool int32 = isa<IntegerType>(*xType) &&
               xType->getIntOrFloatBitWidth() == 32 &&
               !xType->isUnsignedInteger();
  if (!smallInt(*xType) && !int32)
    return node.emitUnsupported("x of type " + str(*xType))
           << "x has element type " << *xType
           << "; supported: 8- and 16-bit integers and INT32";
  ArrayRef<int64_t> xShape = shaped->getShape();
  FailureOr<int64_t> axis = quantAxis(node);
  FailureOr<Value> x = asF32(node, 0);
  FailureOr<Value> scale = node.input(1);
  if (failed(axis) || failed(x) || failed(scale))
    return failure();
  scale = alongAxis(node, *scale, xShape, *axis, "x_scale");
  if (failed(scale))
    return failure();
  Value y = *x;
  if (node.hasInput(2)) {
    FailureOr<Type> zpType = node.declaredType(2);
    if (failed(zpType))
      return failure();
    if (*zpType != *xType)
      return node.emitError()
             << "x_zero_point has type " << *zpType << ", x " << *xType;
    FailureOr<Value> zp = asF32(node, 2);
    if (failed(zp))
      return failure();
    zp = alongAxis(node, *zp, xShape, *axis, "x_zero_point");
    if (failed(zp))
      return failure();
    FailureOr<Value> d = node.create<SubOp>(y, *zp);
    if (failed(d))
      return failure();
    y = *d;
  }
  FailureOr<Value> out = node.create<MulOp>(y, *scale);
  if (failed(out))
    return failure();
  node.setOutput(0, *out);
  return success();
}

// Opset 10, 13 (axis), 19 (`saturate`, for float8 outputs only), 21
// (block_size, output_dtype), 23, 24, 25 types. The output type is the zero
// point's (UINT8 without one, or output_dtype).
LogicalResult mlir::tcc::importQuantizeLinear(NodeImporter &node) {
  FailureOr<RankedTensorType> shaped = node.inputType(0);
  FailureOr<int64_t> outputDtype = node.intAttr("output_dtype", 0);
  if (failed(shaped) || failed(outputDtype))
    return failure();
  MLIRContext *ctx = node.context();
  Type target = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  if (node.hasInput(2)) {
    FailureOr<Type> zpType = node.declaredType(2);
    if (failed(zpType))
      return failure();
    target = *zpType;
  } else if (*outputDtype != 0) {
    target = onnxElementType(ctx, (int32_t)*outputDtype);
  }
  if (!target || !smallInt(target))
    return node.emitUnsupported(
               "output of type " +
               (target ? str(target) : onnxTypeName(*outputDtype)))
           << "only 8- and 16-bit integer outputs are supported";
  ArrayRef<int64_t> xShape = shaped->getShape();
  FailureOr<int64_t> axis = quantAxis(node);
  FailureOr<Value> x = node.input(0);
  FailureOr<Value> scale = node.input(1);
  if (failed(axis) || failed(x) || failed(scale))
    return failure();
  scale = alongAxis(node, *scale, xShape, *axis, "y_scale");
  if (failed(scale))
    return failure();
  FailureOr<Value> q = node.create<DivOp>(*x, *scale);
  if (failed(q))
    return failure();
  OpBuilder &b = node.builder();
  q = node.create<UnaryFnOp>(*q, b.getStringAttr("round"), b.getF64FloatAttr(0),
                             b.getF64FloatAttr(0));
  if (failed(q))
    return failure();
  if (node.hasInput(2)) {
    FailureOr<Value> zp = asF32(node, 2);
    if (failed(zp))
      return failure();
    zp = alongAxis(node, *zp, xShape, *axis, "y_zero_point");
    if (failed(zp))
      return failure();
    q = node.create<AddOp>(*q, *zp);
    if (failed(q))
      return failure();
  }
  // Saturate to the type's range; NaN has no integer and stays undefined.
  unsigned w = target.getIntOrFloatBitWidth();
  double lo = target.isUnsignedInteger() ? 0 : -std::ldexp(1.0, w - 1);
  double hi = target.isUnsignedInteger() ? std::ldexp(1.0, w) - 1
                                         : std::ldexp(1.0, w - 1) - 1;
  q = node.create<UnaryFnOp>(*q, b.getStringAttr("clip"), b.getF64FloatAttr(lo),
                             b.getF64FloatAttr(hi));
  if (failed(q))
    return failure();
  auto i64 = RankedTensorType::get(typeOf(*q).getShape(), b.getI64Type());
  node.setOutput(0, CastOp::create(b, node.loc(), i64, *q).getResult(), target);
  return success();
}
