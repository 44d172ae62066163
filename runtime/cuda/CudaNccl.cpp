//===- CudaNccl.cpp - NCCL, loaded when a run has several ranks -----------===//
//
// nccl.h gives the types and signatures; the functions come from dlsym, so
// the backend's module has no libnccl dependency and a one-rank run never
// maps it. NCCL's communicator is blocking: a peer that dies makes the
// others' reductions spin on the GPU, and it is the launcher that ends them
// (the MPI module aborts the whole job when a rank exits with an error, and
// mpirun kills the job when a rank is killed), not a timeout here.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaNccl.h"

#include "runtime/core/Comm.h"
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaSessionInternal.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <type_traits>

#ifndef TCC_CUDA_HAS_NCCL
#define TCC_CUDA_HAS_NCCL 0
#endif
#if TCC_CUDA_HAS_NCCL
#include <nccl.h>
#endif

namespace tcc::rt::cuda {

bool ncclBuilt() { return TCC_CUDA_HAS_NCCL != 0; }

NcclUse ncclUseFromEnv() {
  const char *v = std::getenv("TCC_NCCL");
  if (!v || !*v || std::strcmp(v, "auto") == 0)
    return NcclUse::Auto;
  if (std::strcmp(v, "force") == 0)
    return NcclUse::Force;
  throw Error(std::string("TCC_NCCL='") + v +
              "': expected 'auto' (NCCL when the run has several ranks) or "
              "'force' (NCCL even with one rank)");
}

bool ncclWanted() {
  return launchInfo().size > 1 || ncclUseFromEnv() == NcclUse::Force;
}

std::vector<std::string> ncclCandidates() {
  if (const char *p = std::getenv("TCC_NCCL_LIBRARY"); p && *p)
    return {p};
  std::vector<std::string> c = {"libnccl.so.2"};
#ifdef TCC_NCCL_BUILD_LIBRARY
  c.push_back(TCC_NCCL_BUILD_LIBRARY);
#endif
  return c;
}

std::vector<int64_t> checkBucketPairs(const std::vector<const Program *> &ps) {
  std::set<int64_t> all;
  for (const Program *p : ps) {
    std::map<int64_t, size_t> open; // bucket -> its all_reduce
    std::set<int64_t> closed;
    auto where = [&](size_t i) {
      return "program '" + p->name + "' instr " + std::to_string(i) + " (" +
             p->instrs[i].kernel + "): bucket ";
    };
    for (size_t i = 0; i < p->instrs.size(); ++i) {
      const Instr &in = p->instrs[i];
      if (abi::is(in, abi::KernelId::AllReduce)) {
        int64_t b = abi::attrs<abi::KernelId::AllReduce>(in).bucket;
        if (open.count(b) || closed.count(b))
          throw Error(where(i) + std::to_string(b) +
                      " is started a second time in one run");
        open[b] = i;
      } else if (abi::is(in, abi::KernelId::AllReduceWait)) {
        int64_t b = abi::attrs<abi::KernelId::AllReduceWait>(in).bucket;
        if (!open.erase(b))
          throw Error(where(i) + std::to_string(b) +
                      " is waited for without being started before");
        closed.insert(b);
      }
    }
    if (!open.empty())
      throw Error(where(open.begin()->second) +
                  std::to_string(open.begin()->first) +
                  " is never waited for in its program");
    all.insert(closed.begin(), closed.end());
  }
  return {all.begin(), all.end()};
}

#if TCC_CUDA_HAS_NCCL

namespace {

/// The functions used here, from the loaded library.
struct NcclApi {
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclGetLastError) getLastError = nullptr; // optional (>= 2.13)
  int version = 0;
  std::string path;
};

std::mutex apiMutex;
NcclApi *loadedApi = nullptr; // never unloaded

std::string versionText(int code) {
  // >= 2.9: major * 10000 + minor * 100 + patch; before: * 1000, * 100.
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

/// Opens `path` and resolves every function, or says why not in `why`.
void *openNccl(const std::string &path, NcclApi &api, std::string &why) {
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    why = e ? e : "dlopen failed";
    return nullptr;
  }
  bool ok = true;
  auto get = [&](auto &fn, const char *name, bool required) {
    fn =
        reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && required && ok) {
      why = std::string("no function ") + name;
      ok = false;
    }
  };
  get(api.getVersion, "ncclGetVersion", true);
  get(api.getUniqueId, "ncclGetUniqueId", true);
  get(api.commInitRank, "ncclCommInitRank", true);
  get(api.allReduce, "ncclAllReduce", true);
  get(api.groupStart, "ncclGroupStart", true);
  get(api.groupEnd, "ncclGroupEnd", true);
  get(api.getErrorString, "ncclGetErrorString", true);
  get(api.getLastError, "ncclGetLastError", false);
  if (ok && api.getVersion(&api.version) != ncclSuccess) {
    why = "ncclGetVersion failed";
    ok = false;
  }
  // ncclAvg (the mean in one reduction) exists from 2.10; CUDA graph
  // capture of NCCL's launches from 2.9.
  if (ok && api.version < 21000) {
    why = "NCCL " + versionText(api.version) +
          " is too old: the CUDA backend needs 2.10 or newer";
    ok = false;
  }
  if (!ok) {
    dlclose(h);
    return nullptr;
  }
  api.path = path;
  return h;
}

const NcclApi &ncclApi() {
  {
    std::lock_guard<std::mutex> lock(apiMutex);
    if (loadedApi)
      return *loadedApi;
  }
  loadNcclFrom(ncclCandidates());
  std::lock_guard<std::mutex> lock(apiMutex);
  return *loadedApi;
}

} // namespace

int loadNcclFrom(const std::vector<std::string> &candidates) {
  std::string tried;
  for (const std::string &path : candidates) {
    NcclApi api;
    std::string why;
    if (void *h = openNccl(path, api, why)) {
      std::lock_guard<std::mutex> lock(apiMutex);
      if (!loadedApi)
        loadedApi = new NcclApi(api);
      else
        dlclose(h); // the first one loaded stays the one used
      return api.version;
    }
    tried += (tried.empty() ? "" : "; ") + path + ": " + why;
  }
  bool explicitPath =
      std::getenv("TCC_NCCL_LIBRARY") && *std::getenv("TCC_NCCL_LIBRARY");
  throw Error("cannot load NCCL, which the CUDA backend averages the "
              "gradients of several ranks with (tried " +
              tried + "): " +
              (explicitPath ? "TCC_NCCL_LIBRARY names the library to use"
                            : "NCCL ships with the CUDA toolkit (its lib "
                              "folder) and as the libnccl2 package; put "
                              "its folder on LD_LIBRARY_PATH or set "
                              "TCC_NCCL_LIBRARY to libnccl.so.2's path"));
}

std::string ncclDescription() {
  std::lock_guard<std::mutex> lock(apiMutex);
  if (!loadedApi)
    return "";
  return "NCCL " + versionText(loadedApi->version) + " (" + loadedApi->path +
         ")";
}

namespace {

struct NcclComm {
  const NcclApi *api = nullptr;
  ncclComm_t comm = nullptr;
  int rank = 0, size = 1, device = 0;

  /// "ncclAllReduce failed: unhandled cuda error (...; the last error)".
  std::string failure(const char *call, ncclResult_t r) const {
    std::string s = std::string(call) + " failed: " + api->getErrorString(r);
    if (api->getLastError && comm)
      if (const char *last = api->getLastError(comm); last && *last)
        s += std::string(" (") + last + ")";
    return s + "; NCCL_DEBUG=WARN prints NCCL's own account";
  }
};

/// The process's communicator, made by the first session that needs it and
/// never destroyed (like communicator()): a process leaves a data-parallel
/// run only at its end or by the launcher's abort, and a destroy at exit
/// could wait for peers' work that will never come.
NcclComm &processComm() {
  static std::mutex m;
  static NcclComm *comm = nullptr;
  std::lock_guard<std::mutex> lock(m);
  if (comm)
    return *comm;
  const NcclApi &api = ncclApi();
  Communicator &c = communicator();
  auto made = std::make_unique<NcclComm>();
  made->api = &api;
  made->rank = c.rank();
  made->size = c.size();
  TCC_CUDA_CHECK(cudaGetDevice(&made->device));
  // Rank 0 fails alone here when it cannot make the id; the others then
  // wait in broadcast until its error ends the run through the launcher.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (made->rank == 0)
    if (ncclResult_t r = api.getUniqueId(&id); r != ncclSuccess)
      throw Error(made->failure("ncclGetUniqueId", r));
  c.broadcast(&id, sizeof id, 0);
  if (ncclResult_t r =
          api.commInitRank(&made->comm, made->size, id, made->rank);
      r != ncclSuccess)
    throw Error("joining NCCL as rank " + std::to_string(made->rank) + " of " +
                std::to_string(made->size) + " on GPU " +
                std::to_string(made->device) + ": " +
                made->failure("ncclCommInitRank", r) +
                (r == ncclInvalidUsage
                     ? " (each rank needs a GPU of its own: more ranks on "
                       "this node than GPUs?)"
                     : ""));
  comm = made.release();
  return *comm;
}

class NcclBuckets final : public CudaBuckets {
public:
  explicit NcclBuckets(const std::vector<int64_t> &ids);
  ~NcclBuckets() override;
  void start(int64_t bucket, const std::vector<TensorView> &buffers,
             cudaStream_t compute) override;
  void wait(int64_t bucket, cudaStream_t compute) override;

private:
  struct Bucket {
    cudaEvent_t ready = nullptr, done = nullptr;
  };
  Bucket &find(int64_t bucket, const char *kernel);

  NcclComm *comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::map<int64_t, Bucket> buckets_;
};

NcclBuckets::NcclBuckets(const std::vector<int64_t> &ids) {
  comm_ = &processComm();
  // The reductions go first when the GPU is full: the backward's kernels
  // fill the gaps, and the step's tail waits less on the last buckets.
  int least = 0, greatest = 0;
  TCC_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  TCC_CUDA_CHECK(
      cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  for (int64_t id : ids) {
    Bucket &b = buckets_[id];
    TCC_CUDA_CHECK(cudaEventCreateWithFlags(&b.ready, cudaEventDisableTiming));
    TCC_CUDA_CHECK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
  }
}

NcclBuckets::~NcclBuckets() {
  if (stream_)
    cudaStreamSynchronize(stream_);
  for (auto &[id, b] : buckets_) {
    if (b.ready)
      cudaEventDestroy(b.ready);
    if (b.done)
      cudaEventDestroy(b.done);
  }
  if (stream_)
    cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

NcclBuckets::Bucket &NcclBuckets::find(int64_t bucket, const char *kernel) {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end())
    throw Error(std::string(kernel) + ": bucket " + std::to_string(bucket) +
                " is not one of the session's");
  return it->second;
}

void NcclBuckets::start(int64_t bucket, const std::vector<TensorView> &buffers,
                        cudaStream_t compute) {
  Bucket &b = find(bucket, "all_reduce");
  const NcclApi &api = *comm_->api;
  auto fail = [&](const char *call, ncclResult_t r) {
    return Error("all_reduce of bucket " + std::to_string(bucket) + " (" +
                 std::to_string(buffers.size()) + " buffers, rank " +
                 std::to_string(comm_->rank) + " of " +
                 std::to_string(comm_->size) + "): " + comm_->failure(call, r));
  };
  // Fork: the communication stream starts once the gradients are made.
  TCC_CUDA_CHECK(cudaEventRecord(b.ready, compute));
  TCC_CUDA_CHECK(cudaStreamWaitEvent(stream_, b.ready, 0));
  // One group: NCCL launches the bucket's buffers as one operation.
  if (ncclResult_t r = api.groupStart(); r != ncclSuccess)
    throw fail("ncclGroupStart", r);
  ncclResult_t first = ncclSuccess;
  const char *firstCall = nullptr;
  for (const TensorView &g : buffers) {
    if (g.numel == 0)
      continue;
    ncclResult_t r = api.allReduce(g.data, g.data, static_cast<size_t>(g.numel),
                                   ncclFloat, ncclAvg, comm_->comm, stream_);
    if (r != ncclSuccess && first == ncclSuccess) {
      first = r;
      firstCall = "ncclAllReduce";
    }
  }
  // The group is closed even after a failed call: NCCL's group state is
  // per thread and would swallow the next bucket otherwise.
  ncclResult_t end = api.groupEnd();
  if (first != ncclSuccess)
    throw fail(firstCall, first);
  if (end != ncclSuccess)
    throw fail("ncclGroupEnd", end);
  TCC_CUDA_CHECK(cudaEventRecord(b.done, stream_));
}

void NcclBuckets::wait(int64_t bucket, cudaStream_t compute) {
  // Join: the compute stream's next kernels read the averaged gradients.
  TCC_CUDA_CHECK(
      cudaStreamWaitEvent(compute, find(bucket, "all_reduce_wait").done, 0));
}

} // namespace

std::unique_ptr<CudaBuckets> makeNcclBuckets(const std::vector<int64_t> &ids) {
  return std::make_unique<NcclBuckets>(ids);
}

#else // !TCC_CUDA_HAS_NCCL

int loadNcclFrom(const std::vector<std::string> &) {
  throw Error("this build of the CUDA backend has no NCCL (nccl.h was not "
              "found in the CUDA toolkit at configure time)");
}

std::string ncclDescription() { return ""; }

std::unique_ptr<CudaBuckets> makeNcclBuckets(const std::vector<int64_t> &) {
  throw Error("this build of the CUDA backend has no NCCL (nccl.h was not "
              "found in the CUDA toolkit at configure time), so it cannot "
              "average gradients across ranks on the GPU: run the ranks "
              "with --device cpu, or rebuild with NCCL");
}

#endif // TCC_CUDA_HAS_NCCL

void CudaSession::Impl::setUpBuckets() {
  std::vector<const Program *> list;
  bool any = false;
  for (const auto &ps : programs) {
    list.push_back(&ps->program);
    for (const Instr &in : ps->program.instrs)
      any = any || abi::is(in, abi::KernelId::AllReduce) ||
            abi::is(in, abi::KernelId::AllReduceWait);
  }
  if (!any)
    return;
  // Checked on one rank too: a step whose bucket is never joined could
  // not be captured, and would run its next step's reads unordered.
  std::vector<int64_t> ids = checkBucketPairs(list);
  if (!ncclWanted())
    return;
  buckets = makeNcclBuckets(ids);
  for (auto &ps : programs)
    for (CudaArgs &args : ps->args)
      if (abi::is(args.instr, abi::KernelId::AllReduce) ||
          abi::is(args.instr, abi::KernelId::AllReduceWait))
        args.buckets = buckets.get();
}

} // namespace tcc::rt::cuda
