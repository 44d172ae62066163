//===- NonFinite.cpp - Finding NaN and Inf in parameters and state --------===//
#include "runtime/core/NonFinite.h"

#include <cmath>
#include <cstring>

namespace tcc::rt {

// A NaN or an Inf has every exponent bit set: adding 1 to the exponent field
// then carries into bit 31. Only and/add/or, which vectorize with plain
// SSE2, keep the per-step scan cheap (a compare or an unsigned max would
// need SSE4.1).
bool hasNonFinite(const float *p, int64_t n) {
  uint32_t acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, p + i, sizeof b);
    acc |= (b & 0x7f800000u) + 0x00800000u;
  }
  return acc & 0x80000000u;
}

std::vector<int32_t> nonFiniteScanned(const std::vector<TensorInfo> &tensors) {
  std::vector<int32_t> ids;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if ((t.kind == TensorKind::Param || t.kind == TensorKind::State) &&
        t.dtype == DType::F32)
      ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::string findNonFinite(const std::vector<TensorInfo> &tensors,
                          const std::function<const void *(int32_t)> &data) {
  for (int32_t id : nonFiniteScanned(tensors)) {
    const TensorInfo &t = tensors[id];
    const float *p = static_cast<const float *>(data(id));
    int64_t n = t.numElements();
    if (!hasNonFinite(p, n))
      continue;
    // Rare path: count them and name the first.
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i]) && bad++ == 0)
        first = i;
    float v = p[first];
    std::string what = std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    return std::string(t.kind == TensorKind::Param ? "parameter" : "state") +
           " '" + t.name + "' has " + std::to_string(bad) +
           " non-finite value" + (bad == 1 ? "" : "s") + " (first: " + what +
           " at index " + std::to_string(first) + ")";
  }
  return "";
}

} // namespace tcc::rt
