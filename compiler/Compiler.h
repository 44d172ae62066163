//===- Compiler.h - ONNX model to training artifact -------------*- C++ -*-===//
#ifndef TCC_COMPILER_COMPILER_H
#define TCC_COMPILER_COMPILER_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {
namespace rt {
struct Artifact;
}

enum class EmitKind {
  Artifact,  // the .tcc file
  Tcc,       // IR straight from the importer (@forward)
  Train,     // after loss, autodiff and optimizer (no cleanup)
  Optimized, // after the whole pipeline
  Schedule,  // the lowered programs, one kernel call per line
  Kernels,   // the generated C++ of the fused regions
  Cuda,      // the generated CUDA C of the fused regions (--target cuda)
};

struct CompileOptions {
  std::string input;
  std::string output; // "-" = stdout for textual emits
  EmitKind emit = EmitKind::Artifact;
  int64_t batch = -1;
  std::vector<std::string> frozen;    // --freeze patterns
  std::vector<std::string> trainable; // --trainable patterns
  bool batchNormTrain = false;        // --batchnorm=train
  std::string loss = "cross_entropy";
  int64_t ignoreIndex = -100; // cross_entropy's ignore_index
  double labelSmoothing = 0;  // cross_entropy's label_smoothing
  std::string optimizer = "adamw";
  double lr = -1; // < 0: the optimizer's default
  double momentum = 0;
  bool nesterov = false;         // SGD: Nesterov momentum
  double weightDecay = -1;       // < 0: the optimizer's default
  double beta1 = -1, beta2 = -1; // < 0: the optimizer's default
  double eps = -1;               // < 0: the optimizer's default
  /// Parameters without weight decay (--no-decay): glob patterns over
  /// their names, or "1d" (every parameter of rank < 2).
  std::vector<std::string> noDecay;
  int64_t gradAccum = 1; // micro-batches per optimizer step
  /// Average the gradients over the ranks of an mpirun run
  /// (tcc-all-reduce-gradients), in buckets of bucketBytes.
  bool dataParallel = false;
  int64_t bucketBytes = 25 << 20;
  /// With dataParallel: shard the optimizer state over this many ranks
  /// (tcc-shard-optimizer-state, ZeRO stage 1; 0: every rank keeps all).
  int64_t zeroShards = 0;
  /// Move the optimizer update into its own program, optimizer_step
  /// (tcc-offload-optimizer), so that its state can live on the host.
  bool offloadOptimizer = false;
  /// Clip the global gradient norm to this (tcc-clip-gradients; 0: off),
  /// and, with it or trackGradNorm, return the norm as `grad_norm`.
  double clipGradNorm = 0;
  bool trackGradNorm = false;
  int64_t padMultiple = -1;       // GEMM padding multiple (0: off, < 0: preset)
  int64_t memoryBudget = 0;       // bytes of activations to keep (0: no limit)
  std::string recompute = "all";  // what remat may recompute: all | cheap
  std::string precision = "fp32"; // fp32, bf16 or fp16 (tcc-mixed-precision)
  /// tcc-plan-memory and arena reuse; false: ops keep the pipeline's order
  /// and every temporary gets its own bytes (--no-plan-memory).
  bool planMemory = true;
  /// Print the predicted memory anatomy (compiler/codegen/MemoryReport.h):
  /// to stdout when the artifact goes to a file, else to stderr.
  bool report = false;
  /// tcc-fuse and generated kernels (--no-fuse: one library kernel per op).
  bool fuse = true;
  /// tcc-fuse-attention: matmul(softmax(q k^T), v) becomes tcc.attention
  /// before autodiff, so P is recomputed in the backward, not saved
  /// (--fuse-attention=false: the unfused graph).
  bool fuseAttention = true;
  /// tcc-cut-cross-entropy: the head matmul and the cross-entropy become
  /// tcc.linear_cross_entropy before autodiff, so the logits [N, V] are
  /// never stored: 1 on, 0 off (--no-cut-ce), -1 the target's default (on
  /// for the CPU; off for cuda until its kernels are measured on a GPU).
  int cutCrossEntropy = -1;
  /// tcc-trim-conv-taps: convolution taps that read only padding are
  /// sliced off before autodiff (--trim-conv-taps=false keeps them).
  bool trimConvTaps = true;
  /// With it, 1x1-output convolutions that read only input become GEMMs
  /// (--conv-gemm=false keeps them convolutions).
  bool convGemm = true;
  /// Vocabulary columns per slice of its kernels.
  int64_t cutCrossEntropyBlock = 2048;
  /// Heads with fewer classes keep the unfused loss.
  int64_t cutCrossEntropyMinClasses = 256;
  /// tcc-fuse's column sums: a layer norm's parameter gradients join its
  /// input gradient's region (--fuse-column-sums=false: the library
  /// kernel, which reads dy and x again).
  bool fuseColumnSums = true;
  /// tcc-gemm-epilogue (bias, activation and bias gradient folded into
  /// GEMMs): 1 on, 0 off, -1 the target's default (on for cuda only; see
  /// docs/ARCHITECTURE.md for the CPU measurements).
  int gemmEpilogue = -1;
  /// tcc-shadow-weights (bf16/fp16 with AdamW): the update writes the
  /// 16-bit copies of the weights the next step's GEMMs read, instead of a
  /// cast of each weight per step (--shadow-weights=false: the casts).
  bool shadowWeights = true;
  /// "cpu" or "cuda": cuda also pads for tensor cores and adds the fused
  /// regions' CUDA kernels, compiled by NVRTC for `gpuArch`
  /// (Artifact::device); the host library stays as the CPU fallback.
  std::string target = "cpu";
  std::string gpuArch = "sm_90a";
  /// The ISA of the generated host kernels: "x86-64-v4", "x86-64-v3",
  /// "x86-64", or "native" (the widest this CPU runs; the default).
  std::string cpuIsa = "native";
  /// Where initial values come from: "onnx" (the initializers' bytes, in
  /// the artifact) or "seeded" (an rt::InitSpec per parameter and state,
  /// drawn at load from `weightsSeed`; the artifact carries no weights).
  std::string weights = "onnx";
  uint64_t weightsSeed = 0;
  /// LoRA (tcc-lora): adapters of rank `loraRank` (0: off) on the weights
  /// `loraTargets` match, scaled by loraAlpha / loraRank (alpha <= 0: the
  /// rank); every other parameter is frozen.
  int64_t loraRank = 0;
  double loraAlpha = 0;
  std::vector<std::string> loraTargets;
  int64_t loraSeed = 0;
};

/// Runs the whole compiler. Prints diagnostics to stderr and returns the
/// process exit code (0 on success). Never leaves a partial output file.
int compileModel(const CompileOptions &opts);

/// Runs the whole pipeline and lowering of compileModel into `out` but
/// generates no code (no host library, no device binary) and writes
/// nothing: the schedule and memory plan of the artifact compileModel would
/// write, for questions about them (`tcc tune-batch`). Not runnable.
/// Returns the exit code as compileModel does.
int planModel(const CompileOptions &opts, rt::Artifact &out);

} // namespace tcc

#endif // TCC_COMPILER_COMPILER_H
