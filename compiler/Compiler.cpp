//===- Compiler.cpp - ONNX model to training artifact ---------------------===//
//
// read ONNX -> import (@forward) -> training pipeline (@train_step) ->
// lower both functions to programs with memory plans -> write the artifact.
// Each --emit stops after one of these stages.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"

#include "compiler/OnnxModelIO.h"
#include "compiler/codegen/SchedulePrinter.h"
#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace mlir;
using ::tcc::CompileOptions;
using ::tcc::EmitKind;
namespace rt = ::tcc::rt;

static int fail(const std::string &msg) {
  llvm::errs() << "tcc compile: error: " << msg << "\n";
  return 1;
}

/// Writes text output to a file (atomically, through a temporary) or stdout.
static int emitText(const std::string &path, const std::string &text) {
  if (path.empty() || path == "-") {
    llvm::outs() << text;
    return 0;
  }
  std::string err;
  auto out = openOutputFile(path, &err);
  if (!out)
    return fail(err);
  out->os() << text;
  out->keep();
  return 0;
}

static std::string printModule(ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os);
  return s;
}

static std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

int ::tcc::compileModel(const CompileOptions &opts) {
  onnx::ModelProto model;
  std::string err;
  if (!::tcc::readOnnxModel(opts.input, model, err))
    return fail(err);

  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, func::FuncDialect>();
  mlir::tcc::OnnxImportOptions importOpts;
  importOpts.batch = opts.batch;
  importOpts.frozen = opts.frozen;
  auto imported = mlir::tcc::importOnnxModel(&ctx, model, importOpts, opts.input);
  if (failed(imported))
    return 1;
  ModuleOp module = imported->get();
  if (opts.emit == EmitKind::Tcc)
    return emitText(opts.output, printModule(module));

  mlir::tcc::TrainPipelineOptions pipe;
  pipe.loss = opts.loss;
  pipe.optimizer = opts.optimizer;
  pipe.lr = opts.lr;
  pipe.momentum = opts.momentum;
  pipe.weightDecay = opts.weightDecay;
  pipe.gradAccum = opts.gradAccum;
  pipe.optimize = opts.emit != EmitKind::Train;
  PassManager pm(&ctx);
  mlir::tcc::buildTrainPipeline(pm, pipe);
  if (failed(pm.run(module)))
    return 1;
  if (opts.emit == EmitKind::Train || opts.emit == EmitKind::Optimized)
    return emitText(opts.output, printModule(module));

  // Initial parameter values come from the ONNX initializers.
  std::map<std::string, std::vector<float>> initial;
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT)
      continue;
    if (!::tcc::initializerFloats(t, initial[t.name()], err))
      return fail(opts.input + ": " + err);
  }

  rt::Artifact artifact;
  ::tcc::ScheduleBuilder builder(artifact, initial);
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!train || !forward)
    return fail("the pipeline did not produce @train_step and @forward");
  // With gradient accumulation, "accumulate" runs per micro-batch and
  // "train_step" applies the optimizer once per K micro-batches.
  if (auto acc = module.lookupSymbol<func::FuncOp>("accumulate_step"))
    if (failed(builder.lower(acc, "accumulate")))
      return 1;
  if (failed(builder.lower(train, "train_step")) ||
      failed(builder.lower(forward, "forward")))
    return 1;

  std::string bytes;
  model.SerializeToString(&bytes);
  artifact.onnxOffset = artifact.addBlob(bytes.data(), bytes.size());
  artifact.onnxSize = (int64_t)bytes.size();
  auto batchAttr = module->getAttrOfType<IntegerAttr>("tcc.batch");
  artifact.meta["source"] = opts.input;
  artifact.meta["batch"] = batchAttr ? std::to_string(batchAttr.getInt()) : "?";
  artifact.meta["loss"] = opts.loss;
  artifact.meta["grad_accum"] = std::to_string(std::max<int64_t>(opts.gradAccum, 1));
  artifact.meta["precision"] = "fp32";
  artifact.meta["target"] = "cpu";
  if (auto o = module->getAttrOfType<DictionaryAttr>("tcc.optimizer")) {
    for (NamedAttribute a : o) {
      std::string key = "optimizer." + a.getName().str();
      if (auto f = dyn_cast<FloatAttr>(a.getValue()))
        artifact.meta[key] = fmt(f.getValueAsDouble());
      else if (auto s = dyn_cast<StringAttr>(a.getValue()))
        artifact.meta[key] = s.str();
    }
  }

  if (opts.emit == EmitKind::Schedule) {
    std::ostringstream os;
    ::tcc::printSchedule(artifact, os);
    return emitText(opts.output, os.str());
  }
  if (opts.output.empty() || opts.output == "-")
    return fail("an artifact needs an output file (-o model.tcc)");
  try {
    rt::writeArtifact(artifact, opts.output);
  } catch (const rt::Error &e) {
    return fail(e.what());
  }
  return 0;
}
