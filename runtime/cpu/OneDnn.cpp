//===- OneDnn.cpp - oneDNN engine, streams, scratch, relayouts ------------===//
#include "runtime/cpu/OneDnn.h"

#include "runtime/core/ThreadPool.h"
#include "runtime/core/abi/Kernels.h"

#include <omp.h>

#include <cstdlib>
#include <new>
#include <string>

namespace tcc::rt::onednn {

const dnnl::engine &engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream &stream() {
  // oneDNN sizes its parallel regions by omp_get_max_threads(), an OpenMP
  // setting of the calling thread: the same count as the runtime's pool so
  // the two take turns on the same cores rather than oversubscribe them.
  thread_local dnnl::stream s = [] {
    omp_set_num_threads(ThreadPool::defaultThreads());
    return dnnl::stream(engine());
  }();
  return s;
}

namespace {
/// One aligned, growable per-thread buffer, counted as kernel scratch.
struct Buffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  ~Buffer() {
    std::free(ptr);
    noteKernelScratch(-static_cast<int64_t>(bytes));
  }
};
} // namespace

void *scratch(int slot, size_t bytes) {
  thread_local Buffer buffers[kSlots];
  Buffer &b = buffers[slot];
  if (b.bytes < bytes) {
    std::free(b.ptr);
    noteKernelScratch(-static_cast<int64_t>(b.bytes));
    b.bytes = 0;
    size_t rounded = (bytes + 63) / 64 * 64;
    b.ptr = std::aligned_alloc(64, rounded);
    if (!b.ptr)
      throw std::bad_alloc();
    b.bytes = rounded;
    noteKernelScratch(static_cast<int64_t>(rounded));
  }
  return b.ptr;
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Relayout Relayout::make(const memory::desc &from, const memory::desc &to) {
  Relayout r;
  r.from = from;
  r.to = to;
  if (from != to) {
    dnnl::reorder::primitive_desc pd(engine(), from, engine(), to,
                                     userScratchpad());
    r.prim = std::make_unique<dnnl::reorder>(pd);
    r.scratchpad = pd.scratchpad_desc();
  }
  return r;
}

/// The scratchpad slot: the last one, shared by a primitive and the
/// reorders around it (they run one after another).
static memory scratchpadMemory(const memory::desc &d) {
  return memory(d, engine(), scratch(kSlots - 1, d.get_size()));
}

/// Runs `prim` on this thread's stream; oneDNN's failures become the
/// runtime's errors (a kernel reports failures as tcc::rt::Error).
static void execute(const dnnl::primitive &prim,
                    const std::unordered_map<int, memory> &args) {
  try {
    prim.execute(stream(), args);
  } catch (const dnnl::error &e) {
    throw Error(std::string("oneDNN: ") + e.what());
  }
}

memory Exec::in(const Relayout &r, const void *data, int slot) {
  memory plain(r.from, engine(), const_cast<void *>(data));
  if (!r.prim)
    return plain;
  memory blocked(r.to, engine(), scratch(slot, r.to.get_size()));
  std::unordered_map<int, memory> args{{DNNL_ARG_FROM, plain},
                                       {DNNL_ARG_TO, blocked}};
  if (r.scratchpad.get_size())
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpadMemory(r.scratchpad));
  execute(*r.prim, args);
  return blocked;
}

memory Exec::out(const Relayout &r, void *data, int slot) {
  // r goes from the primitive's layout (from) to the plain one (to).
  memory plain(r.to, engine(), data);
  if (!r.prim)
    return plain;
  memory blocked(r.from, engine(), scratch(slot, r.from.get_size()));
  pending_.push_back({&r, blocked, plain});
  return blocked;
}

void Exec::run(const dnnl::primitive &prim,
               std::unordered_map<int, memory> args,
               const memory::desc &scratchpad) {
  dnnl::stream &s = stream();
  if (scratchpad.get_size())
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpadMemory(scratchpad));
  execute(prim, args);
  for (Pending &p : pending_) {
    std::unordered_map<int, memory> rargs{{DNNL_ARG_FROM, p.from},
                                          {DNNL_ARG_TO, p.to}};
    if (p.r->scratchpad.get_size())
      rargs.emplace(DNNL_ARG_SCRATCHPAD, scratchpadMemory(p.r->scratchpad));
    execute(*p.r->prim, rargs);
  }
  pending_.clear();
  s.wait();
  cpu::noteOneDnnCall();
}

} // namespace tcc::rt::onednn

extern "C" const tcc::rt::cpu::OneDnnKernels *tcc_cpu_onednn_kernels() {
  using namespace tcc::rt::onednn;
  static const tcc::rt::cpu::OneDnnKernels kernels{conv2d, conv2dGradInput,
                                                   conv2dGradWeight, sgemm};
  return &kernels;
}
