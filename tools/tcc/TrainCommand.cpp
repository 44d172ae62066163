//===- TrainCommand.cpp - tcc train ---------------------------------------===//
#include "compiler/LoraExport.h"
#include "compiler/OnnxModelIO.h"
#include "compiler/codegen/MemoryReport.h"
#include "runtime/core/NonFinite.h"
#include "runtime/core/ProcessMemory.h"
#include "runtime/train/StopSignal.h"
#include "runtime/train/TrainRun.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <functional>
#include <map>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::trainCmd));
static cl::list<std::string>
    data("data", cl::desc("Input data: NAME=FILE (.npy or .csv)"),
         cl::value_desc("name=file"), cl::sub(tool::trainCmd));
static cl::opt<int64_t> steps("steps", cl::desc("Number of training steps"),
                              cl::init(-1), cl::sub(tool::trainCmd));
static cl::opt<int64_t> epochs("epochs", cl::desc("Number of epochs"),
                               cl::init(-1), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    tokens("tokens",
           cl::desc("A token corpus for a language model (a file, a quoted "
                    "glob of shards or a directory of .bin shards; "
                    "memory-mapped): windows of T+1 tokens feed the int64 "
                    "input [N,T] and labels [N,T]"),
           cl::value_desc("file|glob|dir"), cl::sub(tool::trainCmd));
static cl::opt<std::string> tokenType(
    "token-type",
    cl::desc("Token width: u8, u16 or u32 (little-endian); default: an llm.c "
             "shard header's, else u8"),
    cl::value_desc("u8|u16|u32"), cl::sub(tool::trainCmd));
static cl::opt<uint64_t> seed("seed", cl::desc("Shuffling seed"), cl::init(0),
                              cl::sub(tool::trainCmd));
static cl::opt<bool> noShuffle("no-shuffle",
                               cl::desc("Take batches in file order"),
                               cl::sub(tool::trainCmd));
static cl::opt<std::string> metrics("metrics",
                                    cl::desc("Write one JSON line per step"),
                                    cl::value_desc("file.jsonl"),
                                    cl::sub(tool::trainCmd));
static cl::opt<std::string>
    exportPath("export",
               cl::desc("Write the ONNX model with the trained weights"),
               cl::value_desc("trained.onnx"), cl::sub(tool::trainCmd));
static cl::opt<std::string> loraExport(
    "lora-export",
    cl::desc("How --export writes a model compiled with --lora: 'merged' "
             "(the default: each adapted weight becomes W + (alpha/r) B A, "
             "the input model's graph) or 'separate' (the base model "
             "unchanged, the adapters in NAME.lora.safetensors beside it)"),
    cl::value_desc("merged|separate"), cl::init("merged"),
    cl::sub(tool::trainCmd));
static cl::opt<bool> eager("eager",
                           cl::desc("Run op by op, a fresh buffer per result, "
                                    "as a framework does"),
                           cl::sub(tool::trainCmd));
static cl::list<std::string>
    evalData("eval-data",
             cl::desc("Held-out data, evaluated after training (and every "
                      "--eval-every steps): NAME=FILE"),
             cl::value_desc("name=file"), cl::sub(tool::trainCmd));
static cl::opt<std::string> evalTokens(
    "eval-tokens",
    cl::desc("A held-out token corpus (as --tokens): loss and perplexity "
             "over its first windows"),
    cl::value_desc("file|glob|dir"), cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    evalEvery("eval-every",
              cl::desc("Evaluate the held-out data after every N steps and "
                       "the last (progress line, metrics eval_* fields)"),
              cl::value_desc("N"), cl::init(0), cl::sub(tool::trainCmd));
static cl::opt<int64_t> evalBatches(
    "eval-batches",
    cl::desc("Batches per evaluation (default 20; all of --eval-data for the "
             "evaluation after a run without --eval-every)"),
    cl::value_desc("K"), cl::init(-1), cl::sub(tool::trainCmd));
static cl::opt<bool> noProgress("no-progress",
                                cl::desc("No live progress line"),
                                cl::sub(tool::trainCmd));
static cl::opt<std::string> traceFile(
    "trace",
    cl::desc("Write a timeline of the first --trace-steps steps: steps, "
             "kernels, host copies, feeder waits, checkpoints, evaluations "
             "and the arena's memory, as Chrome/Perfetto JSON (open it in "
             "ui.perfetto.dev or chrome://tracing)"),
    cl::value_desc("trace.json"), cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    traceSteps("trace-steps",
               cl::desc("Steps --trace records in detail (default 5)"),
               cl::init(5), cl::sub(tool::trainCmd));
static cl::opt<unsigned> prefetch("prefetch",
                                  cl::desc("Batches the feeder keeps ready"),
                                  cl::init(4), cl::sub(tool::trainCmd));
static cl::opt<std::string> checkpointDir(
    "checkpoint-dir",
    cl::desc("Write checkpoints here (every --checkpoint-every steps and "
             "after the last step)"),
    cl::value_desc("dir"), cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("Steps between checkpoints (0: only at the end)"),
                    cl::value_desc("N"), cl::init(0), cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    keepCheckpoints("keep-checkpoints",
                    cl::desc("Checkpoints to keep; older ones are deleted"),
                    cl::value_desc("K"), cl::init(3), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    resume("resume",
           cl::desc("Continue from the newest valid checkpoint in a directory "
                    "(or from a checkpoint file)"),
           cl::value_desc("dir|file"), cl::sub(tool::trainCmd));

static cl::opt<std::string> onNonfinite(
    "on-nonfinite",
    cl::desc("What a NaN/Inf loss, parameter or state does: 'stop' (the "
             "default: exit 1 naming the step and tensor). 'skip' (fp16 "
             "loss scaling only): a step whose gradients overflowed, which "
             "the step itself skips, may also have a NaN/Inf loss and the "
             "run goes on"),
    cl::value_desc("stop|skip"), cl::init("stop"), cl::sub(tool::trainCmd));

static cl::opt<std::string>
    lrFlag("lr",
           cl::desc("Peak learning rate (default: the one the artifact was "
                    "compiled with); a runtime value, no recompilation"),
           cl::value_desc("X"), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    lrSchedule("lr-schedule",
               cl::desc("How the rate changes after the warmup: constant "
                        "(default), linear or cosine decay to --min-lr"),
               cl::value_desc("constant|linear|cosine"), cl::init("constant"),
               cl::sub(tool::trainCmd));
static cl::opt<int64_t>
    warmupSteps("warmup-steps",
                cl::desc("Optimizer steps of linear warmup: step t < W runs "
                         "at lr*(t+1)/W"),
                cl::value_desc("W"), cl::init(0), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    decaySteps("decay-steps",
               cl::desc("The step at which linear/cosine decay reaches "
                        "--min-lr (default: the run's last step)"),
               cl::value_desc("D"), cl::sub(tool::trainCmd));
static cl::opt<std::string>
    minLr("min-lr",
          cl::desc("The rate linear/cosine decay ends at (default 0)"),
          cl::value_desc("M"), cl::sub(tool::trainCmd));

static cl::opt<std::string> device(
    "device",
    cl::desc("Where to train: 'auto' (the default: the GPU when the artifact "
             "was compiled with --target cuda and a GPU is present, else the "
             "CPU), 'cpu' or 'cuda'"),
    cl::value_desc("auto|cpu|cuda"), cl::init("auto"), cl::sub(tool::trainCmd));
static cl::opt<bool>
    tf32("tf32",
         cl::desc("GPU: fp32 matrix products on TF32 tensor cores (ignored on "
                  "the CPU)"),
         cl::sub(tool::trainCmd));
static cl::opt<bool> noCudaGraphs(
    "no-cuda-graphs",
    cl::desc("GPU: launch every kernel of a compiled step on its own instead "
             "of replaying the step as a CUDA graph"),
    cl::sub(tool::trainCmd));

void tool::exportTrained(const rt::Artifact &a,
                         const std::function<const void *(int32_t)> &data,
                         const std::string &path, bool loraMerged) {
  if (a.onnxOffset < 0)
    throw rt::Error("the artifact carries no ONNX model to export");
  std::string bad = rt::findNonFinite(a.tensors, data);
  if (!bad.empty())
    throw rt::Error("refusing to export " + path + ": " + bad);
  std::map<std::string, std::vector<float>> values, state;
  for (int32_t id = 0; id < (int32_t)a.tensors.size(); ++id) {
    const rt::TensorInfo &t = a.tensors[id];
    bool isState = t.kind == rt::TensorKind::State;
    if ((t.kind != rt::TensorKind::Param && !isState) ||
        t.dtype != rt::DType::F32)
      continue;
    const float *p = static_cast<const float *>(data(id));
    (isState ? state : values)[t.name].assign(p, p + t.numElements());
  }
  // LoRA: the trained values are the adapters; what the model gets is the
  // merged weights, or nothing (the adapters go to a file of their own).
  LoraConfig lora;
  if (readLoraConfig(a, lora)) {
    bool merged = loraMerged;
    std::string adapters = loraAdaptersPath(path);
    prepareLoraExport(a, lora, merged, values, adapters);
    if (!merged)
      std::printf("exported the LoRA adapters to %s\n", adapters.c_str());
  }
  // The model's external tensors point into the blob (embedOnnxModel).
  EmbeddedOnnx model(
      std::string_view(reinterpret_cast<const char *>(a.blob.data()) +
                           a.onnxOffset,
                       a.onnxSize),
      a.blob.data(), a.blob.size());
  std::string err;
  if (!writeTrainedOnnx(model, values, path, err, state))
    throw rt::Error(err);
}

/// The flags as the runtime's shared TrainFlags.
static rt::TrainFlags trainFlags() {
  rt::TrainFlags f;
  f.device = device;
  f.tokens = tokens;
  f.tokenType = tokenType;
  f.metrics = metrics;
  f.checkpointDir = checkpointDir;
  f.resume = resume;
  f.onNonfinite = onNonfinite;
  f.data.assign(data.begin(), data.end());
  f.evalData.assign(evalData.begin(), evalData.end());
  f.evalTokens = evalTokens;
  f.evalEvery = evalEvery;
  f.evalBatches = evalBatches;
  f.steps = steps;
  f.epochs = epochs;
  f.prefetch = prefetch;
  f.checkpointEvery = checkpointEvery;
  f.keepCheckpoints = keepCheckpoints;
  f.seed = static_cast<int64_t>(seed);
  f.eager = eager;
  f.tf32 = tf32;
  f.noShuffle = noShuffle;
  f.noProgress = noProgress;
  f.noGraphs = noCudaGraphs;
  f.lr = lrFlag;
  f.lrSchedule = lrSchedule;
  f.warmupSteps = warmupSteps;
  f.decaySteps = decaySteps;
  f.minLr = minLr;
  f.trace = traceFile;
  f.traceSteps = traceSteps;
  return f;
}

int tool::runTrain() {
  try {
    // Before anything starts threads (mpirun -np N: each rank its share).
    rt::shareMachineAmongRanks();
    // A data-parallel run prints and writes from rank 0 only.
    bool lead = rt::isLeadRank();
    // -1 means "not given" inside; given, a length below 1 is a mistake (a
    // run of 0 steps, or a negative --steps silently ignored next to
    // --epochs), as tcc-run says too.
    if (steps.getNumOccurrences() && steps < 1)
      throw rt::Error("--steps must be at least 1, got " +
                      std::to_string(steps));
    if (epochs.getNumOccurrences() && epochs < 1)
      throw rt::Error("--epochs must be at least 1, got " +
                      std::to_string(epochs));
    if (prefetch < 1)
      throw rt::Error("--prefetch must be at least 1, got " +
                      std::to_string(prefetch));
    if (evalEvery.getNumOccurrences() && evalEvery < 1)
      throw rt::Error("--eval-every must be at least 1, got " +
                      std::to_string(evalEvery));
    if (evalBatches.getNumOccurrences() && evalBatches < 1)
      throw rt::Error("--eval-batches must be at least 1, got " +
                      std::to_string(evalBatches));
    if (loraExport != "merged" && loraExport != "separate")
      throw rt::Error("--lora-export must be 'merged' or 'separate', got '" +
                      loraExport + "'");
    if (loraExport.getNumOccurrences() && exportPath.empty())
      throw rt::Error("--lora-export needs --export (where the model goes)");
    rt::TrainFlags f = trainFlags();
    rt::DeviceRequest req = rt::parseDeviceRequest(f.device);
    rt::TrainOptions o = rt::trainOptionsOf(f, rt::installStopHandlers());
    rt::Artifact a = rt::readArtifact(input);
    if (LoraConfig lora;
        loraExport.getNumOccurrences() && !readLoraConfig(a, lora))
      throw rt::Error("--lora-export: " + input.getValue() +
                      " was compiled without --lora (it has no adapters)");
    rt::DeviceChoice choice = rt::selectDevice(req, a, input);
    if (!choice.note.empty() && lead)
      errs() << "tcc train: " << choice.note << "\n";
    // RSS growth from here covers the session, the feeder and OpenBLAS.
    rt::resetPeakRss();
    int64_t rssBefore = rt::readProcessMemory().rssBytes;
    rt::ExecMode mode = f.eager ? rt::ExecMode::Eager : rt::ExecMode::Compiled;
    rt::TrainRun run(a, choice.device, mode, rt::sessionOptionsOf(f));
    rt::TrainResult r = run.train(o);
    // No evaluation or export of a run cut short: it resumes from the
    // checkpoint instead.
    // Rank 0 reports an interruption (and exits with the signal's status,
    // which ends the run); the others leave quietly, their part done.
    if (r.interruptedBy)
      return lead ? rt::reportInterrupted(r, o) : 0;
    if (!lead)
      return 0;
    rt::MemoryStats m = run.memory();
    rt::printTrainSummary(a, o, r, m, mode, choice.device);
    if (std::string off = run.offloadSummary(); !off.empty())
      std::printf("%s\n", off.c_str());
    MemoryReport predicted = analyzeMemory(a);
    int64_t rssGrowth = rt::readProcessMemory().peakRssBytes - rssBefore;
    std::printf(
        "memory: predicted peak %s (compiled plan), measured peak %s "
        "(session allocations + kernel scratch), process peak RSS "
        "+%s since the session was built\n",
        formatBytes(predicted.predictedPeak(predicted.trainingPrograms()))
            .c_str(),
        formatBytes(m.measuredPeakBytes).c_str(),
        formatBytes(rssGrowth).c_str());
    if (r.checkpointsWritten)
      std::printf("wrote %lld checkpoint(s) in %.2f s, the last %s\n",
                  (long long)r.checkpointsWritten, r.checkpointSeconds,
                  r.lastCheckpoint.c_str());
    // The export first: a bad --eval-data file must not lose the trained
    // model.
    if (!exportPath.empty()) {
      // On a GPU, each tensor the export reads is downloaded once.
      exportTrained(
          a, [&](int32_t id) { return run.hostData(id); }, exportPath,
          loraExport == "merged");
      std::printf("exported %s\n", exportPath.c_str());
    }
    rt::EvalResult e;
    if (run.finalEvaluation(o, r, e))
      rt::printEvalSummary(e);
    if (!o.tracePath.empty())
      std::printf("%s\n", run.traceSummary().c_str());
  } catch (const rt::Error &e) {
    errs().flush();
    return rt::reportTrainError("tcc train", e.what());
  }
  return 0;
}
