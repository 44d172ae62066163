//===- JsonFields.h - Checked access to untrusted JSON manifests -*- C++ -*-===//
//
// Artifact and checkpoint manifests are untrusted input: every access checks
// the JSON type and throws Error naming `ctx` (the file and field path).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_JSONFIELDS_H
#define TCC_RUNTIME_CORE_JSONFIELDS_H

#include "runtime/core/Artifact.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tcc::rt::jsonf {

using json = nlohmann::json;

inline const json &field(const json &obj, const char *key,
                         const std::string &ctx) {
  if (!obj.is_object())
    throw Error(ctx + ": expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end())
    throw Error(ctx + ": missing field '" + key + "'");
  return *it;
}

inline int64_t asInt(const json &v, const std::string &ctx) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw Error(ctx + ": integer out of range");
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (!v.is_number_integer())
    throw Error(ctx + ": expected an integer");
  return v.get<int64_t>();
}

inline std::string asString(const json &v, const std::string &ctx) {
  if (!v.is_string())
    throw Error(ctx + ": expected a string");
  return v.get<std::string>();
}

inline const json &asArray(const json &v, const std::string &ctx) {
  if (!v.is_array())
    throw Error(ctx + ": expected an array");
  return v;
}

} // namespace tcc::rt::jsonf

#endif // TCC_RUNTIME_CORE_JSONFIELDS_H
