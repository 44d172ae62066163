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
                           llvm::cl::desc("cross_entropy, mse or "
                                          "output:NAME"),
                           llvm::cl::init("cross_entropy")};
  Option<int64_t> ignoreIndex{
      *this, "ignore-index",
      llvm::cl::desc("cross_entropy: label of positions left out of the loss"),
      llvm::cl::init(-100)};
  Option<double> labelSmoothing{
      *this, "label-smoothing",
      llvm::cl::desc("cross_entropy: label smoothing in [0, 1]"),
      llvm::cl::init(0.0)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam, adamw, lion or "
                                               "adafactor"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                    llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("weight decay"),
                             llvm::cl::init(-1.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD: Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> beta1{*this, "beta1",
                       llvm::cl::desc("beta1 (< 0: the optimizer's default)"),
                       llvm::cl::init(-1.0)};
  Option<double> beta2{*this, "beta2",
                       llvm::cl::desc("beta2 (< 0: the optimizer's default)"),
                       llvm::cl::init(-1.0)};
  Option<double> eps{*this, "eps",
                     llvm::cl::desc("epsilon (< 0: the optimizer's default)"),
                     llvm::cl::init(-1.0)};
  ListOption<std::string> noDecay{
      *this, "no-decay",
      llvm::cl::desc("parameters without weight decay: glob patterns, or 1d "
                     "(rank < 2)")};
  Option<int64_t> gradAccum{*this, "grad-accum",
                            llvm::cl::desc("micro-batches per optimizer step"),
                            llvm::cl::init(1)};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("average the gradients over the ranks of an mpirun "
                     "run (tcc-all-reduce-gradients)"),
      llvm::cl::init(false)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("data-parallel: bytes of gradients per all-reduce "
                     "bucket"),
      llvm::cl::init(25 << 20)};
  Option<int64_t> zeroShards{
      *this, "zero-shards",
      llvm::cl::desc("data-parallel: shard the optimizer state over this "
                     "many ranks (tcc-shard-optimizer-state; 0: off)"),
      llvm::cl::init(0)};
  Option<bool> offloadOptimizer{
      *this, "offload-optimizer",
      llvm::cl::desc("move the optimizer update into @optimizer_step "
                     "(tcc-offload-optimizer)"),
      llvm::cl::init(false)};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("clip the global gradient norm to this, as "
                     "clip_grad_norm_ (tcc-clip-gradients; 0: off)"),
      llvm::cl::init(0.0)};
  Option<bool> trackGradNorm{
      *this, "track-grad-norm",
      llvm::cl::desc("return the gradient norm as the grad_norm metric "
                     "without clipping"),
      llvm::cl::init(false)};
  Option<int64_t> padMultiple{
      *this, "pad-multiple",
      llvm::cl::desc("pad GEMM dimensions to a multiple of this (0: off)"),
      llvm::cl::init(0)};
  Option<int64_t> padVocabMultiple{
      *this, "pad-vocab-multiple",
      llvm::cl::desc("multiple for vocabulary-sized GEMM dimensions "
                     "(0: pad-multiple)"),
      llvm::cl::init(0)};
  Option<int64_t> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("bytes of activations to keep at most; the others are "
                     "recomputed in the backward (0: off)"),
      llvm::cl::init(0)};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("what rematerialization may recompute: all or cheap "
                     "(no matmul/convolution)"),
      llvm::cl::init("all")};
  Option<bool> planMemory{
      *this, "plan-memory",
      llvm::cl::desc("reorder ops to lower the peak of live bytes "
                     "(tcc-plan-memory, last)"),
      llvm::cl::init(true)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, or bf16/fp16 compute with fp32 master weights "
                     "(tcc-mixed-precision; fp16 adds dynamic loss scaling)"),
      llvm::cl::init("fp32")};
  Option<bool> optimize{*this, "optimize",
                        llvm::cl::desc("run canonicalize and CSE at the end"),
                        llvm::cl::init(true)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("group element-wise and row ops into "
                                   "tcc.fused regions (tcc-fuse)"),
                    llvm::cl::init(true)};
  Option<bool> fuseColumnSums{
      *this, "fuse-column-sums",
      llvm::cl::desc("layer norm parameter gradients and bias gradients "
                     "join the regions that read or compute what they sum, "
                     "as column sums (tcc-fuse, tcc-gemm-epilogue)"),
      llvm::cl::init(true)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("replace matmul(softmax(q k^T), v) with tcc.attention "
                     "before autodiff (tcc-fuse-attention), so the backward "
                     "recomputes the probabilities instead of saving them"),
      llvm::cl::init(false)};
  Option<bool> cutCrossEntropy{
      *this, "cut-cross-entropy",
      llvm::cl::desc("fuse the head matmul and the cross-entropy loss into "
                     "tcc.linear_cross_entropy before autodiff "
                     "(tcc-cut-cross-entropy), so the logits are never "
                     "stored"),
      llvm::cl::init(false)};
  Option<int64_t> cutCrossEntropyBlock{
      *this, "cut-cross-entropy-block",
      llvm::cl::desc("vocabulary columns per slice of "
                     "tcc.linear_cross_entropy"),
      llvm::cl::init(2048)};
  Option<int64_t> cutCrossEntropyMinClasses{
      *this, "cut-cross-entropy-min-classes",
      llvm::cl::desc("heads with fewer classes keep the unfused loss"),
      llvm::cl::init(256)};
  Option<bool> trimConvTaps{
      *this, "trim-conv-taps",
      llvm::cl::desc("slice off convolution taps that read only padding, "
                     "before autodiff (tcc-trim-conv-taps)"),
      llvm::cl::init(true)};
  Option<bool> convGemm{
      *this, "conv-gemm",
      llvm::cl::desc("with trim-conv-taps, convolutions with a 1x1 output "
                     "that read only input become GEMMs"),
      llvm::cl::init(true)};
  Option<bool> gemmEpilogue{
      *this, "gemm-epilogue",
      llvm::cl::desc("fold bias adds, activations and bias gradients into "
                     "GEMMs (tcc-gemm-epilogue; tcc compile turns it on for "
                     "--target cuda)"),
      llvm::cl::init(false)};
  Option<bool> shadowWeights{
      *this, "shadow-weights",
      llvm::cl::desc("with bf16/fp16, AdamW writes the 16-bit copies of the "
                     "weights that the next step's GEMMs read "
                     "(tcc-shadow-weights)"),
      llvm::cl::init(true)};
  // LoRA fine-tuning (tcc-lora, before tcc-build-loss): off with rank 0.
  Option<int64_t> loraRank{
      *this, "lora-rank",
      llvm::cl::desc("LoRA adapter rank (0: no adapters, tcc-lora off)"),
      llvm::cl::init(0)};
  Option<double> loraAlpha{
      *this, "lora-alpha",
      llvm::cl::desc("LoRA alpha (<= 0: the rank, a scale of 1)"),
      llvm::cl::init(0.0)};
  ListOption<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("glob patterns over the names of the weights to adapt")};
  Option<int64_t> loraSeed{*this, "lora-seed",
                           llvm::cl::desc("seed of the adapters' A values"),
                           llvm::cl::init(0)};
};

/// What tcc-pad-shapes pads to on a target: `multiple` for GEMM dimensions,
/// `vocabMultiple` for those of at least `vocabThreshold` elements (0: off).
struct PadShapesPreset {
  int64_t multiple, vocabMultiple, vocabThreshold;
};
/// The preset of a target ("cpu", "cuda") at a precision ("fp32", "bf16",
/// "fp16"); the measurements behind it are in docs/ARCHITECTURE.md.
PadShapesPreset padShapesPreset(llvm::StringRef target,
                                llvm::StringRef precision);

/// forward -> train step with loss -> gradients -> optimizer update ->
/// canonicalize/CSE. The only definition of the pipeline.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &opts);

/// Registers every tcc pass and the `tcc-train-pipeline`. (The TableGen'd
/// registration, which would also be named registerTccPasses, is kept private
/// to Pipelines.cpp.)
void registerTccPasses();

} // namespace mlir::tcc

#endif // TCC_PASSES_PASSES_H
