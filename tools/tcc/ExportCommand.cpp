//===- ExportCommand.cpp - tcc export -------------------------------------===//
//
// The artifact's ONNX model with a checkpoint's parameters and running
// statistics, written as `tcc train --export` writes it (exportTrained):
// a finished or interrupted run exported without training again.
//
//===----------------------------------------------------------------------===//
#include "compiler/LoraExport.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/train/Predict.h"
#include "tools/tcc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <map>

using namespace llvm;
using namespace tcc;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model.tcc>"),
                                  cl::sub(tool::exportCmd));
static cl::opt<std::string> checkpoint(
    "checkpoint",
    cl::desc("The checkpoint file, or a directory whose newest valid "
             "checkpoint is taken"),
    cl::value_desc("file|dir"), cl::sub(tool::exportCmd));
static cl::opt<std::string> output("o", cl::desc("The ONNX model to write"),
                                   cl::value_desc("trained.onnx"),
                                   cl::sub(tool::exportCmd));

static cl::opt<std::string> loraExport(
    "lora-export",
    cl::desc("For a model compiled with --lora: 'merged' (the default: "
             "W + (alpha/r)·B·A in each adapted weight) or 'separate' (the "
             "base model unchanged, the adapters in NAME.lora.safetensors "
             "beside it)"),
    cl::value_desc("merged|separate"), cl::init("merged"),
    cl::sub(tool::exportCmd));

int tool::runExport() {
  try {
    if (loraExport != "merged" && loraExport != "separate")
      throw rt::Error("--lora-export must be 'merged' or 'separate', got '" +
                      loraExport + "'");
    if (checkpoint.empty())
      throw rt::Error("give the parameters with --checkpoint FILE|DIR (the "
                      "artifact's own initial ones are its source model's)");
    if (output.empty())
      throw rt::Error("give the model to write with -o trained.onnx");
    rt::Artifact a = rt::readArtifact(input);
    if (a.onnxOffset < 0)
      throw rt::Error(input + ": the artifact carries no ONNX model to "
                              "export");
    if (LoraConfig lora;
        loraExport.getNumOccurrences() && !readLoraConfig(a, lora))
      throw rt::Error("--lora-export: " + input.getValue() +
                      " was compiled without --lora (it has no adapters)");
    rt::Checkpoint c =
        rt::loadCheckpointOf(a, checkpoint, [](const std::string &note) {
          errs() << "tcc export: " << note << "\n";
        });
    std::map<std::string, const rt::CheckpointTensor *> byName;
    for (const rt::CheckpointTensor &t : c.tensors)
      byName[t.name] = &t;
    // Every parameter and state tensor the export reads comes from the
    // checkpoint, which was written for this artifact: each is there, of
    // the artifact's size (checked here all the same). A sharded run's
    // checkpoint holds its state whole (rt::wholeStateTensors).
    rt::ZeroPlan zero = rt::zeroPlan(a);
    for (const rt::TensorInfo &t :
         zero.shards ? rt::wholeStateTensors(a.tensors, zero) : a.tensors) {
      if (!rt::isCheckpointed(t.kind))
        continue;
      auto it = byName.find(t.name);
      if (it == byName.end() ||
          static_cast<int64_t>(it->second->size) != t.byteSize() ||
          it->second->dtype != t.dtype)
        throw rt::Error(c.path + ": has no " + rt::dtypeName(t.dtype) + " " +
                        rt::formatShape(t.shape) + " tensor '" + t.name + "'");
    }
    exportTrained(
        a,
        [&](int32_t id) -> const void * {
          return c.data(*byName.at(a.tensors[id].name));
        },
        output, loraExport == "merged");
    std::printf("exported %s with the parameters of %s (step %lld)\n",
                output.c_str(), c.path.c_str(), (long long)c.meta.step);
  } catch (const rt::Error &e) {
    std::fflush(stdout);
    errs() << "tcc export: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
