//===- PredictCommand.cpp - tcc predict -----------------------------------===//
//
// The forward program over data files, with the artifact's initial
// parameters or a checkpoint's (runtime/train/Predict.h, shared with
// `tcc-run predict`).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Predict.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::predictCmd));
static cl::opt<std::string> checkpoint(
    "checkpoint",
    cl::desc("Parameters from this checkpoint file, or the newest valid one "
             "in this directory (default: the artifact's initial ones)"),
    cl::value_desc("file|dir"), cl::sub(tool::predictCmd));
static cl::list<std::string>
    data("data",
         cl::desc("Input data: NAME=FILE (.npy or .csv), one per "
                  "model input"),
         cl::value_desc("name=file"), cl::sub(tool::predictCmd));
static cl::opt<std::string>
    out("out",
        cl::desc("Write the output here (several outputs: OUT_NAME.npy "
                 "each)"),
        cl::value_desc("out.npy"), cl::sub(tool::predictCmd));
static cl::opt<std::string>
    device("device",
           cl::desc("Where to run: 'auto' (the default: the GPU when the "
                    "artifact was compiled with --target cuda and a GPU is "
                    "present, else the CPU), 'cpu' or 'cuda'"),
           cl::value_desc("auto|cpu|cuda"), cl::init("auto"),
           cl::sub(tool::predictCmd));
static cl::opt<int64_t> threads("threads",
                                cl::desc("CPU threads (default: "
                                         "TCC_NUM_THREADS, else all)"),
                                cl::value_desc("N"), cl::init(0),
                                cl::sub(tool::predictCmd));

int tool::runPredict() {
  try {
    if (threads.getNumOccurrences() && threads < 1)
      throw rt::Error("--threads must be at least 1, got " +
                      std::to_string(threads));
    rt::PredictRequest r;
    r.artifact = input;
    r.checkpoint = checkpoint;
    r.out = out;
    r.device = device;
    r.data.assign(data.begin(), data.end());
    r.threads = threads;
    rt::runPrediction(r, [](const std::string &note) {
      errs() << "tcc predict: " << note << "\n";
    });
  } catch (const rt::Error &e) {
    std::fflush(stdout);
    errs() << "tcc predict: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
