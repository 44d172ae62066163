//===- TestTensors.h - Test-data tensors of the ONNX backend suite -*- C++
//-*-===//
//
// The backend test suite stores each input and expected output as a
// serialized TensorProto (test_data_set_N/{input,output}_i.pb). These helpers
// decode them to host values, feed them to a Session and compare outputs the
// way onnx.backend.test does (numpy.testing.assert_allclose).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TOOLS_TCC_ONNX_TESTS_TESTTENSORS_H
#define TCC_TOOLS_TCC_ONNX_TESTS_TESTTENSORS_H

#include "runtime/core/Artifact.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::onnxtests {

/// A decoded tensor: floating-point types as double (exact for FLOAT and
/// DOUBLE), integer and BOOL types as int64.
struct HostTensor {
  std::string name;
  int32_t dataType = 0; // onnx::TensorProto::DataType
  std::vector<int64_t> dims;
  bool isFloat = false;
  std::vector<double> floats; // when isFloat
  std::vector<int64_t> ints;  // otherwise

  int64_t numElements() const;
};

/// Parses a serialized TensorProto file.
bool readTensorFile(const std::string &path, onnx::TensorProto &tensor,
                    std::string &error);

/// Decodes FLOAT, DOUBLE, FLOAT16, BFLOAT16, the integer types and BOOL
/// from raw_data or the typed fields; other types (STRING, ...) are an
/// error.
bool decodeTensor(const onnx::TensorProto &tensor, HostTensor &out,
                  std::string &error);

/// Writes `value` into a runtime buffer of `info`'s type and shape; fails on
/// a shape or type that does not fit.
bool fillBuffer(const rt::TensorInfo &info, void *data, const HostTensor &value,
                std::string &error);

/// numpy.testing.assert_allclose tolerances; onnx.backend.test's defaults.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

/// Compares what the runtime produced (`info`, `data`) with `expected`:
/// element types must correspond (f32 <-> FLOAT, i64 <-> INT64) and shapes
/// agree; floats match when |actual - expected| <= atol + rtol * |expected|
/// (NaN matches NaN, infinities match exactly), integers exactly. Returns ""
/// on a match, else what differs (first mismatch, count, largest error).
/// An output the artifact declares of another type (hostDType: f64, f16,
/// bf16, i32, u8...) is converted to it first, as a host reads it, and
/// compared with data of that type; bf16 within one bfloat16 ulp (rtol
/// 2^-7), since reference data truncates or rounds by ONNX version.
std::string compareOutput(const rt::TensorInfo &info, const void *data,
                          const HostTensor &expected, Tolerance tol);

/// Moves one element of `t` far outside any tolerance (for --self-test).
/// False when `t` has no finite element to change.
bool perturb(HostTensor &t);

} // namespace tcc::onnxtests

#endif // TCC_TOOLS_TCC_ONNX_TESTS_TESTTENSORS_H
