//===- Checkpoint.cpp - The checkpoint file format ------------------------===//
//
// Writer, reader and validation of one checkpoint file. Restoring it into a
// session, checking that a run may resume from it, and directories of
// checkpoints (naming, pruning, picking the newest valid one) are in
// CheckpointResume.cpp. The layout is described in Checkpoint.h; the manifest
// is JSON:
//
//   {"format": "tcc-checkpoint", "version": 1,
//    "artifact": {"crc32": 305419896, "source": "mlp.onnx"},
//    "step": 1200, "loss": 0.25,
//    "run": {"total_steps": 5000, "epochs": -1, "batch_size": 32,
//            "blas_threads": 2, "ranks": 1,
//            "lr_schedule": "cosine lr=0.001 ...",
//            "data": [{"name": "x", "path": "x.npy", "dtype": "f32",
//                      "shape": [1477, 64], "crc32": 1234}, ...]},
//    "feeder": {"seed": 0, "shuffle": true, "batches_per_epoch": 46,
//               "next_batch": 1200, "epoch": 26, "batch_in_epoch": 4},
//    "tensors": [{"name": "w", "dtype": "f32", "shape": [64, 128],
//                 "kind": "param", "offset": 0, "size": 32768}, ...]}
//
// Tensor offsets are relative to the start of the data section. The feeder's
// position is the global step (batch `step` is the next one); epoch and
// batch_in_epoch are written for people and checked for consistency.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Checkpoint.h"
#include "runtime/core/JsonFields.h"

#include "runtime/core/ArtifactFormat.h"
#include "runtime/core/Session.h"
#include "runtime/feeder/HostArray.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <unistd.h>

namespace tcc::rt {

using jsonf::asArray;
using jsonf::asInt;
using jsonf::asString;
using jsonf::field;

using nlohmann::json;

static constexpr char kMagic[8] = {'T', 'C', 'C', 'C', 'K', 'P', 'T', '\0'};
static constexpr uint64_t kHeaderSize = 64;
static constexpr const char *kFormatName = "tcc-checkpoint";
static constexpr int kMaxJsonDepth = 16;

static uint64_t alignUp(uint64_t n) {
  return (n + kArtifactAlign - 1) / kArtifactAlign * kArtifactAlign;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

static uint32_t crcUpdate(uint32_t crc, const void *data, uint64_t n) {
  // zlib's crc32 takes a uInt length; feed large buffers in chunks.
  const Bytef *p = static_cast<const Bytef *>(data);
  uLong c = crc;
  while (n > 0) {
    uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
    c = crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

static const uint8_t kZeros[kArtifactAlign] = {};

/// CRC-32 of a whole file image with the checksum field read as zero.
static uint32_t fileChecksum(const uint8_t *p, uint64_t n) {
  uint32_t crc = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
  crc = crcUpdate(crc, p, 32);
  crc = crcUpdate(crc, kZeros, 4);
  return crcUpdate(crc, p + 36, n - 36);
}

bool isCheckpointed(TensorKind k) {
  return k == TensorKind::Param || k == TensorKind::State;
}

int64_t TensorRef::byteSize() const {
  TensorInfo t;
  t.dtype = dtype;
  t.shape = shape;
  return t.byteSize();
}

DataIdentity dataIdentity(const std::string &name, const HostArray &array) {
  DataIdentity d;
  d.name = name;
  d.path = array.path;
  d.dtype = fileDTypeName(array.dtype);
  d.shape = array.shape;
  d.crc32 = crcUpdate(static_cast<uint32_t>(crc32(0L, Z_NULL, 0)),
                      array.bytes.data(), array.bytes.size());
  return d;
}

uint32_t artifactIdentity(const Artifact &a) { return artifactChecksum(a); }

void *hostTensor(Session &s, int32_t id) {
  void *p = s.hostData(id);
  if (!p)
    throw Error("tensor '" + s.tensors().at(id).name + "' of the " +
                s.backend() +
                " session is not in host memory; copy it through a host "
                "mirror (the training loop's HostMirror)");
  return p;
}

std::vector<TensorRef> persistentTensors(Session &s) {
  return persistentTensors(s.tensors(), [&](int32_t id) -> const void * {
    return hostTensor(s, id);
  });
}

std::vector<TensorRef>
persistentTensors(const std::vector<TensorInfo> &tensors,
                  const std::function<const void *(int32_t)> &data) {
  std::vector<TensorRef> out;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if (isCheckpointed(t.kind))
      out.push_back(
          {t.name, t.dtype, t.shape, t.kind, data(static_cast<int32_t>(id))});
  }
  return out;
}

//===-- Writing
//------------------------------------------------------------===//

namespace {
/// A file image as pieces, so a large checkpoint is checksummed and written
/// straight from session memory without assembling a copy.
struct Image {
  std::vector<uint8_t> prefix; // header, manifest, padding
  struct Piece {
    uint64_t offset; // from the start of the data section
    const void *data;
    uint64_t size;
  };
  std::vector<Piece> pieces;

  /// Calls sink(ptr, n) on consecutive byte ranges of the whole file.
  template <class Sink> void emit(Sink &&sink) const {
    sink(prefix.data(), prefix.size());
    uint64_t at = 0;
    for (const Piece &p : pieces) {
      for (; at < p.offset; at += std::min<uint64_t>(p.offset - at, 64))
        sink(kZeros, std::min<uint64_t>(p.offset - at, 64));
      sink(p.data, p.size);
      at += p.size;
    }
  }
};
} // namespace

static json manifestJson(const CheckpointMeta &m, const json &tensors) {
  json data = json::array();
  for (const DataIdentity &d : m.data)
    data.push_back({{"name", d.name},
                    {"path", d.path},
                    {"dtype", d.dtype},
                    {"shape", d.shape},
                    {"crc32", d.crc32}});
  int64_t bpe = m.batchesPerEpoch;
  return {
      {"format", kFormatName},
      {"version", kCheckpointVersion},
      {"artifact", {{"crc32", m.artifactCrc}, {"source", m.artifactSource}}},
      {"step", m.step},
      {"loss", m.loss},
      {"run",
       {{"total_steps", m.totalSteps},
        {"epochs", m.epochs},
        {"batch_size", m.batchSize},
        {"blas_threads", m.blasThreads},
        {"ranks", m.ranks},
        {"lr_schedule", m.lrSchedule},
        {"data", std::move(data)}}},
      {"feeder",
       {{"seed", m.seed},
        {"shuffle", m.shuffle},
        {"batches_per_epoch", bpe},
        {"next_batch", m.step},
        {"epoch", bpe > 0 ? m.step / bpe : 0},
        {"batch_in_epoch", bpe > 0 ? m.step % bpe : 0}}},
      {"tensors", tensors}};
}

static Image buildImage(const CheckpointMeta &meta,
                        const std::vector<TensorRef> &tensors) {
  Image img;
  json table = json::array();
  uint64_t at = 0;
  std::set<std::string> names;
  for (const TensorRef &t : tensors) {
    if (!names.insert(t.name).second)
      throw Error("tensor '" + t.name + "' appears twice");
    if (!isCheckpointed(t.kind))
      throw Error(std::string("tensor '") + t.name + "' is a " +
                  tensorKindName(t.kind) + ", not a param or state");
    uint64_t size = static_cast<uint64_t>(t.byteSize());
    at = alignUp(at);
    table.push_back({{"name", t.name},
                     {"dtype", dtypeName(t.dtype)},
                     {"shape", t.shape},
                     {"kind", tensorKindName(t.kind)},
                     {"offset", at},
                     {"size", size}});
    img.pieces.push_back({at, t.data, size});
    at += size;
  }
  std::string manifest;
  try {
    manifest = manifestJson(meta, table).dump();
  } catch (const json::exception &e) {
    // e.g. a path or name that is not valid UTF-8.
    throw Error(std::string("cannot encode the manifest: ") + e.what());
  }
  uint64_t m = manifest.size();
  img.prefix.assign(alignUp(kHeaderSize + m), 0);
  uint8_t *h = img.prefix.data();
  std::memcpy(h, kMagic, sizeof(kMagic));
  format::putU32(h + 8, kCheckpointVersion);
  format::putU64(h + 16, m);
  format::putU64(h + 24, at);
  std::memcpy(h + kHeaderSize, manifest.data(), m);
  uint32_t crc = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
  img.emit([&](const void *p, uint64_t n) { crc = crcUpdate(crc, p, n); });
  format::putU32(h + 32, crc);
  return img;
}

std::vector<uint8_t>
serializeCheckpoint(const CheckpointMeta &meta,
                    const std::vector<TensorRef> &tensors) {
  Image img = buildImage(meta, tensors);
  std::vector<uint8_t> out;
  img.emit([&](const void *p, uint64_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    out.insert(out.end(), b, b + n);
  });
  return out;
}

static std::string parentDir(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void writeCheckpoint(const std::string &path, const CheckpointMeta &meta,
                     const std::vector<TensorRef> &tensors) {
  Image img;
  try {
    img = buildImage(meta, tensors);
  } catch (const Error &e) {
    throw Error(path + ": cannot write checkpoint: " + e.what());
  }
  std::string tmp = path + ".tmp";
  auto fail = [&](const std::string &what, int err) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot write checkpoint: " + what + ": " +
                std::strerror(err));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot create " + tmp, errno);
  int err = 0;
  img.emit([&](const void *p, uint64_t n) {
    const char *b = static_cast<const char *>(p);
    while (n > 0 && !err) {
      ssize_t w = ::write(fd, b, n);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        err = w < 0 ? errno : EIO;
        break;
      }
      b += w;
      n -= static_cast<uint64_t>(w);
    }
  });
  // fsync before rename: a crash must not leave a renamed but empty file.
  if (!err && ::fsync(fd) != 0)
    err = errno;
  if (::close(fd) != 0 && !err)
    err = errno;
  if (err)
    fail("writing " + tmp, err);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("renaming " + tmp + " to it", errno);
  // The rename itself is durable only once the directory is synced. Some
  // file systems cannot fsync a directory (EINVAL); nothing more to do then.
  std::string dir = parentDir(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || (::fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)) {
    int e = errno;
    if (dfd >= 0)
      ::close(dfd);
    throw Error(path + ": written, but syncing its directory " + dir +
                " failed: " + std::strerror(e));
  }
  ::close(dfd);
}

//===-- Reading
//------------------------------------------------------------===//

static uint64_t asUInt(const json &v, const std::string &ctx) {
  if (!v.is_number_unsigned())
    throw Error(ctx + ": expected a non-negative integer");
  return v.get<uint64_t>();
}

static uint32_t asU32(const json &v, const std::string &ctx) {
  uint64_t x = asUInt(v, ctx);
  if (x > UINT32_MAX)
    throw Error(ctx + ": out of range for a CRC-32");
  return static_cast<uint32_t>(x);
}

static std::vector<int64_t> asShape(const json &v, const std::string &ctx) {
  std::vector<int64_t> out;
  for (const json &e : asArray(v, ctx)) {
    int64_t d = asInt(e, ctx);
    if (d < 0)
      throw Error(ctx + ": negative dimension " + std::to_string(d));
    out.push_back(d);
  }
  return out;
}

/// Fields are read under their JSON path, e.g. "run.total_steps".
static int64_t intAt(const json &obj, const char *key, const std::string &ctx) {
  return asInt(field(obj, key, ctx), ctx + "." + key);
}

static void parseMeta(const json &root, CheckpointMeta &m) {
  const std::string ctx = "manifest";
  const json &art = field(root, "artifact", ctx);
  m.artifactCrc = asU32(field(art, "crc32", "artifact"), "artifact.crc32");
  m.artifactSource =
      asString(field(art, "source", "artifact"), "artifact.source");
  m.step = intAt(root, "step", ctx);
  const json &loss = field(root, "loss", ctx);
  if (!loss.is_number())
    throw Error("manifest.loss: expected a number");
  m.loss = loss.get<float>();
  const json &run = field(root, "run", ctx);
  m.totalSteps = intAt(run, "total_steps", "run");
  m.epochs = intAt(run, "epochs", "run");
  m.batchSize = intAt(run, "batch_size", "run");
  m.blasThreads = intAt(run, "blas_threads", "run");
  // Absent in checkpoints written before data-parallel runs: one process.
  m.ranks = run.contains("ranks") ? intAt(run, "ranks", "run") : 1;
  if (m.ranks < 1)
    throw Error("run.ranks: expected a positive count, got " +
                std::to_string(m.ranks));
  if (run.contains("lr_schedule"))
    m.lrSchedule =
        asString(field(run, "lr_schedule", "run"), "run.lr_schedule");
  const json &data = asArray(field(run, "data", "run"), "run.data");
  for (size_t i = 0; i < data.size(); ++i) {
    std::string c = "run.data[" + std::to_string(i) + "]";
    DataIdentity d;
    d.name = asString(field(data[i], "name", c), c + ".name");
    d.path = asString(field(data[i], "path", c), c + ".path");
    d.dtype = asString(field(data[i], "dtype", c), c + ".dtype");
    d.shape = asShape(field(data[i], "shape", c), c + ".shape");
    d.crc32 = asU32(field(data[i], "crc32", c), c + ".crc32");
    m.data.push_back(std::move(d));
  }
  const json &feeder = field(root, "feeder", ctx);
  m.seed = asUInt(field(feeder, "seed", "feeder"), "feeder.seed");
  const json &shuffle = field(feeder, "shuffle", "feeder");
  if (!shuffle.is_boolean())
    throw Error("feeder.shuffle: expected true or false");
  m.shuffle = shuffle.get<bool>();
  m.batchesPerEpoch = intAt(feeder, "batches_per_epoch", "feeder");

  if (m.batchSize <= 0 || m.batchesPerEpoch <= 0)
    throw Error("run.batch_size and feeder.batches_per_epoch must be positive");
  if (m.step < 0 || m.step > m.totalSteps)
    throw Error("step " + std::to_string(m.step) + " is outside [0, " +
                std::to_string(m.totalSteps) + "]");
  if (m.epochs < -1)
    throw Error("run.epochs must be -1 (--steps) or non-negative");
  if (intAt(feeder, "next_batch", "feeder") != m.step ||
      intAt(feeder, "epoch", "feeder") != m.step / m.batchesPerEpoch ||
      intAt(feeder, "batch_in_epoch", "feeder") != m.step % m.batchesPerEpoch)
    throw Error("the feeder position disagrees with step " +
                std::to_string(m.step));
}

/// Reads the tensor table; offsets become absolute (into the file image).
static void parseTensors(const json &root, uint64_t dataStart, uint64_t d,
                         Checkpoint &c) {
  const json &tensors = asArray(field(root, "tensors", "manifest"), "tensors");
  std::set<std::string> names;
  uint64_t end = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string ctx = "tensors[" + std::to_string(i) + "]";
    const json &j = tensors[i];
    CheckpointTensor t;
    t.name = asString(field(j, "name", ctx), ctx + ".name");
    ctx += " ('" + t.name + "')";
    if (!names.insert(t.name).second)
      throw Error(ctx + ": name appears twice");
    t.dtype = parseDType(asString(field(j, "dtype", ctx), ctx + ".dtype"));
    t.shape = asShape(field(j, "shape", ctx), ctx + ".shape");
    t.kind = parseTensorKind(asString(field(j, "kind", ctx), ctx + ".kind"));
    if (!isCheckpointed(t.kind))
      throw Error(ctx + ": kind '" + tensorKindName(t.kind) +
                  "' is not saved in checkpoints");
    uint64_t offset = asUInt(field(j, "offset", ctx), ctx + ".offset");
    t.size = asUInt(field(j, "size", ctx), ctx + ".size");
    // The byte size of the shape, without overflowing on crafted dims.
    uint64_t bytes = dtypeSize(t.dtype);
    for (int64_t dim : t.shape) {
      if (dim != 0 && bytes > d / static_cast<uint64_t>(dim)) {
        bytes = UINT64_MAX;
        break;
      }
      bytes *= static_cast<uint64_t>(dim);
    }
    if (bytes != t.size)
      throw Error(ctx + ": " + std::to_string(t.size) + " bytes, but shape " +
                  formatShape(t.shape) + " " + dtypeName(t.dtype) + " needs " +
                  (bytes == UINT64_MAX ? "more than the file holds"
                                       : std::to_string(bytes)));
    if (offset % kArtifactAlign != 0 || offset < end || offset > d ||
        t.size > d - offset)
      throw Error(ctx + ": data range [" + std::to_string(offset) + ", +" +
                  std::to_string(t.size) +
                  ") is misaligned, overlaps the previous tensor or lies "
                  "outside the " +
                  std::to_string(d) + "-byte data section");
    end = offset + t.size;
    t.offset = dataStart + offset;
    c.tensors.push_back(std::move(t));
  }
  if (end != d)
    throw Error(std::to_string(d - end) +
                " bytes after the last tensor in the data section");
}

static void parseChecked(Checkpoint &c) {
  const uint8_t *data = c.bytes.data();
  uint64_t size = c.bytes.size();
  if (size < sizeof(kMagic) || std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    throw Error("not a tcc checkpoint (bad magic)");
  if (size < kHeaderSize)
    throw Error("truncated: the header needs " + std::to_string(kHeaderSize) +
                " bytes, the file has " + std::to_string(size));
  uint32_t version = format::getU32(data + 8);
  if (version != kCheckpointVersion)
    throw Error("checkpoint format version " + std::to_string(version) +
                " is not supported (this tcc reads version " +
                std::to_string(kCheckpointVersion) + ")");
  uint64_t m = format::getU64(data + 16), d = format::getU64(data + 24);
  // Compare against the size before adding so that a huge M or D cannot
  // overflow.
  uint64_t dataStart = m <= size ? alignUp(kHeaderSize + m) : UINT64_MAX;
  if (m > size || d > size || dataStart > size || d > size - dataStart)
    throw Error("truncated: the header announces a " + std::to_string(m) +
                "-byte manifest and " + std::to_string(d) +
                " bytes of tensor data, the file has " + std::to_string(size) +
                " bytes");
  if (dataStart + d != size)
    throw Error(std::to_string(size - dataStart - d) +
                " unexpected bytes after the tensor data");
  uint32_t stored = format::getU32(data + 32),
           actual = fileChecksum(data, size);
  if (stored != actual)
    throw Error("checksum mismatch (stored " + hex32(stored) + ", computed " +
                hex32(actual) + "): the file is corrupted");

  // Only a crafted file with a valid checksum gets here; still, keep the
  // JSON library's recursion shallow.
  const uint8_t *manifest = data + kHeaderSize;
  json root;
  try {
    root = json::parse(manifest, manifest + m,
                       [](int depth, json::parse_event_t, json &) {
                         if (depth > kMaxJsonDepth)
                           throw Error("manifest is nested too deeply");
                         return true;
                       });
  } catch (const json::exception &e) {
    throw Error(std::string("manifest is not valid JSON: ") + e.what());
  }
  if (asString(field(root, "format", "manifest"), "manifest.format") !=
      kFormatName)
    throw Error(std::string("manifest: format is not '") + kFormatName + "'");
  if (asInt(field(root, "version", "manifest"), "manifest.version") !=
      static_cast<int64_t>(version))
    throw Error("manifest.version disagrees with the header");
  parseMeta(root, c.meta);
  parseTensors(root, dataStart, d, c);
}

Checkpoint parseCheckpoint(std::vector<uint8_t> bytes,
                           const std::string &what) {
  Checkpoint c;
  c.path = what;
  c.bytes = std::move(bytes);
  try {
    parseChecked(c);
  } catch (const Error &e) {
    throw Error(what + ": " + e.what());
  } catch (const json::exception &e) {
    // Defensive: every access above is type-checked first.
    throw Error(what + ": malformed manifest: " + e.what());
  }
  return c;
}

Checkpoint readCheckpoint(const std::string &path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::streamoff size = f.tellg();
  if (size < 0)
    throw Error(path + ": cannot determine the file size");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  f.seekg(0);
  if (size > 0 && !f.read(reinterpret_cast<char *>(bytes.data()), size))
    throw Error(path + ": read error");
  return parseCheckpoint(std::move(bytes), path);
}

} // namespace tcc::rt
