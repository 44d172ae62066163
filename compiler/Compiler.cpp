//===- Compiler.cpp - ONNX model to training artifact ---------------------===//
//
// read ONNX -> import (@forward) -> training pipeline (@train_step) ->
// lower both functions to programs with memory plans -> write the artifact.
// Each --emit stops after one of these stages.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"

#include "compiler/LoraExport.h"
#include "compiler/OnnxModelIO.h"
#include "compiler/codegen/CudaCodegen.h"
#include "compiler/codegen/FusedCodegen.h"
#include "compiler/codegen/HostCompile.h"
#include "compiler/codegen/MemoryReport.h"
#include "compiler/codegen/NvrtcCompile.h"
#include "compiler/codegen/ScheduleBuilder.h"
#include "compiler/codegen/SchedulePrinter.h"
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"
#include "frontends/onnx/OnnxDiagnostics.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "runtime/core/OffloadPlan.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/core/abi/FusedAbi.h"
#include "runtime/core/abi/KernelAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

using namespace mlir;
using ::tcc::CompileOptions;
using ::tcc::EmitKind;
namespace rt = ::tcc::rt;

static int fail(const std::string &msg) {
  llvm::errs() << "tcc compile: error: " << msg << "\n";
  return 1;
}

/// Why `--loss output:NAME` cannot train the imported @forward (no output
/// NAME, or one that is not a float scalar), or "" when it can or another
/// loss is asked for. tcc-build-loss checks the same; said here, the error
/// speaks of the model's outputs rather than of IR.
static std::string lossOutputError(func::FuncOp forward, StringRef loss) {
  if (!loss.consume_front("output:") || !forward)
    return {};
  std::string names;
  for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i) {
    auto name = forward.getResultAttrOfType<StringAttr>(i, "tcc.name");
    auto kind = forward.getResultAttrOfType<StringAttr>(i, "tcc.kind");
    if (!name || (kind && kind.getValue() == "update"))
      continue; // state updates are not graph outputs
    if (name.getValue() != loss) {
      names += (names.empty() ? "" : ", ") + name.getValue().str();
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(forward.getResultTypes()[i]);
    if (type && type.getRank() == 0 && isa<FloatType>(type.getElementType()))
      return {};
    std::string typeStr;
    llvm::raw_string_ostream os(typeStr);
    os << forward.getResultTypes()[i];
    return "--loss output:" + loss.str() + ": output '" + loss.str() + "' is " +
           typeStr +
           "; the loss must be a float scalar (rank 0), such as a "
           "NegativeLogLikelihoodLoss or SoftmaxCrossEntropyLoss with "
           "reduction mean or sum";
  }
  return "--loss output:" + loss.str() + ": the model has no output '" +
         loss.str() + "' (outputs: " + names + ")";
}

/// MLIR diagnostics (import, pipeline, lowering) in the command's own form,
/// "tcc compile: error: FILE: message".
static LogicalResult printDiagnostic(Diagnostic &diag) {
  mlir::tcc::printOnnxDiagnostic(diag, "tcc compile:");
  return success();
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

/// Drops the data (not name, type or dims) of the float initializers whose
/// tensors the runtime generates, so the embedded model stays small.
static void stripGeneratedInitializers(onnx::ModelProto &model,
                                       const rt::Artifact &artifact) {
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    int32_t id = artifact.findTensor(t.name());
    if (t.data_type() != onnx::TensorProto::FLOAT || id < 0 ||
        artifact.tensors[id].init.kind == rt::InitSpec::Kind::Blob)
      continue;
    t.clear_raw_data();
    t.clear_float_data();
  }
}

/// What trains, what is state and what stays constant, with the reason for
/// each constant, as `tcc compile --report` prints it. With LoRA (`lora`,
/// the module's tcc.lora) the parameters are frozen and the adapters train.
static std::string
initializerReport(const std::vector<mlir::tcc::OnnxInitializerRole> &roles,
                  DictionaryAttr lora) {
  using Role = mlir::tcc::OnnxInitializerRole;
  int64_t count[4] = {0, 0, 0, 0}, values[4] = {0, 0, 0, 0};
  enum { Trains = Role::Param, Frozen = 3 };
  std::ostringstream rows;
  int64_t rank = 0;
  DictionaryAttr adapted;
  if (lora) {
    rank = cast<IntegerAttr>(lora.get("rank")).getInt();
    adapted = cast<DictionaryAttr>(lora.get("weights"));
  }
  auto row = [&](int word, const std::string &name,
                 const std::vector<int64_t> &dims, const std::string &why) {
    int64_t n = 1;
    std::string shape;
    for (int64_t d : dims) {
      n *= d;
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    ++count[word];
    values[word] += n;
    static const char *const kWord[] = {"trains", "state", "constant",
                                        "frozen"};
    rows << "  " << kWord[word] << std::string(10 - strlen(kWord[word]), ' ')
         << name << " [" << shape << "]";
    if (!why.empty())
      rows << "  " << why;
    rows << "\n";
  };
  for (const Role &r : roles) {
    if (r.kind != Role::Param || !lora) {
      row(r.kind, r.name, r.shape, r.why == "trained" ? "" : r.why);
      continue;
    }
    auto layout = adapted.getAs<StringAttr>(r.name);
    if (!layout) {
      row(Frozen, r.name, r.shape, "--lora trains the adapters only");
      continue;
    }
    row(Frozen, r.name, r.shape, "the base of LoRA adapters");
    bool outIn = layout.getValue() == "out,in";
    int64_t out = r.shape[outIn ? 0 : 1], in = r.shape[outIn ? 1 : 0];
    row(Trains, r.name + ".lora_A", {rank, in}, "LoRA adapter A");
    row(Trains, r.name + ".lora_B", {out, rank}, "LoRA adapter B");
  }
  std::ostringstream os;
  os << "initializers: " << count[Role::Param] << " train ("
     << values[Role::Param] << " values), " << count[Role::State] << " state, "
     << count[Role::Constant] << " constant";
  if (lora)
    os << ", " << count[Frozen] << " frozen (" << values[Frozen] << " values)";
  os << "\n" << rows.str();
  return os.str();
}

/// Sharded optimizer state, as `tcc compile --report` prints it: what each
/// rank holds (the anatomy's optimizer state above is per rank) against
/// what one unsharded copy would be.
static std::string zeroReport(const rt::Artifact &a, int64_t perRank) {
  rt::ZeroPlan plan = rt::zeroPlan(a);
  int64_t shardBytes = 0, fullBytes = 0;
  for (const rt::ShardedState &s : plan.states) {
    shardBytes += a.tensors[s.stateId].byteSize();
    fullBytes += s.numel * int64_t(sizeof(float));
  }
  int64_t unsharded = perRank - shardBytes + fullBytes;
  std::ostringstream os;
  os << "sharded optimizer state (ZeRO stage 1): " << plan.states.size()
     << " state tensors in " << plan.shards
     << " shards; gradients reduce-scattered, parameters all-gathered; run "
        "with mpirun -np "
     << plan.shards << "\n"
     << "  optimizer state per rank   " << ::tcc::formatBytesExact(perRank)
     << "\n"
     << "  unsharded                  " << ::tcc::formatBytesExact(unsharded)
     << "\n"
     << "  per rank / unsharded       "
     << fmt(unsharded ? double(perRank) / double(unsharded) : 0.0) << "\n";
  return os.str();
}

/// --offload-optimizer: what leaves the device and what crosses each step.
static std::string offloadReport(const rt::Artifact &a) {
  rt::OffloadPlan off = rt::offloadPlan(a);
  std::ostringstream os;
  os << "optimizer offload: the update is the program optimizer_step ("
     << a.findProgram("optimizer_step")->instrs.size()
     << " instrs), run after train_step\n"
     << "  device memory saved      "
     << ::tcc::formatBytesExact(off.hostStateBytes)
     << "  optimizer state held by the host only (" << off.hostState.size()
     << " tensors)\n"
     << "  to the host per step     "
     << ::tcc::formatBytesExact(off.toHostBytes) << "  " << off.toHost.size()
     << " gradients and flags\n"
     << "  to the device per step   "
     << ::tcc::formatBytesExact(off.toDeviceBytes) << "  "
     << off.toDevice.size() << " updated parameters and weight copies\n"
     << "  host copies of those     "
     << ::tcc::formatBytesExact(off.toDeviceBytes)
     << "  the host's master copy\n";
  return os.str();
}

/// The optimizer and its parameter groups, as `tcc compile --report` prints
/// them: each trained parameter with the weight decay its update applies
/// (from the schedule, so it is what runs).
static std::string optimizerReport(const rt::Artifact &a) {
  using K = rt::abi::KernelId;
  std::ostringstream rows;
  int64_t decayed = 0, total = 0;
  // A sharded update reads its parameter through shard_slice.
  std::map<int32_t, int32_t> shardOf;
  for (const rt::Program &p : a.programs)
    for (const rt::Instr &in : p.instrs) {
      if (rt::abi::is(in, K::ShardSlice))
        shardOf[in.outputs[0]] = in.inputs[0];
      double wd;
      if (rt::abi::is(in, K::AdamwUpdate))
        wd = rt::abi::attrs<K::AdamwUpdate>(in).weightDecay;
      else if (rt::abi::is(in, K::SgdUpdate))
        wd = rt::abi::attrs<K::SgdUpdate>(in).weightDecay;
      else if (rt::abi::is(in, K::SgdMomentumUpdate))
        wd = rt::abi::attrs<K::SgdMomentumUpdate>(in).weightDecay;
      else if (rt::abi::is(in, K::LionUpdate))
        wd = rt::abi::attrs<K::LionUpdate>(in).weightDecay;
      else if (rt::abi::is(in, K::AdafactorUpdate))
        wd = rt::abi::attrs<K::AdafactorUpdate>(in).weightDecay;
      else
        continue;
      ++total;
      decayed += wd != 0;
      std::string what = wd != 0 ? "decay " + fmt(wd) : "no decay";
      rows << "  " << what
           << std::string(what.size() < 14 ? 14 - what.size() : 1, ' ')
           << a.tensors[shardOf.count(in.inputs[0]) ? shardOf[in.inputs[0]]
                                                    : in.inputs[0]]
                  .name
           << "\n";
    }
  if (total == 0)
    return {};
  auto meta = [&](const std::string &k) {
    auto it = a.meta.find("optimizer." + k);
    return it == a.meta.end() ? std::string() : it->second;
  };
  std::ostringstream os;
  os << "optimizer: " << meta("name") << ", lr " << meta("lr")
     << " (the default of optimizer.lr), weight decay on " << decayed << " of "
     << total << " parameters";
  if (!meta("no_decay").empty())
    os << " (--no-decay " << meta("no_decay") << ")";
  os << "\n" << rows.str();
  return os.str();
}

/// compileModel, or with `plan` the artifact without code (planModel).
static int compile(const CompileOptions &opts, rt::Artifact *plan) {
  if (opts.weights != "onnx" && opts.weights != "seeded")
    return fail("--weights must be 'onnx' (the model's initial values, in "
                "the artifact) or 'seeded' (drawn at load from a seed), got '" +
                opts.weights + "'");
  // The target's flags are checked before any work is done.
  if (opts.target != "cpu" && opts.target != "cuda")
    return fail("--target must be 'cpu' or 'cuda', got '" + opts.target + "'");
  if (opts.emit == EmitKind::Cuda && opts.target != "cuda")
    return fail("--emit=cuda needs --target cuda");
  if (opts.cpuIsa != "native" && !rt::knownIsa(opts.cpuIsa))
    return fail("--cpu-isa must be x86-64-v4, x86-64-v3, x86-64 or native, "
                "got '" +
                opts.cpuIsa + "'");
  if (opts.target == "cuda") {
    if (opts.emit == EmitKind::Artifact && !::tcc::nvrtcAvailable())
      return fail("--target cuda needs a tcc built with the CUDA backend "
                  "(TCC_ENABLE_CUDA=ON, with the CUDA toolkit at build "
                  "time); this one was built without it");
    std::string archErr;
    if (!::tcc::checkGpuArch(opts.gpuArch, archErr))
      return fail(archErr);
  }
  onnx::ModelProto model;
  std::string err;
  // The tensors read from external data files: the artifact keeps their
  // bytes in its blob, not inside the embedded model (embedOnnxModel).
  std::vector<onnx::TensorProto *> external;
  if (!::tcc::readOnnxModel(opts.input, model, err, &external))
    return fail(err);

  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, func::FuncDialect>();
  ScopedDiagnosticHandler diagnostics(&ctx, printDiagnostic);
  mlir::tcc::OnnxImportOptions importOpts;
  importOpts.batch = opts.batch;
  importOpts.frozen = opts.frozen;
  importOpts.trainable = opts.trainable;
  importOpts.batchNormTrain = opts.batchNormTrain;
  mlir::tcc::OnnxImportStatus importStatus;
  auto imported = mlir::tcc::importOnnxModel(&ctx, model, importOpts,
                                             opts.input, &importStatus);
  if (failed(imported))
    return 1;
  ModuleOp module = imported->get();
  if (opts.emit == EmitKind::Tcc)
    return emitText(opts.output, printModule(module));
  // Said here, in the user's terms, rather than by a pass further down.
  auto fwd = module.lookupSymbol<func::FuncOp>("forward");
  bool hasParam = false;
  for (unsigned i = 0, e = fwd ? fwd.getNumArguments() : 0; i < e; ++i)
    if (auto kind = fwd.getArgAttrOfType<StringAttr>(i, "tcc.kind"))
      hasParam |= kind.getValue() == "param";
  if (!hasParam)
    return fail(opts.input +
                ": the model has no trainable parameter (no "
                "float initializer, or --freeze froze them "
                "all); there is nothing to train" +
                (opts.trainable.empty()
                     ? std::string()
                     : " (--trainable matched no float initializer)") +
                (opts.clipGradNorm > 0 ? "; --clip-grad-norm has no gradient "
                                         "to clip"
                                       : ""));

  if (std::string err = lossOutputError(fwd, opts.loss); !err.empty())
    return fail(opts.input + ": " + err);

  mlir::tcc::TrainPipelineOptions pipe;
  pipe.loss = opts.loss;
  pipe.ignoreIndex = opts.ignoreIndex;
  pipe.labelSmoothing = opts.labelSmoothing;
  pipe.optimizer = opts.optimizer;
  pipe.lr = opts.lr;
  pipe.momentum = opts.momentum;
  pipe.weightDecay = opts.weightDecay;
  pipe.nesterov = opts.nesterov;
  pipe.beta1 = opts.beta1;
  pipe.beta2 = opts.beta2;
  pipe.eps = opts.eps;
  pipe.noDecay = opts.noDecay;
  pipe.gradAccum = opts.gradAccum;
  pipe.dataParallel = opts.dataParallel;
  pipe.bucketBytes = opts.bucketBytes;
  pipe.zeroShards = opts.zeroShards;
  pipe.offloadOptimizer = opts.offloadOptimizer;
  pipe.clipGradNorm = opts.clipGradNorm;
  pipe.trackGradNorm = opts.trackGradNorm;
  pipe.memoryBudget = opts.memoryBudget;
  pipe.recompute = opts.recompute;
  pipe.planMemory = opts.planMemory;
  pipe.precision = opts.precision;
  // The target's padding preset (PadShapes.cpp): none on the CPU, tensor
  // core tiles on CUDA (whose artifact also keeps the host library, so the
  // CPU fallback runs the same padded schedule).
  mlir::tcc::PadShapesPreset pad =
      mlir::tcc::padShapesPreset(opts.target, opts.precision);
  pipe.padMultiple = opts.padMultiple >= 0 ? opts.padMultiple : pad.multiple;
  pipe.padVocabMultiple = opts.padMultiple >= 0 ? 0 : pad.vocabMultiple;
  pipe.optimize = opts.emit != EmitKind::Train;
  pipe.fuse = opts.fuse;
  pipe.fuseAttention = opts.fuseAttention;
  pipe.cutCrossEntropy = opts.cutCrossEntropy >= 0 ? opts.cutCrossEntropy == 1
                                                   : opts.target != "cuda";
  pipe.cutCrossEntropyBlock = opts.cutCrossEntropyBlock;
  pipe.cutCrossEntropyMinClasses = opts.cutCrossEntropyMinClasses;
  pipe.fuseColumnSums = opts.fuseColumnSums;
  pipe.shadowWeights = opts.shadowWeights;
  pipe.trimConvTaps = opts.trimConvTaps;
  pipe.convGemm = opts.convGemm;
  pipe.gemmEpilogue =
      opts.gemmEpilogue >= 0 ? opts.gemmEpilogue == 1 : opts.target == "cuda";
  pipe.loraRank = opts.loraRank;
  pipe.loraAlpha = opts.loraAlpha;
  pipe.loraTargets = opts.loraTargets;
  pipe.loraSeed = opts.loraSeed;
  PassManager pm(&ctx);
  mlir::tcc::buildTrainPipeline(pm, pipe);
  if (failed(pm.run(module)))
    return 1;
  auto lora = module->getAttrOfType<DictionaryAttr>("tcc.lora");
  std::string rolesReport;
  if (opts.report)
    rolesReport = initializerReport(importStatus.initializers, lora);
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

  // Generated kernels: numbers the tcc.fused ops (ScheduleBuilder reads the
  // numbers) and compiles their C++ into the artifact's host library.
  auto source = ::tcc::generateFusedSource(module);
  if (failed(source))
    return 1;
  if (opts.emit == EmitKind::Kernels)
    return emitText(opts.output, *source);
  // --target cuda: the same regions (same numbers) as CUDA kernels.
  ::tcc::CudaSource cuda;
  if (opts.target == "cuda") {
    auto cudaSource = ::tcc::generateCudaSource(
        module, ::tcc::computeCapabilityOf(opts.gpuArch));
    if (failed(cudaSource))
      return 1;
    if (opts.emit == EmitKind::Cuda)
      return emitText(opts.output, cudaSource->source);
    cuda = std::move(*cudaSource);
  }
  ::tcc::HostLibrary hostLib;
  bool hasFused = false;
  module.walk([&](mlir::tcc::FusedOp) { hasFused = true; });
  if (hasFused && opts.emit == EmitKind::Artifact && !plan) {
    std::string err;
    if (!::tcc::compileHostLibrary(*source, hostLib, err,
                                   opts.cpuIsa == "native" ? std::string()
                                                           : opts.cpuIsa))
      return fail(err);
  }
  // Compiled even with no fused region: a cuda artifact always has device
  // code, so the runtime can tell it from a CPU one.
  ::tcc::DeviceBinary device;
  if (opts.target == "cuda" && opts.emit == EmitKind::Artifact && !plan) {
    std::string err;
    if (!::tcc::compileCudaSource(cuda.source, opts.gpuArch, device, err))
      return fail(err);
  }

  rt::Artifact artifact;
  ::tcc::ScheduleBuilder builder(artifact, initial);
  builder.planMemory = opts.planMemory;
  builder.seededWeights = opts.weights == "seeded";
  builder.weightsSeed = opts.weightsSeed;
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
  // --offload-optimizer: the update, run after train_step (after the last
  // micro-batch's with --grad-accum), on the host once the runtime splits.
  if (auto opt = module.lookupSymbol<func::FuncOp>("optimizer_step"))
    if (failed(builder.lower(opt, "optimizer_step")))
      return 1;

  // Seeded, the model kept for --export travels without the data of the
  // initializers the runtime draws (export writes the trained values).
  if (builder.seededWeights)
    stripGeneratedInitializers(model, artifact);
  std::string bytes;
  if (!::tcc::embedOnnxModel(
          model, external,
          [&](const void *data, size_t size) {
            return artifact.addBlob(data, size);
          },
          bytes, err))
    return fail(opts.input + ": " + err);
  artifact.onnxOffset = artifact.addBlob(bytes.data(), bytes.size());
  artifact.onnxSize = (int64_t)bytes.size();
  auto batchAttr = module->getAttrOfType<IntegerAttr>("tcc.batch");
  artifact.meta["source"] = opts.input;
  artifact.meta["batch"] = batchAttr ? std::to_string(batchAttr.getInt()) : "?";
  artifact.meta["loss"] = opts.loss;
  // The model's output names in the forward program's order (state updates
  // are not outputs): `tcc predict` names its files after them.
  std::string outputNames;
  for (unsigned i = 0, n = 0, e = forward.getNumResults(); i < e; ++i) {
    auto kind = forward.getResultAttrOfType<StringAttr>(i, "tcc.kind");
    if (kind && kind.getValue() == "update")
      continue;
    auto name = forward.getResultAttrOfType<StringAttr>(i, "tcc.name");
    outputNames += (outputNames.empty() ? "" : ", ") +
                   (name ? name.str() : "output" + std::to_string(n));
    ++n;
  }
  artifact.meta["outputs"] = outputNames;
  if (opts.loss == "cross_entropy") {
    artifact.meta["ignore_index"] = std::to_string(opts.ignoreIndex);
    std::ostringstream smoothing;
    smoothing << opts.labelSmoothing;
    artifact.meta["label_smoothing"] = smoothing.str();
  }
  artifact.meta["grad_accum"] =
      std::to_string(std::max<int64_t>(opts.gradAccum, 1));
  if (opts.clipGradNorm > 0)
    artifact.meta["clip_grad_norm"] = fmt(opts.clipGradNorm);
  if (opts.dataParallel) {
    int64_t buckets = 0;
    for (const rt::Program &p : artifact.programs)
      for (const rt::Instr &in : p.instrs)
        buckets += rt::abi::is(in, rt::abi::KernelId::AllReduce) ||
                   rt::abi::is(in, rt::abi::KernelId::ReduceScatter);
    artifact.meta["data_parallel"] = "on";
    artifact.meta["all_reduce_buckets"] = std::to_string(buckets);
    artifact.meta["bucket_bytes"] = std::to_string(opts.bucketBytes);
  }
  // Sharded optimizer state: which state tensors are shards of which
  // parameter (runtime/core/ZeroShards.h reads it back).
  if (auto zero = module->getAttrOfType<DictionaryAttr>("tcc.zero")) {
    artifact.meta["zero_shards"] =
        std::to_string(cast<IntegerAttr>(zero.get("shards")).getInt());
    std::string states;
    for (NamedAttribute a : cast<DictionaryAttr>(zero.get("states")))
      states += (states.empty() ? "" : ",") + a.getName().str() + "=" +
                cast<StringAttr>(a.getValue()).str();
    artifact.meta["zero_sharded_state"] = states;
  }
  if (opts.offloadOptimizer) {
    try {
      rt::OffloadPlan off = rt::offloadPlan(artifact);
      artifact.meta["offload_optimizer"] = "on";
      artifact.meta["offload_host_state_bytes"] =
          std::to_string(off.hostStateBytes);
    } catch (const rt::Error &e) {
      return fail(std::string("--offload-optimizer: ") + e.what());
    }
  }
  artifact.meta["pad_multiple"] = std::to_string(pipe.padMultiple);
  artifact.meta["gemm_epilogue"] = pipe.gemmEpilogue ? "on" : "off";
  artifact.meta["fuse_attention"] = pipe.fuseAttention ? "on" : "off";
  if (auto cce = module->getAttrOfType<StringAttr>("tcc.cut_cross_entropy"))
    artifact.meta["cut_cross_entropy"] = cce.str();
  else
    artifact.meta["cut_cross_entropy"] = "off";
  if (pipe.fuse)
    artifact.meta["fuse_column_sums"] = pipe.fuseColumnSums ? "on" : "off";
  artifact.meta["shadow_weights"] = pipe.shadowWeights ? "on" : "off";
  artifact.meta["trim_conv_taps"] = pipe.trimConvTaps ? "on" : "off";
  artifact.meta["conv_gemm"] =
      pipe.trimConvTaps && pipe.convGemm ? "on" : "off";
  artifact.meta["precision"] = opts.precision;
  artifact.meta["target"] = opts.target;
  if (opts.target == "cuda")
    artifact.meta["gpu_arch"] = opts.gpuArch;
  artifact.meta["weights"] =
      builder.seededWeights
          ? "seeded (seed " + std::to_string(opts.weightsSeed) + ")"
          : "onnx";
  if (!hostLib.bytes.empty()) {
    artifact.hostLibOffset =
        artifact.addBlob(hostLib.bytes.data(), hostLib.bytes.size());
    artifact.hostLibSize = (int64_t)hostLib.bytes.size();
    artifact.hostLibIsa = hostLib.isa;
    // Not the compile time: the same model must give the same artifact.
    artifact.meta["host_compiler"] = hostLib.compiler;
  }
  if (!device.cubin.empty()) {
    artifact.device.arch = opts.gpuArch;
    artifact.device.offset =
        artifact.addBlob(device.cubin.data(), device.cubin.size());
    artifact.device.size = (int64_t)device.cubin.size();
    artifact.device.compiler = device.compiler;
    artifact.device.kernels = std::move(cuda.kernels);
  }
  // What export needs to merge or separate the adapters (LoraExport.h).
  if (lora) {
    artifact.meta["lora.rank"] =
        std::to_string(cast<IntegerAttr>(lora.get("rank")).getInt());
    // The shortest text that reads back as the same double: the merged
    // export scales by exactly what training did.
    char alpha[32];
    double a = cast<FloatAttr>(lora.get("alpha")).getValueAsDouble();
    artifact.meta["lora.alpha"] =
        std::string(alpha, std::to_chars(alpha, alpha + sizeof alpha, a).ptr);
    std::string targets;
    for (Attribute t : cast<ArrayAttr>(lora.get("targets")))
      targets += (targets.empty() ? "" : ",") + cast<StringAttr>(t).str();
    artifact.meta["lora.targets"] = targets;
    artifact.meta["lora.seed"] = std::to_string(opts.loraSeed);
    for (NamedAttribute w : cast<DictionaryAttr>(lora.get("weights")))
      artifact.meta[::tcc::kLoraWeightPrefix + w.getName().str()] =
          cast<StringAttr>(w.getValue()).str();
  }
  if (auto o = module->getAttrOfType<DictionaryAttr>("tcc.optimizer")) {
    for (NamedAttribute a : o) {
      std::string key = "optimizer." + a.getName().str();
      if (auto f = dyn_cast<FloatAttr>(a.getValue()))
        artifact.meta[key] = fmt(f.getValueAsDouble());
      else if (auto s = dyn_cast<StringAttr>(a.getValue()))
        artifact.meta[key] = s.str();
    }
  }

  if (plan) {
    *plan = std::move(artifact);
    return 0;
  }
  if (opts.report) {
    std::ostringstream os;
    os << rolesReport;
    if (opts.clipGradNorm > 0)
      os << "gradient clipping: global L2 norm of the gradients clipped to "
         << fmt(opts.clipGradNorm)
         << " in the step (clip_grad_norm_, after accumulation); metric "
            "grad_norm\n";
    else if (opts.trackGradNorm)
      os << "gradient clipping: off; the step computes the metric "
            "grad_norm\n";
    if (opts.dataParallel)
      os << "data parallel: gradients averaged over the ranks of mpirun in "
         << artifact.meta["all_reduce_buckets"] << " bucket(s) of up to "
         << fmt(double(opts.bucketBytes) / (1 << 20))
         << " MiB, each started as soon as the backward has made it; "
            "--batch is each rank's share\n";
    // Said where the model has a cross-entropy loss the pass could fuse.
    auto cce = artifact.meta.find("cut_cross_entropy");
    if (cce != artifact.meta.end() &&
        cce->second.rfind("not applied: no softmax_cross_entropy", 0) != 0)
      os << "cut cross-entropy: " << cce->second << "\n";
    ::tcc::MemoryReport anatomy = ::tcc::analyzeMemory(artifact);
    ::tcc::printMemoryReport(anatomy, os);
    if (artifact.meta.count("zero_shards"))
      os << zeroReport(artifact, anatomy.optimizerState);
    if (opts.offloadOptimizer)
      os << offloadReport(artifact);
    os << optimizerReport(artifact);
    bool toStdout = opts.emit == EmitKind::Artifact && !opts.output.empty() &&
                    opts.output != "-";
    (toStdout ? llvm::outs() : llvm::errs()) << os.str();
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

int ::tcc::compileModel(const CompileOptions &opts) {
  return compile(opts, nullptr);
}

int ::tcc::planModel(const CompileOptions &opts, rt::Artifact &out) {
  CompileOptions o = opts;
  o.emit = EmitKind::Artifact;
  o.report = false;
  return compile(o, &out);
}
