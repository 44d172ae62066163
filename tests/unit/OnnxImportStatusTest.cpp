//===- OnnxImportStatusTest.cpp - "unsupported" vs "invalid" imports ------===//
//
// The ONNX backend test runner counts a model as unsupported only when the
// importer says so through OnnxImportStatus; everything else is a failure.
// These cases pin down which errors carry that tag and what they name.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccDialect.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

namespace {

/// Imports ONNX text; returns the status and whether the import succeeded.
mlir::tcc::OnnxImportStatus importText(const char *text, bool &ok) {
  onnx::ModelProto model;
  onnx::Common::Status parsed = onnx::OnnxParser::Parse(model, text);
  EXPECT_TRUE(parsed.IsOK()) << parsed.ErrorMessage();
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, mlir::func::FuncDialect>();
  // Errors are expected here; keep them off the test output.
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::tcc::OnnxImportStatus status;
  status.unsupported = true; // must be reset on success
  status.feature = "stale";
  ok = mlir::succeeded(
      mlir::tcc::importOnnxModel(&ctx, model, {}, "test.onnx", &status));
  return status;
}

struct Case {
  const char *name;
  const char *text;
  const char *feature; // "" when the failure is not "unsupported"
};

const Case kUnsupported[] = {
    {"unknown op", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (y) { y = NoSuchOp(x) })",
     "NoSuchOp"},
    {"op outside its opset rows", R"(<ir_version: 3, opset_import: ["" : 4]>
g (float[2, 3] x) => (y) { y = Reshape <shape = [3, 2]> (x) })",
     "Reshape@4"},
    {"other domain", R"(<ir_version: 8, opset_import: ["" : 17, "com.x" : 1]>
g (float[2] x) => (y) { y = com.x.Fused(x) })",
     "com.x.Fused"},
    {"no default domain",
     R"(<ir_version: 8, opset_import: ["ai.onnx.preview.training" : 1]>
g (float[2] x) => (y) { y = ai.onnx.preview.training.Adam(x) })",
     "domain ai.onnx.preview.training"},
    {"input dtype", R"(<ir_version: 8, opset_import: ["" : 17]>
g (string[2] x) => (y) { y = Identity(x) })",
     "input dtype STRING"},
    {"run-time narrow integer", R"(<ir_version: 8, opset_import: ["" : 17]>
g (uint8[2] a, uint8[2] b) => (uint8[2] y) { y = Add(a, b) })",
     "Add (run-time ui8 input)"},
    {"integer operand", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (y) <int64[2] c = {1, 2}> { y = Add(x, c) })",
     "Add (i64 input)"},
    {"non-constant shape", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, float[2] s) => (y) { y = Reshape(x, s) })",
     "Reshape (non-constant input 1)"},
    {"constant attribute", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (y) { c = Constant <value_string = "a"> () y = Identity(x) })",
     "Constant (attribute value_string)"},
};

const Case kInvalid[] = {
    {"shapes that do not broadcast", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, float[4] z) => (y) { y = Mul(x, z) })",
     ""},
    {"axis out of range", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (y) { y = Softmax <axis = 2> (x) })",
     ""},
    {"undefined input", R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (y) { y = Add(x, nowhere) })",
     ""},
};

TEST(OnnxImportStatus, UnsupportedFeaturesAreTagged) {
  for (const Case &c : kUnsupported) {
    bool ok = true;
    mlir::tcc::OnnxImportStatus status = importText(c.text, ok);
    EXPECT_FALSE(ok) << c.name;
    EXPECT_TRUE(status.unsupported) << c.name;
    EXPECT_EQ(status.feature, c.feature) << c.name;
  }
}

TEST(OnnxImportStatus, InvalidModelsAreNotUnsupported) {
  for (const Case &c : kInvalid) {
    bool ok = true;
    mlir::tcc::OnnxImportStatus status = importText(c.text, ok);
    EXPECT_FALSE(ok) << c.name;
    EXPECT_FALSE(status.unsupported) << c.name;
  }
}

TEST(OnnxImportStatus, ResetOnSuccess) {
  bool ok = false;
  mlir::tcc::OnnxImportStatus status =
      importText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (y) { y = Relu(x) })",
                 ok);
  EXPECT_TRUE(ok);
  EXPECT_FALSE(status.unsupported);
  EXPECT_EQ(status.feature, "");
}

} // namespace
