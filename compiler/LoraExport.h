//===- LoraExport.h - LoRA adapters at export -------------------*- C++ -*-===//
//
// An artifact compiled with `tcc compile --lora` (passes/Lora.cpp) trains
// adapters `<W>.lora_A` [r, in] and `<W>.lora_B` [out, r] beside each frozen
// weight W; its meta records the rank, alpha and each W's layout (key
// kLoraWeightPrefix + W: "out,in" for a Linear/Gemm-transB weight, "in,out"
// for a MatMul's). Export writes either the merged model (each W replaced by
// W + (alpha/r) B A in its layout: the same graph as the input model) or the
// base model unchanged plus the adapters in a safetensors file (PEFT's
// adapter format: a little-endian u64 header size, a JSON header naming each
// tensor's dtype, shape and byte range, then the raw f32 data; the header's
// __metadata__ holds format "tcc-lora", rank, alpha and each weight's
// layout).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_LORAEXPORT_H
#define TCC_COMPILER_LORAEXPORT_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tcc {

/// Meta key prefix of an adapted weight: "lora.weight.fc1.weight" = "out,in".
inline constexpr const char *kLoraWeightPrefix = "lora.weight.";

struct LoraConfig {
  int64_t rank = 0;
  double alpha = 0;
  struct Weight {
    std::string name;
    bool outIn = true; // stored [out, in] (x W^T), else [in, out] (x W)
  };
  std::vector<Weight> weights;
  double scale() const { return alpha / (double)rank; }
};

/// The artifact's LoRA configuration; false when it was compiled without
/// --lora. Throws rt::Error for a malformed one.
bool readLoraConfig(const rt::Artifact &a, LoraConfig &config);

/// Where `--lora-export separate` writes the adapters of an export to
/// `onnxPath`: NAME.lora.safetensors beside NAME.onnx.
std::string loraAdaptersPath(const std::string &onnxPath);

/// Turns the trained parameter values an export gathered (`values`, by
/// name: only adapters, as every other parameter is frozen) into what the
/// ONNX model gets. `merged`: each adapted weight's merged value (its base
/// read from the artifact's constant). Separate: nothing; the adapters go
/// to `adaptersPath`. The adapters leave `values` either way. Throws
/// rt::Error.
void prepareLoraExport(const rt::Artifact &a, const LoraConfig &config,
                       bool merged,
                       std::map<std::string, std::vector<float>> &values,
                       const std::string &adaptersPath);

/// Writes `tensors` (name -> shape and f32 values) as a safetensors file,
/// atomically, with string `metadata`. Throws rt::Error.
struct SafetensorsEntry {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
void writeSafetensors(const std::string &path,
                      const std::map<std::string, SafetensorsEntry> &tensors,
                      const std::map<std::string, std::string> &metadata);

} // namespace tcc

#endif // TCC_COMPILER_LORAEXPORT_H
