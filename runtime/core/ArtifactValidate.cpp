//===- ArtifactValidate.cpp - Cross-reference checks of an artifact -------===//
//
// Everything the Session relies on to index buffers safely is checked here,
// so a corrupted or hand-built artifact fails with an Error instead of
// reading or writing out of bounds.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

namespace tcc::rt {

// Far above any real model, far below int64 overflow in offset arithmetic.
static constexpr int64_t kMaxBytes = int64_t(1) << 56;

static std::string tensorRef(const Artifact &a, int32_t id) {
  return "tensor '" + a.tensors[id].name + "' (id " + std::to_string(id) + ")";
}

static void checkShape(const TensorInfo &t, const std::string &ref) {
  int64_t bytes = static_cast<int64_t>(dtypeSize(t.dtype));
  for (int64_t d : t.shape) {
    if (d < 0)
      throw Error(ref + ": negative dimension in shape " +
                  formatShape(t.shape));
    if (d != 0 && bytes > kMaxBytes / d)
      throw Error(ref + ": shape " + formatShape(t.shape) + " is too large");
    bytes *= d;
  }
}

static void checkRange(int64_t offset, int64_t size, int64_t limit,
                       const std::string &ref, const char *what,
                       const std::string &limitName) {
  if (offset < 0 || size < 0 || offset > limit || size > limit - offset)
    throw Error(ref + ": " + what + " [" + std::to_string(offset) + ", " +
                std::to_string(offset + size) + ") is outside the " +
                limitName + " (" + std::to_string(limit) + " bytes)");
}

static void checkInit(const TensorInfo &t, const std::string &ref) {
  const InitSpec &s = t.init;
  std::string what = std::string(initKindName(s.kind)) + " initializer";
  if (!isFloatDType(t.dtype) && s.kind != InitSpec::Kind::Constant)
    throw Error(ref + ": a " + what + " needs a float tensor, not " +
                dtypeName(t.dtype));
  if (t.dataOffset != -1)
    throw Error(ref + ": has both a " + what + " and initial data");
  if (!std::isfinite(s.a) || !std::isfinite(s.b))
    throw Error(ref + ": " + what + " has a non-finite parameter");
  if (s.kind == InitSpec::Kind::Normal && s.b < 0)
    throw Error(ref + ": normal initializer has a negative standard "
                      "deviation " + std::to_string(s.b));
  // fillInitial converts the value; anything else would be undefined.
  if (t.dtype == DType::I64 && s.kind == InitSpec::Kind::Constant &&
      !(s.a == std::floor(s.a) && s.a >= -0x1.0p63 && s.a < 0x1.0p63))
    throw Error(ref + ": constant initializer " + std::to_string(s.a) +
                " of an i64 tensor is not an i64 value");
  if (s.kind == InitSpec::Kind::Uniform && !(s.a <= s.b))
    throw Error(ref + ": uniform initializer has low " + std::to_string(s.a) +
                " above high " + std::to_string(s.b));
}

/// A cast initializer: a 16-bit state that starts as the rounding of an f32
/// parameter of its shape (whose own initial value is not a cast).
static void checkCastInit(const Artifact &a, const TensorInfo &t,
                          const std::string &ref) {
  const std::string &src = t.init.source;
  if (t.kind != TensorKind::State || !isHalfDType(t.dtype))
    throw Error(ref +
                ": a cast initializer belongs to a bf16 or f16 state, "
                "not a " +
                std::string(dtypeName(t.dtype)) + " " + tensorKindName(t.kind));
  int32_t id = a.findTensor(src);
  if (id < 0)
    throw Error(ref + ": cast initializer of unknown tensor '" + src + "'");
  const TensorInfo &s = a.tensors[id];
  if (s.kind != TensorKind::Param || s.dtype != DType::F32 ||
      s.shape != t.shape)
    throw Error(ref + ": cast initializer of '" + src + "', a " +
                dtypeName(s.dtype) + formatShape(s.shape) + " " +
                tensorKindName(s.kind) + "; expected an f32" +
                formatShape(t.shape) + " param");
}

static void checkDeviceCode(const Artifact &a) {
  const DeviceCode &d = a.device;
  if (!d.present()) {
    if (d.size != 0 || !d.kernels.empty())
      throw Error("device code: kernels but no cubin");
    return;
  }
  checkRange(d.offset, d.size, static_cast<int64_t>(a.blob.size()),
             "device code", "cubin bytes", "blob");
  if (d.arch.rfind("sm_", 0) != 0)
    throw Error("device code: architecture '" + d.arch +
                "' is not of the form sm_NN");
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const DeviceKernel &k = d.kernels[i];
    std::string ref = "device kernel " + std::to_string(i) + " ('" +
                      k.symbol + "')";
    if (k.symbol.empty())
      throw Error(ref + ": empty symbol");
    if (k.mapping != "rows" && k.mapping != "block_rows" &&
        k.mapping != "elements")
      throw Error(ref + ": unknown mapping '" + k.mapping +
                  "' (expected rows, block_rows or elements)");
    if (k.smem < 0 || k.smem > kMaxKernelSmem)
      throw Error(ref + ": " + std::to_string(k.smem) +
                  " bytes of shared memory, outside [0, " +
                  std::to_string(kMaxKernelSmem) + "]");
    if (k.rows < 0 || k.cols < 0 || k.partialsPerRow < 0 ||
        k.rows > kMaxBytes || k.cols > kMaxBytes ||
        (k.cols && k.rows > kMaxBytes / k.cols) ||
        k.partialsPerRow > 1024)
      throw Error(ref + ": invalid domain " + std::to_string(k.rows) + "x" +
                  std::to_string(k.cols) + " with " +
                  std::to_string(k.partialsPerRow) + " partials per row");
    if (k.gridPerSm < 0 || k.gridPerSm > 32 ||
        (k.gridPerSm && k.mapping != "block_rows"))
      throw Error(ref + ": " + std::to_string(k.gridPerSm) +
                  " blocks a multiprocessor; a strided grid is 1 to 32 of a "
                  "block_rows kernel's blocks, else 0");
    if (k.colSums < 0 || k.colSums > static_cast<int64_t>(k.outputs.size()) ||
        (k.colSums &&
         (k.mapping != "rows" || k.partialsPerRow || k.finSymbol.empty() ||
          k.sliceRows < 1 || k.sliceRows > std::max<int64_t>(k.rows, 1))))
      throw Error(ref + ": " + std::to_string(k.colSums) +
                  " column sums over slices of " + std::to_string(k.sliceRows) +
                  " rows; column sums are at most the outputs, of a rows "
                  "kernel with a fin and no per-row partials, over slices "
                  "of 1 to its rows");
    if (k.block < 32 || k.block > 1024 || k.block % 32 != 0)
      throw Error(ref + ": block of " + std::to_string(k.block) +
                  " threads is not a multiple of 32 in [32, 1024]");
    for (const auto *ops : {&k.inputs, &k.outputs})
      for (const auto &[t, n] : *ops)
        if (n < 0 || n > kMaxBytes)
          throw Error(ref + ": invalid operand element count " +
                      std::to_string(n));
    for (const auto &[o, in] : k.inPlace)
      if (o < 0 || o >= (int64_t)k.outputs.size() || in < 0 ||
          in >= (int64_t)k.inputs.size() || k.outputs[o] != k.inputs[in])
        throw Error(ref + ": in-place pair (" + std::to_string(o) + ", " +
                    std::to_string(in) +
                    ") names no output and input of one dtype and size");
  }
}

static void checkTensors(const Artifact &a) {
  std::unordered_set<std::string> names;
  int64_t blobSize = static_cast<int64_t>(a.blob.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorInfo &t = a.tensors[i];
    std::string ref = "tensor '" + t.name + "' (id " + std::to_string(i) + ")";
    if (t.name.empty())
      throw Error(ref + ": empty name");
    if (!names.insert(t.name).second)
      throw Error(ref + ": duplicate tensor name");
    checkShape(t, ref);
    if (!hostDTypeFits(t.hostDType, t.dtype))
      throw Error(ref + ": a " + dtypeName(t.dtype) +
                  " tensor cannot be declared " + hostDTypeName(t.hostDType));
    // Only persistent tensors have an initial value to generate.
    if (t.init.kind != InitSpec::Kind::Blob && t.kind != TensorKind::Param &&
        t.kind != TensorKind::State)
      throw Error(ref + ": a" + (t.kind == TensorKind::Input ? "n " : " ") +
                  tensorKindName(t.kind) +
                  " cannot have a seeded initializer");
    switch (t.kind) {
    case TensorKind::Param:
    case TensorKind::State:
      if (t.init.kind != InitSpec::Kind::Blob) {
        checkInit(t, ref);
        if (t.init.kind == InitSpec::Kind::Cast)
          checkCastInit(a, t, ref);
        break;
      }
      [[fallthrough]];
    case TensorKind::Constant:
      checkRange(t.dataOffset, t.byteSize(), blobSize, ref, "initial data",
                 "blob");
      break;
    case TensorKind::Temp: {
      const Program *p = a.findProgram(t.program);
      if (!p)
        throw Error(ref + ": temp of unknown program '" + t.program + "'");
      if (t.arenaOffset % static_cast<int64_t>(dtypeSize(t.dtype)) != 0)
        throw Error(ref + ": arena offset " + std::to_string(t.arenaOffset) +
                    " is not aligned to its element size");
      checkRange(t.arenaOffset, t.byteSize(), p->arenaBytes, ref, "arena slot",
                 "arena of program '" + p->name + "'");
      break;
    }
    case TensorKind::Input:
      break;
    }
  }
}

static void checkId(const Artifact &a, int32_t id, const std::string &ref) {
  if (id < 0 || static_cast<size_t>(id) >= a.tensors.size())
    throw Error(ref + ": tensor id " + std::to_string(id) +
                " is out of range (the artifact has " +
                std::to_string(a.tensors.size()) + " tensors)");
}

static void checkProgram(const Artifact &a, const Program &p) {
  std::string pref = "program '" + p.name + "'";
  if (p.arenaBytes < 0 || p.arenaBytes > kMaxBytes)
    throw Error(pref + ": invalid arena size " + std::to_string(p.arenaBytes));
  for (int32_t id : p.inputs) {
    checkId(a, id, pref + " inputs");
    if (a.tensors[id].kind != TensorKind::Input)
      throw Error(pref + ": program input " + tensorRef(a, id) + " is a " +
                  tensorKindName(a.tensors[id].kind) + ", not an input");
  }
  for (int32_t id : p.outputs)
    checkId(a, id, pref + " outputs");

  std::set<int32_t> written;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const Instr &in = p.instrs[i];
    std::string ref =
        pref + " instr " + std::to_string(i) + " (" + in.kernel + ")";
    if (in.kernel.empty())
      throw Error(ref + ": empty kernel name");
    auto checkOperand = [&](int32_t id) {
      checkId(a, id, ref);
      const TensorInfo &t = a.tensors[id];
      if (t.kind == TensorKind::Temp && t.program != p.name)
        throw Error(ref + ": uses " + tensorRef(a, id) +
                    ", a temp of program '" + t.program + "'");
    };
    for (int32_t id : in.inputs) {
      checkOperand(id);
      if (a.tensors[id].kind == TensorKind::Temp && !written.count(id))
        throw Error(ref + ": reads " + tensorRef(a, id) +
                    " before any instr writes it");
    }
    for (int32_t id : in.outputs) {
      checkOperand(id);
      if (a.tensors[id].kind == TensorKind::Constant)
        throw Error(ref + ": writes constant " + tensorRef(a, id));
      written.insert(id);
    }
  }
  for (int32_t id : p.outputs)
    if (a.tensors[id].kind == TensorKind::Temp &&
        (a.tensors[id].program != p.name || !written.count(id)))
      throw Error(pref + ": output " + tensorRef(a, id) +
                  " is a temp the program does not write");
}

void validateArtifact(const Artifact &a) {
  if (a.tensors.size() > static_cast<size_t>(INT32_MAX))
    throw Error("too many tensors");
  std::unordered_set<std::string> programNames;
  for (const Program &p : a.programs) {
    if (p.name.empty())
      throw Error("a program has an empty name");
    if (!programNames.insert(p.name).second)
      throw Error("duplicate program name '" + p.name + "'");
  }
  checkTensors(a);
  for (const Program &p : a.programs)
    checkProgram(a, p);
  if (a.onnxOffset != -1 || a.onnxSize != 0)
    checkRange(a.onnxOffset, a.onnxSize, static_cast<int64_t>(a.blob.size()),
               "embedded ONNX model", "bytes", "blob");
  if (a.hostLibOffset != -1 || a.hostLibSize != 0) {
    checkRange(a.hostLibOffset, a.hostLibSize,
               static_cast<int64_t>(a.blob.size()), "host library", "bytes",
               "blob");
    if (a.hostLibIsa.empty())
      throw Error("the host library names no ISA");
  }
  checkDeviceCode(a);
}

} // namespace tcc::rt
