//===- CompileCommand.cpp - tcc compile -----------------------------------===//
#include "compiler/Compiler.h"
#include "tools/tcc/Commands.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <optional>

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
                              cl::init(-1), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<std::string> loss("loss",
                                 cl::desc("cross_entropy, mse, or output:NAME "
                                          "(train the model's own scalar "
                                          "output NAME as the loss)"),
                                 cl::init("cross_entropy"),
                                 cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<int64_t> ignoreIndex(
    "ignore-index",
    cl::desc("cross_entropy: positions labelled I add nothing to the loss "
             "and are not counted in its mean (PyTorch's ignore_index; a "
             "batch with every label ignored has loss 0, not NaN)"),
    cl::init(-100), cl::value_desc("I"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<double> labelSmoothing(
    "label-smoothing",
    cl::desc("cross_entropy: weight S in [0, 1] of the uniform target "
             "(PyTorch's label_smoothing)"),
    cl::init(0.0), cl::value_desc("S"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("sgd, adam, adamw, lion or adafactor (as "
                       "torch.optim's SGD, Adam, AdamW, Adafactor; Lion as "
                       "its paper; default adamw)"),
              cl::init("adamw"), cl::sub(tool::compileCmd),
              cl::sub(tool::benchCmd));
static cl::opt<double> lr("lr",
                          cl::desc("Learning rate, the run's default (the "
                                   "train loop may change it; default 1e-3 "
                                   "for adam/adamw, 1e-2 for sgd and "
                                   "adafactor, 1e-4 for lion)"),
                          cl::init(-1), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"),
                                cl::init(0), cl::sub(tool::compileCmd),
                                cl::sub(tool::benchCmd));
static cl::opt<bool> nesterov("nesterov",
                              cl::desc("SGD: Nesterov momentum (needs "
                                       "--momentum above 0)"),
                              cl::sub(tool::compileCmd),
                              cl::sub(tool::benchCmd));
static cl::opt<std::string>
    betas("betas",
          cl::desc("beta1,beta2 of adam/adamw (default 0.9,0.999) or lion "
                   "(default 0.9,0.99)"),
          cl::value_desc("B1,B2"), cl::sub(tool::compileCmd),
          cl::sub(tool::benchCmd));
static cl::opt<double> eps("eps",
                           cl::desc("epsilon of adam/adamw (default 1e-8), "
                                    "eps1 of adafactor (default: f32's "
                                    "machine epsilon)"),
                           cl::init(-1), cl::sub(tool::compileCmd),
                           cl::sub(tool::benchCmd));
static cl::opt<double> weightDecay("weight-decay",
                                   cl::desc("Weight decay (default 0.01 for "
                                            "adamw, 0 otherwise)"),
                                   cl::init(-1), cl::sub(tool::compileCmd),
                                   cl::sub(tool::benchCmd));
static cl::list<std::string> noDecay(
    "no-decay",
    cl::desc("Parameters without weight decay: glob patterns over their "
             "names, or '1d' (every parameter of rank < 2: biases and norm "
             "scales, as nanoGPT groups them)"),
    cl::CommaSeparated, cl::value_desc("pattern"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<int64_t> gradAccum(
    "grad-accum",
    cl::desc("Accumulate gradients over K micro-batches of --batch samples "
             "per optimizer step (the update of one batch K times larger)"),
    cl::init(1), cl::value_desc("K"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("Average the gradients over the ranks of `mpirun -np N tcc "
             "train` (buckets started during the backward, as PyTorch's "
             "DistributedDataParallel); --batch is each rank's share"),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<double> bucketMb(
    "bucket-mb",
    cl::desc("--data-parallel: MiB of gradients per all-reduce bucket "
             "(default 25, DDP's)"),
    cl::value_desc("MiB"), cl::init(25), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<int64_t> zeroShards(
    "zero-shards",
    cl::desc("--data-parallel: shard the optimizer state over N ranks (ZeRO "
             "stage 1): each rank keeps and updates 1/N of it; run with "
             "mpirun -np N"),
    cl::value_desc("N"), cl::init(0), cl::sub(tool::compileCmd));
static cl::opt<bool> offloadOptimizer(
    "offload-optimizer",
    cl::desc("Run the optimizer update as its own program, optimizer_step, "
             "after train_step, with the optimizer state in host memory "
             "(--report shows the device memory saved)"),
    cl::init(false), cl::sub(tool::compileCmd));
static cl::opt<double> clipGradNorm(
    "clip-grad-norm",
    cl::desc("Clip the gradients in the step to a global L2 norm of at most "
             "C, as torch.nn.utils.clip_grad_norm_ (after --grad-accum's "
             "accumulation); the step also returns the norm before "
             "clipping, the metric grad_norm"),
    cl::value_desc("C"), cl::init(0), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<bool> trackGradNorm(
    "track-grad-norm",
    cl::desc("Compute the global gradient norm in the step (the metric "
             "grad_norm of tcc train --metrics) without clipping"),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<int64_t> padMultiple(
    "pad-multiple",
    cl::desc("Pad GEMM dimensions (M, N, K) to a multiple of N with zeros and "
             "slice the results back (0: off; default: the target's preset, "
             "off on the CPU)"),
    cl::init(-1), cl::value_desc("N"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Keep at most this many bytes of activations across the loss "
             "and recompute the others in the backward (e.g. 4000000, 4MB, "
             "4MiB; 0: no limit)"),
    cl::init("0"), cl::value_desc("BYTES"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));

static cl::opt<bool> noPlanMemory(
    "no-plan-memory",
    cl::desc("Keep the pipeline's op order (no tcc-plan-memory) and give "
             "every temporary its own bytes in the arena (no reuse), to see "
             "what memory planning saves"),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> noFuse(
    "no-fuse",
    cl::desc("Run one library kernel per op: no tcc-fuse, no generated "
             "kernels (the host C++ compiler is not needed)"),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> gemmEpilogue(
    "gemm-epilogue",
    cl::desc("Fold bias adds, ReLU/tanh-GELU and bias gradients into the "
             "GEMMs (tcc-gemm-epilogue: one cuBLASLt epilogue GEMM each; "
             "default on for --target cuda, off for the CPU; "
             "--gemm-epilogue=false turns it off)"),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("Replace attention (matmul(softmax(q k^T * scale + mask), v)) "
             "with one fused op whose backward recomputes the probabilities "
             "from the saved row log-sum-exp instead of saving them "
             "(tcc-fuse-attention; default on, --fuse-attention=false turns "
             "it off)"),
    cl::init(true), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> cutCrossEntropy(
    "cut-cross-entropy",
    cl::desc("Fuse the head matmul (hidden x W [+ bias]) and the "
             "cross-entropy loss into one op that streams the vocabulary in "
             "blocks and recomputes them in the backward, so the logits "
             "[tokens, vocabulary] are never stored (tcc-cut-cross-entropy; "
             "default on for the CPU where it matches, off for --target "
             "cuda; --cut-cross-entropy=false or --no-cut-ce turns it off)"),
    cl::init(true), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> noCutCe("no-cut-ce",
                             cl::desc("Same as --cut-cross-entropy=false"),
                             cl::sub(tool::compileCmd),
                             cl::sub(tool::benchCmd));
static cl::opt<int64_t> cutCrossEntropyBlock(
    "cut-cross-entropy-block",
    cl::desc("Vocabulary columns per block of the fused head + loss kernels "
             "(default 2048)"),
    cl::init(2048), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<int64_t> cutCrossEntropyMinClasses(
    "cut-cross-entropy-min-classes",
    cl::desc("Heads with fewer classes keep the unfused loss (default 256: "
             "a classifier's few logits cost little to store)"),
    cl::init(256), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> fuseColumnSums(
    "fuse-column-sums",
    cl::desc("A layer norm's scale and bias gradients join its input "
             "gradient's fused region as column sums, so one pass reads dy "
             "and x for all three, and a bias gradient joins the region "
             "that computes its dy, or a fused QKV projection's into its "
             "attention gradient (default on; --fuse-column-sums=false "
             "keeps library kernels and GEMM epilogues, which read them "
             "again)"),
    cl::init(true), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> trimConvTaps(
    "trim-conv-taps",
    cl::desc("Slice off the kernel rows and columns of a convolution that "
             "read only padding for every output (a 3x3 convolution on a 1x1 "
             "map is a 1x1 one), before autodiff: exact (tcc-trim-conv-taps; "
             "default on, --trim-conv-taps=false turns it off)"),
    cl::init(true), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> convGemm(
    "conv-gemm",
    cl::desc("With --trim-conv-taps, run convolutions that have a 1x1 "
             "output and read only input (no leading pads, one group) as "
             "GEMMs of the flattened input and weight (default on, "
             "--conv-gemm=false keeps them convolutions)"),
    cl::init(true), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool> shadowWeights(
    "shadow-weights",
    cl::desc("With --precision bf16/fp16 and AdamW, the update also writes "
             "the 16-bit copy of each weight that the next step's GEMMs read, "
             "instead of casting every weight each step (tcc-shadow-weights; "
             "the same values; default on, --shadow-weights=false turns it "
             "off)"),
    cl::init(true), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<bool>
    report("report",
           cl::desc("Print what trains and what is constant (and why), and the "
                    "predicted memory anatomy (weights, optimizer state, "
                    "activations, gradients, temporaries, arena, peak)"),
           cl::sub(tool::compileCmd));

static cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32, or bf16/fp16: GEMMs and element-wise ops compute and "
             "store in 16 bits, parameters, reductions and the optimizer stay "
             "fp32; fp16 adds dynamic loss scaling (default fp32)"),
    cl::init("fp32"), cl::value_desc("fp32|bf16|fp16"),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));

static cl::opt<std::string> recompute(
    "recompute",
    cl::desc("What --memory-budget may recompute: 'all' (matmul and "
             "convolution too, at their FLOP cost, when cheaper ops do not "
             "reach the budget) or 'cheap' (element-wise, data movement, "
             "normalization, dropout)"),
    cl::init("all"), cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));

std::optional<int64_t> tool::parseBytes(StringRef s) {
  s = s.trim();
  size_t end = 0;
  while (end < s.size() && (isDigit(s[end]) || s[end] == '.'))
    ++end;
  double value;
  if (end == 0 || s.substr(0, end).getAsDouble(value))
    return std::nullopt;
  StringRef unit = s.substr(end).trim();
  double scale = StringSwitch<double>(unit.lower())
                     .Cases({"", "b"}, 1)
                     .Case("kb", 1e3)
                     .Case("mb", 1e6)
                     .Case("gb", 1e9)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Default(-1);
  if (scale < 0 || value * scale >= 9e18)
    return std::nullopt;
  return (int64_t)(value * scale);
}

static cl::list<std::string>
    freeze("freeze",
           cl::desc("Initializers to keep constant: names or glob patterns "
                    "(a,'blocks.*.mask',...)"),
           cl::CommaSeparated, cl::value_desc("pattern"),
           cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::list<std::string> trainable(
    "trainable",
    cl::desc("The float initializers that train, as names or glob patterns; "
             "the rest are constants (default: every one that reaches the "
             "loss through a differentiable input, except rank-0 scalars)"),
    cl::CommaSeparated, cl::value_desc("pattern"), cl::sub(tool::compileCmd),
    cl::sub(tool::benchCmd));
enum class BatchNormFlag { AsExported, Train };
static cl::opt<BatchNormFlag> batchNorm(
    "batchnorm",
    cl::desc("BatchNormalization nodes in inference mode: 'as-exported' "
             "(normalize with their running statistics, kept constant) or "
             "'train' (normalize with the batch's statistics and update the "
             "running ones, as PyTorch trains; for dynamo exports, which "
             "write a module's training-mode batch norm in inference mode)"),
    cl::init(BatchNormFlag::AsExported),
    cl::values(clEnumValN(BatchNormFlag::AsExported, "as-exported",
                          "follow each node's mode (default)"),
               clEnumValN(BatchNormFlag::Train, "train",
                          "every batch norm trains")),
    cl::sub(tool::compileCmd), cl::sub(tool::benchCmd));
static cl::opt<std::string> weights(
    "weights",
    cl::desc("Initial values of parameters and state: 'onnx' (the model's, "
             "stored in the artifact) or 'seeded' (drawn at load from a seed: "
             "a normal of each initializer's mean and standard deviation, or "
             "its constant; the artifact carries no weights)"),
    cl::init("onnx"), cl::value_desc("onnx|seeded"), cl::sub(tool::compileCmd));
static cl::opt<uint64_t> weightsSeed(
    "weights-seed",
    cl::desc("Seed of --weights seeded (default 0): the same seed gives the "
             "same initial values"),
    cl::init(0), cl::value_desc("N"), cl::sub(tool::compileCmd));

static cl::opt<int64_t> lora(
    "lora",
    cl::desc("Fine-tune with LoRA adapters of this rank on the weights "
             "--lora-target names; every other parameter is frozen"),
    cl::init(0), cl::value_desc("RANK"), cl::sub(tool::compileCmd));
static cl::list<std::string> loraTarget(
    "lora-target",
    cl::desc("The weights of matrix products (MatMul, Gemm) to adapt: "
             "initializer names or glob patterns"),
    cl::CommaSeparated, cl::value_desc("pattern"), cl::sub(tool::compileCmd));
static cl::opt<double> loraAlpha(
    "lora-alpha",
    cl::desc("LoRA alpha: the adapters' output is scaled by alpha/RANK "
             "(default: RANK, a scale of 1)"),
    cl::init(0.0), cl::value_desc("A"), cl::sub(tool::compileCmd));
static cl::opt<int64_t>
    loraSeed("lora-seed",
             cl::desc("Seed of the adapters' initial A values (default 0)"),
             cl::init(0), cl::value_desc("N"), cl::sub(tool::compileCmd));

static cl::opt<std::string> target(
    "target",
    cl::desc("Device of the artifact: 'cpu', or 'cuda' (pads GEMMs for "
             "tensor cores and compiles the fused regions to a cubin with "
             "NVRTC; the CPU kernels stay in the artifact as a fallback)"),
    cl::init("cpu"), cl::value_desc("cpu|cuda"), cl::sub(tool::compileCmd));
static cl::opt<std::string> gpuArch(
    "gpu-arch",
    cl::desc("GPU architecture of --target cuda (default sm_90a: H100/H200)"),
    cl::init("sm_90a"), cl::value_desc("sm_NN[a]"), cl::sub(tool::compileCmd));

static cl::opt<std::string> cpuIsa(
    "cpu-isa",
    cl::desc("ISA of the generated CPU kernels: x86-64-v4 (AVX-512), "
             "x86-64-v3 (AVX2, FMA), x86-64 (baseline) or native (the "
             "widest this CPU runs; default). The artifact records it and "
             "refuses to load on a CPU without it"),
    cl::init("native"), cl::value_desc("isa"), cl::sub(tool::compileCmd));

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
                   "lowered programs, one kernel call per line"),
        clEnumValN(EmitKind::Kernels, "kernels",
                   "generated C++ of the fused regions"),
        clEnumValN(EmitKind::Cuda, "cuda",
                   "generated CUDA C of the fused regions (implies --target "
                   "cuda)")),
    cl::sub(tool::compileCmd));

/// --optimizer, --betas, --eps, --nesterov, --no-decay: what the command
/// line alone can tell is wrong (the pass checks the rest, e.g. a pattern
/// that matches no parameter).
static bool optimizerOptionsFromFlags(CompileOptions &o, const char *cmd) {
  auto error = [&]() -> raw_ostream & {
    return llvm::errs() << "tcc " << cmd << ": error: ";
  };
  StringRef name = o.optimizer;
  bool adam = name == "adam" || name == "adamw";
  if (!adam && name != "sgd" && name != "lion" && name != "adafactor") {
    error() << "--optimizer must be sgd, adam, adamw, lion or adafactor, got '"
            << name << "'\n";
    return false;
  }
  if (betas.getNumOccurrences()) {
    if (!adam && name != "lion") {
      error() << "--betas is an option of adam, adamw and lion, not " << name
              << "\n";
      return false;
    }
    SmallVector<StringRef, 2> parts;
    StringRef(betas).split(parts, ',');
    double b[2];
    if (parts.size() != 2 || parts[0].trim().getAsDouble(b[0]) ||
        parts[1].trim().getAsDouble(b[1]) || !(b[0] >= 0 && b[0] < 1) ||
        !(b[1] >= 0 && b[1] < 1)) {
      error() << "--betas must be two numbers in [0, 1), as 0.9,0.999, got '"
              << betas << "'\n";
      return false;
    }
    o.beta1 = b[0];
    o.beta2 = b[1];
  }
  if (eps.getNumOccurrences()) {
    if (!adam && name != "adafactor") {
      error() << "--eps is an option of adam, adamw and adafactor, not " << name
              << "\n";
      return false;
    }
    if (!(eps > 0)) {
      error() << "--eps must be positive, got "
              << llvm::format("%g", double(eps)) << "\n";
      return false;
    }
    o.eps = eps;
  }
  if (momentum.getNumOccurrences() && name != "sgd") {
    error() << "--momentum is an option of sgd, not " << name
            << " (which uses --betas)\n";
    return false;
  }
  if (nesterov && (name != "sgd" || !(momentum > 0))) {
    error() << "--nesterov needs --optimizer sgd and --momentum above 0\n";
    return false;
  }
  o.nesterov = nesterov;
  o.noDecay.assign(noDecay.begin(), noDecay.end());
  return true;
}

bool tool::compileOptionsFromFlags(CompileOptions &o, const char *cmd) {
  o.batch = batch;
  o.frozen.assign(freeze.begin(), freeze.end());
  o.trainable.assign(trainable.begin(), trainable.end());
  o.batchNormTrain = batchNorm == BatchNormFlag::Train;
  o.loss = loss;
  llvm::StringRef lossName = o.loss;
  bool fromOutput = lossName.consume_front("output:");
  if (fromOutput ? lossName.empty()
                 : lossName != "cross_entropy" && lossName != "mse") {
    llvm::errs() << "tcc " << cmd << ": error: --loss must be cross_entropy, "
                 << "mse or output:NAME (a scalar output of the model), got '"
                 << o.loss << "'\n";
    return false;
  }
  // Both shape the built-in cross-entropy; with another loss they would
  // silently do nothing.
  for (const cl::Option *opt : {static_cast<cl::Option *>(&ignoreIndex),
                                static_cast<cl::Option *>(&labelSmoothing)})
    if (opt->getNumOccurrences() && o.loss != "cross_entropy") {
      llvm::errs() << "tcc " << cmd << ": error: --" << opt->ArgStr
                   << " applies to --loss cross_entropy only, not to '"
                   << o.loss << "'\n";
      return false;
    }
  if (!std::isfinite(labelSmoothing) || labelSmoothing < 0 ||
      labelSmoothing > 1) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --label-smoothing must be in [0, 1], got "
                 << llvm::format("%g", double(labelSmoothing)) << "\n";
    return false;
  }
  o.ignoreIndex = ignoreIndex;
  o.labelSmoothing = labelSmoothing;
  o.optimizer = optimizer;
  o.lr = lr;
  o.momentum = momentum;
  o.weightDecay = weightDecay;
  if (!optimizerOptionsFromFlags(o, cmd))
    return false;
  if (gradAccum < 1) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --grad-accum must be at least 1, got " << gradAccum
                 << "\n";
    return false;
  }
  o.gradAccum = gradAccum;
  if (clipGradNorm.getNumOccurrences() &&
      !(clipGradNorm > 0 && std::isfinite(double(clipGradNorm)))) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --clip-grad-norm must be a positive finite "
                    "number, got "
                 << llvm::format("%g", double(clipGradNorm)) << "\n";
    return false;
  }
  o.clipGradNorm = clipGradNorm;
  o.trackGradNorm = trackGradNorm;
  if (bucketMb.getNumOccurrences() && !dataParallel) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --bucket-mb sizes the buckets of "
                    "--data-parallel, which is not given\n";
    return false;
  }
  if (!(bucketMb > 0 && bucketMb <= 1024 * 1024)) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --bucket-mb must be a positive number of MiB "
                    "(at most 1048576), got "
                 << llvm::format("%g", double(bucketMb)) << "\n";
    return false;
  }
  if (zeroShards.getNumOccurrences()) {
    auto refuse = [&](const std::string &why) {
      llvm::errs() << "tcc " << cmd << ": error: --zero-shards " << why
                   << "\n";
      return false;
    };
    if (!dataParallel)
      return refuse("shards the optimizer state over the ranks of "
                    "--data-parallel, which is not given");
    if (zeroShards < 2)
      return refuse("must be at least 2 (the ranks of the run), got " +
                    std::to_string(int64_t(zeroShards)));
  }
  o.zeroShards = zeroShards;
  o.offloadOptimizer = offloadOptimizer;
  o.dataParallel = dataParallel;
  o.bucketBytes = std::max<int64_t>(
      1, static_cast<int64_t>(double(bucketMb) * 1024 * 1024));
  // A negative value is the "optimizer's default" sentinel inside; given on
  // the command line it is a mistake, not a request for the default.
  if (lr.getNumOccurrences() && !(lr > 0)) {
    llvm::errs() << "tcc " << cmd << ": error: --lr must be positive, got "
                 << llvm::format("%g", double(lr)) << "\n";
    return false;
  }
  if (weightDecay.getNumOccurrences() && !(weightDecay >= 0)) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --weight-decay must not be negative, got "
                 << llvm::format("%g", double(weightDecay)) << "\n";
    return false;
  }
  if (padMultiple.getNumOccurrences() && padMultiple < 0) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --pad-multiple must be at least 0 (0: no "
                    "padding), got "
                 << padMultiple << "\n";
    return false;
  }
  o.padMultiple = padMultiple;
  std::optional<int64_t> budget = tool::parseBytes(memoryBudget);
  if (!budget) {
    llvm::errs() << "tcc " << cmd << ": error: --memory-budget '"
                 << memoryBudget
                 << "' is not a size: give bytes, e.g. 4000000, 4MB or 4MiB "
                    "(0: no limit)\n";
    return false;
  }
  o.memoryBudget = *budget;
  if (recompute != "all" && recompute != "cheap") {
    llvm::errs() << "tcc " << cmd << ": error: --recompute must be 'all' or "
                 << "'cheap', got '" << recompute << "'\n";
    return false;
  }
  o.recompute = recompute;
  if (precision != "fp32" && precision != "bf16" && precision != "fp16") {
    llvm::errs() << "tcc " << cmd
                 << ": error: --precision must be fp32, bf16 or fp16, got '"
                 << precision << "'\n";
    return false;
  }
  // fp16's loss scaling multiplies the seed of the built-in losses'
  // gradients (tcc-mixed-precision); a graph's own loss has none it knows.
  if (precision == "fp16" && llvm::StringRef(o.loss).starts_with("output:")) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --precision fp16 needs --loss cross_entropy or "
                    "mse (its loss scaling works on their gradients); "
                    "--loss output:NAME trains in fp32 or bf16\n";
    return false;
  }
  o.precision = precision;
  o.planMemory = !noPlanMemory;
  o.fuse = !noFuse;
  o.fuseAttention = fuseAttention;
  if (noCutCe)
    o.cutCrossEntropy = 0;
  else if (cutCrossEntropy.getNumOccurrences())
    o.cutCrossEntropy = cutCrossEntropy ? 1 : 0;
  if (cutCrossEntropyBlock < 1) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --cut-cross-entropy-block must be positive, got "
                 << cutCrossEntropyBlock << "\n";
    return false;
  }
  o.cutCrossEntropyBlock = cutCrossEntropyBlock;
  o.cutCrossEntropyMinClasses = cutCrossEntropyMinClasses;
  o.fuseColumnSums = fuseColumnSums;
  o.shadowWeights = shadowWeights;
  o.trimConvTaps = trimConvTaps;
  o.convGemm = convGemm;
  if (gemmEpilogue.getNumOccurrences())
    o.gemmEpilogue = gemmEpilogue ? 1 : 0;
  return true;
}

bool tool::targetOptionsFromFlags(CompileOptions &o, const char *cmd) {
  o.target = target;
  o.gpuArch = gpuArch;
  o.cpuIsa = cpuIsa;
  o.weights = weights;
  o.weightsSeed = weightsSeed;
  if (weightsSeed.getNumOccurrences() && o.weights != "seeded") {
    llvm::errs() << "tcc " << cmd
                 << ": error: --weights-seed needs --weights "
                    "seeded (the weights come from the model otherwise)\n";
    return false;
  }
  auto loraError = [cmd](const std::string &msg) {
    llvm::errs() << "tcc " << cmd << ": error: " << msg << "\n";
    return false;
  };
  bool loraGiven = lora.getNumOccurrences() > 0;
  if (loraGiven && lora < 1)
    return loraError("--lora must be a rank of at least 1, got " +
                     std::to_string(lora));
  if (!loraGiven &&
      (loraTarget.getNumOccurrences() || loraAlpha.getNumOccurrences() ||
       loraSeed.getNumOccurrences()))
    return loraError("--lora-target, --lora-alpha and --lora-seed need "
                     "--lora RANK");
  if (loraGiven && loraTarget.empty())
    return loraError("--lora needs --lora-target: the weights to adapt (glob "
                     "patterns over initializer names, e.g. 'fc*,proj*')");
  if (loraAlpha.getNumOccurrences() && !(loraAlpha > 0)) {
    llvm::errs() << "tcc " << cmd
                 << ": error: --lora-alpha must be positive, got "
                 << llvm::format("%g", double(loraAlpha)) << "\n";
    return false;
  }
  if (loraGiven && !o.trainable.empty())
    return loraError("--lora trains only the adapters; it cannot be combined "
                     "with --trainable");
  o.loraRank = loraGiven ? lora : 0;
  o.loraAlpha = loraAlpha.getNumOccurrences() ? double(loraAlpha) : 0.0;
  o.loraTargets.assign(loraTarget.begin(), loraTarget.end());
  o.loraSeed = loraSeed;
  return true;
}

int tool::runCompile() {
  CompileOptions o;
  o.input = input;
  o.output = output;
  o.emit = emit;
  o.report = report;
  if (!compileOptionsFromFlags(o, "compile"))
    return 1;
  if (!targetOptionsFromFlags(o, "compile"))
    return 1;
  if (o.emit == EmitKind::Cuda && !target.getNumOccurrences())
    o.target = "cuda";
  return compileModel(o);
}
