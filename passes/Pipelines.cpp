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
  // Attention before anything is differentiated (its gradient rule is the
  // point), after the canonicalizer has folded exporters' `* 1.0`s.
  if (opts.fuseAttention)
    pm.addNestedPass<func::FuncOp>(createFuseAttentionPass());
  // Layout changes next, on the forward (so the backward has none), after
  // fused attention took the head transposes it reads sequence-major.
  if (opts.optimize)
    pm.addNestedPass<func::FuncOp>(createSinkTransposesPass());
  // LoRA on @forward, before the loss clones it into @train_step (both get
  // the adapters) and after the canonical forms above (a Gemm's weight is
  // the right operand of one tcc.matmul by then).
  if (opts.loraRank > 0) {
    LoraPassOptions lora;
    lora.rank = opts.loraRank;
    lora.alpha = opts.loraAlpha;
    lora.targets.assign(opts.loraTargets.begin(), opts.loraTargets.end());
    lora.seed = opts.loraSeed;
    pm.addPass(createLoraPass(lora));
  }
  // Taps that read only padding: on the forward (autodiff then sees the
  // smaller convolutions), after LoRA, which rejects convolution weights.
  if (opts.optimize && opts.trimConvTaps)
    pm.addNestedPass<func::FuncOp>(
        createTrimConvTapsPass(TrimConvTapsPassOptions{opts.convGemm}));
  pm.addPass(createBuildLossPass(
      BuildLossPassOptions{opts.loss, opts.ignoreIndex, opts.labelSmoothing}));
  // Cut cross-entropy: on the loss tcc-build-loss appended, before autodiff
  // (the fused op's gradient rule is what avoids storing the logits).
  if (opts.cutCrossEntropy)
    pm.addPass(createCutCrossEntropyPass(CutCrossEntropyPassOptions{
        opts.cutCrossEntropyBlock, opts.cutCrossEntropyMinClasses}));
  pm.addPass(createAutodiffPass());
  if (opts.gradAccum > 1)
    pm.addPass(createAccumulateGradientsPass(
        AccumulateGradientsPassOptions{opts.gradAccum}));
  // Data parallelism: once per optimizer step, before clipping takes the
  // norm (of the averaged gradients, the same on every rank).
  if (opts.dataParallel)
    pm.addPass(createAllReduceGradientsPass(
        AllReduceGradientsPassOptions{opts.bucketBytes}));
  // Clipping: of the accumulated gradients of the whole batch, before the
  // optimizer reads them.
  if (opts.clipGradNorm != 0 || opts.trackGradNorm)
    pm.addPass(createClipGradientsPass(
        ClipGradientsPassOptions{opts.clipGradNorm, opts.trackGradNorm}));
  ApplyOptimizerPassOptions opt;
  opt.optimizer = opts.optimizer;
  opt.lr = opts.lr;
  opt.momentum = opts.momentum;
  opt.weightDecay = opts.weightDecay;
  opt.nesterov = opts.nesterov;
  opt.beta1 = opts.beta1;
  opt.beta2 = opts.beta2;
  opt.eps = opts.eps;
  opt.noDecay.assign(opts.noDecay.begin(), opts.noDecay.end());
  pm.addPass(createApplyOptimizerPass(opt));
  // ZeRO stage 1: the updates of the averaged gradients, on 1/N each.
  if (opts.dataParallel && opts.zeroShards > 0)
    pm.addPass(createShardOptimizerStatePass(
        ShardOptimizerStatePassOptions{opts.zeroShards}));
  if (opts.optimize) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (opts.optimize && (opts.padMultiple > 0 || opts.padVocabMultiple > 0)) {
    PadShapesPassOptions pad;
    pad.multiple = opts.padMultiple;
    pad.vocabMultiple = opts.padVocabMultiple;
    pm.addPass(createPadShapesPass(pad));
  }
  // Mixed precision: after the step is complete (it casts the backward and
  // wraps the optimizer for fp16 loss scaling), before the last CSE.
  if (opts.precision != "fp32") {
    pm.addPass(
        createMixedPrecisionPass(MixedPrecisionPassOptions{opts.precision}));
    if (opts.optimize) {
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
    // After CSE, which leaves one cast per weight to replace.
    if (opts.optimize && opts.shadowWeights)
      pm.addPass(createShadowWeightsPass());
  }
  // Optimizer offload: once the update is final (fp16's skip, the shadow
  // weights), before the passes that schedule and fuse each function.
  if (opts.offloadOptimizer)
    pm.addPass(createOffloadOptimizerPass());
  // After the last CSE, which would merge the recomputed ops back.
  if (opts.optimize && opts.memoryBudget > 0)
    pm.addNestedPass<func::FuncOp>(createRematerializePass(
        RematerializePassOptions{opts.memoryBudget, opts.recompute}));
  // GEMM epilogues: after padding and mixed precision (it sees the final
  // GEMMs and their 16-bit bias adds) and rematerialization (recomputed
  // GEMMs fold too), before fusion, which would take the bias adds.
  if (opts.optimize && opts.gemmEpilogue)
    pm.addNestedPass<func::FuncOp>(createGemmEpiloguePass(
        GemmEpiloguePassOptions{opts.fuse && opts.fuseColumnSums}));
  // Fused-QKV attention: after autodiff (that form has no gradient rule)
  // and rematerialization (whose recomputed attention packs too), before
  // fusion and memory planning, which then see no slices of the projection.
  if (opts.optimize && opts.fuseAttention)
    pm.addNestedPass<func::FuncOp>(createPackAttentionPass(
        PackAttentionPassOptions{opts.fuse && opts.fuseColumnSums}));
  // Fusion: after rematerialization (whose recomputed ops fuse too), before
  // memory planning (which then plans the fused regions' outputs).
  if (opts.optimize && opts.fuse)
    pm.addNestedPass<func::FuncOp>(
        createFusePass(FusePassOptions{opts.fuseColumnSums}));
  // Last: it orders the final ops (keep it after every pass that adds ops).
  if (opts.optimize && opts.planMemory)
    pm.addPass(createPlanMemoryPass());
}

void mlir::tcc::registerTccPasses() {
  generated::registerTccPasses();
  PassPipelineRegistration<TrainPipelineOptions>(
      "tcc-train-pipeline",
      "Forward to optimized training step (loss, autodiff, optimizer, "
      "canonicalize, CSE)",
      buildTrainPipeline);
}
