//===- MemoryPlanner.cpp - Static arena plan for a program's temps --------===//
//
// Lifetimes are instruction intervals [first write, last read]; a program
// output stays live to the end. Placement is greedy first fit: each tensor
// takes the lowest 64-byte-aligned offset that does not collide with an
// already placed tensor whose interval overlaps. It is tried in two orders
// (largest first, and definition order) and the smaller arena wins. Not
// optimal, but deterministic and close on the chains of a training step.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/MemoryPlanner.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace tcc;

namespace {
struct Interval {
  int32_t tensor;
  int64_t first, last, size;
  int64_t offset = -1;
};
} // namespace

static int64_t alignUp(int64_t v) { return (v + 63) / 64 * 64; }

/// First fit in the given order: each tensor takes the lowest offset that
/// collides with no placed tensor live at the same time. Returns the arena
/// size; fills each Interval's offset.
static int64_t place(std::vector<Interval> &items) {
  int64_t arena = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    Interval &it = items[i];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j = 0; j < i; ++j) {
      const Interval &p = items[j];
      if (p.first <= it.last && it.first <= p.last)
        busy.push_back({p.offset, p.offset + p.size});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [b, e] : busy) {
      if (offset + it.size <= b)
        break;
      offset = std::max(offset, e);
    }
    it.offset = offset;
    arena = std::max(arena, offset + it.size);
  }
  return arena;
}

int64_t tcc::planProgramMemory(rt::Artifact &artifact, rt::Program &program) {
  std::vector<int64_t> first(artifact.tensors.size(), -1);
  std::vector<int64_t> last(artifact.tensors.size(), -1);
  auto isTemp = [&](int32_t id) {
    return artifact.tensors[id].kind == rt::TensorKind::Temp;
  };
  for (int64_t i = 0; i < (int64_t)program.instrs.size(); ++i) {
    const rt::Instr &in = program.instrs[i];
    for (int32_t id : in.inputs)
      if (isTemp(id))
        last[id] = i;
    for (int32_t id : in.outputs)
      if (isTemp(id)) {
        if (first[id] < 0)
          first[id] = i;
        last[id] = std::max(last[id], i);
      }
  }
  int64_t end = (int64_t)program.instrs.size();
  for (int32_t id : program.outputs)
    if (isTemp(id))
      last[id] = end;

  std::vector<Interval> items;
  int64_t total = 0;
  for (int32_t id = 0; id < (int32_t)artifact.tensors.size(); ++id) {
    if (first[id] < 0)
      continue;
    int64_t size = alignUp(std::max<int64_t>(artifact.tensors[id].byteSize(), 1));
    items.push_back({id, first[id], last[id], size});
    total += size;
  }
  // Two orders, keep the smaller arena: largest first packs big tensors
  // tightly; definition order follows the step's own stack-like lifetimes.
  auto bySize = items, byDef = items;
  std::stable_sort(bySize.begin(), bySize.end(),
                   [](const Interval &a, const Interval &b) {
                     return a.size > b.size;
                   });
  std::stable_sort(byDef.begin(), byDef.end(),
                   [](const Interval &a, const Interval &b) {
                     return a.first < b.first;
                   });
  int64_t sizeArena = place(bySize), defArena = place(byDef);
  std::vector<Interval> &best = sizeArena <= defArena ? bySize : byDef;
  int64_t arena = std::min(sizeArena, defArena);
  for (const Interval &it : best)
    artifact.tensors[it.tensor].arenaOffset = it.offset;
  program.arenaBytes = arena;
  return total;
}
