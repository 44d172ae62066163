//===- GemmAlgoCache.cpp - Autotuned cuBLASLt algorithms across runs ------===//
#include "runtime/cuda/GemmAlgoCache.h"

#include "runtime/core/Artifact.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tcc::rt::cuda {

static constexpr const char *kFormat = "tcc-gemm-algos";
static constexpr int kVersion = 1;

/// An algorithm as 128 hex digits, word by word.
static std::string toHex(const GemmAlgoCache::Algo &a) {
  std::string s;
  char buf[17];
  for (uint64_t w : a) {
    std::snprintf(buf, sizeof buf, "%016llx",
                  static_cast<unsigned long long>(w));
    s += buf;
  }
  return s;
}

static std::optional<GemmAlgoCache::Algo> fromHex(const std::string &s) {
  if (s.size() != 128)
    return std::nullopt;
  GemmAlgoCache::Algo a{};
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t w = 0;
    for (size_t k = 0; k < 16; ++k) {
      char c = s[16 * i + k];
      int v = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                     : -1;
      if (v < 0)
        return std::nullopt;
      w = (w << 4) | static_cast<uint64_t>(v);
    }
    a[i] = w;
  }
  return a;
}

GemmAlgoCache::GemmAlgoCache(std::string path, std::string scope)
    : path_(std::move(path)), scope_(std::move(scope)) {
  doc_ = {{"format", kFormat}, {"version", kVersion}, {"scopes", {}}};
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT)
      return; // written on the first store
    throw Error("TCC_CUDA_GEMM_AUTOTUNE_CACHE " + path_ +
                ": cannot read: " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto bad = [&](const std::string &what) {
    return Error("TCC_CUDA_GEMM_AUTOTUNE_CACHE " + path_ +
                 " is not a tcc GEMM algorithm cache: " + what +
                 " (remove it to start a new one)");
  };
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded())
    throw bad("not JSON");
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw bad("no \"format\": \"" + std::string(kFormat) + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int>() != kVersion)
    throw bad("version is not " + std::to_string(kVersion));
  if (!j.contains("scopes") || !j["scopes"].is_object())
    throw bad("no \"scopes\" object");
  for (const auto &[scope, entries] : j["scopes"].items()) {
    if (!entries.is_object())
      throw bad("scope '" + scope + "' is not an object");
    for (const auto &[problem, algo] : entries.items())
      if (!algo.is_string() || !fromHex(algo.get<std::string>()))
        throw bad("scope '" + scope + "', problem '" + problem +
                  "' is not 128 lowercase hex digits");
  }
  doc_ = std::move(j);
}

std::optional<GemmAlgoCache::Algo>
GemmAlgoCache::find(const std::string &problem) const {
  const nlohmann::json &scopes = doc_["scopes"];
  auto s = scopes.find(scope_);
  if (s == scopes.end())
    return std::nullopt;
  auto e = s->find(problem);
  if (e == s->end())
    return std::nullopt;
  return fromHex(e->get<std::string>());
}

void GemmAlgoCache::store(const std::string &problem, const Algo &algo) {
  doc_["scopes"][scope_][problem] = toHex(algo);
  std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc_.dump(1) << "\n";
    out.flush();
    if (!out)
      throw Error("TCC_CUDA_GEMM_AUTOTUNE_CACHE " + path_ + ": cannot write " +
                  tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    throw Error("TCC_CUDA_GEMM_AUTOTUNE_CACHE " + path_ +
                ": cannot replace it with " + tmp + ": " +
                std::strerror(errno));
}

std::optional<std::string> gemmAlgoCachePath(const char *value) {
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

} // namespace tcc::rt::cuda
