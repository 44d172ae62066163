//===- OnnxExternalData.cpp - Tensors whose data lives in another file ----===//
//
// A location is a path relative to the model's folder; one that is absolute,
// climbs with `..` or reaches outside through a symbolic link is refused, so
// a model cannot make tcc read (and embed into an artifact) an arbitrary
// file. Each file is opened once however many tensors it holds.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxExternalData.h"
#include "frontends/onnx/OnnxGraph.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>

using namespace mlir::tcc;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

static bool forEachInGraph(
    onnx::GraphProto &g,
    llvm::function_ref<bool(onnx::TensorProto &, const std::string &)> fn) {
  for (onnx::TensorProto &t : *g.mutable_initializer())
    if (!fn(t, "initializer '" + t.name() + "'"))
      return false;
  for (auto [i, node] : llvm::enumerate(*g.mutable_node())) {
    std::string nodeName = node.name().empty()
                               ? node.op_type() + "#" + std::to_string(i)
                               : node.name();
    for (onnx::AttributeProto &a : *node.mutable_attribute()) {
      std::string what =
          "attribute '" + a.name() + "' of node '" + nodeName + "'";
      if (a.has_t() && !fn(*a.mutable_t(), what))
        return false;
      for (onnx::TensorProto &t : *a.mutable_tensors())
        if (!fn(t, what))
          return false;
      if (a.has_g() && !forEachInGraph(*a.mutable_g(), fn))
        return false;
      for (onnx::GraphProto &sub : *a.mutable_graphs())
        if (!forEachInGraph(sub, fn))
          return false;
    }
  }
  return true;
}

bool mlir::tcc::forEachTensor(
    onnx::ModelProto &model,
    llvm::function_ref<bool(onnx::TensorProto &, const std::string &)> fn) {
  return !model.has_graph() || forEachInGraph(*model.mutable_graph(), fn);
}

/// A decimal byte count, as external_data stores offset and length.
static bool parseCount(const std::string &s, uint64_t &out) {
  if (s.empty() || s.size() > 19 ||
      s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoull(s);
  return true;
}

bool mlir::tcc::parseExternalData(const onnx::TensorProto &t,
                                  const std::string &what, ExternalDataRef &ref,
                                  std::string &error) {
  ref = ExternalDataRef();
  bool hasLocation = false;
  for (const onnx::StringStringEntryProto &e : t.external_data()) {
    if (e.key() == "location") {
      ref.location = e.value();
      hasLocation = true;
    } else if (e.key() == "offset" || e.key() == "length") {
      uint64_t v;
      if (!parseCount(e.value(), v)) {
        error = what + ": external data '" + e.key() + "' is '" + e.value() +
                "', not a byte count";
        return false;
      }
      if (e.key() == "offset")
        ref.offset = v;
      else
        ref.length = v;
    }
  }
  if (!hasLocation || ref.location.empty()) {
    error = what + ": external data has no 'location'";
    return false;
  }
  return true;
}

std::optional<uint64_t> mlir::tcc::tensorDataBytes(const onnx::TensorProto &t) {
  uint64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > UINT64_MAX / 16 / (uint64_t)d))
      return std::nullopt;
    n *= (uint64_t)d;
  }
  switch (t.data_type()) {
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::BOOL:
  case 17: // FLOAT8E4M3FN ... FLOAT8E5M2FNUZ (libonnx 1.12 predates them)
  case 18:
  case 19:
  case 20:
  case 24: // FLOAT8E8M0
    return n;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2 * n;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4 * n;
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::COMPLEX64:
    return 8 * n;
  case onnx::TensorProto::COMPLEX128:
    return 16 * n;
  case 21: // UINT4, INT4, FLOAT4E2M1: two per byte
  case 22:
  case 23:
    return (n + 1) / 2;
  case 25: // UINT2, INT2: four per byte
  case 26:
    return (n + 3) / 4;
  default:
    return std::nullopt;
  }
}

namespace {
/// An external data file, opened once.
struct DataFile {
  std::ifstream in;
  uint64_t size = 0;
};
} // namespace

/// Checks `location` and opens the file it names in `dir` (whose real path
/// is `realDir`); false with `error` when it is unsafe or unreadable.
static bool openDataFile(const std::string &what, const std::string &location,
                         llvm::StringRef dir, llvm::StringRef realDir,
                         DataFile &file, std::string &error) {
  std::string prefix = what + ": external data location '" + location + "'";
  if (path::is_absolute(location) || location.front() == '/') {
    error = prefix + " is an absolute path; it must be relative to the "
                     "model's folder";
    return false;
  }
  for (auto it = path::begin(location), e = path::end(location); it != e; ++it)
    if (*it == "..") {
      error = prefix + " climbs out with '..'; it must stay inside the "
                       "model's folder";
      return false;
    }
  llvm::SmallString<256> full(dir);
  path::append(full, location);
  llvm::SmallString<256> real;
  if (std::error_code ec = fs::real_path(full, real)) {
    error = what + ": cannot open external data file '" + full.str().str() +
            "': " + ec.message();
    return false;
  }
  // A symbolic link inside the folder may still point anywhere.
  if (!llvm::StringRef(real).starts_with(realDir) ||
      (real.size() > realDir.size() && real[realDir.size()] != '/' &&
       !realDir.ends_with("/"))) {
    error = prefix + " resolves to '" + real.str().str() +
            "', outside the model's folder '" + realDir.str() + "'";
    return false;
  }
  fs::file_status status;
  if (std::error_code ec = fs::status(real, status)) {
    error = what + ": cannot open external data file '" + full.str().str() +
            "': " + ec.message();
    return false;
  }
  if (!fs::is_regular_file(status)) {
    error = what + ": external data file '" + full.str().str() +
            "' is not a regular file";
    return false;
  }
  file.size = status.getSize();
  file.in.open(real.str().str(), std::ios::binary);
  if (!file.in) {
    error = what + ": cannot open external data file '" + full.str().str() +
            "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool mlir::tcc::loadExternalData(onnx::ModelProto &model,
                                 llvm::StringRef modelDir, std::string &error,
                                 std::vector<onnx::TensorProto *> *loaded) {
  std::string dir = modelDir.empty() ? "." : modelDir.str();
  llvm::StringMap<std::unique_ptr<DataFile>> files;
  std::string realDir;
  return forEachTensor(model, [&](onnx::TensorProto &t,
                                  const std::string &what) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      return true;
    ExternalDataRef ref;
    if (!parseExternalData(t, what, ref, error))
      return false;
    if (realDir.empty()) {
      llvm::SmallString<256> real;
      if (std::error_code ec = fs::real_path(dir, real)) {
        error =
            "cannot resolve the model's folder '" + dir + "': " + ec.message();
        return false;
      }
      realDir = real.str().str();
    }
    std::unique_ptr<DataFile> &file = files[ref.location];
    if (!file) {
      file = std::make_unique<DataFile>();
      if (!openDataFile(what, ref.location, dir, realDir, *file, error))
        return false;
    }
    uint64_t length = ref.length.value_or(
        ref.offset <= file->size ? file->size - ref.offset : 0);
    if (ref.offset > file->size || length > file->size - ref.offset) {
      error = what + ": external data at offset " + std::to_string(ref.offset) +
              ", length " + std::to_string(length) + " lies outside '" +
              ref.location + "' (" + std::to_string(file->size) + " bytes)";
      return false;
    }
    // Types without a known width are refused by name at import.
    std::optional<uint64_t> expected = tensorDataBytes(t);
    if (expected && *expected != length) {
      std::string shape;
      for (int64_t d : t.dims())
        shape += (shape.empty() ? "" : ",") + std::to_string(d);
      error = what + ": external data has " + std::to_string(length) +
              " bytes, but its shape [" + shape + "] and type " +
              onnxTypeName(t.data_type()) + " take " +
              std::to_string(*expected);
      return false;
    }
    std::string *raw = t.mutable_raw_data();
    raw->resize(length);
    file->in.seekg((std::streamoff)ref.offset);
    if (length && !file->in.read(raw->data(), (std::streamsize)length)) {
      error = what + ": cannot read external data from '" + ref.location +
              "': " + std::strerror(errno);
      return false;
    }
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    if (loaded)
      loaded->push_back(&t);
    return true;
  });
}

bool mlir::tcc::parseOnnxBytes(llvm::StringRef bytes, onnx::ModelProto &model,
                               std::string &error) {
  if (bytes.size() > (size_t)INT_MAX) {
    error = "the model is " + std::to_string(bytes.size()) +
            " bytes; protobuf cannot read a message over 2 GiB, so a model "
            "this large must keep its weights in external data "
            "(onnx.save_model(..., save_as_external_data=True))";
    return false;
  }
  if (!model.ParseFromArray(bytes.data(), (int)bytes.size())) {
    error = "not a valid ONNX model (protobuf parse failed)";
    return false;
  }
  return true;
}
