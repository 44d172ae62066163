//===- HostDType.cpp - Conversions at the artifact's boundary -------------===//
#include "runtime/core/HostDType.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/prelude/Half.h"

#include <cstring>

namespace tcc::rt {

namespace {
struct HostDTypeRow {
  HostDType type;
  const char *name;
  size_t size;
};
constexpr HostDTypeRow kRows[] = {
    {HostDType::Native, "native", 0}, {HostDType::F64, "f64", 8},
    {HostDType::F16, "f16", 2},       {HostDType::BF16, "bf16", 2},
    {HostDType::I8, "i8", 1},         {HostDType::I16, "i16", 2},
    {HostDType::I32, "i32", 4},       {HostDType::U8, "u8", 1},
    {HostDType::U16, "u16", 2},       {HostDType::U32, "u32", 4},
    {HostDType::U64, "u64", 8},
};
} // namespace

const char *hostDTypeName(HostDType t) {
  return kRows[static_cast<size_t>(t)].name;
}

HostDType parseHostDType(const std::string &s) {
  for (const HostDTypeRow &r : kRows)
    if (s == r.name)
      return r.type;
  throw Error("unknown host dtype '" + s +
              "' (expected native, f64, f16, bf16, i8, i16, i32, u8, u16, "
              "u32 or u64)");
}

size_t hostDTypeSize(HostDType t) { return kRows[static_cast<size_t>(t)].size; }

bool isFloatHostDType(HostDType t) {
  return t == HostDType::F64 || t == HostDType::F16 || t == HostDType::BF16;
}

bool hostDTypeFits(HostDType h, DType d) {
  if (h == HostDType::Native)
    return true;
  return isFloatHostDType(h) ? d == DType::F32 : d == DType::I64;
}

template <typename T> static T load(const void *p, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char *>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> static void store(void *p, int64_t i, T v) {
  std::memcpy(static_cast<char *>(p) + i * sizeof(T), &v, sizeof(T));
}

static void checkFits(HostDType h, DType d) {
  if (!hostDTypeFits(h, d) || h == HostDType::Native)
    throw Error(std::string("cannot convert between host type ") +
                hostDTypeName(h) + " and " + dtypeName(d));
}

void hostToRuntime(HostDType h, const void *src, DType d, void *dst,
                   int64_t n) {
  checkFits(h, d);
  for (int64_t i = 0; i < n; ++i) {
    switch (h) {
    case HostDType::F64:
      store<float>(dst, i, static_cast<float>(load<double>(src, i)));
      break;
    case HostDType::F16:
      store<float>(dst, i, f16ToF32(load<uint16_t>(src, i)));
      break;
    case HostDType::BF16:
      store<float>(dst, i, bf16ToF32(load<uint16_t>(src, i)));
      break;
    case HostDType::I8:
      store<int64_t>(dst, i, load<int8_t>(src, i));
      break;
    case HostDType::I16:
      store<int64_t>(dst, i, load<int16_t>(src, i));
      break;
    case HostDType::I32:
      store<int64_t>(dst, i, load<int32_t>(src, i));
      break;
    case HostDType::U8:
      store<int64_t>(dst, i, load<uint8_t>(src, i));
      break;
    case HostDType::U16:
      store<int64_t>(dst, i, load<uint16_t>(src, i));
      break;
    case HostDType::U32:
      store<int64_t>(dst, i, load<uint32_t>(src, i));
      break;
    case HostDType::U64: // the same 64 bits
      store<int64_t>(dst, i, static_cast<int64_t>(load<uint64_t>(src, i)));
      break;
    case HostDType::Native:
      break;
    }
  }
}

void runtimeToHost(DType d, const void *src, HostDType h, void *dst,
                   int64_t n) {
  checkFits(h, d);
  for (int64_t i = 0; i < n; ++i) {
    if (isFloatHostDType(h)) {
      float f = load<float>(src, i);
      if (h == HostDType::F64)
        store<double>(dst, i, f);
      else
        store<uint16_t>(dst, i,
                        h == HostDType::F16 ? f32ToF16(f) : f32ToBf16(f));
      continue;
    }
    uint64_t v = static_cast<uint64_t>(load<int64_t>(src, i));
    switch (hostDTypeSize(h)) {
    case 1:
      store<uint8_t>(dst, i, static_cast<uint8_t>(v));
      break;
    case 2:
      store<uint16_t>(dst, i, static_cast<uint16_t>(v));
      break;
    case 4:
      store<uint32_t>(dst, i, static_cast<uint32_t>(v));
      break;
    default:
      store<uint64_t>(dst, i, v);
    }
  }
}

} // namespace tcc::rt
