//===- CudaSessionLoad.cpp - Checking an artifact, device memory, cubin ---===//
//
// The constructor's work, in an order that lets every check about the
// artifact itself run before the GPU is touched: an artifact the CUDA
// backend cannot run is refused with the same message on any machine, and
// only then is "no GPU" a reason to stop.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Initializer.h"
#include "runtime/core/abi/FusedAbi.h"
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaSessionInternal.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace tcc::rt::cuda {

bool archRunsOn(const std::string &arch, int major, int minor,
                std::string *why) {
  std::string gpu = "sm_" + std::to_string(major) + std::to_string(minor);
  size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
    ++i;
  std::string digits = arch.substr(3, i - 3), suffix = arch.substr(i);
  if (arch.rfind("sm_", 0) != 0 || digits.size() < 2 || digits.size() > 3 ||
      (suffix != "" && suffix != "a" && suffix != "f")) {
    if (why)
      *why = "the artifact's GPU code names the architecture '" + arch +
             "', which is not sm_NN, sm_NNa or sm_NNf";
    return false;
  }
  int am = std::stoi(digits.substr(0, digits.size() - 1));
  int an = digits.back() - '0';
  bool ok = am == major && (suffix == "a" ? an == minor : minor >= an);
  if (!ok && why)
    *why = "the artifact's GPU code was built for " + arch +
           ", which does not run on this GPU (" + gpu + ")" +
           (suffix == "a" ? "; " + arch +
                                " code runs only on compute "
                                "capability " +
                                std::to_string(am) + "." + std::to_string(an)
                          : "") +
           "; recompile it for this GPU: tcc compile --target cuda "
           "--gpu-arch " +
           gpu + (major >= 9 ? "a" : "");
  return ok;
}

/// A `fused` instr against the kernel table of the artifact's GPU code
/// (index, operand counts, dtypes, element counts), like FusedLibrary::check.
static void checkFused(const Instr &in, const std::vector<TensorInfo> &tensors,
                       const DeviceCode &dc) {
  if (!dc.present())
    throw Error("the artifact has no GPU code for its generated kernels; "
                "compile it with tcc compile --target cuda");
  int64_t k = abi::attrs<abi::KernelId::Fused>(in).kernel;
  if (k < 0 || k >= static_cast<int64_t>(dc.kernels.size()))
    throw Error("generated kernel " + std::to_string(k) +
                " does not exist (the GPU code has " +
                std::to_string(dc.kernels.size()) + ")");
  checkFusedOperands(in, tensors, k, dc.kernels[k].inputs,
                     dc.kernels[k].outputs, dc.kernels[k].inPlace);
}

static TensorView viewOf(const TensorInfo &t) {
  return TensorView{nullptr, t.dtype, &t.shape, t.numElements()};
}

void CudaSession::Impl::validate(const Artifact &a) {
  validateArtifact(a);
  tensors = a.tensors;
  deviceKernels = a.device.kernels;
  buffers.assign(tensors.size(), nullptr);
  for (const Program &p : a.programs) {
    auto ps = std::make_unique<ProgramState>();
    ps->program = p;
    const auto &instrs = ps->program.instrs; // args refer to these
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr &in = instrs[i];
      const CudaKernelDef *def = nullptr;
      try {
        checkInstr(in, tensors);
        checkAliasing(in, tensors);
        def = findCudaKernel(in.kernel);
        if (!def)
          throw Error(cudaKernelMissing(in.kernel));
        if (def->prepare)
          scratchBytes = std::max(scratchBytes, def->prepare(in, tensors));
        if (abi::is(in, abi::KernelId::Fused)) {
          checkFused(in, tensors, a.device);
          const DeviceKernel &dk =
              a.device.kernels[abi::attrs<abi::KernelId::Fused>(in).kernel];
          scratchBytes = std::max(scratchBytes, dk.partialCount() * 8);
        }
      } catch (const Error &e) {
        throw Error("program '" + p.name + "' instr " + std::to_string(i) +
                    " (" + in.kernel + "): " + e.what());
      }
      ps->defs.push_back(def);
      ps->costs.push_back(kernelCost(in, tensors, mode == ExecMode::Compiled));
      ps->labels.push_back(profileLabel(
          in,
          abi::is(in, abi::KernelId::Fused)
              ? a.device.kernels[abi::attrs<abi::KernelId::Fused>(in).kernel]
                    .name
              : ""));
      ps->shapeLabels.push_back(
          profileKey(ps->labels.back(), profileShape(in, tensors)));
      CudaArgs args{in, {}, {}};
      for (int32_t id : in.inputs)
        args.in.push_back(viewOf(tensors[id]));
      for (int32_t id : in.outputs)
        args.out.push_back(viewOf(tensors[id]));
      ps->args.push_back(std::move(args));
      ps->errSlot.push_back(-1);
      if (def->err != CudaErrKind::None) {
        ps->errSlot.back() = static_cast<int>(slots.size());
        slots.push_back({ps.get(), i, def->err});
      }
    }
    EagerLifetimes life = eagerLifetimes(p, tensors);
    ps->temps = std::move(life.temps);
    ps->allocBefore = std::move(life.allocBefore);
    ps->freeAfter = std::move(life.freeAfter);
    ps->group.assign(instrs.size(), -1);
    programs.push_back(std::move(ps));
  }
}

void CudaSession::Impl::load(const Artifact &a) {
  validate(a);
  std::string why;
  if (!deviceAvailable(&why))
    throw Error("cannot run on the GPU: " + why);
  int count = 1, dev = 0;
  TCC_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (opts.gpu > 0 && count > 0)
    dev = opts.gpu % count;
  TCC_CUDA_CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  TCC_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  smCount = std::max(1, prop.multiProcessorCount);
  if (a.device.present() &&
      !archRunsOn(a.device.arch, prop.major, prop.minor, &why))
    throw Error(why + " (" + prop.name + ")");
  TCC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  setUpConvolutions();
  allocate(a);
  loadDeviceCode(a);
  gemm = std::make_unique<CudaGemm>(stream, opts.tf32);
  gemm->setEpilogues(opts.gemmEpilogues);
  fixedBytes += gemm->workspaceBytes();
  for (auto &ps : programs) {
    buildAdamGroups(*ps);
    for (CudaArgs &args : ps->args) {
      args.stream = stream;
      args.smCount = smCount;
      args.rank = opts.rank;
      args.gemm = gemm.get();
      args.fused = &fused;
    }
    for (size_t i = 0; i < ps->convs.size(); ++i)
      ps->args[i].conv = ps->convs[i].get();
  }
  setUpBuckets();
  // The uploads above ran on the legacy stream; the compute stream does
  // not wait for it.
  TCC_CUDA_CHECK(cudaDeviceSynchronize());
  notePeak();
}

void CudaSession::Impl::setUpConvolutions() {
  for (auto &ps : programs) {
    const auto &instrs = ps->program.instrs;
    ps->convs.resize(instrs.size());
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr &in = instrs[i];
      if (!abi::is(in, abi::KernelId::Conv2d) &&
          !abi::is(in, abi::KernelId::Conv2dGradInput) &&
          !abi::is(in, abi::KernelId::Conv2dGradWeight))
        continue;
      try {
        if (!cudnn)
          cudnn = std::make_unique<CudnnHandle>(stream);
        ps->convs[i] =
            std::make_unique<CudnnConv>(*cudnn, in, tensors, opts.tf32);
      } catch (const Error &e) {
        throw Error("program '" + ps->program.name + "' instr " +
                    std::to_string(i) + " (" + in.kernel + "): " + e.what());
      }
      scratchBytes = std::max(scratchBytes, ps->convs[i]->scratchBytes());
    }
  }
}

void CudaSession::Impl::allocate(const Artifact &a) {
  // One block: persistent tensors, then (Compiled) the arena. The programs
  // share it: they run one at a time on the stream and a temp lives only
  // within a run of its own program, so it is the largest program's size
  // instead of the sum of all.
  std::vector<int64_t> offset(tensors.size(), -1);
  int64_t cur = 0;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if (t.kind == TensorKind::Temp)
      continue;
    offset[id] = cur;
    cur += alignUp(std::max<int64_t>(t.byteSize(), 1));
    persistentBytes += t.byteSize();
  }
  int64_t arenaOffset = cur;
  if (mode == ExecMode::Compiled) {
    for (const auto &ps : programs)
      arenaBytes = std::max(arenaBytes, ps->program.arenaBytes);
    cur += alignUp(std::max<int64_t>(arenaBytes, 1));
  }
  blockBytes = std::max<int64_t>(cur, kDeviceAlign);
  cudaError_t e = cudaMalloc(reinterpret_cast<void **>(&block), blockBytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("out of GPU memory: the parameters, state, inputs" +
                std::string(mode == ExecMode::Compiled ? " and arena" : "") +
                " need " + std::to_string(blockBytes) + " bytes (" +
                cudaGetErrorString(e) + ")");
  }
  fixedBytes += blockBytes;

  std::vector<uint8_t> host;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorInfo &t = tensors[id];
    if (t.kind == TensorKind::Temp)
      continue;
    char *dst = block + offset[id];
    buffers[id] = dst;
    size_t bytes = static_cast<size_t>(t.byteSize());
    if (bytes == 0)
      continue;
    if (t.kind == TensorKind::Input) { // never expose garbage
      TCC_CUDA_CHECK(cudaMemset(dst, 0, bytes));
    } else if (t.init.kind != InitSpec::Kind::Blob) {
      host.resize(bytes);
      fillInitialValue(a, static_cast<int32_t>(id), host.data());
      TCC_CUDA_CHECK(
          cudaMemcpy(dst, host.data(), bytes, cudaMemcpyHostToDevice));
    } else {
      TCC_CUDA_CHECK(cudaMemcpy(dst, a.blob.data() + t.dataOffset, bytes,
                                cudaMemcpyHostToDevice));
      a.blob.release(t.dataOffset, t.byteSize());
    }
  }
  if (mode == ExecMode::Compiled) {
    arena = block + arenaOffset; // its temps get buffers at their first run
  } else {
    // Eager temporaries come from a pool of our own that keeps freed
    // memory for reuse, as a framework's caching allocator does.
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    TCC_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t keep = UINT64_MAX;
    TCC_CUDA_CHECK(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }

  // Data-error words (4 per instr that can raise one) and kernel scratch.
  if (!slots.empty()) {
    size_t bytes = slots.size() * 4 * sizeof(long long);
    TCC_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&errWords), bytes));
    TCC_CUDA_CHECK(cudaMemset(errWords, 0, bytes));
    fixedBytes += alignUp(static_cast<int64_t>(bytes));
    for (auto &ps : programs)
      for (size_t i = 0; i < ps->args.size(); ++i)
        if (ps->errSlot[i] >= 0)
          ps->args[i].err = errWords + 4 * ps->errSlot[i];
  }
  if (scratchBytes > 0) {
    TCC_CUDA_CHECK(cudaMalloc(&scratch, scratchBytes));
    fixedBytes += alignUp(scratchBytes);
    for (auto &ps : programs)
      for (CudaArgs &args : ps->args)
        args.scratch = scratch;
  }
}

void CudaSession::Impl::loadDeviceCode(const Artifact &a) {
  const DeviceCode &dc = a.device;
  if (!dc.present())
    return;
  // A copy: the artifact need not outlive the session, and the driver may
  // load the cubin lazily.
  std::vector<uint8_t> cubin(a.blob.begin() + dc.offset,
                             a.blob.begin() + dc.offset + dc.size);
  a.blob.release(dc.offset, dc.size);
  TCC_CUDA_CHECK(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr,
                                     0, nullptr, nullptr, 0));
  for (const DeviceKernel &k : deviceKernels) {
    FusedHandle h;
    h.info = &k;
    using Sym = std::pair<const std::string *, cudaKernel_t *>;
    for (auto [name, dst] :
         {Sym{&k.symbol, &h.fn}, Sym{&k.finSymbol, &h.fin}}) {
      if (name->empty())
        continue;
      cudaError_t e = cudaLibraryGetKernel(dst, library, name->c_str());
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw Error("the artifact's GPU code has no kernel '" + *name + "' (" +
                    cudaGetErrorString(e) + ")");
      }
    }
    if (!h.fn)
      throw Error("generated kernel '" + k.name + "' has no symbol");
    // Above the default 48 KiB a kernel must be allowed its shared memory
    // (a block_rows kernel's staged row); a GPU with less says so here.
    if (k.smem > 48 * 1024) {
      cudaError_t e =
          cudaFuncSetAttribute(reinterpret_cast<const void *>(h.fn),
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(k.smem));
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw Error("generated kernel '" + k.symbol + "' (" + k.name +
                    ") needs " + std::to_string(k.smem) +
                    " bytes of shared memory per block, which this GPU does "
                    "not allow (" +
                    cudaGetErrorString(e) + ")");
      }
    }
    fused.push_back(h);
  }
}

/// Consecutive adamw_update instrs with the same hyper-parameters, step,
/// learning rate and loss scaling (inverse scale and finiteness flag, or
/// none) become one launch when no member reads what another writes.
void CudaSession::Impl::buildAdamGroups(ProgramState &ps) {
  const auto &instrs = ps.program.instrs;
  auto joins = [&](size_t first, size_t j) {
    const Instr &a = instrs[first], &b = instrs[j];
    return abi::is(b, abi::KernelId::AdamwUpdate) && b.fattrs == a.fattrs &&
           b.iattrs == a.iattrs && b.inputs.size() == a.inputs.size() &&
           std::equal(a.inputs.begin() + 4, a.inputs.end(),
                      b.inputs.begin() + 4);
  };
  for (size_t i = 0; i < instrs.size();) {
    if (!abi::is(instrs[i], abi::KernelId::AdamwUpdate)) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < instrs.size() && joins(i, end))
      ++end;
    std::vector<int32_t> written, read;
    for (size_t j = i; j < end; ++j) {
      written.insert(written.end(), instrs[j].outputs.begin(),
                     instrs[j].outputs.end());
      read.insert(read.end(), instrs[j].inputs.begin(), instrs[j].inputs.end());
    }
    // Each member updates its own p, m, v in place; anything else crossing
    // between members would depend on the order of the updates.
    bool independent = true;
    for (size_t j = i; j < end && independent; ++j)
      for (int32_t out : instrs[j].outputs) {
        int uses = 0;
        for (int32_t r : read)
          uses += r == out;
        for (int32_t w : written)
          uses += w == out;
        const auto &own = instrs[j].inputs;
        bool ownInput = std::find(own.begin(), own.end(), out) != own.end();
        if (uses != (ownInput ? 2 : 1))
          independent = false;
      }
    if (end - i >= 2 && independent) {
      AdamGroup g;
      for (size_t j = i; j < end; ++j) {
        g.members.push_back(j);
        ps.group[j] = -2;
        int64_t n = ps.args[j].in[0].numel;
        for (int64_t s = 0; s < n; s += kAdamChunk)
          g.numBlocks++;
      }
      std::vector<AdamBlock> blocks;
      for (size_t e = 0; e < g.members.size(); ++e) {
        int64_t n = ps.args[g.members[e]].in[0].numel;
        for (int64_t s = 0; s < n; s += kAdamChunk)
          blocks.push_back({static_cast<int>(e), s});
      }
      size_t eb = g.members.size() * sizeof(AdamEntry);
      size_t bb = std::max<size_t>(blocks.size(), 1) * sizeof(AdamBlock);
      void *pe = nullptr, *pb = nullptr;
      TCC_CUDA_CHECK(cudaMalloc(&pe, eb));
      smallAllocs.push_back(pe);
      TCC_CUDA_CHECK(cudaMalloc(&pb, bb));
      smallAllocs.push_back(pb);
      fixedBytes +=
          alignUp(static_cast<int64_t>(eb)) + alignUp(static_cast<int64_t>(bb));
      if (!blocks.empty())
        TCC_CUDA_CHECK(cudaMemcpy(pb, blocks.data(),
                                  blocks.size() * sizeof(AdamBlock),
                                  cudaMemcpyHostToDevice));
      g.entries = static_cast<AdamEntry *>(pe);
      g.blocks = static_cast<AdamBlock *>(pb);
      ps.group[i] = static_cast<int>(ps.groups.size());
      ps.labels[i] = ps.shapeLabels[i] = "adamw_update (multi-tensor)";
      for (size_t j : g.members)
        if (j != i)
          ps.costs[i] += ps.costs[j];
      ps.groups.push_back(std::move(g));
    }
    i = end;
  }
}

CudaSession::Impl::~Impl() {
  // Nothing here may throw; errors while tearing down are ignored.
  if (stream)
    cudaStreamSynchronize(stream);
  for (auto &ps : programs) {
    for (cudaEvent_t e : ps->events)
      cudaEventDestroy(e);
    if (mode == ExecMode::Eager && stream)
      for (int32_t id : ps->temps)
        if (buffers[id])
          cudaFreeAsync(buffers[id], stream);
  }
  if (stream)
    cudaStreamSynchronize(stream);
  for (void *p : registeredHost)
    cudaHostUnregister(p);
  gemm.reset();
  buckets.reset();
  for (auto &ps : programs)
    ps->convs.clear();
  cudnn.reset();
  if (library)
    cudaLibraryUnload(library);
  for (void *p : smallAllocs)
    cudaFree(p);
  if (nonFiniteDevice)
    cudaFree(nonFiniteDevice);
  if (scratch)
    cudaFree(scratch);
  if (errWords)
    cudaFree(errWords);
  if (block)
    cudaFree(block);
  if (pool)
    cudaMemPoolDestroy(pool);
  if (stream)
    cudaStreamDestroy(stream);
  (void)cudaGetLastError();
}

} // namespace tcc::rt::cuda
