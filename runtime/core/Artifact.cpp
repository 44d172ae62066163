//===- Artifact.cpp - Artifact helpers and the writer ---------------------===//
//
// The reader and its validation live in ArtifactParse.cpp; the layout shared
// by both is in ArtifactFormat.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/ArtifactFormat.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace tcc::rt {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::I64:
    return "i64";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "?";
}

DType parseDType(const std::string &s) {
  if (s == "f32")
    return DType::F32;
  if (s == "i64")
    return DType::I64;
  if (s == "bf16")
    return DType::BF16;
  if (s == "f16")
    return DType::F16;
  throw Error("unknown dtype '" + s + "' (expected f32, i64, bf16 or f16)");
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::I64:
    return 8;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F32:
    break;
  }
  return 4;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

const char *tensorKindName(TensorKind k) {
  switch (k) {
  case TensorKind::Param:
    return "param";
  case TensorKind::State:
    return "state";
  case TensorKind::Input:
    return "input";
  case TensorKind::Constant:
    return "constant";
  case TensorKind::Temp:
    return "temp";
  }
  return "?";
}

TensorKind parseTensorKind(const std::string &s) {
  static const std::pair<const char *, TensorKind> kinds[] = {
      {"param", TensorKind::Param},
      {"state", TensorKind::State},
      {"input", TensorKind::Input},
      {"constant", TensorKind::Constant},
      {"temp", TensorKind::Temp}};
  for (const auto &[name, kind] : kinds)
    if (s == name)
      return kind;
  throw Error("unknown tensor kind '" + s +
              "' (expected param, state, input, constant or temp)");
}

const char *initKindName(InitSpec::Kind k) {
  switch (k) {
  case InitSpec::Kind::Blob:
    return "blob";
  case InitSpec::Kind::Constant:
    return "constant";
  case InitSpec::Kind::Normal:
    return "normal";
  case InitSpec::Kind::Uniform:
    return "uniform";
  case InitSpec::Kind::Cast:
    return "cast";
  }
  return "?";
}

InitSpec::Kind parseInitKind(const std::string &s) {
  for (auto k :
       {InitSpec::Kind::Blob, InitSpec::Kind::Constant, InitSpec::Kind::Normal,
        InitSpec::Kind::Uniform, InitSpec::Kind::Cast})
    if (s == initKindName(k))
      return k;
  throw Error("unknown initializer kind '" + s +
              "' (expected blob, constant, normal, uniform or cast)");
}

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t TensorInfo::byteSize() const {
  return numElements() * static_cast<int64_t>(dtypeSize(dtype));
}

const Program *Artifact::findProgram(const std::string &name) const {
  for (const Program &p : programs)
    if (p.name == name)
      return &p;
  return nullptr;
}

int32_t Artifact::findTensor(const std::string &name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name)
      return static_cast<int32_t>(i);
  return -1;
}

int64_t Artifact::addBlob(const void *data, size_t size) {
  size_t offset =
      (blob.size() + kArtifactAlign - 1) / kArtifactAlign * kArtifactAlign;
  blob.resize(offset + size);
  if (size)
    std::memcpy(blob.mutableData() + offset, data, size);
  return static_cast<int64_t>(offset);
}

MappedFile::~MappedFile() {
  if (base_)
    ::munmap(base_, size_);
}

/// Gives back the whole pages that [p, p + n) touches. They are clean
/// pages of a read-only file mapping, so nothing is lost: the next read
/// faults them in again from the page cache.
void MappedFile::release(const uint8_t *p, size_t n) const {
  if (!n || !base_)
    return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t lo = reinterpret_cast<uintptr_t>(p) / page * page;
  uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
  uintptr_t b = reinterpret_cast<uintptr_t>(base_);
  lo = std::max(lo, b);
  hi = std::min(hi, b + size_);
  if (hi > lo)
    ::madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_DONTNEED);
}

Blob::Blob(std::shared_ptr<const MappedFile> file, const uint8_t *data,
           size_t size)
    : file_(std::move(file)), view_(data), viewSize_(size) {}

void Blob::resize(size_t n) {
  if (file_) {
    owned_.assign(view_, view_ + viewSize_);
    file_.reset();
    view_ = nullptr;
    viewSize_ = 0;
  }
  owned_.resize(n);
}

uint8_t *Blob::mutableData() {
  resize(size());
  return owned_.data();
}

void Blob::release(int64_t offset, int64_t size) const {
  if (file_ && offset >= 0 && size > 0 &&
      static_cast<uint64_t>(offset) + static_cast<uint64_t>(size) <= viewSize_)
    file_->release(view_ + offset, static_cast<size_t>(size));
}

bool Blob::operator==(const Blob &o) const {
  return size() == o.size() &&
         (size() == 0 || std::memcmp(data(), o.data(), size()) == 0);
}

namespace format {

void putU32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void putU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t getU32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

uint64_t getU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

uint32_t checksum(const uint8_t *manifest, uint64_t m, const uint8_t *blob,
                  uint64_t b, const std::function<void(uint64_t, uint64_t)>
                                  &done) {
  // zlib's crc32 takes a uInt length; feed large buffers in chunks, small
  // enough that a mapped blob's pages are given back as they are read.
  constexpr uint64_t kChunk = 8u << 20;
  uLong crc = crc32(0L, Z_NULL, 0);
  for (auto [p, n] : {std::pair{manifest, m}, std::pair{blob, b}}) {
    const uint8_t *start = p;
    while (n > 0) {
      uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, kChunk));
      crc = crc32(crc, p, chunk);
      if (done && start == blob)
        done(static_cast<uint64_t>(p - blob), chunk);
      p += chunk;
      n -= chunk;
    }
  }
  return static_cast<uint32_t>(crc);
}

} // namespace format

static nlohmann::json manifestJson(const Artifact &a) {
  using nlohmann::json;
  json tensors = json::array();
  for (const TensorInfo &t : a.tensors) {
    json jt = {{"name", t.name},
               {"dtype", dtypeName(t.dtype)},
               {"shape", t.shape},
               {"kind", tensorKindName(t.kind)},
               {"data_offset", t.dataOffset},
               {"arena_offset", t.arenaOffset},
               {"program", t.program}};
    if (t.hostDType != HostDType::Native)
      jt["host_dtype"] = hostDTypeName(t.hostDType);
    if (t.init.kind != InitSpec::Kind::Blob) {
      if (!std::isfinite(t.init.a) || !std::isfinite(t.init.b))
        throw Error("tensor '" + t.name + "': initializer is not finite");
      jt["init"] = {{"kind", initKindName(t.init.kind)},
                    {"a", t.init.a},
                    {"b", t.init.b},
                    {"seed", t.init.seed}};
      if (t.init.kind == InitSpec::Kind::Cast)
        jt["init"]["source"] = t.init.source;
    }
    tensors.push_back(std::move(jt));
  }
  json programs = json::array();
  for (const Program &p : a.programs) {
    json instrs = json::array();
    for (size_t i = 0; i < p.instrs.size(); ++i) {
      const Instr &in = p.instrs[i];
      // JSON has no NaN/Inf: they would silently come back as null.
      for (double f : in.fattrs)
        if (!std::isfinite(f))
          throw Error("program '" + p.name + "' instr " + std::to_string(i) +
                      " (" + in.kernel + "): float attribute is not finite");
      instrs.push_back({{"k", in.kernel},
                        {"in", in.inputs},
                        {"out", in.outputs},
                        {"i", in.iattrs},
                        {"f", in.fattrs}});
    }
    programs.push_back({{"name", p.name},
                        {"inputs", p.inputs},
                        {"outputs", p.outputs},
                        {"arena_bytes", p.arenaBytes},
                        {"instrs", std::move(instrs)}});
  }
  json meta = json::object();
  for (const auto &[k, v] : a.meta)
    meta[k] = v;
  nlohmann::json root = {{"format", format::kFormatName},
          {"version", kArtifactVersion},
          {"meta", std::move(meta)},
          {"tensors", std::move(tensors)},
          {"programs", std::move(programs)},
          {"onnx", {{"offset", a.onnxOffset}, {"size", a.onnxSize}}}};
  if (a.hostLibOffset >= 0)
    root["host_library"] = {{"offset", a.hostLibOffset},
                            {"size", a.hostLibSize},
                            {"isa", a.hostLibIsa}};
  if (a.device.present()) {
    json kernels = json::array();
    auto operands = [](const std::vector<std::pair<DType, int64_t>> &v) {
      json o = json::array();
      for (const auto &[t, n] : v)
        o.push_back({dtypeName(t), n});
      return o;
    };
    for (const DeviceKernel &k : a.device.kernels) {
      kernels.push_back({{"symbol", k.symbol},
                         {"fin", k.finSymbol},
                         {"name", k.name},
                         {"mapping", k.mapping},
                         {"rows", k.rows},
                         {"cols", k.cols},
                         {"partials", k.partialsPerRow},
                         {"block", k.block},
                         {"smem", k.smem},
                         {"inputs", operands(k.inputs)},
                         {"outputs", operands(k.outputs)},
                         {"in_place", k.inPlace}});
      // Only where it is used, so that other artifacts stay as they were.
      if (k.gridPerSm)
        kernels.back()["grid_per_sm"] = k.gridPerSm;
      if (k.colSums) {
        kernels.back()["col_sums"] = k.colSums;
        kernels.back()["slice_rows"] = k.sliceRows;
      }
    }
    root["device_code"] = {{"arch", a.device.arch},
                           {"offset", a.device.offset},
                           {"size", a.device.size},
                           {"compiler", a.device.compiler},
                           {"kernels", std::move(kernels)}};
  }
  return root;
}

std::vector<uint8_t> format::serialize(const Artifact &a) {
  std::string manifest;
  try {
    manifest = manifestJson(a).dump();
  } catch (const nlohmann::json::exception &e) {
    // e.g. a meta value or tensor name that is not valid UTF-8.
    throw Error(std::string("cannot encode the manifest: ") + e.what());
  }
  uint64_t m = manifest.size(), b = a.blob.size();
  uint64_t blobStart = alignUp(kHeaderSize + m);
  std::vector<uint8_t> out(blobStart + b, 0);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  putU32(out.data() + 8, kArtifactVersion);
  putU64(out.data() + 16, m);
  putU64(out.data() + 24, b);
  std::memcpy(out.data() + kHeaderSize, manifest.data(), m);
  if (b)
    std::memcpy(out.data() + blobStart, a.blob.data(), b);
  a.blob.release(0, static_cast<int64_t>(b));
  putU32(out.data() + 32,
         checksum(out.data() + kHeaderSize, m, out.data() + blobStart, b));
  return out;
}

uint32_t artifactChecksum(const Artifact &a) {
  std::string manifest;
  try {
    manifest = manifestJson(a).dump();
  } catch (const nlohmann::json::exception &e) {
    throw Error(std::string("cannot encode the manifest: ") + e.what());
  }
  return format::checksum(
      reinterpret_cast<const uint8_t *>(manifest.data()), manifest.size(),
      a.blob.data(), a.blob.size(), [&](uint64_t off, uint64_t n) {
        a.blob.release(static_cast<int64_t>(off), static_cast<int64_t>(n));
      });
}

void writeArtifact(const Artifact &a, const std::string &path) {
  std::vector<uint8_t> bytes;
  try {
    bytes = format::serialize(a);
  } catch (const Error &e) {
    throw Error(path + ": " + e.what());
  }
  writeFileAtomically(path, bytes.data(), bytes.size());
}

} // namespace tcc::rt
