//===- Passes.h - tcc passes and the training pipeline ----------*- C++ -*-===//
#ifndef TCC_PASSES_PASSES_H
#define TCC_PASSES_PASSES_H

#include "dialects/tcc/TccDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::tcc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Options of the whole training pipeline; `tcc compile` fills them from its
/// command line, `tcc-opt --tcc-train-pipeline="..."` from the pass string.
struct TrainPipelineOptions
    : public PassPipelineOptions<TrainPipelineOptions> {
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross_entropy or mse"),
                           llvm::cl::init("cross_entropy")};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd or adamw"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                    llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("weight decay"),
                             llvm::cl::init(-1.0)};
  Option<int64_t> gradAccum{*this, "grad-accum",
                            llvm::cl::desc("micro-batches per optimizer step"),
                            llvm::cl::init(1)};
  Option<bool> optimize{*this, "optimize",
                        llvm::cl::desc("run canonicalize and CSE at the end"),
                        llvm::cl::init(true)};
};

/// forward -> train step with loss -> gradients -> optimizer update ->
/// canonicalize/CSE. The only definition of the pipeline.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &opts);

/// Registers every tcc pass and the `tcc-train-pipeline`. (The TableGen'd
/// registration, which would also be named registerTccPasses, is kept private
/// to Pipelines.cpp.)
void registerTccPasses();

} // namespace mlir::tcc

#endif // TCC_PASSES_PASSES_H
