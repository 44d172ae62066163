//===- tcc-run.cpp - Runs compiled artifacts without the compiler ---------===//
//
//   tcc-run train model.tcc --data x=x.npy --data labels=y.npy --steps 100
//   tcc-run bench model.tcc --device cuda
//   tcc-run predict model.tcc --checkpoint ckpts --data x=x.npy --out y.npy
//   tcc-run info
//
// The runtime-only runner: what `tcc train` and `tcc bench` do with an
// artifact, on a machine that has no MLIR, LLVM or ONNX (an artifact
// compiled on one machine is trained on another, e.g. a GPU server).
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-run/Commands.h"

#include "runtime/core/Backend.h"
#include "runtime/core/DeviceSelect.h"
#include "runtime/cpu/BlasCore.h"
#include "tools/tcc-run/Args.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

using namespace tcc;

static const char *const kUsage =
    "usage: tcc-run COMMAND [options]\n"
    "\n"
    "Runs artifacts compiled by tcc (tcc compile) with the runtime alone.\n"
    "\n"
    "commands:\n"
    "  train ART ...   train an artifact on data files or a token corpus\n"
    "  bench ART ...   time eager and compiled training steps on synthetic "
    "data\n"
    "  predict ART ... run the forward program over data files, writing "
    ".npy\n"
    "  info            this runtime's backends and the devices they see\n"
    "\n"
    "Each command takes --help. The device is chosen with --device "
    "auto|cpu|cuda\n"
    "(auto: the GPU when the artifact was compiled with --target cuda and a "
    "GPU is\n"
    "present, else the CPU).\n";

int run::runInfo(int argc, char **argv) {
  try {
    Args args("tcc-run info", "tcc-run info",
              "Lists this runtime's backends, whether each can run here, "
              "and its device (or why not).");
    if (!args.parse(argc, argv, 2))
      return 0;
    std::printf("tcc-run %s: runtime only (no compiler)\n", TCC_VERSION);
    std::printf("CPU: %u hardware threads (TCC_NUM_THREADS sets the "
                "kernels' and BLAS threads)\n",
                std::thread::hardware_concurrency());
    // Each backend is loaded to be asked; a module that does not load says
    // why.
    for (const std::string &name : rt::backends::names()) {
      std::string why;
      const rt::Backend *b = rt::backends::find(name, &why);
      if (b && b->available(&why))
        std::printf("backend %s: %s\n", name.c_str(),
                    b->deviceDescription().c_str());
      else
        std::printf("backend %s: not usable here (%s)\n", name.c_str(),
                    why.c_str());
    }
    // The line scripts read (tests/lit/lit.cfg.py, tests/gpu/run.sh).
    rt::DeviceProbe gpu = rt::probeDevices();
    if (gpu.gpu)
      std::printf("GPU: %s\n",
                  rt::backends::find("cuda")->deviceDescription().c_str());
    else
      std::printf("GPU: none (%s)\n", gpu.whyNoGpu.c_str());
  } catch (const rt::Error &e) {
    std::fprintf(stderr, "tcc-run info: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  tcc::rt::useRecognisedBlasCore(argv);
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    std::fprintf(stderr, "tcc-run: error: no command given; run 'tcc-run "
                         "--help'\n");
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("tcc-run %s\n", TCC_VERSION);
    return 0;
  }
  if (cmd == "train")
    return run::runTrain(argc, argv);
  if (cmd == "bench")
    return run::runBench(argc, argv);
  if (cmd == "predict")
    return run::runPredict(argc, argv);
  if (cmd == "info")
    return run::runInfo(argc, argv);
  std::fprintf(stderr,
               "tcc-run: error: unknown command '%s' (commands: train, "
               "bench, predict, info; run 'tcc-run --help')\n",
               cmd.c_str());
  return 2;
}
