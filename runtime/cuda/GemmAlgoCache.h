//===- GemmAlgoCache.h - Autotuned cuBLASLt algorithms across runs -*- C++
//-*-===//
//
// TCC_CUDA_GEMM_AUTOTUNE=N picks each GEMM problem's fastest of N cuBLASLt
// algorithms by timing them, so two runs may pick differently and differ
// in their last bits. With TCC_CUDA_GEMM_AUTOTUNE_CACHE=FILE the picks are
// kept in FILE: a problem found there takes the recorded algorithm untimed,
// and a problem tuned anew is recorded, so every run after the first makes
// the same picks (XLA and TVM keep autotuning results the same way). The
// algorithms are cuBLASLt's opaque 64-byte cublasLtMatmulAlgo_t, valid for
// one cuBLASLt version on one GPU model: each is filed under a scope naming
// both, and other scopes' entries are kept but not used.
//
// No CUDA here (the file and its checks are tested where there is no GPU);
// CudaGemm.cpp keys and validates the algorithms.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_GEMMALGOCACHE_H
#define TCC_RUNTIME_CUDA_GEMMALGOCACHE_H

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace tcc::rt::cuda {

class GemmAlgoCache {
public:
  /// cublasLtMatmulAlgo_t's size: uint64_t data[8].
  using Algo = std::array<uint64_t, 8>;

  /// Reads `path` when it exists (else starts empty; the file is written on
  /// the first store). Throws Error naming the file and what is wrong when
  /// it is not such a cache.
  GemmAlgoCache(std::string path, std::string scope);

  /// The algorithm recorded for `problem` in this scope, if any.
  std::optional<Algo> find(const std::string &problem) const;
  /// Records `algo` for `problem` and rewrites the file (a temporary file,
  /// then a rename: a run stopped midway leaves the old file whole).
  /// Throws Error when it cannot be written.
  void store(const std::string &problem, const Algo &algo);

  const std::string &path() const { return path_; }

private:
  std::string path_, scope_;
  nlohmann::json doc_;
};

/// TCC_CUDA_GEMM_AUTOTUNE_CACHE's value: the file, or none when unset or
/// empty.
std::optional<std::string> gemmAlgoCachePath(const char *value);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_GEMMALGOCACHE_H
