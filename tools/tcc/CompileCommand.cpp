//===- CompileCommand.cpp - tcc compile -----------------------------------===//
#include "compiler/Compiler.h"
#include "tools/tcc/Commands.h"

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx | model.onnxtxt>"),
                                  cl::sub(tool::compileCmd));
static cl::opt<std::string> output("o", cl::desc("Output file ('-': stdout)"),
                                   cl::value_desc("file"), cl::init("-"),
                                   cl::sub(tool::compileCmd));
static cl::opt<int64_t> batch("batch",
                              cl::desc("Batch size (fixes a dynamic first "
                                       "dimension of the inputs)"),
                              cl::init(-1), cl::sub(tool::compileCmd));
static cl::opt<std::string> loss("loss", cl::desc("cross_entropy or mse"),
                                 cl::init("cross_entropy"),
                                 cl::sub(tool::compileCmd));
static cl::opt<std::string> optimizer("optimizer", cl::desc("sgd or adamw"),
                                      cl::init("adamw"),
                                      cl::sub(tool::compileCmd));
static cl::opt<double> lr("lr",
                          cl::desc("Learning rate (default 1e-3 for adamw, "
                                   "1e-2 for sgd)"),
                          cl::init(-1), cl::sub(tool::compileCmd));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"),
                                cl::init(0), cl::sub(tool::compileCmd));
static cl::opt<double> weightDecay("weight-decay",
                                   cl::desc("Weight decay (default 0.01 for "
                                            "adamw, 0 for sgd)"),
                                   cl::init(-1), cl::sub(tool::compileCmd));
static cl::opt<int64_t> gradAccum(
    "grad-accum",
    cl::desc("Accumulate gradients over K micro-batches of --batch samples "
             "per optimizer step (the update of one batch K times larger)"),
    cl::init(1), cl::value_desc("K"), cl::sub(tool::compileCmd));
static cl::list<std::string> freeze("freeze",
                                    cl::desc("Initializers to keep constant"),
                                    cl::CommaSeparated,
                                    cl::sub(tool::compileCmd));
static cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Artifact),
    cl::values(
        clEnumValN(EmitKind::Artifact, "artifact", "the .tcc artifact"),
        clEnumValN(EmitKind::Tcc, "tcc", "imported IR (@forward)"),
        clEnumValN(EmitKind::Train, "train",
                   "training step after loss, autodiff and optimizer"),
        clEnumValN(EmitKind::Optimized, "optimized",
                   "training step after the whole pipeline"),
        clEnumValN(EmitKind::Schedule, "schedule",
                   "lowered programs, one kernel call per line")),
    cl::sub(tool::compileCmd));

int tool::runCompile() {
  CompileOptions o;
  o.input = input;
  o.output = output;
  o.emit = emit;
  o.batch = batch;
  o.frozen.assign(freeze.begin(), freeze.end());
  o.loss = loss;
  o.optimizer = optimizer;
  o.lr = lr;
  o.momentum = momentum;
  o.weightDecay = weightDecay;
  if (gradAccum < 1) {
    llvm::errs() << "tcc compile: error: --grad-accum must be at least 1, got "
                 << gradAccum << "\n";
    return 1;
  }
  o.gradAccum = gradAccum;
  return compileModel(o);
}
