//===- TrainRun.cpp - tcc-run train ---------------------------------------===//
//
// `tcc train` without the compiler: the same options (less --export, which
// writes ONNX), the same loop (runtime/train/TrainLoop.h) on whichever
// backend the device selection opened, the same summary lines.
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-run/Commands.h"

#include "runtime/core/ProcessMemory.h"
#include "runtime/train/StopSignal.h"
#include "runtime/train/TrainRun.h"
#include "tools/tcc-run/Args.h"

#include <cstdio>

using namespace tcc;

namespace {
struct Flags : rt::TrainFlags {
  std::string artifact;
};
} // namespace

static run::Args trainArgs(Flags &f) {
  run::Args a(
      "tcc-run train",
      "tcc-run train ART (--data NAME=FILE ... | --tokens FILE|GLOB|DIR) "
      "(--steps N | --epochs E) [options]",
      "Trains the artifact ART (from tcc compile) on the CPU or a GPU.");
  a.positional(&f.artifact, "the artifact to train");
  a.value("device", &f.device, "auto|cpu|cuda",
          "where to run (default auto: the GPU when ART has CUDA code and a "
          "GPU is present)");
  a.list("data", &f.data, "NAME=FILE",
         "data for model input NAME (.npy or .csv), one per input and labels");
  a.value("tokens", &f.tokens, "FILE|GLOB|DIR",
          "a token corpus for a language model (a file, a quoted glob of "
          "shards or a directory of .bin shards; memory-mapped): windows of "
          "T+1 tokens feed the int64 input [N,T] and labels [N,T]");
  a.value("token-type", &f.tokenType, "u8|u16|u32",
          "token width (little-endian), default: an llm.c shard header's, "
          "else u8");
  a.integer("steps", &f.steps, 1, "N", "number of training steps");
  a.integer("epochs", &f.epochs, 1, "E", "number of epochs");
  a.integer("prefetch", &f.prefetch, 1, "N",
            "batches prepared ahead (on a GPU also the device input slots), "
            "default 4");
  a.flag("eager", &f.eager,
         "run op by op, a fresh buffer per result, as a framework does");
  a.flag("tf32", &f.tf32,
         "GPU: fp32 matrix products on TF32 tensor cores (ignored on the "
         "CPU)");
  a.flag("no-cuda-graphs", &f.noGraphs,
         "GPU: launch every kernel of a compiled step on its own instead of "
         "replaying the step as a CUDA graph");
  a.value("metrics", &f.metrics, "FILE", "write one JSON line per step");
  a.integer("seed", &f.seed, 0, "N", "shuffling seed, default 0");
  a.flag("no-shuffle", &f.noShuffle, "take batches in file order");
  a.flag("no-progress", &f.noProgress, "no live progress line");
  a.list("eval-data", &f.evalData, "NAME=FILE",
         "held-out data, evaluated after training (and every --eval-every "
         "steps)");
  a.value("eval-tokens", &f.evalTokens, "FILE|GLOB|DIR",
          "a held-out token corpus (as --tokens): loss and perplexity over "
          "its first windows");
  a.integer("eval-every", &f.evalEvery, 1, "N",
            "evaluate the held-out data after every N steps and the last "
            "(progress line, metrics eval_* fields)");
  a.integer("eval-batches", &f.evalBatches, 1, "K",
            "batches per evaluation (default 20; all of --eval-data for the "
            "evaluation after a run without --eval-every)");
  a.value("checkpoint-dir", &f.checkpointDir, "DIR",
          "write checkpoints here (every --checkpoint-every steps and after "
          "the last)");
  a.integer("checkpoint-every", &f.checkpointEvery, 0, "N",
            "steps between checkpoints (0: only at the end)");
  a.integer("keep-checkpoints", &f.keepCheckpoints, 1, "K",
            "checkpoints to keep, default 3");
  a.value("resume", &f.resume, "DIR|FILE",
          "continue from the newest valid checkpoint in DIR (or FILE)");
  a.value("lr", &f.lr, "X",
          "peak learning rate (default: the one ART was compiled with)");
  a.value("lr-schedule", &f.lrSchedule, "constant|linear|cosine",
          "how the rate changes after the warmup (default constant)");
  a.integer("warmup-steps", &f.warmupSteps, 0, "W",
            "optimizer steps of linear warmup from lr/W to lr, default 0");
  a.value("decay-steps", &f.decaySteps, "D",
          "the step at which linear/cosine decay reaches --min-lr (default: "
          "the run's last step)");
  a.value("min-lr", &f.minLr, "M",
          "the rate linear/cosine decay ends at, default 0");
  a.value("on-nonfinite", &f.onNonfinite, "stop|skip",
          "a NaN/Inf loss stops the run (default), or with fp16 loss scaling "
          "a skipped step may have one");
  a.value("trace", &f.trace, "FILE",
          "write a timeline (Chrome/Perfetto JSON: steps, kernels, copies, "
          "feeder waits, checkpoints, the arena's memory) of the first "
          "--trace-steps steps");
  a.integer("trace-steps", &f.traceSteps, 1, "N",
            "steps --trace records in detail, default 5");
  return a;
}

int run::runTrain(int argc, char **argv) {
  Flags f;
  try {
    // Before anything starts threads (mpirun -np N: each rank its share).
    rt::shareMachineAmongRanks();
    // A data-parallel run prints and writes from rank 0 only.
    bool lead = rt::isLeadRank();
    run::Args args = trainArgs(f);
    if (!args.parse(argc, argv, 2))
      return 0;
    rt::DeviceRequest req = rt::parseDeviceRequest(f.device);
    rt::TrainOptions o = trainOptionsOf(f, rt::installStopHandlers());
    // Without a GPU, --device cuda fails before anything is read.
    rt::DeviceProbe probe;
    if (req == rt::DeviceRequest::Cuda) {
      probe = rt::probeDevices();
      rt::requireGpu(probe);
    }
    rt::Artifact a = rt::readArtifact(f.artifact);
    rt::DeviceChoice choice = req == rt::DeviceRequest::Cuda
                                  ? rt::selectDevice(req, a, f.artifact, probe)
                                  : rt::selectDevice(req, a, f.artifact);
    bool gpu = choice.device == rt::Device::Cuda;
    if (!choice.note.empty() && lead)
      std::fprintf(stderr, "tcc-run: %s\n", choice.note.c_str());
    rt::ExecMode mode = f.eager ? rt::ExecMode::Eager : rt::ExecMode::Compiled;
    rt::resetPeakRss();
    int64_t rssBefore = rt::readProcessMemory().rssBytes;
    rt::TrainRun run(a, choice.device, mode, rt::sessionOptionsOf(f));
    if (gpu && lead)
      std::fprintf(stderr, "tcc-run: GPU %s\n",
                   run.session().deviceDescription().c_str());
    rt::TrainResult r = run.train(o);
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
    int64_t rssGrowth = rt::readProcessMemory().peakRssBytes - rssBefore;
    std::printf("memory: %s persistent %s, temporaries peak %s, measured peak "
                "%s; process peak RSS +%s since the session was built\n",
                gpu ? "device" : "host", formatBytes(m.persistentBytes).c_str(),
                formatBytes(m.tempPeakBytes).c_str(),
                formatBytes(m.measuredPeakBytes).c_str(),
                formatBytes(rssGrowth).c_str());
    if (r.checkpointsWritten)
      std::printf("wrote %lld checkpoint(s) in %.2f s, the last %s\n",
                  (long long)r.checkpointsWritten, r.checkpointSeconds,
                  r.lastCheckpoint.c_str());
    rt::EvalResult e;
    if (run.finalEvaluation(o, r, e))
      rt::printEvalSummary(e);
    if (!o.tracePath.empty())
      std::printf("%s\n", run.traceSummary().c_str());
  } catch (const rt::Error &e) {
    return rt::reportTrainError("tcc-run train", e.what());
  }
  return 0;
}
