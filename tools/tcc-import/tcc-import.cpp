//===- tcc-import.cpp - Print the tcc IR an ONNX model imports to ---------===//
//
//   tcc-import <model.onnx|model.onnxtxt> [--batch N] [--freeze a,b]
//              [--trainable c] [-o out]
//
// Exits 1 after printing diagnostics when the model cannot be imported.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccDialect.h"
#include "frontends/onnx/OnnxDiagnostics.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx|model.onnxtxt>"));
static cl::opt<int64_t>
    batch("batch", cl::init(-1),
          cl::desc("Batch size: fixes the first dimension of graph inputs"));
static cl::list<std::string>
    freeze("freeze", cl::CommaSeparated,
           cl::desc("Initializers to keep as constants: names or glob "
                    "patterns (a,'b*',...)"));
static cl::list<std::string> trainable(
    "trainable", cl::CommaSeparated,
    cl::desc("The float initializers that train (names or glob patterns); "
             "the rest are constants"));
static cl::opt<bool> batchNormTrain(
    "batchnorm-train",
    cl::desc("Every BatchNormalization trains (tcc compile --batchnorm=train)"));
static cl::opt<std::string> outputPath("o", cl::init("-"),
                                       cl::desc("Output file (default stdout)"),
                                       cl::value_desc("file"));

/// "file: error: message".
static LogicalResult printDiagnostic(Diagnostic &diag) {
  tcc::printOnnxDiagnostic(diag, "");
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-print-debuginfo and friends, for tests that check locations.
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "tcc ONNX importer\n");

  DialectRegistry registry;
  registry.insert<tcc::TccDialect, func::FuncDialect>();
  MLIRContext ctx(registry);
  ctx.getDiagEngine().registerHandler(printDiagnostic);

  tcc::OnnxImportOptions opts;
  opts.batch = batch;
  opts.frozen.assign(freeze.begin(), freeze.end());
  opts.trainable.assign(trainable.begin(), trainable.end());
  opts.batchNormTrain = batchNormTrain;
  FailureOr<OwningOpRef<ModuleOp>> module =
      tcc::importOnnxFile(&ctx, inputPath, opts);
  if (failed(module) || failed(verify(**module)))
    return 1;

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(outputPath, &error);
  if (!out) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  (*module)->print(out->os());
  out->os() << "\n";
  out->keep();
  return 0;
}
