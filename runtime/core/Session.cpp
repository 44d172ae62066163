//===- Session.cpp - What every session shares ----------------------------===//
#include "runtime/core/Session.h"

#include "runtime/core/NonFinite.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace tcc::rt {

EagerLifetimes eagerLifetimes(const Program &p,
                              const std::vector<TensorInfo> &tensors) {
  const int64_t n = static_cast<int64_t>(p.instrs.size());
  std::vector<int64_t> firstDef(tensors.size(), -1),
      lastUse(tensors.size(), -1);
  for (int64_t i = 0; i < n; ++i) {
    const Instr &in = p.instrs[i];
    for (int32_t id : in.outputs)
      if (firstDef[id] < 0)
        firstDef[id] = i;
    for (const auto *ids : {&in.inputs, &in.outputs})
      for (int32_t id : *ids)
        lastUse[id] = i;
  }
  for (int32_t id : p.outputs)
    lastUse[id] = n; // survives the run
  EagerLifetimes L;
  L.allocBefore.resize(n);
  L.freeAfter.resize(n);
  for (size_t id = 0; id < tensors.size(); ++id) {
    if (tensors[id].kind != TensorKind::Temp || firstDef[id] < 0)
      continue;
    L.temps.push_back(static_cast<int32_t>(id));
    L.allocBefore[firstDef[id]].push_back(static_cast<int32_t>(id));
    if (lastUse[id] < n)
      L.freeAfter[lastUse[id]].push_back(static_cast<int32_t>(id));
  }
  return L;
}

namespace {
class HeapBuffer final : public HostBuffer {
public:
  explicit HeapBuffer(size_t bytes) {
    size_t size = (std::max<size_t>(bytes, 1) + kArtifactAlign - 1) /
                  kArtifactAlign * kArtifactAlign;
    data_ = static_cast<uint8_t *>(std::aligned_alloc(kArtifactAlign, size));
    if (!data_)
      throw Error("out of memory allocating " + std::to_string(bytes) +
                  " bytes of host memory");
    size_ = bytes;
  }
  ~HeapBuffer() override { std::free(data_); }
};
} // namespace

std::unique_ptr<HostBuffer> Session::allocateHost(size_t bytes) {
  return std::make_unique<HeapBuffer>(bytes);
}

bool Session::anyNonFinite(const std::vector<int32_t> &ids) {
  std::vector<float> copy;
  for (int32_t id : ids) {
    const TensorInfo &t = tensors().at(id);
    const float *p = static_cast<const float *>(hostData(id));
    if (!p) {
      copy.resize(static_cast<size_t>(t.numElements()));
      download(id, copy.data());
      p = copy.data();
    }
    if (hasNonFinite(p, t.numElements()))
      return true;
  }
  return false;
}

double timeRun(Session &s, const std::string &program) {
  std::unique_ptr<Event> from = s.createEvent(), to = s.createEvent();
  s.record(*from);
  s.run(program);
  s.record(*to);
  s.wait(*to);
  s.synchronize(); // a kernel's error, if any
  return s.seconds(*from, *to);
}

} // namespace tcc::rt

std::string tcc::rt::traceSteps(Session &s, int64_t steps,
                                const std::function<void()> &step,
                                const std::string &path,
                                const std::string &process) {
  Tracer t(steps, process + " (" + s.backend() +
                      (s.mode() == ExecMode::Eager ? ", eager)" : ")"));
  t.note("device", s.deviceDescription());
  s.setTracer(&t);
  try {
    for (int64_t i = 1; i <= steps; ++i) {
      t.beginStep(i);
      step();
      s.synchronize();
      t.endStep();
    }
  } catch (...) {
    s.setTracer(nullptr);
    throw;
  }
  s.setTracer(nullptr);
  t.write(path);
  return "trace: " + path + " (" + std::to_string(t.detailedSteps()) +
         " step(s), " + std::to_string(t.events()) +
         " events; open it in ui.perfetto.dev or chrome://tracing)";
}
