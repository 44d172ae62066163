//===- NonFinite.h - Finding NaN and Inf in parameters and state -*- C++ -*-===//
//
// The training loop scans the parameters and state for NaN/Inf every few
// steps and before a checkpoint (a checkpoint with non-finite weights is
// never written). A session answers whether any is there
// (Session::anyNonFinite; a GPU counts on the device); these name the first
// one, over host copies of the tensors.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_NONFINITE_H
#define TCC_RUNTIME_CORE_NONFINITE_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcc::rt {

/// Whether p[0..n) holds a NaN or an Inf.
bool hasNonFinite(const float *p, int64_t n);

/// The tensors the scan covers: the f32 parameters and state.
std::vector<int32_t> nonFiniteScanned(const std::vector<TensorInfo> &tensors);

/// "" if every scanned tensor is finite, else a description of the first
/// bad one: "parameter '0.weight' has 3 non-finite values (first: NaN at
/// index 17)". `data(id)` holds tensor `id`'s values.
std::string findNonFinite(const std::vector<TensorInfo> &tensors,
                          const std::function<const void *(int32_t)> &data);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_NONFINITE_H
