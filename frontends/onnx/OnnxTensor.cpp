//===- OnnxTensor.cpp - ONNX TensorProto -> MLIR attributes ---------------===//
//
// Float types become f32: FLOAT16 and BFLOAT16 exactly, DOUBLE rounded
// (tcc computes float64 in float32, as JAX does without x64). Integer types
// keep their width and signedness (i8, ui8, ..., i64; bool is i1) so that
// folding wraps as ONNX does; at run time they are i64. Anything else
// (strings, float8, int4) is an error naming the tensor, not a silent
// conversion.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include "runtime/core/prelude/Half.h"

#include <cstring>
#include <iterator>
#include <type_traits>

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
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return Float32Type::get(ctx);
  case onnx::TensorProto::INT8:
    return IntegerType::get(ctx, 8);
  case onnx::TensorProto::INT16:
    return IntegerType::get(ctx, 16);
  case onnx::TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case onnx::TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case onnx::TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case onnx::TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
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
  Type elementType = onnxElementType(loc.getContext(), t.data_type());
  if (!elementType)
    return emitError(loc) << what << " has element type "
                          << onnxTypeName(t.data_type())
                          << ", which the importer does not support "
                             "(supported: "
                          << kSupportedOnnxTypes << ")";
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
  // Integers of every width: read as T, stored as APInts of the type's width.
  auto ints = [&](auto tag, const auto &field) -> FailureOr<DenseElementsAttr> {
    using T = decltype(tag);
    auto v = readElements<T>(t, field, count, what, loc);
    if (failed(v))
      return failure();
    unsigned bits = type->getElementType().getIntOrFloatBitWidth();
    SmallVector<APInt> a;
    a.reserve(count);
    for (T x : *v)
      a.push_back(APInt(bits, (uint64_t)(int64_t)x, std::is_signed_v<T>,
                        /*implicitTrunc=*/true));
    return DenseElementsAttr::get(*type, a);
  };
  auto floats =
      [&](auto tag, const auto &field,
          float (*widen)(decltype(tag))) -> FailureOr<DenseElementsAttr> {
    auto v = readElements<decltype(tag)>(t, field, count, what, loc);
    if (failed(v))
      return failure();
    SmallVector<float> f;
    f.reserve(count);
    for (auto x : *v)
      f.push_back(widen(x));
    return DenseElementsAttr::get(*type, ArrayRef<float>(f));
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    return floats(float(), t.float_data(), [](float x) { return x; });
  case onnx::TensorProto::DOUBLE:
    return floats(double(), t.double_data(),
                  [](double x) { return static_cast<float>(x); });
  case onnx::TensorProto::FLOAT16:
    // The typed form keeps the 16 bits in int32_data.
    return floats(uint16_t(), t.int32_data(),
                  [](uint16_t h) { return ::tcc::rt::f16ToF32(h); });
  case onnx::TensorProto::BFLOAT16:
    return floats(uint16_t(), t.int32_data(),
                  [](uint16_t h) { return ::tcc::rt::bf16ToF32(h); });
  case onnx::TensorProto::BOOL: {
    // One byte per element in raw_data; int32_data in the typed form.
    auto v = readElements<uint8_t>(t, t.int32_data(), count, what, loc);
    if (failed(v))
      return failure();
    SmallVector<bool> bits(v->begin(), v->end());
    return DenseElementsAttr::get(*type, llvm::ArrayRef<bool>(bits));
  }
  case onnx::TensorProto::INT8:
    return ints(int8_t(), t.int32_data());
  case onnx::TensorProto::INT16:
    return ints(int16_t(), t.int32_data());
  case onnx::TensorProto::INT32:
    return ints(int32_t(), t.int32_data());
  case onnx::TensorProto::UINT8:
    return ints(uint8_t(), t.int32_data());
  case onnx::TensorProto::UINT16:
    return ints(uint16_t(), t.int32_data());
  case onnx::TensorProto::UINT32:
    return ints(uint32_t(), t.uint64_data());
  case onnx::TensorProto::UINT64:
    return ints(uint64_t(), t.uint64_data());
  default:
    return ints(int64_t(), t.int64_data());
  }
}
