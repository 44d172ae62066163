//===- LoraExport.cpp - LoRA adapters at export ---------------------------===//
#include "compiler/LoraExport.h"
#include "runtime/core/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>

using namespace tcc;

bool tcc::readLoraConfig(const rt::Artifact &a, LoraConfig &config) {
  auto rank = a.meta.find("lora.rank");
  if (rank == a.meta.end())
    return false;
  config = {};
  try {
    config.rank = std::stoll(rank->second);
    auto alpha = a.meta.find("lora.alpha");
    config.alpha =
        alpha == a.meta.end() ? (double)config.rank : std::stod(alpha->second);
  } catch (const std::exception &) {
    throw rt::Error("the artifact's LoRA rank or alpha is malformed");
  }
  if (config.rank < 1)
    throw rt::Error("the artifact's LoRA rank is below 1");
  std::string prefix = kLoraWeightPrefix;
  for (const auto &[key, value] : a.meta) {
    if (key.compare(0, prefix.size(), prefix) != 0)
      continue;
    if (value != "out,in" && value != "in,out")
      throw rt::Error("the artifact's LoRA layout of '" +
                      key.substr(prefix.size()) + "' is '" + value +
                      "' (expected out,in or in,out)");
    config.weights.push_back({key.substr(prefix.size()), value == "out,in"});
  }
  return true;
}

std::string tcc::loraAdaptersPath(const std::string &onnxPath) {
  std::string base = onnxPath;
  const std::string ext = ".onnx";
  if (base.size() > ext.size() &&
      base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".lora.safetensors";
}

/// The f32 values of the artifact's tensor `name` of `kind`, and its shape.
static const float *artifactValues(const rt::Artifact &a,
                                   const std::string &name,
                                   std::vector<int64_t> &shape) {
  int32_t id = a.findTensor(name);
  if (id < 0 || a.tensors[id].kind != rt::TensorKind::Constant ||
      a.tensors[id].dtype != rt::DType::F32 || a.tensors[id].dataOffset < 0)
    throw rt::Error("the artifact has no frozen f32 weight '" + name +
                    "' for its LoRA adapters");
  shape = a.tensors[id].shape;
  return reinterpret_cast<const float *>(a.blob.data() +
                                         a.tensors[id].dataOffset);
}

void tcc::prepareLoraExport(const rt::Artifact &a, const LoraConfig &config,
                            bool merged,
                            std::map<std::string, std::vector<float>> &values,
                            const std::string &adaptersPath) {
  std::map<std::string, SafetensorsEntry> adapters;
  std::map<std::string, std::vector<float>> mergedWeights;
  int64_t r = config.rank;
  for (const LoraConfig::Weight &w : config.weights) {
    auto itA = values.find(w.name + ".lora_A");
    auto itB = values.find(w.name + ".lora_B");
    if (itA == values.end() || itB == values.end())
      throw rt::Error("the artifact lacks the LoRA adapters of '" + w.name +
                      "'");
    std::vector<int64_t> shape;
    const float *base = artifactValues(a, w.name, shape);
    if (shape.size() != 2)
      throw rt::Error("LoRA weight '" + w.name + "' is not 2-D");
    int64_t out = shape[w.outIn ? 0 : 1], in = shape[w.outIn ? 1 : 0];
    const std::vector<float> &A = itA->second, &B = itB->second;
    if ((int64_t)A.size() != r * in || (int64_t)B.size() != out * r)
      throw rt::Error("the LoRA adapters of '" + w.name +
                      "' do not fit its shape");
    if (merged) {
      // W + s B A, accumulated in double, written in W's own layout.
      std::vector<float> m(base, base + out * in);
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double d = 0;
          for (int64_t k = 0; k < r; ++k)
            d += (double)B[o * r + k] * (double)A[k * in + i];
          float &dst = w.outIn ? m[o * in + i] : m[i * out + o];
          dst = (float)((double)dst + config.scale() * d);
        }
      mergedWeights[w.name] = std::move(m);
    } else {
      adapters[w.name + ".lora_A"] = {{r, in}, A};
      adapters[w.name + ".lora_B"] = {{out, r}, B};
    }
    values.erase(itA);
    values.erase(itB);
  }
  if (merged) {
    for (auto &[name, v] : mergedWeights)
      values[name] = std::move(v);
    return;
  }
  std::map<std::string, std::string> meta{
      {"format", "tcc-lora"},
      {"rank", std::to_string(r)},
      {"alpha", nlohmann::json(config.alpha).dump()}};
  for (const LoraConfig::Weight &w : config.weights)
    meta["layout." + w.name] = w.outIn ? "out,in" : "in,out";
  writeSafetensors(adaptersPath, adapters, meta);
}

void tcc::writeSafetensors(
    const std::string &path,
    const std::map<std::string, SafetensorsEntry> &tensors,
    const std::map<std::string, std::string> &metadata) {
  nlohmann::ordered_json header;
  header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    uint64_t bytes = t.values.size() * sizeof(float);
    header[name] = {{"dtype", "F32"},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // Padded with spaces so the data starts 8-byte aligned (the format allows
  // trailing whitespace in the header).
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<char> file;
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    file.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  file.insert(file.end(), text.begin(), text.end());
  // f32 little-endian: the host's order on every platform tcc runs on.
  for (const auto &[name, t] : tensors) {
    const char *p = reinterpret_cast<const char *>(t.values.data());
    file.insert(file.end(), p, p + t.values.size() * sizeof(float));
  }
  rt::writeFileAtomically(path, file.data(), file.size());
}
