//===- OnnxOpsShape.cpp - Builders: shapes, layout, constants -------------===//
#include "frontends/onnx/OnnxFold.h"

using namespace mlir;
using namespace mlir::tcc;

/// Binds output 0 to input 0 reshaped to `shape`: folded when the input is
/// known at import (shape computations stay constants), tcc.reshape otherwise,
/// of any element type (a view of token ids, a flattened bool mask).
static LogicalResult reshapeTo(NodeImporter &node, ArrayRef<int64_t> shape) {
  if (DenseElementsAttr c = node.constantInput(0)) {
    auto type = RankedTensorType::get(shape, c.getElementType());
    if (type.getNumElements() != c.getNumElements())
      return node.emitError()
             << "cannot reshape " << shapeStr(c.getType().getShape()) << " ("
             << c.getNumElements() << " elements) to " << shapeStr(shape)
             << " (" << type.getNumElements() << " elements)";
    node.setConstantOutput(0, c.reshape(type));
    return success();
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.reshape(*x, shape);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

// The target shape must be known at import: tcc shapes are static. 0 copies
// the input's dimension at the same index (unless allowzero, opset >= 14),
// one -1 takes whatever is left.
LogicalResult mlir::tcc::importReshape(NodeImporter &node) {
  FailureOr<RankedTensorType> inType = node.inputType(0);
  if (failed(inType))
    return failure();
  FailureOr<SmallVector<int64_t>> target =
      node.constantInts(1, "the target shape");
  FailureOr<int64_t> allowZero =
      node.opset() >= 14 ? node.intAttr("allowzero", 0) : 0;
  if (failed(target) || failed(allowZero))
    return failure();
  ArrayRef<int64_t> in = inType->getShape();
  SmallVector<int64_t> shape(*target);
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t &d = shape[i];
    if (d == 0 && !*allowZero) {
      if (i >= in.size())
        return node.emitError()
               << "shape " << shapeStr(*target) << " copies dimension " << i
               << " (a 0) of an input of rank " << in.size();
      d = in[i];
    } else if (d == -1) {
      if (inferred)
        return node.emitError()
               << "shape " << shapeStr(*target) << " has more than one -1";
      inferred = i;
      continue;
    } else if (d < 0) {
      return node.emitError() << "shape " << shapeStr(*target)
                              << " has the invalid dimension " << d;
    }
    known *= d;
  }
  int64_t total = inType->getNumElements();
  if (inferred) {
    if (known == 0 || total % known != 0)
      return node.emitError() << "cannot infer the -1 in shape "
                              << shapeStr(*target) << " for an input of shape "
                              << shapeStr(in) << " (" << total << " elements)";
    shape[*inferred] = total / known;
  }
  return reshapeTo(node, shape);
}

LogicalResult mlir::tcc::importFlatten(NodeImporter &node) {
  FailureOr<RankedTensorType> inType = node.inputType(0);
  FailureOr<int64_t> attr = node.intAttr("axis", 1);
  if (failed(inType) || failed(attr))
    return failure();
  ArrayRef<int64_t> in = inType->getShape();
  // axis == rank is allowed: everything goes to the outer dimension.
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *attr, in.size(), /*extra=*/1);
  if (failed(axis))
    return failure();
  int64_t outer = 1, inner = 1;
  for (auto [d, size] : llvm::enumerate(in))
    ((int64_t)d < *axis ? outer : inner) *= size;
  return reshapeTo(node, {outer, inner});
}

/// Transpose of a constant (PyTorch's Pad export reorders its int64 pads
/// with one): the permuted elements, or a null attribute when `perm` is
/// not a permutation (the op reports that) or the result is too large.
static DenseElementsAttr foldTranspose(DenseElementsAttr c,
                                       ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(c.getType());
  ArrayRef<int64_t> in = type.getShape();
  int64_t rank = in.size();
  if ((int64_t)perm.size() != rank)
    return {};
  SmallVector<int64_t> out, strides(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return {};
    seen[p] = true;
    out.push_back(in[p]);
  }
  if (!fold::foldable({c}, out))
    return {};
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * in[d + 1];
  SmallVector<int64_t> map, idx(rank, 0);
  for (int64_t e = 0, n = fold::numElements(out); e < n; ++e) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += idx[d] * strides[perm[d]];
    map.push_back(flat);
    for (int64_t d = rank - 1; d >= 0 && ++idx[d] == out[d]; --d)
      idx[d] = 0;
  }
  return fold::take(c, out, map);
}

LogicalResult mlir::tcc::importTranspose(NodeImporter &node) {
  FailureOr<std::optional<SmallVector<int64_t>>> permAttr =
      node.intsAttr("perm");
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type) || failed(permAttr))
    return failure();
  int64_t rank = type->getRank();
  // The default reverses the dimensions.
  SmallVector<int64_t> perm =
      *permAttr ? **permAttr
                : llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
  if (DenseElementsAttr c = node.constantInput(0))
    if (DenseElementsAttr t = foldTranspose(c, perm)) {
      node.setConstantOutput(0, t);
      return success();
    }
  // An identity permutation (the dynamo exporter writes them around index
  // ops, on bool masks) moves nothing, whatever the element type.
  if ((int64_t)perm.size() == rank &&
      llvm::equal(perm, llvm::seq<int64_t>(0, rank)))
    return node.forwardInput(0, 0);
  // tcc.transpose moves floats; a bool mask goes through float32 and back,
  // which is exact. Other run-time integers stay refused by input().
  FailureOr<Type> declared = node.declaredType(0);
  if (failed(declared))
    return failure();
  bool viaFloat = declared->isInteger(1);
  FailureOr<Value> x = viaFloat ? node.anyInput(0) : node.input(0);
  if (failed(x))
    return failure();
  OpBuilder &b = node.builder();
  auto retyped = [&](Value v, Type t) -> Value {
    return CastOp::create(
               b, node.loc(),
               RankedTensorType::get(
                   cast<RankedTensorType>(v.getType()).getShape(), t),
               v)
        .getResult();
  };
  if (viaFloat)
    x = retyped(*x, b.getF32Type());
  FailureOr<Value> y = node.create<TransposeOp>(*x, ArrayRef<int64_t>(perm));
  if (failed(y))
    return failure();
  node.setOutput(0, viaFloat ? retyped(*y, b.getI1Type()) : *y);
  return success();
}

LogicalResult mlir::tcc::importIdentity(NodeImporter &node) {
  return node.forwardInput(0, 0);
}

/// The tensor a Constant node's one value attribute describes.
static FailureOr<DenseElementsAttr>
constantValue(NodeImporter &node, const onnx::AttributeProto &a) {
  MLIRContext *ctx = node.context();
  Type f32 = Float32Type::get(ctx), i64 = IntegerType::get(ctx, 64);
  auto vector = [](Type type, int64_t n) {
    return RankedTensorType::get({n}, type);
  };
  auto scalar = [](Type type) { return RankedTensorType::get({}, type); };
  StringRef name = a.name();
  if (name == "value" && a.type() == onnx::AttributeProto::TENSOR) {
    // Exporters write Python numbers as DOUBLE constants that a Cast turns
    // into FLOAT (torch.clamp's bounds); DOUBLE reads as float32.
    int32_t dataType = a.t().data_type();
    if (!onnxElementType(ctx, dataType))
      return node.emitUnsupported("dtype " + onnxTypeName(dataType))
             << "attribute 'value' has element type " << onnxTypeName(dataType)
             << ", which the importer does not support (supported: "
             << kSupportedOnnxTypes << ")";
    if (dataType == onnx::TensorProto::DOUBLE)
      warnFloat64(node.graphState(), node.loc());
    return convertTensor(a.t(), node.describe() + ": attribute 'value'",
                         node.loc());
  }
  if (name == "value_float" && a.type() == onnx::AttributeProto::FLOAT)
    return DenseElementsAttr::get(scalar(f32), a.f());
  if (name == "value_int" && a.type() == onnx::AttributeProto::INT)
    return DenseElementsAttr::get(scalar(i64), int64_t(a.i()));
  if (name == "value_floats" && a.type() == onnx::AttributeProto::FLOATS) {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    return DenseElementsAttr::get(vector(f32, v.size()), ArrayRef<float>(v));
  }
  if (name == "value_ints" && a.type() == onnx::AttributeProto::INTS) {
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    return DenseElementsAttr::get(vector(i64, v.size()), ArrayRef<int64_t>(v));
  }
  return node.emitUnsupported("attribute " + name.str())
         << "attribute '" << name << "' ("
         << onnx::AttributeProto_AttributeType_Name(a.type())
         << ") is not supported; use value, value_float(s) or value_int(s)";
}

// Constants stay symbolic until a float op uses them, so integer constants
// (shapes, axes) never reach the IR.
LogicalResult mlir::tcc::importConstant(NodeImporter &node) {
  if (node.proto().attribute_size() != 1)
    return node.emitError() << "expected exactly one value attribute, got "
                            << node.proto().attribute_size();
  FailureOr<DenseElementsAttr> value =
      constantValue(node, node.proto().attribute(0));
  if (failed(value))
    return failure();
  node.setConstantOutput(0, *value);
  return success();
}
