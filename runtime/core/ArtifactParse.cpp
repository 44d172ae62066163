//===- ArtifactParse.cpp - Reading and validating an artifact -------------===//
//
// Nothing in a file may crash the reader: every size is checked before it is
// used, the JSON is type-checked field by field, and the result goes through
// validateArtifact before it is returned.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/core/JsonFields.h"
#include "runtime/core/ArtifactFormat.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fstream>

namespace tcc::rt {

using jsonf::asArray;
using jsonf::asInt;
using jsonf::asString;
using jsonf::field;

using nlohmann::json;

// Deep nesting is never produced by the writer; rejecting it up front keeps
// any recursion in the JSON library (e.g. destruction) shallow.
static constexpr int kMaxJsonDepth = 32;

static void checkJsonDepth(const uint8_t *p, size_t n) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < n; ++i) {
    char c = static_cast<char>(p[i]);
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw Error("manifest is nested too deeply");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

static int64_t intField(const json &obj, const char *key,
                        const std::string &ctx, int64_t fallback) {
  if (obj.contains(key))
    return asInt(obj[key], ctx + "." + key);
  return fallback;
}

static std::vector<int64_t> asInts(const json &v, const std::string &ctx) {
  std::vector<int64_t> out;
  for (const json &e : asArray(v, ctx))
    out.push_back(asInt(e, ctx));
  return out;
}

static std::vector<int32_t> asIds(const json &v, const std::string &ctx) {
  std::vector<int32_t> out;
  for (const json &e : asArray(v, ctx)) {
    int64_t id = asInt(e, ctx);
    if (id < INT32_MIN || id > INT32_MAX)
      throw Error(ctx + ": tensor id " + std::to_string(id) +
                  " is out of range");
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

static std::vector<double> asDoubles(const json &v, const std::string &ctx) {
  std::vector<double> out;
  for (const json &e : asArray(v, ctx)) {
    if (!e.is_number())
      throw Error(ctx + ": expected a number");
    out.push_back(e.get<double>());
  }
  return out;
}

static TensorInfo parseTensor(const json &j, const std::string &ctx) {
  TensorInfo t;
  t.name = asString(field(j, "name", ctx), ctx + ".name");
  std::string named = ctx + " ('" + t.name + "')";
  t.dtype = parseDType(asString(field(j, "dtype", named), named + ".dtype"));
  t.shape = asInts(field(j, "shape", named), named + ".shape");
  t.kind = parseTensorKind(asString(field(j, "kind", named), named + ".kind"));
  t.dataOffset = intField(j, "data_offset", named, -1);
  t.arenaOffset = intField(j, "arena_offset", named, -1);
  if (j.contains("program"))
    t.program = asString(j["program"], named + ".program");
  if (j.contains("host_dtype"))
    t.hostDType =
        parseHostDType(asString(j["host_dtype"], named + ".host_dtype"));
  if (j.contains("init")) {
    const json &init = j["init"];
    std::string ictx = named + ".init";
    t.init.kind =
        parseInitKind(asString(field(init, "kind", ictx), ictx + ".kind"));
    for (auto [key, dst] : {std::pair{"a", &t.init.a}, {"b", &t.init.b}}) {
      const json &v = field(init, key, ictx);
      if (!v.is_number())
        throw Error(ictx + "." + key + ": expected a number");
      *dst = v.get<double>();
    }
    const json &seed = field(init, "seed", ictx);
    if (!seed.is_number_unsigned() && !seed.is_number_integer())
      throw Error(ictx + ".seed: expected an unsigned integer");
    if (seed.is_number_integer() && !seed.is_number_unsigned() &&
        seed.get<int64_t>() < 0)
      throw Error(ictx + ".seed: expected an unsigned integer");
    t.init.seed = seed.get<uint64_t>();
    if (t.init.kind == InitSpec::Kind::Cast)
      t.init.source = asString(field(init, "source", ictx), ictx + ".source");
  }
  return t;
}

static std::vector<std::pair<DType, int64_t>>
parseOperands(const json &v, const std::string &ctx) {
  std::vector<std::pair<DType, int64_t>> out;
  for (const json &e : asArray(v, ctx)) {
    const json &pair = asArray(e, ctx);
    if (pair.size() != 2)
      throw Error(ctx + ": expected [dtype, element count] pairs");
    out.push_back({parseDType(asString(pair[0], ctx)), asInt(pair[1], ctx)});
  }
  return out;
}

static DeviceCode parseDeviceCode(const json &j) {
  const std::string ctx = "device_code";
  DeviceCode d;
  d.arch = asString(field(j, "arch", ctx), ctx + ".arch");
  d.offset = asInt(field(j, "offset", ctx), ctx + ".offset");
  d.size = asInt(field(j, "size", ctx), ctx + ".size");
  if (j.contains("compiler"))
    d.compiler = asString(j["compiler"], ctx + ".compiler");
  const json &kernels = asArray(field(j, "kernels", ctx), ctx + ".kernels");
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string kctx = ctx + ".kernels[" + std::to_string(i) + "]";
    const json &k = kernels[i];
    DeviceKernel dk;
    dk.symbol = asString(field(k, "symbol", kctx), kctx + ".symbol");
    dk.finSymbol = asString(field(k, "fin", kctx), kctx + ".fin");
    if (k.contains("name"))
      dk.name = asString(k["name"], kctx + ".name");
    dk.mapping = asString(field(k, "mapping", kctx), kctx + ".mapping");
    dk.rows = asInt(field(k, "rows", kctx), kctx + ".rows");
    dk.cols = asInt(field(k, "cols", kctx), kctx + ".cols");
    dk.partialsPerRow = asInt(field(k, "partials", kctx), kctx + ".partials");
    dk.block = asInt(field(k, "block", kctx), kctx + ".block");
    if (k.contains("smem"))
      dk.smem = asInt(k["smem"], kctx + ".smem");
    if (k.contains("grid_per_sm"))
      dk.gridPerSm = asInt(k["grid_per_sm"], kctx + ".grid_per_sm");
    if (k.contains("col_sums"))
      dk.colSums = asInt(k["col_sums"], kctx + ".col_sums");
    if (k.contains("slice_rows"))
      dk.sliceRows = asInt(k["slice_rows"], kctx + ".slice_rows");
    dk.inputs = parseOperands(field(k, "inputs", kctx), kctx + ".inputs");
    dk.outputs = parseOperands(field(k, "outputs", kctx), kctx + ".outputs");
    if (k.contains("in_place")) {
      const json &pairs = asArray(k["in_place"], kctx + ".in_place");
      for (size_t p = 0; p < pairs.size(); ++p) {
        std::string pctx = kctx + ".in_place[" + std::to_string(p) + "]";
        std::vector<int64_t> pair = asInts(pairs[p], pctx);
        if (pair.size() != 2)
          throw Error(pctx + ": expected an [output, input] pair");
        dk.inPlace.push_back({pair[0], pair[1]});
      }
    }
    d.kernels.push_back(std::move(dk));
  }
  return d;
}

static Instr parseInstr(const json &j, const std::string &ctx) {
  Instr in;
  in.kernel = asString(field(j, "k", ctx), ctx + ".k");
  std::string named = ctx + " (" + in.kernel + ")";
  in.inputs = asIds(field(j, "in", named), named + ".in");
  in.outputs = asIds(field(j, "out", named), named + ".out");
  if (j.contains("i"))
    in.iattrs = asInts(j["i"], named + ".i");
  if (j.contains("f"))
    in.fattrs = asDoubles(j["f"], named + ".f");
  return in;
}

static Program parseProgram(const json &j, const std::string &ctx) {
  Program p;
  p.name = asString(field(j, "name", ctx), ctx + ".name");
  std::string named = ctx + " ('" + p.name + "')";
  p.inputs = asIds(field(j, "inputs", named), named + ".inputs");
  p.outputs = asIds(field(j, "outputs", named), named + ".outputs");
  p.arenaBytes = asInt(field(j, "arena_bytes", named), named + ".arena_bytes");
  const json &instrs = asArray(field(j, "instrs", named), named + ".instrs");
  for (size_t i = 0; i < instrs.size(); ++i)
    p.instrs.push_back(
        parseInstr(instrs[i], named + ".instrs[" + std::to_string(i) + "]"));
  return p;
}

static std::string versionMessage(int64_t version) {
  return "artifact format version " + std::to_string(version) +
         ", this runtime reads version " + std::to_string(kArtifactVersion) +
         "; recompile the model";
}

static void parseManifest(const json &root, Artifact &a) {
  const std::string ctx = "manifest";
  if (asString(field(root, "format", ctx), "manifest.format") !=
      format::kFormatName)
    throw Error("manifest: format is not 'tcc-artifact'");
  int64_t version = asInt(field(root, "version", ctx), "manifest.version");
  if (version != static_cast<int64_t>(kArtifactVersion))
    throw Error(versionMessage(version));
  if (root.contains("meta")) {
    const json &meta = root["meta"];
    if (!meta.is_object())
      throw Error("manifest.meta: expected a JSON object");
    for (const auto &[k, v] : meta.items())
      a.meta[k] = asString(v, "manifest.meta." + k);
  }
  const json &tensors = asArray(field(root, "tensors", ctx), "tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    a.tensors.push_back(
        parseTensor(tensors[i], "tensors[" + std::to_string(i) + "]"));
  const json &programs = asArray(field(root, "programs", ctx), "programs");
  for (size_t i = 0; i < programs.size(); ++i)
    a.programs.push_back(
        parseProgram(programs[i], "programs[" + std::to_string(i) + "]"));
  if (root.contains("onnx")) {
    const json &onnx = root["onnx"];
    a.onnxOffset = asInt(field(onnx, "offset", "onnx"), "onnx.offset");
    a.onnxSize = asInt(field(onnx, "size", "onnx"), "onnx.size");
  }
  if (root.contains("host_library")) {
    const json &lib = root["host_library"];
    a.hostLibOffset =
        asInt(field(lib, "offset", "host_library"), "host_library.offset");
    a.hostLibSize =
        asInt(field(lib, "size", "host_library"), "host_library.size");
    a.hostLibIsa = asString(field(lib, "isa", "host_library"),
                            "host_library.isa");
  }
  if (root.contains("device_code"))
    a.device = parseDeviceCode(root["device_code"]);
}

/// `file`: the mapping `data` lies in (readArtifact), which the blob then
/// views; null: the blob is copied out of `data`.
static Artifact parseChecked(const uint8_t *data, size_t size,
                             std::shared_ptr<const MappedFile> file) {
  using namespace format;
  if (size < sizeof(kMagic) || std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    throw Error("not a tcc artifact (bad magic)");
  if (size < 12)
    throw Error("truncated: the header needs " + std::to_string(kHeaderSize) +
                " bytes, the file has " + std::to_string(size));
  uint32_t version = getU32(data + 8);
  if (version != kArtifactVersion)
    throw Error(versionMessage(version));
  if (size < kHeaderSize)
    throw Error("truncated: the header needs " + std::to_string(kHeaderSize) +
                " bytes, the file has " + std::to_string(size));
  uint64_t m = getU64(data + 16), b = getU64(data + 24);
  // Compare against the size before adding so a huge M or B cannot overflow.
  uint64_t blobStart = m <= size ? alignUp(kHeaderSize + m) : UINT64_MAX;
  if (m > size || b > size || blobStart > size || b > size - blobStart)
    throw Error("truncated: the header announces a " + std::to_string(m) +
                "-byte manifest and a " + std::to_string(b) +
                "-byte blob, the file has " + std::to_string(size) + " bytes");
  if (blobStart + b != size)
    throw Error(std::to_string(size - blobStart - b) +
                " unexpected bytes after the blob");
  const uint8_t *manifest = data + kHeaderSize, *blob = data + blobStart;
  auto released = [&](uint64_t off, uint64_t n) {
    if (file)
      file->release(blob + off, n);
  };
  if (checksum(manifest, m, blob, b, released) != getU32(data + 32))
    throw Error("checksum mismatch: file is corrupted");

  checkJsonDepth(manifest, m);
  json root;
  try {
    root = json::parse(manifest, manifest + m);
  } catch (const json::exception &e) {
    throw Error(std::string("manifest is not valid JSON: ") + e.what());
  }
  Artifact a;
  parseManifest(root, a);
  if (file) {
    a.blob = Blob(std::move(file), blob, b);
  } else {
    a.blob.resize(b);
    if (b)
      std::memcpy(a.blob.mutableData(), blob, b);
  }
  validateArtifact(a);
  return a;
}

static Artifact parseNamed(const uint8_t *data, size_t size,
                           const std::string &what,
                           std::shared_ptr<const MappedFile> file) {
  try {
    return parseChecked(data, size, std::move(file));
  } catch (const Error &e) {
    throw Error(what + ": " + e.what());
  } catch (const json::exception &e) {
    // Defensive: every access above is type-checked first.
    throw Error(what + ": malformed manifest: " + e.what());
  } catch (const std::bad_alloc &) {
    throw Error(what + ": out of memory while reading the artifact");
  }
}

Artifact parseArtifact(const uint8_t *data, size_t size,
                       const std::string &what) {
  return parseNamed(data, size, what, nullptr);
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    ::close(fd);
    throw Error(path + ": " +
                (S_ISDIR(st.st_mode) ? std::string("is a directory")
                                     : "cannot determine the file size: " +
                                           std::string(std::strerror(err))));
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    void *p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(path + ": cannot map: " + std::strerror(err));
    }
    f->base_ = p;
  }
  ::close(fd); // the mapping keeps the file
  return f;
}

Artifact readArtifact(const std::string &path) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path);
  static const uint8_t kEmpty = 0;
  const uint8_t *data = file->size() ? file->data() : &kEmpty;
  return parseNamed(data, file->size(), path, file);
}

} // namespace tcc::rt
