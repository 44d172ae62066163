//===- GemmAlgoPick.cpp - Which timed cuBLASLt algorithm to keep ----------===//
#include "runtime/cuda/GemmAlgoPick.h"

#include "runtime/core/Artifact.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tcc::rt::cuda {

std::optional<double> medianRun(const std::vector<float> &ms) {
  std::vector<double> ok;
  for (float t : ms)
    if (std::isfinite(t) && t >= 0.0f)
      ok.push_back(t);
  if (ok.empty())
    return std::nullopt;
  std::sort(ok.begin(), ok.end());
  size_t h = ok.size() / 2;
  return ok.size() % 2 ? ok[h] : 0.5 * (ok[h - 1] + ok[h]);
}

std::optional<size_t> pickTimedAlgo(const std::vector<std::vector<float>> &ms,
                                    double marginPercent) {
  std::optional<size_t> best;
  double bestMs = 0.0;
  std::optional<double> first;
  for (size_t c = 0; c < ms.size(); ++c) {
    std::optional<double> m = medianRun(ms[c]);
    if (c == 0)
      first = m;
    // Ties go to the earlier answer: the heuristic ranks it higher.
    if (m && (!best || *m < bestMs)) {
      best = c;
      bestMs = *m;
    }
  }
  if (!first || !best)
    return best;
  return bestMs < *first * (1.0 - marginPercent / 100.0) ? *best : 0;
}

double gemmAutotuneMargin(const char *value) {
  if (!value || !*value)
    return kGemmAutotuneMarginPercent;
  char *end = nullptr;
  double v = std::strtod(value, &end);
  if (*end != '\0' || !(v >= 0.0 && v <= 50.0))
    throw Error(std::string("TCC_CUDA_GEMM_AUTOTUNE_MARGIN is '") + value +
                "'; it takes a percentage from 0 to 50: how much faster than "
                "the heuristic's first answer another algorithm must run to "
                "be kept");
  return v;
}

} // namespace tcc::rt::cuda
