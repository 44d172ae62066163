//===- OnnxModelIO.cpp - Reading ONNX models and writing trained ones -----===//
#include "compiler/OnnxModelIO.h"

#include "frontends/onnx/OnnxExternalData.h"

#include "onnx/defs/parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <unistd.h>

using namespace tcc;
using mlir::tcc::ExternalDataRef;
using mlir::tcc::forEachTensor;

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The folder of `path` ("" for a bare file name) and its last component.
static std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}
static std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool tcc::readOnnxModel(const std::string &path, onnx::ModelProto &model,
                        std::string &error,
                        std::vector<onnx::TensorProto *> *external) {
  // Mapped, not copied: a model near protobuf's 2 GiB limit (or past it,
  // to be refused by size) costs no read of its bytes up front.
  bool text = endsWith(path, ".onnxtxt");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/text);
  if (!file) {
    error = path + ": cannot open: " + file.getError().message();
    return false;
  }
  llvm::StringRef bytes = (*file)->getBuffer();
  if (text) {
    try {
      onnx::OnnxParser parser(bytes.data());
      auto status = parser.Parse(model);
      if (!status.IsOK()) {
        error = path + ": ONNX text parse error: " + status.ErrorMessage();
        return false;
      }
    } catch (const std::exception &e) {
      error = path + ": ONNX text parse error: " + e.what();
      return false;
    }
  } else if (!mlir::tcc::parseOnnxBytes(bytes, model, error)) {
    error = path + ": " + error;
    return false;
  }
  if (!mlir::tcc::loadExternalData(model, dirName(path), error, external)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool tcc::initializerFloats(const onnx::TensorProto &t, std::vector<float> &out,
                            std::string &error) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "initializer '" + t.name() +
            "' keeps its data in an external file, which was not loaded";
    return false;
  }
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    error = "initializer '" + t.name() + "' is not float32";
    return false;
  }
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  if (t.has_raw_data()) {
    if ((int64_t)t.raw_data().size() != n * 4) {
      error = "initializer '" + t.name() + "' has " +
              std::to_string(t.raw_data().size()) + " bytes of data, expected " +
              std::to_string(n * 4);
      return false;
    }
    out.resize(n);
    if (n)
      std::memcpy(out.data(), t.raw_data().data(), n * 4);
    return true;
  }
  if (t.float_data_size() != n) {
    error = "initializer '" + t.name() + "' has " +
            std::to_string(t.float_data_size()) + " values, expected " +
            std::to_string(n);
    return false;
  }
  out.assign(t.float_data().begin(), t.float_data().end());
  return true;
}

/// Points `t` at `length` bytes at `offset` of `location`, data dropped.
static void setExternal(onnx::TensorProto &t, const std::string &location,
                        uint64_t offset, uint64_t length) {
  t.clear_raw_data();
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] :
       {std::pair<const char *, std::string>{"location", location},
        {"offset", std::to_string(offset)},
        {"length", std::to_string(length)}}) {
    onnx::StringStringEntryProto *e = t.add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
}

bool tcc::embedOnnxModel(
    onnx::ModelProto &model, const std::vector<onnx::TensorProto *> &external,
    const std::function<int64_t(const void *, size_t)> &addBlob,
    std::string &bytes, std::string &error) {
  for (onnx::TensorProto *t : external) {
    if (!t->has_raw_data())
      continue;
    const std::string &raw = t->raw_data();
    int64_t offset = addBlob(raw.data(), raw.size());
    setExternal(*t, kArtifactBlobLocation, offset, raw.size());
  }
  if (model.ByteSizeLong() > (size_t)INT_MAX) {
    error = "the model is over 2 GiB even without its external data; "
            "protobuf cannot store it in the artifact";
    return false;
  }
  if (!model.SerializeToString(&bytes)) {
    error = "cannot serialize the ONNX model into the artifact";
    return false;
  }
  return true;
}

namespace {
/// Writes a file through `path + ".tmp"`; the temporary goes unless kept.
struct TempFile {
  explicit TempFile(std::string path) : path(std::move(path)) {}
  ~TempFile() {
    if (!kept)
      std::remove(tmp().c_str());
  }
  std::string tmp() const { return path + ".tmp"; }
  bool rename(std::string &error) {
    if (std::rename(tmp().c_str(), path.c_str()) != 0) {
      error = path + ": cannot rename into place: " + std::strerror(errno);
      return false;
    }
    kept = true;
    return true;
  }
  std::string path;
  bool kept = false;
};
} // namespace

/// Writes the data of the tensors that `toFile` picks to `data` (aligned to
/// 64 bytes, as the artifact's blob is) and points them at it.
static bool
writeDataFile(onnx::ModelProto &model, const std::string &dataPath,
              const std::function<bool(const onnx::TensorProto &)> &toFile,
              std::string &error) {
  std::ofstream out(dataPath + ".tmp", std::ios::binary | std::ios::trunc);
  uint64_t offset = 0;
  std::string location = baseName(dataPath);
  static const char kZeros[64] = {};
  bool ok = !!out;
  forEachTensor(model, [&](onnx::TensorProto &t, const std::string &) {
    if (!ok || !t.has_raw_data() || !toFile(t))
      return ok;
    uint64_t pad = (64 - offset % 64) % 64;
    // setExternal drops raw_data: its size is taken first.
    uint64_t size = t.raw_data().size();
    ok = out.write(kZeros, pad) && out.write(t.raw_data().data(), size);
    offset += pad;
    setExternal(t, location, offset, size);
    offset += size;
    return ok;
  });
  if (!ok || !out.flush()) {
    error = dataPath + ": cannot write: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool tcc::writeTrainedOnnx(
    const EmbeddedOnnx &source,
    const std::map<std::string, std::vector<float>> &values,
    const std::string &path, std::string &error,
    const std::map<std::string, std::vector<float>> &ifInitializer,
    const ExportOptions &opts) {
  onnx::ModelProto model;
  if (source.bytes.size() > (size_t)INT_MAX ||
      !model.ParseFromArray(source.bytes.data(), (int)source.bytes.size())) {
    error = "the artifact's ONNX model does not parse";
    return false;
  }
  // The tensors whose data the artifact keeps in its blob come back inline;
  // they go to the data file again below.
  std::set<const onnx::TensorProto *> wasExternal;
  if (!forEachTensor(model, [&](onnx::TensorProto &t, const std::string &what) {
        if (t.data_location() != onnx::TensorProto::EXTERNAL)
          return true;
        ExternalDataRef ref;
        if (!mlir::tcc::parseExternalData(t, what, ref, error))
          return false;
        if (ref.location != kArtifactBlobLocation || !ref.length ||
            ref.offset > source.blobSize ||
            *ref.length > source.blobSize - ref.offset) {
          error = "the artifact's ONNX model: " + what +
                  " points outside the artifact's data";
          return false;
        }
        t.set_raw_data(source.blob + ref.offset, *ref.length);
        t.clear_external_data();
        t.set_data_location(onnx::TensorProto::DEFAULT);
        wasExternal.insert(&t);
        return true;
      }))
    return false;

  size_t replaced = 0;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    auto it = values.find(t.name());
    bool required = it != values.end();
    if (!required && (it = ifInitializer.find(t.name())) == ifInitializer.end())
      continue;
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (t.data_type() != onnx::TensorProto::FLOAT ||
        n != (int64_t)it->second.size()) {
      error = "initializer '" + t.name() + "' does not match its trained tensor";
      return false;
    }
    t.clear_float_data();
    t.set_raw_data(it->second.data(), it->second.size() * sizeof(float));
    replaced += required;
  }
  if (replaced != values.size()) {
    error = "the artifact's ONNX model lacks " +
            std::to_string(values.size() - replaced) + " trained initializers";
    return false;
  }
  // A model compiled with --weights seeded travels without the data of the
  // generated initializers; each must have been written above.
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (t.data_type() == onnx::TensorProto::FLOAT && n > 0 &&
        !t.has_raw_data() && t.float_data_size() == 0) {
      error = "initializer '" + t.name() +
              "' has no data in the artifact's ONNX model (--weights seeded) "
              "and no trained tensor to take it from";
      return false;
    }
  }

  // Past the limit, tensors of 1 KiB or more leave the model, as onnx.save
  // with save_as_external_data does by default.
  bool tooLarge = model.ByteSizeLong() > opts.inlineLimit;
  TempFile modelFile(path), dataFile(path + ".data");
  if ((tooLarge || !wasExternal.empty()) &&
      !writeDataFile(
          model, dataFile.path,
          [&](const onnx::TensorProto &t) {
            return wasExternal.count(&t) ||
                   (tooLarge && t.raw_data().size() >= 1024);
          },
          error))
    return false;
  {
    std::ofstream out(modelFile.tmp(), std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out) || !out.flush()) {
      error = path + ": cannot write: " + std::strerror(errno);
      return false;
    }
  }
  // The data first: the model that names it is only in place once it is.
  bool hasData = tooLarge || !wasExternal.empty();
  return (!hasData || dataFile.rename(error)) && modelFile.rename(error);
}
