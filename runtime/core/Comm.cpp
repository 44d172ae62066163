//===- Comm.cpp - The launcher's environment and the communicators --------===//
//
// Rank and size come from the variables the launcher sets in each process
// it starts, so a process knows before (and without) loading MPI whether it
// is one of several ranks. The single-process communicator lives here; MPI's
// is loaded from its module only when a run is launched as ranks.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Comm.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/Backend.h"
#include "runtime/core/CommModule.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <set>
#include <sys/stat.h>

namespace tcc::rt {

namespace {

/// The first of `names` that is set: its name and value (null when none).
struct EnvVar {
  const char *name = nullptr;
  const char *value = nullptr;
};
EnvVar firstSet(std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (const char *v = std::getenv(n); v && *v)
      return {n, v};
  return {};
}

/// A non-negative decimal; Error naming the variable otherwise (a launcher
/// that sets garbage must not make N processes each train alone).
int parseCount(const EnvVar &v) {
  errno = 0;
  char *end = nullptr;
  long x = std::strtol(v.value, &end, 10);
  if (errno || end == v.value || *end || x < 0 || x > INT_MAX)
    throw Error(std::string("the launcher's ") + v.name + "='" + v.value +
                "' is not a rank or rank count");
  return static_cast<int>(x);
}

} // namespace

LaunchInfo launchInfo() {
  // Open MPI's mpirun sets OMPI_COMM_WORLD_* (and PMIX_RANK); MPICH's and
  // Intel MPI's Hydra set PMI_RANK/PMI_SIZE and MPI_LOCALRANKID/NRANKS;
  // Slurm's srun --mpi=pmix sets PMIX_RANK and SLURM_STEP_NUM_TASKS.
  EnvVar rank = firstSet({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"});
  EnvVar size = firstSet({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (!size.name && rank.name && std::strcmp(rank.name, "PMIX_RANK") == 0)
    size = firstSet({"SLURM_STEP_NUM_TASKS"});
  LaunchInfo info;
  if (!rank.name && !size.name)
    return info;
  if (!rank.name || !size.name)
    throw Error(std::string("the launcher set ") +
                (rank.name ? rank.name : size.name) + " but no " +
                (rank.name ? "rank count (OMPI_COMM_WORLD_SIZE or PMI_SIZE)"
                           : "rank (OMPI_COMM_WORLD_RANK or PMI_RANK)"));
  info.rank = parseCount(rank);
  info.size = parseCount(size);
  if (info.size < 1 || info.rank >= info.size)
    throw Error(std::string("the launcher's rank ") + rank.name + "=" +
                rank.value + " is not below its rank count " + size.name + "=" +
                size.value);
  EnvVar localRank =
      firstSet({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"});
  EnvVar localSize =
      firstSet({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"});
  if (localRank.name && localSize.name) {
    info.localRank = parseCount(localRank);
    info.localSize = parseCount(localSize);
    if (info.localSize < 1 || info.localSize > info.size ||
        info.localRank >= info.localSize)
      throw Error(std::string("the launcher's node rank ") + localRank.name +
                  "=" + localRank.value + " of " + localSize.name + "=" +
                  localSize.value + " does not fit " + size.name + "=" +
                  size.value);
  } else {
    // Unknown placement: as if every rank were on this node, so that the
    // ranks' threads never oversubscribe the cores (the common case, one
    // node, is then exact).
    info.localRank = info.rank;
    info.localSize = info.size;
  }
  return info;
}

void checkBucketBuffers(int64_t bucket,
                        const std::vector<CommBuffer> &buffers) {
  for (const CommBuffer &b : buffers)
    if (b.count < 0 || (b.count && !b.data))
      throw Error("startMeanBucket(" + std::to_string(bucket) +
                  "): a buffer of " + std::to_string(b.count) + " values at " +
                  (b.data ? "its address" : "null"));
}

void checkUnpackBuffers(const char *what, int64_t bucket,
                        const std::vector<CommBuffer> &out, int64_t total,
                        bool dropOk) {
  int64_t sum = 0;
  for (const CommBuffer &b : out) {
    if (b.count < 0 || (b.count && !b.data && !dropOk))
      throw Error(std::string(what) + "(" + std::to_string(bucket) +
                  "): an output buffer of " + std::to_string(b.count) +
                  " values at " + (b.data ? "its address" : "null"));
    sum += b.count;
  }
  if (sum != total)
    throw Error(std::string(what) + "(" + std::to_string(bucket) +
                "): the output buffers hold " + std::to_string(sum) +
                " values, the collective gives " + std::to_string(total));
}

void unpackBuffers(const float *from, float scale,
                   const std::vector<CommBuffer> &out) {
  for (const CommBuffer &b : out) {
    if (b.data)
      for (int64_t i = 0; i < b.count; ++i)
        b.data[i] = from[i] * scale;
    from += b.count;
  }
}

bool launchedAsRanks() { return launchInfo().size > 1; }

namespace {

/// One process: every collective leaves the data as it is (the sum, max or
/// average over one rank) or copies it to where it is asked for.
class SingleProcessCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  std::string description() const override { return "single process"; }

  void allReduce(void *, int64_t count, CommDType, CommOp) override {
    checkCount("allReduce", count);
  }
  void broadcast(void *, int64_t bytes, int root) override {
    checkCount("broadcast", bytes);
    if (root != 0)
      throw Error("broadcast from rank " + std::to_string(root) +
                  ": a single process has rank 0 only");
  }
  void allGather(const void *send, void *recv, int64_t bytes) override {
    checkCount("allGather", bytes);
    if (send != recv && bytes)
      std::memmove(recv, send, static_cast<size_t>(bytes));
  }
  void reduceScatter(const void *send, void *recv, int64_t count,
                     CommDType t) override {
    checkCount("reduceScatter", count);
    size_t elem = t == CommDType::F32 ? 4 : 8;
    if (send != recv && count)
      std::memmove(recv, send, static_cast<size_t>(count) * elem);
  }
  void barrier() override {}

  void startMeanBucket(int64_t bucket,
                       const std::vector<CommBuffer> &buffers) override {
    checkBucketBuffers(bucket, buffers);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_.insert(bucket).second)
      throw Error("startMeanBucket(" + std::to_string(bucket) + "): bucket " +
                  std::to_string(bucket) +
                  " was started before and not waited for");
  }
  // One rank: its piece is the whole `send`, the mean over one rank the
  // values themselves (times 1, as the MPI path rounds), done at once.
  void startMeanScatterBucket(int64_t bucket, std::vector<float> send,
                              const std::vector<CommBuffer> &out) override {
    checkUnpackBuffers("startMeanScatterBucket", bucket, out,
                       int64_t(send.size()), false);
    start("startMeanScatterBucket", bucket);
    unpackBuffers(send.data(), 1.0f, out);
  }
  void startGatherBucket(int64_t bucket, std::vector<float> send,
                         const std::vector<CommBuffer> &out) override {
    checkUnpackBuffers("startGatherBucket", bucket, out, int64_t(send.size()),
                       true);
    start("startGatherBucket", bucket);
    unpackBuffers(send.data(), 1.0f, out);
  }
  void waitBucket(int64_t bucket) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_.erase(bucket))
      throw Error("waitBucket(" + std::to_string(bucket) + "): bucket " +
                  std::to_string(bucket) +
                  " was not started (or was waited for already)");
  }

  [[noreturn]] void abortAll(int code) override {
    std::fflush(nullptr);
    _exit(code);
  }

private:
  void start(const char *what, int64_t bucket) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_.insert(bucket).second)
      throw Error(std::string(what) + "(" + std::to_string(bucket) +
                  "): bucket " + std::to_string(bucket) +
                  " was started before and not waited for");
  }
  static void checkCount(const char *what, int64_t n) {
    if (n < 0)
      throw Error(std::string(what) + " of a negative count (" +
                  std::to_string(n) + ")");
  }

  std::mutex mutex_;
  std::set<int64_t> started_;
};

} // namespace

Communicator *loadMpiCommunicator(const std::string &directory) {
  std::string path = directory + "/" + kCommMpiModule;
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw Error("this tcc was built without MPI (no " + path +
                "): install Debian's libopenmpi-dev and rebuild; or run "
                "without mpirun");
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  void *entry = h ? dlsym(h, "tcc_comm_mpi_create") : nullptr;
  if (!entry) {
    const char *why = dlerror();
    throw Error("cannot load MPI's communicator (" + path +
                "): " + (why ? why : "unknown error") +
                "; is Debian's Open MPI (libopenmpi3) installed?");
  }
  std::string error;
  Communicator *c =
      reinterpret_cast<decltype(&tcc_comm_mpi_create)>(entry)(&error);
  if (!c)
    throw Error("cannot start MPI: " + error);
  return c;
}

namespace {

Communicator *makeCommunicator() {
  if (launchedAsRanks())
    return loadMpiCommunicator(backends::moduleDirectory());
  return new SingleProcessCommunicator;
}

} // namespace

Communicator &communicator() {
  // Never destroyed: MPI's finalizes at exit on its own terms (its module
  // says how), and a thread still using it at exit must not find it gone.
  // A failed first call throws, and the next one tries again.
  static Communicator *c = makeCommunicator();
  return *c;
}

} // namespace tcc::rt
