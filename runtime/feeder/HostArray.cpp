//===- HostArray.cpp - Data file dispatch and element access --------------===//
#include "runtime/feeder/HostArray.h"
#include "runtime/core/Artifact.h"
#include "runtime/feeder/Csv.h"
#include "runtime/feeder/Npy.h"

#include <cmath>
#include <cstring>

namespace tcc::rt {

const char *fileDTypeName(FileDType t) {
  switch (t) {
  case FileDType::F32:
    return "f32";
  case FileDType::F64:
    return "f64";
  case FileDType::I64:
    return "i64";
  case FileDType::I32:
    return "i32";
  case FileDType::U8:
    return "u8";
  }
  return "?";
}

size_t fileDTypeSize(FileDType t) {
  switch (t) {
  case FileDType::F64:
  case FileDType::I64:
    return 8;
  case FileDType::F32:
  case FileDType::I32:
    return 4;
  case FileDType::U8:
    return 1;
  }
  return 1;
}

int64_t HostArray::numElements() const {
  // An empty array may list huge dimensions beside its 0 (the readers accept
  // it: it holds no bytes), so a plain product could overflow.
  for (int64_t d : shape)
    if (d == 0)
      return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d; // the readers checked that the bytes of a non-empty array fit
  return n;
}

template <class T> static T load(const uint8_t *p) {
  T v; // memcpy: the bytes carry no alignment guarantee
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double HostArray::at(int64_t i) const {
  const uint8_t *p = bytes.data() + i * fileDTypeSize(dtype);
  switch (dtype) {
  case FileDType::F32:
    return load<float>(p);
  case FileDType::F64:
    return load<double>(p);
  case FileDType::I64:
    return static_cast<double>(load<int64_t>(p));
  case FileDType::I32:
    return load<int32_t>(p);
  case FileDType::U8:
    return *p;
  }
  return 0;
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

HostArray loadArray(const std::string &path) {
  if (endsWith(path, ".npy"))
    return loadNpy(path);
  if (endsWith(path, ".csv"))
    return loadCsv(path);
  throw Error(path + ": unsupported data file (expected .npy or .csv)");
}

void checkFinite(const HostArray &a) {
  if (a.dtype != FileDType::F32 && a.dtype != FileDType::F64)
    return;
  int64_t n = a.numElements();
  int64_t perSample = a.shape.empty() || a.shape[0] == 0 ? 1 : n / a.shape[0];
  for (int64_t i = 0; i < n; ++i) {
    double v = a.at(i);
    if (!std::isfinite(v))
      throw Error(a.path + ": sample " + std::to_string(i / perSample) +
                  " contains " + (std::isnan(v) ? "NaN" : "Inf"));
  }
}

} // namespace tcc::rt
