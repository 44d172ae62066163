//===- TestTensors.cpp - Decoding and comparing backend test tensors ------===//
#include "tools/tcc-onnx-tests/TestTensors.h"

#include "runtime/core/HostDType.h"
#include "runtime/core/prelude/Half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace tcc;
using namespace tcc::onnxtests;

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

static std::string typeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(dataType));
  return "<invalid " + std::to_string(dataType) + ">";
}

bool onnxtests::readTensorFile(const std::string &path,
                               onnx::TensorProto &tensor, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!tensor.ParseFromString(bytes.str())) {
    error = path + ": not a serialized TensorProto";
    return false;
  }
  return true;
}

/// Appends `count` values of the little-endian element type T from `raw`,
/// converted to Out.
template <typename T, typename Out>
static bool fromRaw(const std::string &raw, int64_t count,
                    std::vector<Out> &out, std::string &error) {
  if ((int64_t)raw.size() != count * (int64_t)sizeof(T)) {
    error = "has " + std::to_string(raw.size()) +
            " bytes of raw data, expected " +
            std::to_string(count * (int64_t)sizeof(T));
    return false;
  }
  out.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<Out>(v);
  }
  return true;
}

template <typename Field, typename Out>
static bool fromField(const Field &field, int64_t count, std::vector<Out> &out,
                      std::string &error) {
  if (field.size() != count) {
    error = "has " + std::to_string(field.size()) + " values, expected " +
            std::to_string(count);
    return false;
  }
  out.assign(field.begin(), field.end());
  return true;
}

/// raw_data holds T; otherwise the typed field does (converted).
template <typename T, typename Field, typename Out>
static bool decodeAs(const onnx::TensorProto &t, const Field &field,
                     int64_t count, std::vector<Out> &out, std::string &error) {
  return t.has_raw_data() ? fromRaw<T>(t.raw_data(), count, out, error)
                          : fromField(field, count, out, error);
}

bool onnxtests::decodeTensor(const onnx::TensorProto &t, HostTensor &out,
                             std::string &error) {
  out = HostTensor();
  out.name = t.name();
  out.dataType = t.data_type();
  out.dims.assign(t.dims().begin(), t.dims().end());
  std::string why;
  bool ok = false;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    why = "keeps its data in an external file";
  } else {
    int64_t n = out.numElements();
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      out.isFloat = true;
      ok = decodeAs<float>(t, t.float_data(), n, out.floats, why);
      break;
    case onnx::TensorProto::DOUBLE:
      out.isFloat = true;
      ok = decodeAs<double>(t, t.double_data(), n, out.floats, why);
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      // 16-bit words (the typed form keeps them in int32_data), widened
      // exactly.
      out.isFloat = true;
      std::vector<int64_t> words;
      ok = decodeAs<uint16_t>(t, t.int32_data(), n, words, why);
      bool isF16 = t.data_type() == onnx::TensorProto::FLOAT16;
      for (int64_t w : words)
        out.floats.push_back(isF16 ? rt::f16ToF32(static_cast<uint16_t>(w))
                                   : rt::bf16ToF32(static_cast<uint16_t>(w)));
      break;
    }
    case onnx::TensorProto::INT64:
      ok = decodeAs<int64_t>(t, t.int64_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::INT32:
      ok = decodeAs<int32_t>(t, t.int32_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::INT16:
      ok = decodeAs<int16_t>(t, t.int32_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::INT8:
      ok = decodeAs<int8_t>(t, t.int32_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::UINT16:
      ok = decodeAs<uint16_t>(t, t.int32_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      ok = decodeAs<uint8_t>(t, t.int32_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::UINT32:
      ok = decodeAs<uint32_t>(t, t.uint64_data(), n, out.ints, why);
      break;
    case onnx::TensorProto::UINT64:
      ok = decodeAs<uint64_t>(t, t.uint64_data(), n, out.ints, why);
      break;
    default:
      why = "has element type " + typeName(t.data_type()) +
            ", which the runner cannot decode";
    }
  }
  if (!ok)
    error = "tensor '" + t.name() + "' " + why;
  return ok;
}

/// The host type an ONNX element type is declared as (Native for FLOAT,
/// INT64 and BOOL, which the runtime holds as themselves).
static rt::HostDType hostDTypeOf(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::DOUBLE:
    return rt::HostDType::F64;
  case onnx::TensorProto::FLOAT16:
    return rt::HostDType::F16;
  case onnx::TensorProto::BFLOAT16:
    return rt::HostDType::BF16;
  case onnx::TensorProto::INT8:
    return rt::HostDType::I8;
  case onnx::TensorProto::INT16:
    return rt::HostDType::I16;
  case onnx::TensorProto::INT32:
    return rt::HostDType::I32;
  case onnx::TensorProto::UINT8:
    return rt::HostDType::U8;
  case onnx::TensorProto::UINT16:
    return rt::HostDType::U16;
  case onnx::TensorProto::UINT32:
    return rt::HostDType::U32;
  case onnx::TensorProto::UINT64:
    return rt::HostDType::U64;
  default:
    return rt::HostDType::Native;
  }
}

/// What a host reads from an output: the runtime's values converted to the
/// declared type (f32 rounded to f16, i64 wrapped to u8...) and widened back
/// to double or int64 for comparison.
static void readOutput(const rt::TensorInfo &info, const void *data,
                       std::vector<double> &floats,
                       std::vector<int64_t> &ints) {
  int64_t n = info.numElements();
  rt::HostDType h = info.hostDType;
  if (h == rt::HostDType::Native) {
    for (int64_t i = 0; i < n; ++i) {
      if (info.dtype == rt::DType::F32)
        floats.push_back(static_cast<const float *>(data)[i]);
      else
        ints.push_back(static_cast<const int64_t *>(data)[i]);
    }
    return;
  }
  std::vector<uint8_t> host(n * rt::hostDTypeSize(h));
  rt::runtimeToHost(info.dtype, data, h, host.data(), n);
  HostTensor t;
  onnx::TensorProto proto;
  for (int32_t dt = onnx::TensorProto::FLOAT; dt <= onnx::TensorProto::BFLOAT16;
       ++dt)
    if (hostDTypeOf(dt) == h)
      proto.set_data_type(dt);
  proto.add_dims(n);
  proto.set_raw_data(host.data(), host.size());
  std::string error;
  decodeTensor(proto, t, error);
  floats = std::move(t.floats);
  ints = std::move(t.ints);
}

static std::string shapeString(const std::vector<int64_t> &dims) {
  return rt::formatShape(dims);
}

bool onnxtests::fillBuffer(const rt::TensorInfo &info, void *data,
                           const HostTensor &value, std::string &error) {
  if (info.shape != value.dims) {
    error = "input '" + info.name + "' has shape " + shapeString(info.shape) +
            " in the artifact but " + shapeString(value.dims) +
            " in the test data";
    return false;
  }
  int64_t n = value.numElements();
  if (info.hostDType != rt::HostDType::Native &&
      hostDTypeOf(value.dataType) != info.hostDType) {
    error = "input '" + info.name + "' is declared " +
            rt::hostDTypeName(info.hostDType) + " in the artifact but " +
            typeName(value.dataType) + " in the test data";
    return false;
  }
  if (info.dtype == rt::DType::F32 && value.isFloat) {
    float *out = static_cast<float *>(data);
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(value.floats[i]);
    return true;
  }
  if (info.dtype == rt::DType::I64 && !value.isFloat) {
    if (n)
      std::memcpy(data, value.ints.data(), n * sizeof(int64_t));
    return true;
  }
  error = "input '" + info.name + "' is " + rt::dtypeName(info.dtype) +
          " in the artifact but " + typeName(value.dataType) +
          " in the test data";
  return false;
}

/// numpy.isclose(actual, expected, rtol, atol, equal_nan=True).
static bool isClose(double actual, double expected, Tolerance tol) {
  if (std::isnan(actual) || std::isnan(expected))
    return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected))
    return actual == expected;
  return std::fabs(actual - expected) <=
         tol.atol + tol.rtol * std::fabs(expected);
}

std::string onnxtests::compareOutput(const rt::TensorInfo &info,
                                     const void *data,
                                     const HostTensor &expected,
                                     Tolerance tol) {
  bool typesAgree = info.hostDType != rt::HostDType::Native
                        ? hostDTypeOf(expected.dataType) == info.hostDType
                        : (info.dtype == rt::DType::F32 &&
                           expected.dataType == onnx::TensorProto::FLOAT) ||
                              (info.dtype == rt::DType::I64 &&
                               (expected.dataType == onnx::TensorProto::INT64 ||
                                expected.dataType == onnx::TensorProto::BOOL));
  if (!typesAgree)
    return std::string("element type ") + rt::dtypeName(info.dtype) +
           (info.hostDType != rt::HostDType::Native
                ? std::string(" (declared ") +
                      rt::hostDTypeName(info.hostDType) + ")"
                : std::string()) +
           ", expected " + typeName(expected.dataType);
  if (info.shape != expected.dims)
    return "shape " + shapeString(info.shape) + ", expected " +
           shapeString(expected.dims);

  // bfloat16 data differs by rounding convention: ONNX 1.12's tests
  // truncate float32 to bfloat16, later ones (and tcc) round to nearest
  // even. One unit in the last place of bfloat16 (2^-7 relative at most)
  // covers both and nothing more.
  if (info.hostDType == rt::HostDType::BF16)
    tol.rtol = std::max(tol.rtol, 1.0 / 128);
  int64_t n = expected.numElements(), bad = 0, first = -1;
  double maxErr = 0;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  readOutput(info, data, floats, ints);
  auto actualAt = [&](int64_t i) -> double {
    return info.dtype == rt::DType::F32 ? floats[i] : (double)ints[i];
  };
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (info.dtype == rt::DType::F32) {
      double a = actualAt(i), e = expected.floats[i];
      ok = isClose(a, e, tol);
      if (!ok && std::isfinite(a) && std::isfinite(e))
        maxErr = std::max(maxErr, std::fabs(a - e));
    } else {
      ok = ints[i] == expected.ints[i];
    }
    if (!ok) {
      if (first < 0)
        first = i;
      ++bad;
    }
  }
  if (!bad)
    return "";
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << n << " elements differ; first at flat index " << first
     << ": got " << actualAt(first) << ", expected "
     << (expected.isFloat ? expected.floats[first]
                          : (double)expected.ints[first]);
  if (info.dtype == rt::DType::F32)
    os << " (largest |error| " << maxErr << ", rtol " << tol.rtol << ", atol "
       << tol.atol << ")";
  return os.str();
}

bool onnxtests::perturb(HostTensor &t) {
  if (!t.isFloat) {
    if (t.ints.empty())
      return false;
    t.ints[0] += 1;
    return true;
  }
  for (double &v : t.floats) {
    if (std::isfinite(v)) {
      // 1% of max(1, |v|): ten times the relative tolerance and far above
      // the absolute one, whatever the magnitude.
      v += 1e-2 * (1.0 + std::fabs(v));
      return true;
    }
  }
  return false;
}
