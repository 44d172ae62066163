//===- BackendTest.h - One ONNX backend node test through tcc ----*- C++
//-*-===//
//
// A test is a directory with model.onnx and test_data_set_N/ holding
// input_i.pb and output_i.pb. Running it: import the model (forward only),
// lower @forward to one program, run it in the compiled and in the eager
// Session, and compare every output with the expected tensor.
//
// Three rules adapt the suite to a compiler that knows every shape statically
// (as tcc does, and as any runtime that specializes on the data it is given
// would):
//  * graph inputs take their shapes from the test data, so symbolic
//    dimensions become the concrete ones of the data set;
//  * integer graph inputs (INT64, INT32, and the narrower and unsigned
//    types, which tcc folds in their own width; the suite uses them for shapes,
//    axes, indices, pads, repeats...) become initializers holding the test
//    data, i.e. constants the importer folds, instead of runtime inputs.
//    Integer tensors never flow through tcc's IR as data.
//  * float or bool graph inputs that a node reads as a compile-time
//    constant (Clip's min and max, which tcc bakes into its kernel; Resize's
//    roi and scales, Upsample's scales, Compress's condition and OneHot's
//    depth, which fix the output's shape) become frozen
//    initializers alike: the value a deployed model would hold there.
//  * tcc computes DOUBLE in float32: a data set whose DOUBLE inputs or
//    expected outputs hold finite values beyond float32's range is
//    unsupported ("DOUBLE values beyond float32"), not failed. BFLOAT16
//    data stored as UINT16 words (numpy has no bfloat16) is read as the
//    BFLOAT16 the graph declares.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TOOLS_TCC_ONNX_TESTS_BACKENDTEST_H
#define TCC_TOOLS_TCC_ONNX_TESTS_BACKENDTEST_H

#include "tools/tcc-onnx-tests/TestTensors.h"

#include <string>
#include <vector>

namespace tcc::onnxtests {

struct BackendTest {
  /// "<suite>/<test>", e.g. "node/test_add"; what --filter matches.
  std::string id;
  std::string dir;
};

/// Every test directory (one holding model.onnx) under `root`/<suite>, for
/// each suite, sorted by id. Fails when a suite directory is missing.
bool discoverTests(const std::string &root,
                   const std::vector<std::string> &suites,
                   std::vector<BackendTest> &tests, std::string &error);

enum class Outcome { Passed, Failed, Unsupported };

struct RunOptions {
  Tolerance tolerance;
  /// Also run the eager Session (the compiled one always runs).
  bool eager = true;
  /// --self-test: change one expected element before comparing.
  bool perturb = false;
};

struct TestResult {
  Outcome outcome = Outcome::Passed;
  /// Unsupported: the importer's OnnxImportStatus::feature.
  std::string feature;
  /// Failed: why, naming the data set, mode and output.
  std::string message;
  /// Diagnostics the importer and the code generator emitted.
  std::string diagnostics;
  /// Failed because an output differs from the expected tensor (as opposed
  /// to an import, lowering or runtime error).
  bool mismatch = false;
  /// With RunOptions::perturb: an expected tensor was changed.
  bool perturbed = false;
};

TestResult runBackendTest(const BackendTest &test, const RunOptions &opts);

} // namespace tcc::onnxtests

#endif // TCC_TOOLS_TCC_ONNX_TESTS_BACKENDTEST_H
