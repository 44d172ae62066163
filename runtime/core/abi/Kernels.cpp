//===- Kernels.cpp - In-place rules, aliasing checks, float conversions ---===//
#include "runtime/core/abi/Kernels.h"

#include "runtime/core/prelude/Half.h"

#include <algorithm>
#include <atomic>

namespace tcc::rt {

using abi::KernelId;

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const abi::KernelInfo &k : abi::kKernels)
    names.push_back(k.name);
  return names;
}

bool kernelAllowsInPlace(const std::string &name) {
  std::optional<KernelId> id = abi::kernelByName(name);
  return id && abi::info(*id).inPlace;
}

bool isPrefixWindow(const Instr &instr, const std::vector<int64_t> &full,
                    const std::vector<int64_t> &window) {
  size_t rank = full.size();
  if (rank == 0 || window.size() != rank || window[0] > full[0])
    return false;
  std::optional<abi::WindowAttrs> w = abi::tryAttrsOf<abi::WindowAttrs>(instr);
  if (!w || w->starts.size() != rank)
    return false;
  for (size_t d = 0; d < rank; ++d)
    if (w->starts[d] != 0 || w->steps[d] != 1 ||
        (d > 0 && window[d] != full[d]))
      return false;
  return true;
}

bool isPrefixSlice(const Instr &instr, const std::vector<int64_t> &in,
                   const std::vector<int64_t> &out) {
  return abi::is(instr, KernelId::Slice) && isPrefixWindow(instr, in, out);
}

std::vector<std::pair<int64_t, int64_t>> fusedInPlacePairs(const Instr &instr) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (!abi::is(instr, KernelId::Fused))
    return pairs;
  // Tolerant of an unchecked instr: no pairs unless the counts fit.
  if (std::optional<abi::FusedAttrs> f =
          abi::tryAttrsOf<abi::FusedAttrs>(instr))
    for (size_t k = 0; k < f->inPlacePairs(); ++k)
      pairs.push_back(f->inPlacePair(k));
  return pairs;
}

bool instrAllowsInPlace(const Instr &instr, size_t output, size_t input) {
  if (kernelAllowsInPlace(instr.kernel))
    return true;
  auto pairs = fusedInPlacePairs(instr);
  return std::find(pairs.begin(), pairs.end(),
                   std::make_pair((int64_t)output, (int64_t)input)) !=
         pairs.end();
}

static std::atomic<int64_t> scratchHeld{0};

void noteKernelScratch(int64_t deltaBytes) { scratchHeld += deltaBytes; }

int64_t kernelScratchBytes() { return scratchHeld.load(); }

namespace {
/// Where an operand lives in the static layout: its own buffer (region =
/// tensor id) or a byte range of the program arena (region = -1).
struct Placement {
  int64_t region, begin, end;
  bool overlaps(const Placement &o) const {
    return region == o.region && begin < o.end && o.begin < end;
  }
  bool sameAs(const Placement &o) const {
    return region == o.region && begin == o.begin && end == o.end;
  }
};
} // namespace

static Placement placement(const std::vector<TensorInfo> &tensors, int32_t id) {
  const TensorInfo &t = tensors[id];
  if (t.kind == TensorKind::Temp)
    return {-1, t.arenaOffset, t.arenaOffset + t.byteSize()};
  return {id, 0, t.byteSize()};
}

void checkAliasing(const Instr &in, const std::vector<TensorInfo> &tensors) {
  auto name = [&](const char *role, size_t i, int32_t id) {
    return std::string(role) + " " + std::to_string(i) + " '" +
           tensors[id].name + "'";
  };
  for (size_t o = 0; o < in.outputs.size(); ++o) {
    Placement po = placement(tensors, in.outputs[o]);
    for (size_t o2 = 0; o2 < o; ++o2)
      if (po.overlaps(placement(tensors, in.outputs[o2])))
        throw Error(name("output", o, in.outputs[o]) + " overlaps " +
                    name("output", o2, in.outputs[o2]) + " in memory");
    for (size_t i = 0; i < in.inputs.size(); ++i) {
      Placement pi = placement(tensors, in.inputs[i]);
      if (!po.overlaps(pi))
        continue;
      // A view: the window is the input's first bytes (run as a copy that
      // skips equal pointers).
      if (po.region == pi.region && po.begin == pi.begin &&
          isPrefixSlice(in, tensors[in.inputs[i]].shape,
                        tensors[in.outputs[o]].shape))
        continue;
      if (!instrAllowsInPlace(in, o, i))
        throw Error(
            name("output", o, in.outputs[o]) + " overlaps " +
            name("input", i, in.inputs[i]) + " in memory, but " + in.kernel +
            (abi::is(in, KernelId::Fused) ? " does not list that pair in place"
                                          : " cannot run in place"));
      if (!po.sameAs(pi))
        throw Error(name("output", o, in.outputs[o]) + " partially overlaps " +
                    name("input", i, in.inputs[i]) + " in memory");
    }
  }
}

void widenToF32(const void *src, DType t, float *dst, int64_t n) {
  const uint16_t *h = static_cast<const uint16_t *>(src);
  if (t == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToF32(h[i]);
  } else if (t == DType::F16) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f16ToF32(h[i]);
  } else {
    const float *f = static_cast<const float *>(src);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f[i];
  }
}

void narrowFromF32(const float *src, DType t, void *dst, int64_t n) {
  uint16_t *h = static_cast<uint16_t *>(dst);
  if (t == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      h[i] = f32ToBf16(src[i]);
  } else if (t == DType::F16) {
    for (int64_t i = 0; i < n; ++i)
      h[i] = f32ToF16(src[i]);
  } else {
    float *f = static_cast<float *>(dst);
    for (int64_t i = 0; i < n; ++i)
      f[i] = src[i];
  }
}

} // namespace tcc::rt
