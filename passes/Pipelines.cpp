//===- Pipelines.cpp - The tcc training pipeline --------------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::tcc::generated {
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"
} // namespace mlir::tcc::generated

using namespace mlir;
using namespace mlir::tcc;

void mlir::tcc::buildTrainPipeline(OpPassManager &pm,
                                   const TrainPipelineOptions &opts) {
  // Simplifying @forward before it is differentiated shrinks the backward
  // too: subgraphs become one op with one gradient (GELU, pow by a
  // constant; see dialects/tcc/TccPatternsMath.cpp) and folds apply once.
  if (opts.optimize)
    pm.addPass(createCanonicalizerPass());
  pm.addPass(createBuildLossPass(BuildLossPassOptions{opts.loss}));
  pm.addPass(createAutodiffPass());
  if (opts.gradAccum > 1)
    pm.addPass(createAccumulateGradientsPass(
        AccumulateGradientsPassOptions{opts.gradAccum}));
  ApplyOptimizerPassOptions opt;
  opt.optimizer = opts.optimizer;
  opt.lr = opts.lr;
  opt.momentum = opts.momentum;
  opt.weightDecay = opts.weightDecay;
  pm.addPass(createApplyOptimizerPass(opt));
  if (opts.optimize) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
}

void mlir::tcc::registerTccPasses() {
  generated::registerTccPasses();
  PassPipelineRegistration<TrainPipelineOptions>(
      "tcc-train-pipeline",
      "Forward to optimized training step (loss, autodiff, optimizer, "
      "canonicalize, CSE)",
      buildTrainPipeline);
}
