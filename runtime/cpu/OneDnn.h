//===- OneDnn.h - oneDNN engine, scratch and primitive cache ----*- C++ -*-===//
//
// Shared by the files of the oneDNN module, libtcc_cpu_onednn.so (CnnPath.h
// says why it is a module): its kernels return false where oneDNN does not
// take a case, and the runtime then runs its own loops.
//
// * One engine for the process and one stream per thread (a stream must not
//   be used by two threads at once).
// * Primitives are built once per problem (kernel, shapes, attributes) and
//   kept in a PrimitiveCache; a step only looks them up.
// * Every primitive runs with a user scratchpad, and the blocked copies of
//   operands live in per-thread buffers: both are kernel scratch, counted in
//   kernelScratchBytes() like the unfold buffers of the loops.
// * oneDNN's OpenMP team is sized like the runtime's pool (TCC_NUM_THREADS,
//   else the hardware threads) on each thread that calls it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_ONEDNN_H
#define TCC_RUNTIME_CPU_ONEDNN_H

#include "runtime/cpu/CnnPath.h"

#include <dnnl.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tcc::rt::onednn {

using dnnl::memory;
using Tag = memory::format_tag;

/// The module's kernels (OneDnnConv.cpp).
bool conv2d(const KernelArgs &a);
bool conv2dGradInput(const KernelArgs &a);
bool conv2dGradWeight(const KernelArgs &a);
/// C = alpha op(A) op(B) + beta C, row-major, on the calling thread only
/// (OneDnnGemm.cpp); false where oneDNN refuses the arguments.
bool sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc);

/// The process's CPU engine.
const dnnl::engine &engine();
/// This thread's stream; also sizes oneDNN's OpenMP team on first use.
dnnl::stream &stream();

/// Per-thread buffer `slot` (0..kSlots-1) of at least `bytes`, 64-byte
/// aligned; grows to the largest request and stays.
constexpr int kSlots = 4;
void *scratch(int slot, size_t bytes);

/// The attributes every primitive is built with (user scratchpad).
dnnl::primitive_attr userScratchpad();

/// A dense f32 descriptor.
inline memory::desc f32(const memory::dims &dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

/// A reorder from the kernel's plain layout to the layout a primitive
/// chose (or back), or none where they are the same.
struct Relayout {
  memory::desc from, to;
  std::unique_ptr<dnnl::reorder> prim; // null: no copy needed
  memory::desc scratchpad;
  static Relayout make(const memory::desc &from, const memory::desc &to);
};

/// Arguments of one execution: memories over the caller's buffers, the
/// blocked copies in scratch slots, and the scratchpad.
class Exec {
public:
  /// `data` in the plain layout of r.from, copied into slot `slot` in r.to
  /// when they differ; returns the memory the primitive reads.
  memory in(const Relayout &r, const void *data, int slot);
  /// The memory the primitive writes for an output whose plain buffer is
  /// `data`: the buffer itself, or slot `slot` (then copied by finish()).
  memory out(const Relayout &r, void *data, int slot);
  /// Runs `prim` with `args` and the scratchpad, then the pending copies
  /// out of the blocked outputs.
  void run(const dnnl::primitive &prim, std::unordered_map<int, memory> args,
           const memory::desc &scratchpad);

private:
  struct Pending {
    const Relayout *r;
    memory from, to;
  };
  std::vector<Pending> pending_;
};

/// Built primitives by problem key. Entries are never evicted: a model has
/// a few dozen problems. A null entry records a case oneDNN does not take,
/// so the kernel falls back without asking again.
template <class Entry> class PrimitiveCache {
public:
  using Key = std::vector<int64_t>;
  const Entry *get(const Key &key,
                   const std::function<std::unique_ptr<Entry>()> &make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      std::unique_ptr<Entry> e;
      try {
        e = make();
      } catch (const dnnl::error &) {
        e.reset(); // unsupported here: the loops run it
      }
      it = map_.emplace(key, std::move(e)).first;
    }
    return it->second.get();
  }

private:
  struct Hash {
    size_t operator()(const Key &k) const {
      size_t h = 1469598103934665603ull;
      for (int64_t v : k)
        h = (h ^ static_cast<size_t>(v)) * 1099511628211ull;
      return h;
    }
  };
  std::mutex mutex_;
  std::unordered_map<Key, std::unique_ptr<Entry>, Hash> map_;
};

} // namespace tcc::rt::onednn

#endif // TCC_RUNTIME_CPU_ONEDNN_H
