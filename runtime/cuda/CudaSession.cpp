//===- CudaSession.cpp - Running programs on the GPU ----------------------===//
//
// run() enqueues every instr on the session's stream and returns; errors a
// kernel meets in the data (a label or gather index out of range) land in
// the instr's four device words and are reported by synchronize(), which
// names the program, instr, tensor, position and value. Eager mode
// allocates each temporary from the session's stream-ordered pool before
// its first use and frees it after its last, in stream order, so the pool
// recycles memory exactly as the kernels release it.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaSessionInternal.h"

#include <algorithm>
#include <cstring>

namespace tcc::rt::cuda {

CudaSession::CudaSession(const Artifact &artifact, ExecMode mode,
                         const SessionOptions &opts)
    : impl_(std::make_unique<Impl>()) {
  impl_->mode = mode;
  impl_->opts = opts;
  impl_->load(artifact);
}

CudaSession::~CudaSession() = default;

void *CudaSession::stream() const { return impl_->stream; }

ExecMode CudaSession::mode() const { return impl_->mode; }

std::string CudaSession::deviceDescription() const {
  return cuda::deviceDescription();
}

const std::vector<TensorInfo> &CudaSession::tensors() const {
  return impl_->tensors;
}

static void checkId(const std::vector<TensorInfo> &tensors, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= tensors.size())
    throw Error("tensor id " + std::to_string(id) +
                " is out of range (the artifact has " +
                std::to_string(tensors.size()) + " tensors)");
}

void *CudaSession::deviceData(int32_t id) const {
  checkId(impl_->tensors, id);
  return impl_->buffers[id];
}

void CudaSession::bindInput(int32_t id, void *devicePtr) {
  checkId(impl_->tensors, id);
  const TensorInfo &t = impl_->tensors[id];
  if (t.kind != TensorKind::Input)
    throw Error("bindInput: tensor '" + t.name + "' is a " +
                tensorKindName(t.kind) + ", not an input");
  if (!devicePtr)
    throw Error("bindInput: a null device pointer for tensor '" + t.name + "'");
  impl_->buffers[id] = devicePtr;
}

ProgramState &CudaSession::Impl::state(const std::string &name) {
  std::string names;
  for (const auto &ps : programs) {
    if (ps->program.name == name)
      return *ps;
    names += (names.empty() ? "" : ", ") + ps->program.name;
  }
  throw Error("no program '" + name + "' in the artifact (it has: " + names +
              ")");
}

void CudaSession::Impl::allocTemp(int32_t id) {
  if (buffers[id])
    return;
  const TensorInfo &t = tensors[id];
  int64_t bytes = alignUp(std::max<int64_t>(t.byteSize(), 1));
  void *p = nullptr;
  cudaError_t e =
      cudaMallocFromPoolAsync(&p, static_cast<size_t>(bytes), pool, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("out of GPU memory allocating " + std::to_string(t.byteSize()) +
                " bytes for tensor '" + t.name + "' (" + cudaGetErrorString(e) +
                ")");
  }
  buffers[id] = p;
  liveTempBytes += t.byteSize();
  liveAsyncBytes += bytes;
}

void CudaSession::Impl::freeTemp(int32_t id) {
  if (!buffers[id])
    return;
  TCC_CUDA_CHECK(cudaFreeAsync(buffers[id], stream));
  buffers[id] = nullptr;
  liveTempBytes -= tensors[id].byteSize();
  liveAsyncBytes -= alignUp(std::max<int64_t>(tensors[id].byteSize(), 1));
}

void CudaSession::Impl::notePeak() {
  peakTempBytes = std::max(peakTempBytes, liveTempBytes);
  measuredPeak = std::max(measuredPeak, fixedBytes + liveAsyncBytes);
}

// The previous owner's temps lose their buffers: reading one after another
// program ran is a clear "not live" instead of another program's bytes.
// A program's buffers are the same at each of its runs, so its CUDA graph
// (keyed by every buffer) is found again after another program ran.
void CudaSession::Impl::useArena(ProgramState &ps) {
  if (arenaOwner == &ps)
    return;
  handOverArena(buffers, arenaOwner ? &arenaOwner->temps : nullptr, ps.temps,
                arena, tensors);
  arenaOwner = &ps;
}

void CudaSession::Impl::launch(ProgramState &ps, size_t i) {
  if (ps.group[i] >= 0) {
    AdamGroup &g = ps.groups[ps.group[i]];
    std::vector<AdamEntry> entries;
    for (size_t j : g.members)
      entries.push_back(adamEntry(ps.args[j].instr, tensors, buffers));
    // The table changes only when buffers move (eager temporaries, bound
    // inputs). Stream order keeps earlier launches on the old table.
    size_t bytes = entries.size() * sizeof(AdamEntry);
    if (g.uploaded.size() != entries.size() ||
        std::memcmp(g.uploaded.data(), entries.data(), bytes) != 0) {
      g.uploaded = std::move(entries);
      TCC_CUDA_CHECK(cudaMemcpyAsync(g.entries, g.uploaded.data(), bytes,
                                     cudaMemcpyHostToDevice, stream));
    }
    const Instr &first = ps.program.instrs[i];
    launchAdamwMulti(g.entries, g.blocks, g.numBlocks, buffers[first.inputs[4]],
                     tensors[first.inputs[4]].dtype,
                     static_cast<const float *>(buffers[first.inputs[5]]),
                     adamScaling(first, buffers),
                     abi::attrs<abi::KernelId::AdamwUpdate>(first), stream);
    return;
  }
  CudaArgs &a = ps.args[i];
  const Instr &in = a.instr;
  for (size_t j = 0; j < in.inputs.size(); ++j)
    a.in[j].data = buffers[in.inputs[j]];
  for (size_t j = 0; j < in.outputs.size(); ++j)
    a.out[j].data = buffers[in.outputs[j]];
  ps.defs[i]->launch(a);
}

void CudaSession::run(const std::string &program) {
  Impl &m = *impl_;
  ProgramState &ps = m.state(program);
  const auto &instrs = ps.program.instrs;
  bool eager = m.mode == ExecMode::Eager;
  if (eager) // outputs of the previous run, or temps left by a failed one
    for (int32_t id : ps.temps)
      m.freeTemp(id);
  else
    m.useArena(ps);
  // Traced (runtime/core/Trace.h): launched one by one like a profile, each
  // launch timed on the host and each kernel between events on the stream;
  // the run then waits for the device to read the events.
  bool traced = tracing();
  if ((m.profiling || traced) && ps.events.empty()) {
    ps.events.assign(2 * instrs.size(), nullptr);
    for (cudaEvent_t &e : ps.events)
      TCC_CUDA_CHECK(cudaEventCreate(&e));
  }
  std::vector<Tracer::Clock::time_point> starts, ends;
  if (traced) {
    starts.resize(instrs.size());
    ends.resize(instrs.size());
  }
  if (!eager && !m.profiling && !traced && m.opts.graphs) {
    if (!ps.graphs)
      ps.graphs = std::make_unique<GraphCache>(true);
    try {
      ps.graphs->run(m.buffers, m.stream, [&] {
        for (size_t i = 0; i < instrs.size(); ++i)
          if (ps.group[i] != -2)
            m.launch(ps, i);
      });
    } catch (const Error &e) {
      throw Error("program '" + program + "': " + e.what());
    }
    m.notePeak();
    return;
  }
  try {
    for (size_t i = 0; i < instrs.size(); ++i) {
      if (eager) {
        for (int32_t id : ps.allocBefore[i])
          m.allocTemp(id);
        if (ps.group[i] >= 0) // the group's later members run now too
          for (size_t j : ps.groups[ps.group[i]].members)
            for (int32_t id : ps.allocBefore[j])
              m.allocTemp(id);
      }
      if (traced)
        starts[i] = Tracer::Clock::now();
      if (ps.group[i] != -2) {
        if (m.profiling || traced)
          TCC_CUDA_CHECK(cudaEventRecord(ps.events[2 * i], m.stream));
        m.launch(ps, i);
        if (m.profiling || traced)
          TCC_CUDA_CHECK(cudaEventRecord(ps.events[2 * i + 1], m.stream));
      }
      if (traced)
        ends[i] = Tracer::Clock::now();
      if (eager) {
        m.notePeak();
        for (int32_t id : ps.freeAfter[i])
          m.freeTemp(id);
      }
    }
  } catch (const Error &e) {
    throw Error("program '" + program + "': " + e.what());
  }
  m.notePeak();
  if (!m.profiling && !traced)
    return;
  TCC_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  if (traced) {
    // Device times from the first launched kernel's start event; a later
    // member of an AdamW group ran inside its first's launch (-1).
    std::vector<std::pair<double, double>> deviceUs(instrs.size(), {-1, -1});
    cudaEvent_t origin = nullptr;
    for (size_t i = 0; i < instrs.size(); ++i) {
      if (ps.group[i] == -2)
        continue;
      if (!origin)
        origin = ps.events[2 * i];
      float from = 0, ms = 0;
      TCC_CUDA_CHECK(cudaEventElapsedTime(&from, origin, ps.events[2 * i]));
      TCC_CUDA_CHECK(
          cudaEventElapsedTime(&ms, ps.events[2 * i], ps.events[2 * i + 1]));
      deviceUs[i] = {from * 1e3, ms * 1e3};
    }
    tracer_->programRun(ps.program, m.tensors, !eager, ps.labels, ps.costs,
                        starts, ends, deviceUs);
  }
  if (!m.profiling)
    return;
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (ps.group[i] == -2)
      continue;
    float ms = 0;
    TCC_CUDA_CHECK(
        cudaEventElapsedTime(&ms, ps.events[2 * i], ps.events[2 * i + 1]));
    const std::string &key =
        m.profileByShape ? ps.shapeLabels[i] : ps.labels[i];
    KernelTime &k = m.profile[key];
    k.kernel = key;
    k.calls++;
    k.seconds += ms * 1e-3;
    k.bytes += ps.costs[i].bytes;
    k.flops += ps.costs[i].flops;
  }
}

std::string CudaSession::graphStatus() const {
  const Impl &m = *impl_;
  if (m.mode == ExecMode::Eager)
    return "off (eager mode)";
  if (!m.opts.graphs)
    return "off (not asked for)";
  size_t graphs = 0;
  long long replays = 0;
  for (const auto &ps : m.programs)
    if (ps->graphs) {
      if (!ps->graphs->enabled())
        return "off: " + ps->graphs->whyOff();
      graphs += ps->graphs->graphs();
      replays += ps->graphs->replays();
    }
  return "on: " + std::to_string(graphs) + " graph" +
         (graphs == 1 ? "" : "s") + ", " + std::to_string(replays) +
         " replay" + (replays == 1 ? "" : "s");
}

std::string CudaSession::Impl::errorMessage(const ErrSlot &slot,
                                            const long long *w) const {
  const Instr &in = slot.program->program.instrs[slot.instr];
  std::string where = "program '" + slot.program->program.name + "' instr " +
                      std::to_string(slot.instr) + " (" + in.kernel + "): ";
  if (slot.kind == CudaErrKind::Index) {
    const TensorInfo &idx = tensors[in.inputs[1]];
    std::vector<int64_t> pos(idx.shape.size());
    long long rest = w[0];
    for (size_t d = pos.size(); d-- > 0;) {
      pos[d] = idx.shape[d] ? rest % idx.shape[d] : 0;
      rest = idx.shape[d] ? rest / idx.shape[d] : 0;
    }
    std::string text = "index " + std::to_string(w[1]) + " at position " +
                       formatShape(pos) + " of the indices '" + idx.name +
                       "' is outside [" + std::to_string(-w[2]) + ", " +
                       std::to_string(w[2]) + ")";
    // gather and gather_grad name their axis (AxisAttrs); the indexing
    // kernels (KernelsIndex.cpp) index several dimensions.
    if (abi::is(in, abi::KernelId::Gather) ||
        abi::is(in, abi::KernelId::GatherGrad))
      return where + "gather: " + text + " (axis " +
             std::to_string(abi::attrsOf<abi::AxisAttrs>(in).axis) +
             " has size " + std::to_string(w[2]) + ")";
    return where + in.kernel + ": " + text;
  }
  if (slot.kind == CudaErrKind::PoolIndex)
    return where + "max_pool2d_grad: index " + std::to_string(w[1]) +
           " at position " + std::to_string(w[0]) + " of the indices '" +
           tensors[in.inputs[1]].name + "' is outside the " +
           std::to_string(w[2]) + "-element plane";
  // Labels: the i64 input (the last one of the losses; a fused region's).
  std::string labels;
  for (size_t i = in.inputs.size(); i-- > 0;)
    if (tensors[in.inputs[i]].dtype == DType::I64) {
      labels = tensors[in.inputs[i]].name;
      break;
    }
  return where + "label " + std::to_string(w[1]) + " at position " +
         std::to_string(w[0]) + (labels.empty() ? "" : " of '" + labels + "'") +
         " is outside [0, " + std::to_string(w[2]) + ")";
}

void CudaSession::synchronize() {
  Impl &m = *impl_;
  TCC_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  if (m.slots.empty())
    return;
  std::vector<long long> w(m.slots.size() * 4);
  TCC_CUDA_CHECK(cudaMemcpy(w.data(), m.errWords, w.size() * sizeof(long long),
                            cudaMemcpyDeviceToHost));
  for (size_t s = 0; s < m.slots.size(); ++s) {
    if (w[4 * s + 3] == 0)
      continue;
    // Report the first (in program order) and clear them all: the next
    // synchronize reports only what happens after this one.
    TCC_CUDA_CHECK(cudaMemset(m.errWords, 0, w.size() * sizeof(long long)));
    TCC_CUDA_CHECK(cudaDeviceSynchronize());
    throw Error(m.errorMessage(m.slots[s], &w[4 * s]));
  }
}

static void *bufferFor(const std::vector<TensorInfo> &tensors,
                       const std::vector<void *> &buffers, int32_t id,
                       const char *what) {
  checkId(tensors, id);
  void *p = buffers[id];
  if (!p)
    throw Error(std::string(what) + ": tensor '" + tensors[id].name +
                "' has no device buffer now (a temporary that is not live)");
  return p;
}

// A synchronous copy's span on the trace (runtime/core/Trace.h).
static void traceCopy(TraceScope &t, const char *what, const TensorInfo &info) {
  if (t.active())
    t.name(std::string(what) + " " + info.name)
        .arg(traceArg("bytes", double(info.byteSize())))
        .arg(traceArg("tensor", info.name));
}

void CudaSession::download(int32_t id, void *host) {
  Impl &m = *impl_;
  TraceScope t(tracer_, "copy");
  void *p = bufferFor(m.tensors, m.buffers, id, "download");
  traceCopy(t, "download", m.tensors[id]);
  size_t bytes = static_cast<size_t>(m.tensors[id].byteSize());
  if (bytes)
    TCC_CUDA_CHECK(
        cudaMemcpyAsync(host, p, bytes, cudaMemcpyDeviceToHost, m.stream));
  TCC_CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

void CudaSession::upload(int32_t id, const void *host) {
  Impl &m = *impl_;
  TraceScope t(tracer_, "copy");
  void *p = bufferFor(m.tensors, m.buffers, id, "upload");
  traceCopy(t, "upload", m.tensors[id]);
  size_t bytes = static_cast<size_t>(m.tensors[id].byteSize());
  if (bytes)
    TCC_CUDA_CHECK(
        cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, m.stream));
  TCC_CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

MemoryStats CudaSession::memory() const {
  const Impl &m = *impl_;
  MemoryStats s;
  s.persistentBytes = m.persistentBytes;
  s.tempPeakBytes =
      m.mode == ExecMode::Compiled ? m.arenaBytes : m.peakTempBytes;
  s.peakBytes = s.persistentBytes + s.tempPeakBytes;
  s.measuredPeakBytes = m.measuredPeak;
  s.scratchBytes =
      alignUp(m.scratchBytes) + (m.gemm ? m.gemm->workspaceBytes() : 0);
  return s;
}

void CudaSession::setProfiling(bool on, bool byShape) {
  impl_->profiling = on;
  impl_->profileByShape = byShape;
}

std::vector<KernelTime> CudaSession::profile() const {
  std::vector<KernelTime> v;
  for (const auto &[name, k] : impl_->profile)
    v.push_back(k);
  std::sort(v.begin(), v.end(),
            [](const KernelTime &a, const KernelTime &b) {
              return a.seconds > b.seconds;
            });
  return v;
}

} // namespace tcc::rt::cuda
