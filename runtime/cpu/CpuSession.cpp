//===- CpuSession.cpp - Buffers, validation and the two execution modes ---===//
#include "runtime/cpu/CpuSession.h"

#include "runtime/core/Initializer.h"
#include "runtime/core/abi/KernelAbi.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tcc::rt::cpu {

struct CpuSession::Buffer {
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

struct CpuSession::ProgramState {
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

CpuSession::CpuSession(const Artifact &artifact, ExecMode mode, int64_t rank)
    : mode_(mode), tensors_(artifact.tensors) {
  validateArtifact(artifact);
  applyThreadSetting();
  if (artifact.hostLibOffset >= 0) {
    fused_ = std::make_unique<FusedLibrary>(
        artifact.blob.data() + artifact.hostLibOffset,
        static_cast<size_t>(artifact.hostLibSize), artifact.hostLibIsa);
    artifact.blob.release(artifact.hostLibOffset, artifact.hostLibSize);
  }
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
        if (abi::is(in, abi::KernelId::Fused)) {
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
          in,
          abi::is(in, abi::KernelId::Fused)
              ? fused_->kernel(abi::attrs<abi::KernelId::Fused>(in).kernel).name
              : ""));
      ps->shapeLabels.push_back(
          profileKey(ps->labels.back(), profileShape(in, tensors_)));
      KernelArgs args{in, {}, {}};
      args.fused = fused_.get();
      args.rank = rank;
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

CpuSession::~CpuSession() {
  if (mode_ == ExecMode::Eager)
    for (const auto &ps : programs_)
      for (int32_t id : ps->temps)
        std::free(buffers_[id]);
}

void *CpuSession::allocate(int64_t bytes, const std::string &what) {
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

void CpuSession::notePeak() {
  measuredPeak_ =
      std::max(measuredPeak_, allocatedBytes_ + kernelScratchBytes());
}

void *CpuSession::data(int32_t tensorId) {
  if (tensorId < 0 || static_cast<size_t>(tensorId) >= tensors_.size())
    throw Error("tensor id " + std::to_string(tensorId) +
                " is out of range (the artifact has " +
                std::to_string(tensors_.size()) + " tensors)");
  return buffers_[tensorId];
}

const void *CpuSession::data(int32_t tensorId) const {
  return const_cast<CpuSession *>(this)->data(tensorId);
}

void *CpuSession::data(const std::string &name) {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name)
      return data(static_cast<int32_t>(i));
  throw Error("no tensor named '" + name + "' in the artifact");
}

int64_t CpuSession::orderingThreads() const {
  return openblas_get_num_threads();
}

void *CpuSession::bufferOf(int32_t id, const char *what) {
  void *p = data(id);
  if (!p)
    throw Error(std::string(what) + ": tensor '" + tensors_[id].name +
                "' has no buffer now (a temporary that is not live)");
  return p;
}

// An empty tensor's host side may be a null pointer (an empty vector's
// data()), which memcpy may not be given even for zero bytes.
// A host copy's span on the trace (Trace.h), when it is on.
static void traceCopy(TraceScope &t, const char *what, const TensorInfo &info,
                      size_t bytes) {
  if (t.active())
    t.name(std::string(what) + " " + info.name)
        .arg(traceArg("bytes", double(bytes)))
        .arg(traceArg("tensor", info.name));
}

void CpuSession::upload(int32_t id, const void *host) {
  TraceScope t(tracer_, "copy");
  void *p = bufferOf(id, "upload");
  traceCopy(t, "upload", tensors_[id], tensors_[id].byteSize());
  if (size_t bytes = static_cast<size_t>(tensors_[id].byteSize()))
    std::memcpy(p, host, bytes);
}

void CpuSession::download(int32_t id, void *host) {
  TraceScope t(tracer_, "copy");
  void *p = bufferOf(id, "download");
  traceCopy(t, "download", tensors_[id], tensors_[id].byteSize());
  if (size_t bytes = static_cast<size_t>(tensors_[id].byteSize()))
    std::memcpy(host, p, bytes);
}

void CpuSession::readAsync(int32_t id, void *host, size_t bytes) {
  TraceScope t(tracer_, "copy");
  void *p = bufferOf(id, "read");
  traceCopy(t, "read", tensors_[id], bytes);
  if (bytes > static_cast<size_t>(tensors_[id].byteSize()))
    throw Error("read: " + std::to_string(bytes) + " bytes of tensor '" +
                tensors_[id].name + "', which has " +
                std::to_string(tensors_[id].byteSize()));
  if (bytes)
    std::memcpy(host, p, bytes);
}

void CpuSession::writeAsync(int32_t id, const void *host, size_t bytes) {
  TraceScope t(tracer_, "copy");
  void *p = bufferOf(id, "write");
  traceCopy(t, "write", tensors_[id], bytes);
  if (bytes > static_cast<size_t>(tensors_[id].byteSize()))
    throw Error("write: " + std::to_string(bytes) + " bytes into tensor '" +
                tensors_[id].name + "', which has " +
                std::to_string(tensors_[id].byteSize()));
  if (bytes)
    std::memcpy(p, host, bytes);
}

namespace {
/// The CPU's one slot is the input tensors themselves: a batch is copied
/// into them just before the runs that read it.
class CpuInputSlots final : public InputSlots {
public:
  CpuInputSlots(CpuSession &s, std::vector<int32_t> targets)
      : s_(s), targets_(std::move(targets)) {}
  void stage(size_t,
             const std::vector<std::vector<uint8_t>> &tensors) override {
    if (tensors.size() != targets_.size())
      throw Error("a batch of " + std::to_string(tensors.size()) +
                  " tensors for " + std::to_string(targets_.size()) +
                  " inputs");
    for (size_t i = 0; i < targets_.size(); ++i) {
      const TensorInfo &t = s_.tensors()[targets_[i]];
      if (static_cast<int64_t>(tensors[i].size()) != t.byteSize())
        throw Error("the batch for input '" + t.name + "' has " +
                    std::to_string(tensors[i].size()) + " bytes, the tensor " +
                    std::to_string(t.byteSize()));
      s_.upload(targets_[i], tensors[i].data());
    }
  }
  void use(size_t) override {}
  void release(size_t) override {}

private:
  CpuSession &s_;
  std::vector<int32_t> targets_;
};

struct HostTime final : Event {
  std::chrono::steady_clock::time_point t{};
};
} // namespace

std::unique_ptr<InputSlots>
CpuSession::inputSlots(const std::vector<int32_t> &targets, size_t) {
  for (int32_t id : targets)
    if (id < 0 || static_cast<size_t>(id) >= tensors_.size() ||
        tensors_[id].kind != TensorKind::Input)
      throw Error("input slots: tensor " + std::to_string(id) +
                  " is not an input of the artifact");
  return std::make_unique<CpuInputSlots>(*this, targets);
}

std::unique_ptr<Event> CpuSession::createEvent() {
  return std::make_unique<HostTime>();
}

// Work is done when run() returns, so the time of the call is the time of
// the work before it.
void CpuSession::record(Event &e) {
  static_cast<HostTime &>(e).t = std::chrono::steady_clock::now();
}

double CpuSession::seconds(Event &from, Event &to) {
  return std::chrono::duration<double>(static_cast<HostTime &>(to).t -
                                       static_cast<HostTime &>(from).t)
      .count();
}

// Programs run one at a time and a temp lives only within a run of its own
// program (the artifact's validation: written before read, never read by
// another program), so one arena sized for the largest program serves them
// all. The previous owner's temps lose their buffers, so reading one after
// another program ran is a clear "not live" instead of another program's
// bytes.
void CpuSession::useArena(ProgramState &ps) {
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

CpuSession::ProgramState &CpuSession::state(const std::string &program) {
  std::string names;
  for (const auto &ps : programs_) {
    if (ps->program.name == program)
      return *ps;
    names += (names.empty() ? "" : ", ") + ps->program.name;
  }
  throw Error("no program '" + program + "' in the artifact (it has: " + names +
              ")");
}

void CpuSession::run(const std::string &program) {
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

void CpuSession::runCompiled(ProgramState &ps) {
  const Program &p = ps.program;
  useArena(ps);
  if (tracing()) {
    runTraced(ps);
    return;
  }
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

// Each kernel timed on the host, for the trace (and the profile when it is
// on too); then the run's spans and memory track.
void CpuSession::runTraced(ProgramState &ps) {
  const Program &p = ps.program;
  size_t n = p.instrs.size();
  std::vector<std::chrono::steady_clock::time_point> starts(n), ends(n);
  for (size_t i = 0; i < n; ++i) {
    starts[i] = std::chrono::steady_clock::now();
    call(ps.fns[i], ps.args[i], p.instrs[i], buffers_);
    ends[i] = std::chrono::steady_clock::now();
    if (profiling_)
      record(profileByShape_ ? ps.shapeLabels[i] : ps.labels[i], ps.costs[i],
             starts[i]);
  }
  notePeak();
  tracer_->programRun(p, tensors_, true, ps.labels, ps.costs, starts, ends);
}

void CpuSession::record(const std::string &kernel, const KernelCost &cost,
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

std::vector<KernelTime> CpuSession::profile() const {
  std::vector<KernelTime> v;
  for (const auto &[name, k] : profile_)
    v.push_back(k);
  std::sort(v.begin(), v.end(), [](const KernelTime &a, const KernelTime &b) {
    return a.seconds > b.seconds;
  });
  return v;
}

void CpuSession::runEager(ProgramState &ps) {
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
  // Traced: each kernel's time includes its temporaries' allocation.
  bool traced = tracing();
  std::vector<std::chrono::steady_clock::time_point> starts, ends;
  if (traced) {
    starts.resize(p.instrs.size());
    ends.resize(p.instrs.size());
  }
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    if (traced)
      starts[i] = std::chrono::steady_clock::now();
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
    if (traced)
      ends[i] = std::chrono::steady_clock::now();
  }
  if (traced)
    tracer_->programRun(p, tensors_, false, ps.labels, ps.costs, starts, ends);
}

MemoryStats CpuSession::memory() const {
  MemoryStats m;
  m.persistentBytes = persistentBytes_;
  m.tempPeakBytes = mode_ == ExecMode::Compiled ? arenaBytes_ : peakTempBytes_;
  m.peakBytes = m.persistentBytes + m.tempPeakBytes;
  m.measuredPeakBytes = measuredPeak_;
  m.scratchBytes = kernelScratchBytes();
  return m;
}

} // namespace tcc::rt::cpu
