//===- OnnxTensor.cpp - ONNX TensorProto -> MLIR attributes ---------------===//
//
// Only what the importer needs as constants: float32 (frozen weights,
// Constant nodes), int32/int64 (shapes, axes, indices) and bool (masks, as
// i1). Everything else is an error naming the tensor, not a silent
// conversion.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include <cstring>
#include <iterator>

using namespace mlir;
using namespace mlir::tcc;

std::string mlir::tcc::shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "," : "") + std::to_string(d);
  return s + "]";
}

std::string mlir::tcc::onnxTypeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(dataType));
  // Types newer than the libonnx tcc builds against (1.12 ends at
  // BFLOAT16): named so that a model of opset 19 to 28 using one hears
  // which type tcc refuses.
  static const char *const kNewer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",        "INT4",           "FLOAT4E2M1", "FLOAT8E8M0",
      "UINT2",        "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  constexpr int32_t kFirstNewer = 17;
  if (dataType >= kFirstNewer &&
      dataType < kFirstNewer + (int32_t)std::size(kNewer))
    return kNewer[dataType - kFirstNewer];
  return "<invalid " + std::to_string(dataType) + ">";
}

Type mlir::tcc::onnxElementType(MLIRContext *ctx, int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case onnx::TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case onnx::TensorProto::INT64:
    return IntegerType::get(ctx, 64);
  case onnx::TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  default:
    return {};
  }
}

FailureOr<RankedTensorType> mlir::tcc::tensorType(const onnx::TensorProto &t,
                                                  StringRef what,
                                                  Location loc) {
  // DOUBLE only in constants (Constant nodes: see importConstant).
  Type elementType = t.data_type() == onnx::TensorProto::DOUBLE
                         ? Float64Type::get(loc.getContext())
                         : onnxElementType(loc.getContext(), t.data_type());
  if (!elementType)
    return emitError(loc) << what << " has element type "
                          << onnxTypeName(t.data_type())
                          << ", which the importer does not support "
                             "(supported: FLOAT, INT32, INT64, BOOL)";
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return emitError(loc) << what << " has a negative dimension in "
                          << shapeStr(shape);
  return RankedTensorType::get(shape, elementType);
}

/// Elements from the typed repeated field, or else from raw_data (the
/// little-endian bytes exporters normally use).
template <typename T, typename Field>
static FailureOr<std::vector<T>> readElements(const onnx::TensorProto &t,
                                              const Field &typed, int64_t count,
                                              StringRef what, Location loc) {
  std::vector<T> out;
  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if ((int64_t)raw.size() != count * (int64_t)sizeof(T))
      return emitError(loc)
             << what << " has " << raw.size() << " bytes of raw data, expected "
             << count * (int64_t)sizeof(T);
    out.resize(count);
    if (count)
      std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  }
  if (typed.size() != count)
    return emitError(loc) << what << " has " << typed.size()
                          << " values, expected " << count;
  out.assign(typed.begin(), typed.end());
  return out;
}

FailureOr<DenseElementsAttr>
mlir::tcc::convertTensor(const onnx::TensorProto &t, StringRef what,
                         Location loc) {
  FailureOr<RankedTensorType> type = tensorType(t, what, loc);
  if (failed(type))
    return failure();
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << what
                          << " keeps its data in an external file, which "
                             "was not loaded (import the model from its "
                             "file)";
  int64_t count = type->getNumElements();
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: {
    auto v = readElements<float>(t, t.float_data(), count, what, loc);
    if (failed(v))
      return failure();
    return DenseElementsAttr::get(*type, llvm::ArrayRef<float>(*v));
  }
  case onnx::TensorProto::DOUBLE: {
    auto v = readElements<double>(t, t.double_data(), count, what, loc);
    if (failed(v))
      return failure();
    return DenseElementsAttr::get(*type, llvm::ArrayRef<double>(*v));
  }
  case onnx::TensorProto::INT32: {
    auto v = readElements<int32_t>(t, t.int32_data(), count, what, loc);
    if (failed(v))
      return failure();
    return DenseElementsAttr::get(*type, llvm::ArrayRef<int32_t>(*v));
  }
  case onnx::TensorProto::BOOL: {
    // One byte per element in raw_data; int32_data in the typed form.
    auto v = readElements<uint8_t>(t, t.int32_data(), count, what, loc);
    if (failed(v))
      return failure();
    SmallVector<bool> bits(v->begin(), v->end());
    return DenseElementsAttr::get(*type, llvm::ArrayRef<bool>(bits));
  }
  default: {
    auto v = readElements<int64_t>(t, t.int64_data(), count, what, loc);
    if (failed(v))
      return failure();
    return DenseElementsAttr::get(*type, llvm::ArrayRef<int64_t>(*v));
  }
  }
}
