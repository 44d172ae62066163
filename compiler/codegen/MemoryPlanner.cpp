//===- MemoryPlanner.cpp - Static arena plan for a program's temps --------===//
//
// Lifetimes are instruction intervals [first write, last read]; a program
// output stays live to the end. Two steps:
//
// 1. In-place chains. When an element-wise kernel (KernelList.def's
//    in-place flag) or a generated kernel for a pair it lists
//    (rt::instrAllowsInPlace) reads a temp for the last time and writes a
//    temp of the same dtype and element count, the output takes the input's
//    bytes: the two become one buffer. Reshapes (copies) and chains of
//    activations and their gradients then cost nothing extra, which is how
//    the compiled step can hold less than an allocator that must allocate
//    an output before it frees the input. A reshape (a `copy` between temps
//    of one dtype and size) joins its input's buffer even when the input
//    lives on: a view, whose copy the kernels skip (equal pointers). So
//    does a slice that keeps its input's first bytes (rt::isPrefixSlice):
//    a padded vocabulary's weight gradient cut back to the parameter's
//    rows is not copied.
// 2. Placement. Each buffer gets an offset so that buffers live at the same
//    time never share bytes. Greedy placement is tried in several orders
//    (largest first, definition order, longest life first) with first fit
//    (the lowest free offset) and best fit (the tightest gap); the smallest
//    arena wins. Not optimal, but deterministic; the live-bytes lower bound
//    is reported by `tcc compile --report` to show the gap.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/MemoryPlanner.h"

#include "runtime/core/abi/Kernels.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

using namespace tcc;

static int64_t alignUp(int64_t v) { return (v + 63) / 64 * 64; }

ProgramLifetimes tcc::analyzeLifetimes(const rt::Artifact &artifact,
                                       const rt::Program &program,
                                       bool inPlace) {
  ProgramLifetimes L;
  size_t numTensors = artifact.tensors.size();
  L.first.assign(numTensors, -1);
  L.last.assign(numTensors, -1);
  L.bufferOf.assign(numTensors, -1);
  auto isTemp = [&](int32_t id) {
    return artifact.tensors[id].kind == rt::TensorKind::Temp;
  };
  int64_t end = (int64_t)program.instrs.size();
  for (int64_t i = 0; i < end; ++i) {
    const rt::Instr &in = program.instrs[i];
    for (int32_t id : in.inputs)
      if (isTemp(id))
        L.last[id] = i;
    for (int32_t id : in.outputs)
      if (isTemp(id)) {
        if (L.first[id] < 0)
          L.first[id] = i;
        L.last[id] = std::max(L.last[id], i);
      }
  }
  for (int32_t id : program.outputs)
    if (isTemp(id))
      L.last[id] = end;

  // Buffers in definition order; outputs of in-place kernels may join the
  // buffer of an input that dies at the same instruction.
  for (int64_t i = 0; i < end; ++i) {
    const rt::Instr &in = program.instrs[i];
    // A copy between temps of one dtype and size is a reshape: the values
    // are immutable once written, so the output may be the input's bytes
    // even while the input lives on (the copy kernels skip equal pointers).
    // The buffer then lives until both are dead, which keeps any in-place
    // writer (step 1 needs a dying buffer) off it meanwhile.
    bool view = inPlace && rt::abi::is(in, rt::abi::KernelId::Copy) &&
                in.inputs.size() == 1;
    // A prefix slice (a padded leading axis cut back) is a view too: its
    // output is the input's first bytes, at the input's offset.
    bool prefix = inPlace && in.inputs.size() == 1 && in.outputs.size() == 1 &&
                  rt::isPrefixSlice(in, artifact.tensors[in.inputs[0]].shape,
                                    artifact.tensors[in.outputs[0]].shape);
    view = view || prefix;
    std::vector<int32_t> taken; // buffers reused by this instr's outputs
    // How many of the instr's inputs are in each buffer: a generated kernel
    // may write over one input (a pair it lists), so the buffer must hold
    // no other input of the instr.
    auto inputsIn = [&](int32_t b) {
      int n = 0;
      for (int32_t id : in.inputs)
        n += isTemp(id) && L.bufferOf[id] == b;
      return n;
    };
    for (size_t oi = 0; oi < in.outputs.size(); ++oi) {
      int32_t out = in.outputs[oi];
      if (!isTemp(out) || L.first[out] != i || L.bufferOf[out] >= 0)
        continue;
      const rt::TensorInfo &o = artifact.tensors[out];
      int32_t join = -1;
      for (size_t ii = 0; ii < in.inputs.size(); ++ii) {
        int32_t id = in.inputs[ii];
        bool elementwise = inPlace && rt::instrAllowsInPlace(in, oi, ii);
        if (!isTemp(id) || !(view || (elementwise && L.last[id] == i)))
          continue;
        const rt::TensorInfo &t = artifact.tensors[id];
        int32_t b = L.bufferOf[id];
        if (b < 0 || t.dtype != o.dtype ||
            (!prefix && t.numElements() != o.numElements()) ||
            std::find(taken.begin(), taken.end(), b) != taken.end() ||
            (!view && L.buffers[b].last != i) ||
            (rt::abi::is(in, rt::abi::KernelId::Fused) && inputsIn(b) != 1) ||
            (!prefix &&
             L.buffers[b].size != alignUp(std::max<int64_t>(o.byteSize(), 1))))
          continue;
        join = b;
        break;
      }
      if (join >= 0) {
        taken.push_back(join);
        L.buffers[join].last = std::max(L.buffers[join].last, L.last[out]);
        L.buffers[join].tensors.push_back(out);
        L.bufferOf[out] = join;
        continue;
      }
      L.bufferOf[out] = (int32_t)L.buffers.size();
      L.buffers.push_back(
          {i, L.last[out], alignUp(std::max<int64_t>(o.byteSize(), 1)), {out}});
    }
  }

  std::vector<int64_t> delta(end + 2, 0);
  for (const auto &b : L.buffers) {
    delta[b.first] += b.size;
    delta[b.last + 1] -= b.size;
  }
  int64_t live = 0;
  for (int64_t i = 0; i <= end; ++i) {
    live += delta[i];
    if (live > L.livePeak) {
      L.livePeak = live;
      L.livePeakAt = i;
    }
  }
  return L;
}

namespace {
struct Item {
  int32_t buffer;
  int64_t first, last, size;
  int64_t offset = -1;
};
} // namespace

/// Greedy placement in the given order: each buffer takes the lowest free
/// offset (first fit) or the smallest gap it fits in (best fit) among the
/// buffers already placed that are live at the same time. Returns the arena
/// size and fills each Item's offset.
static int64_t place(std::vector<Item> &items, bool bestFit) {
  int64_t arena = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i = 0; i < items.size(); ++i) {
    Item &it = items[i];
    busy.clear();
    for (size_t j = 0; j < i; ++j) {
      const Item &p = items[j];
      if (p.first <= it.last && it.first <= p.last)
        busy.push_back({p.offset, p.offset + p.size});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0, chosen = -1;
    int64_t bestGap = std::numeric_limits<int64_t>::max();
    for (auto [b, e] : busy) {
      if (offset + it.size <= b) {
        if (!bestFit) {
          chosen = offset;
          break;
        }
        if (b - offset < bestGap) {
          bestGap = b - offset;
          chosen = offset;
        }
      }
      offset = std::max(offset, e);
    }
    it.offset = chosen >= 0 ? chosen : offset;
    arena = std::max(arena, it.offset + it.size);
  }
  return arena;
}

int64_t tcc::planProgramMemory(rt::Artifact &artifact, rt::Program &program,
                               bool reuse) {
  ProgramLifetimes L = analyzeLifetimes(artifact, program, reuse);
  int64_t total = 0;
  for (size_t id = 0; id < artifact.tensors.size(); ++id)
    if (L.bufferOf[id] >= 0)
      total += alignUp(std::max<int64_t>(artifact.tensors[id].byteSize(), 1));

  if (!reuse) { // one slot per temp, in definition order
    int64_t offset = 0;
    for (const auto &b : L.buffers) {
      for (int32_t id : b.tensors)
        artifact.tensors[id].arenaOffset = offset;
      offset += b.size;
    }
    program.arenaBytes = offset;
    return total;
  }

  std::vector<Item> items;
  for (size_t b = 0; b < L.buffers.size(); ++b)
    items.push_back(
        {(int32_t)b, L.buffers[b].first, L.buffers[b].last, L.buffers[b].size});
  using Less = bool (*)(const Item &, const Item &);
  const Less orders[] = {
      [](const Item &a, const Item &b) { return a.size > b.size; },
      [](const Item &a, const Item &b) { return a.first < b.first; },
      [](const Item &a, const Item &b) {
        return a.last - a.first > b.last - b.first;
      },
  };
  std::vector<Item> best;
  int64_t arena = std::numeric_limits<int64_t>::max();
  for (Less less : orders)
    for (bool bestFit : {false, true}) {
      std::vector<Item> tryItems = items;
      std::stable_sort(tryItems.begin(), tryItems.end(), less);
      int64_t size = place(tryItems, bestFit);
      if (size < arena) {
        arena = size;
        best = std::move(tryItems);
      }
    }
  for (const Item &it : best)
    for (int32_t id : L.buffers[it.buffer].tensors)
      artifact.tensors[id].arenaOffset = it.offset;
  program.arenaBytes = items.empty() ? 0 : arena;
  return total;
}
