//===- FuzzOnnxImport.cpp - libFuzzer target for the ONNX importer --------===//
//
// Bytes -> onnx::ModelProto -> importOnnxModel -> verified tcc IR. Models are
// untrusted input: whatever the bytes, the importer must either produce IR
// that passes the verifier or fail with at least one error diagnostic. A
// crash, a sanitizer report, a success whose IR does not verify, or a
// failure without a diagnostic is a bug.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccDialect.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstdlib>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  onnx::ModelProto model;
  // Bytes protobuf rejects never reach the importer (tcc reports them as "not
  // an ONNX model" before importing); they exercise only libprotobuf.
  if (!model.ParseFromArray(data, static_cast<int>(size)))
    return 0;

  // A fresh context per input: nothing uniqued by one input (large constant
  // attributes) outlives it, so memory stays flat over long runs.
  DialectRegistry registry;
  registry.insert<tcc::TccDialect, func::FuncDialect>();
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  int errors = 0;
  ctx.getDiagEngine().registerHandler([&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return success();
  });

  tcc::OnnxImportOptions opts;
  auto module = tcc::importOnnxModel(&ctx, model, opts, "fuzz.onnx");
  if (failed(module)) {
    if (errors == 0) {
      fprintf(stderr, "importOnnxModel failed without an error diagnostic\n");
      abort();
    }
    return 0;
  }
  if (failed(verify(module->get()))) {
    fprintf(stderr, "importOnnxModel succeeded but the IR does not verify\n");
    abort();
  }
  return 0;
}
