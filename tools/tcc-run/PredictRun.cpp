//===- PredictRun.cpp - tcc-run predict -----------------------------------===//
//
// `tcc predict` without the compiler: the same flags and the same code
// (runtime/train/Predict.h). `tcc export` has no counterpart here, as
// `tcc train --export` has none in `tcc-run train`: writing ONNX needs the
// compiler's protobuf code.
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-run/Commands.h"

#include "runtime/train/Predict.h"
#include "tools/tcc-run/Args.h"

#include <cstdio>

using namespace tcc;

int run::runPredict(int argc, char **argv) {
  rt::PredictRequest r;
  try {
    run::Args a("tcc-run predict",
                "tcc-run predict ART [--checkpoint CKPT] --data NAME=FILE ... "
                "--out OUT.npy [options]",
                "Runs the forward program of ART over the data and writes "
                "the model's outputs (.npy).");
    a.positional(&r.artifact, "the artifact");
    a.value("checkpoint", &r.checkpoint, "FILE|DIR",
            "parameters from this checkpoint, or the newest valid one in DIR "
            "(default: the artifact's initial ones)");
    a.list("data", &r.data, "NAME=FILE",
           "data for model input NAME (.npy or .csv), one per input");
    a.value("out", &r.out, "OUT.npy",
            "where the output goes (several outputs: OUT_NAME.npy each)");
    a.value("device", &r.device, "auto|cpu|cuda",
            "where to run (default auto: the GPU when ART has CUDA code and "
            "a GPU is present)");
    a.integer("threads", &r.threads, 1, "N",
              "CPU threads (default: TCC_NUM_THREADS, else all)");
    if (!a.parse(argc, argv, 2))
      return 0;
    rt::runPrediction(r, [](const std::string &note) {
      std::fprintf(stderr, "tcc-run: %s\n", note.c_str());
    });
  } catch (const rt::Error &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tcc-run predict: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
