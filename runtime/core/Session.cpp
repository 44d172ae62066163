//===- Session.cpp - Buffers, validation and the two execution modes ------===//
#include "runtime/core/Session.h"

#include "runtime/core/Initializer.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tcc::rt {

struct Session::Buffer {
  void *ptr = nullptr;
  explicit Buffer(int64_t bytes) {
    // aligned_alloc wants a multiple of the alignment; never ask for 0.
    size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
    size = (size + kArtifactAlign - 1) / kArtifactAlign * kArtifactAlign;
    ptr = std::aligned_alloc(kArtifactAlign, size);
    if (!ptr)
      throw std::bad_alloc();
  }
  ~Buffer() { std::free(ptr); }
};

struct Session::ProgramState {
  Program program;
  std::vector<KernelFn> fns;
  /// Profile names: the kernel, or "fused:<ops>" for a generated one.
  std::vector<std::string> labels;
  /// labels with the problem shape (profileShape) for a profile by shape.
  std::vector<std::string> shapeLabels;
  std::vector<KernelCost> costs; // per instr, for the profile
  /// Views built once; their data pointers are refreshed before each call
  /// because eager temps move between runs.
  std::vector<KernelArgs> args;
  std::vector<int32_t> temps; // this program's temps that its instrs touch
  /// Eager: temps to allocate before / free after each instr. Program
  /// outputs are never freed during a run so the caller can read them.
  std::vector<std::vector<int32_t>> allocBefore, freeAfter;
};

// Sets OpenBLAS's pool size from TCC_NUM_THREADS so benchmarks can pin it.
static void applyThreadSetting() {
  const char *env = std::getenv("TCC_NUM_THREADS");
  if (!env || !*env)
    return;
  char *end = nullptr;
  long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n <= 0 || n > 4096)
    throw Error(std::string("TCC_NUM_THREADS='") + env +
                "' is not a positive integer");
  openblas_set_num_threads(static_cast<int>(n));
}

static TensorView viewOf(const TensorInfo &t) {
  return TensorView{nullptr, t.dtype, &t.shape, t.numElements()};
}

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

Session::Session(const Artifact &artifact, ExecMode mode)
    : mode_(mode), tensors_(artifact.tensors) {
  validateArtifact(artifact);
  applyThreadSetting();
  if (artifact.hostLibOffset >= 0)
    fused_ = std::make_unique<FusedLibrary>(
        artifact.blob.data() + artifact.hostLibOffset,
        static_cast<size_t>(artifact.hostLibSize), artifact.hostLibIsa);
  buffers_.assign(tensors_.size(), nullptr);

  for (const Program &p : artifact.programs) {
    auto ps = std::make_unique<ProgramState>();
    ps->program = p;
    const auto &instrs = ps->program.instrs;
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr &in = instrs[i];
      try {
        checkInstr(in, tensors_);
        checkAliasing(in, tensors_);
        if (in.kernel == "fused") {
          if (!fused_)
            throw Error("the artifact has no host library of generated "
                        "kernels");
          fused_->check(in, tensors_);
        }
      } catch (const Error &e) {
        throw Error("program '" + p.name + "' instr " + std::to_string(i) +
                    " (" + in.kernel + "): " + e.what());
      }
      ps->fns.push_back(kernelFor(in, tensors_));
      ps->costs.push_back(
          kernelCost(in, tensors_, mode_ == ExecMode::Compiled));
      ps->labels.push_back(profileLabel(
          in, in.kernel == "fused" ? fused_->kernel(in.iattrs[0]).name : ""));
      ps->shapeLabels.push_back(
          profileKey(ps->labels.back(), profileShape(in, tensors_)));
      KernelArgs args{in, {}, {}};
      args.fused = fused_.get();
      for (int32_t id : in.inputs)
        args.in.push_back(viewOf(tensors_[id]));
      for (int32_t id : in.outputs)
        args.out.push_back(viewOf(tensors_[id]));
      ps->args.push_back(std::move(args));
    }
    EagerLifetimes life = eagerLifetimes(p, tensors_);
    ps->temps = std::move(life.temps);
    ps->allocBefore = std::move(life.allocBefore);
    ps->freeAfter = std::move(life.freeAfter);
    programs_.push_back(std::move(ps));
  }

  for (size_t id = 0; id < tensors_.size(); ++id) {
    const TensorInfo &t = tensors_[id];
    if (t.kind == TensorKind::Temp)
      continue;
    void *buf = allocate(t.byteSize(), "tensor '" + t.name + "'");
    if (t.kind == TensorKind::Input)
      std::memset(buf, 0, t.byteSize()); // never expose garbage
    else // the blob's bytes, or drawn here (--weights seeded), or a cast
      fillInitialValue(artifact, static_cast<int32_t>(id), buf);
    buffers_[id] = buf;
    persistentBytes_ += t.byteSize();
  }
}

Session::~Session() {
  if (mode_ == ExecMode::Eager)
    for (const auto &ps : programs_)
      for (int32_t id : ps->temps)
        std::free(buffers_[id]);
}

void *Session::allocate(int64_t bytes, const std::string &what) {
  try {
    owned_.push_back(std::make_unique<Buffer>(bytes));
  } catch (const std::bad_alloc &) {
    throw Error("out of memory allocating " + std::to_string(bytes) +
                " bytes for " + what);
  }
  allocatedBytes_ += (std::max<int64_t>(bytes, 1) + kArtifactAlign - 1) /
                     kArtifactAlign * kArtifactAlign;
  notePeak();
  return owned_.back()->ptr;
}

void Session::notePeak() {
  measuredPeak_ =
      std::max(measuredPeak_, allocatedBytes_ + kernelScratchBytes());
}

void *Session::data(int32_t tensorId) {
  if (tensorId < 0 || static_cast<size_t>(tensorId) >= tensors_.size())
    throw Error("tensor id " + std::to_string(tensorId) +
                " is out of range (the artifact has " +
                std::to_string(tensors_.size()) + " tensors)");
  return buffers_[tensorId];
}

const void *Session::data(int32_t tensorId) const {
  return const_cast<Session *>(this)->data(tensorId);
}

void *Session::data(const std::string &name) {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name)
      return data(static_cast<int32_t>(i));
  throw Error("no tensor named '" + name + "' in the artifact");
}

// Programs run one at a time and a temp lives only within a run of its own
// program (the artifact's validation: written before read, never read by
// another program), so one arena sized for the largest program serves them
// all. The previous owner's temps lose their buffers, so reading one after
// another program ran is a clear "not live" instead of another program's
// bytes.
void Session::useArena(ProgramState &ps) {
  if (!arena_) {
    const Program *largest = nullptr;
    for (const auto &other : programs_)
      if (!largest || other->program.arenaBytes > largest->arenaBytes)
        largest = &other->program;
    arena_ = allocate(largest->arenaBytes,
                      "the arena shared by the programs (sized for '" +
                          largest->name + "')");
    arenaBytes_ = largest->arenaBytes;
  }
  if (arenaOwner_ == &ps)
    return;
  handOverArena(buffers_, arenaOwner_ ? &arenaOwner_->temps : nullptr, ps.temps,
                static_cast<char *>(arena_), tensors_);
  arenaOwner_ = &ps;
}

Session::ProgramState &Session::state(const std::string &program) {
  std::string names;
  for (const auto &ps : programs_) {
    if (ps->program.name == program)
      return *ps;
    names += (names.empty() ? "" : ", ") + ps->program.name;
  }
  throw Error("no program '" + program + "' in the artifact (it has: " + names +
              ")");
}

void Session::run(const std::string &program) {
  ProgramState &ps = state(program);
  if (mode_ == ExecMode::Compiled)
    runCompiled(ps);
  else
    runEager(ps);
}

static void call(KernelFn fn, KernelArgs &args, const Instr &in,
                 const std::vector<void *> &buffers) {
  for (size_t j = 0; j < in.inputs.size(); ++j)
    args.in[j].data = buffers[in.inputs[j]];
  for (size_t j = 0; j < in.outputs.size(); ++j)
    args.out[j].data = buffers[in.outputs[j]];
  fn(args);
}

void Session::runCompiled(ProgramState &ps) {
  const Program &p = ps.program;
  useArena(ps);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    if (!profiling_) {
      call(ps.fns[i], ps.args[i], p.instrs[i], buffers_);
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    call(ps.fns[i], ps.args[i], p.instrs[i], buffers_);
    record(profileByShape_ ? ps.shapeLabels[i] : ps.labels[i], ps.costs[i], t0);
  }
  notePeak();
}

void Session::record(const std::string &kernel, const KernelCost &cost,
                     std::chrono::steady_clock::time_point t0) {
  KernelTime &k = profile_[kernel];
  k.kernel = kernel;
  k.calls++;
  k.bytes += cost.bytes;
  k.flops += cost.flops;
  k.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
}

std::vector<Session::KernelTime> Session::profile() const {
  std::vector<KernelTime> v;
  for (const auto &[name, k] : profile_)
    v.push_back(k);
  std::sort(v.begin(), v.end(), [](const KernelTime &a, const KernelTime &b) {
    return a.seconds > b.seconds;
  });
  return v;
}

void Session::runEager(ProgramState &ps) {
  auto release = [&](int32_t id) {
    if (!buffers_[id])
      return;
    std::free(buffers_[id]);
    buffers_[id] = nullptr;
    liveTempBytes_ -= tensors_[id].byteSize();
    allocatedBytes_ -=
        (std::max<int64_t>(tensors_[id].byteSize(), 1) + kArtifactAlign - 1) /
        kArtifactAlign * kArtifactAlign;
  };
  // Outputs of the previous run, or temps left by a run that threw.
  for (int32_t id : ps.temps)
    release(id);

  const Program &p = ps.program;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    for (int32_t id : ps.allocBefore[i]) {
      int64_t bytes = tensors_[id].byteSize();
      size_t size = static_cast<size_t>(
          (std::max<int64_t>(bytes, 1) + kArtifactAlign - 1) / kArtifactAlign *
          kArtifactAlign);
      void *buf = std::aligned_alloc(kArtifactAlign, size);
      if (!buf)
        throw Error("out of memory allocating " + std::to_string(bytes) +
                    " bytes for tensor '" + tensors_[id].name + "'");
      buffers_[id] = buf;
      liveTempBytes_ += bytes;
      allocatedBytes_ += static_cast<int64_t>(size);
    }
    peakTempBytes_ = std::max(peakTempBytes_, liveTempBytes_);
    auto t0 = std::chrono::steady_clock::now();
    call(ps.fns[i], ps.args[i], p.instrs[i], buffers_);
    if (profiling_)
      record(profileByShape_ ? ps.shapeLabels[i] : ps.labels[i], ps.costs[i],
             t0);
    notePeak();
    for (int32_t id : ps.freeAfter[i])
      release(id);
  }
}

MemoryStats Session::memory() const {
  MemoryStats m;
  m.persistentBytes = persistentBytes_;
  m.tempPeakBytes = mode_ == ExecMode::Compiled ? arenaBytes_ : peakTempBytes_;
  m.peakBytes = m.persistentBytes + m.tempPeakBytes;
  m.measuredPeakBytes = measuredPeak_;
  m.scratchBytes = kernelScratchBytes();
  return m;
}

} // namespace tcc::rt
