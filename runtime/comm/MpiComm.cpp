//===- MpiComm.cpp - The communicator of a run launched by mpirun ---------===//
//
// libtcc_comm_mpi.so: the only code of tcc that links MPI. communicator()
// (runtime/core/Comm.cpp) loads it when the process is one of several
// ranks and calls tcc_comm_mpi_create().
//
// Threads: MPI is initialized at MPI_THREAD_SERIALIZED. Two threads call
// MPI (the caller's, for the blocking collectives, and the communicator's
// own, for the buckets: gradient means, and the reduce-scatters and
// all-gathers of sharded optimizer state), but never at once: a blocking
// collective first waits until every started bucket is reduced, and one mutex
// guards every MPI call besides. MULTIPLE would make Open MPI lock on every
// call for a concurrency this code never uses.
//
// Exit: MPI_Finalize is a synchronization of all ranks in Open MPI, so a
// rank that leaves with an error while the others wait in a collective
// would hang the run there. The exit handler is registered with glibc's
// on_exit(), which passes the exit status: status 0 finalizes, any other
// status aborts every rank (MPI_Abort) with it, so `return 1` from main
// after printing an error ends the run as abortAll(1) does.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/core/Comm.h"
#include "runtime/core/CommModule.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace tcc::rt {
namespace {

/// Values per MPI call: counts are ints, and messages far below 2^31 bytes
/// keep clear of the large-message limits some transports have.
constexpr int64_t kMaxValuesPerCall = int64_t(1) << 28;

MPI_Datatype mpiType(CommDType t) {
  switch (t) {
  case CommDType::F32:
    return MPI_FLOAT;
  case CommDType::F64:
    return MPI_DOUBLE;
  case CommDType::I64:
    return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}
size_t typeSize(CommDType t) { return t == CommDType::F32 ? 4 : 8; }

MPI_Op mpiOp(CommOp op) {
  switch (op) {
  case CommOp::Sum:
    return MPI_SUM;
  case CommOp::Max:
    return MPI_MAX;
  case CommOp::Min:
    return MPI_MIN;
  }
  return MPI_OP_NULL;
}

/// 16M floats (64 MB) at most, unless TCC_COMM_STAGING_VALUES says
/// otherwise (the tests make the pieces small).
int64_t stagingValuesFromEnv() {
  int64_t v = int64_t(1) << 24;
  if (const char *e = std::getenv("TCC_COMM_STAGING_VALUES")) {
    long long x = std::atoll(e);
    if (x > 0)
      v = std::min<int64_t>(x, kMaxValuesPerCall);
  }
  return v;
}

std::string mpiErrorString(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(rc);
  return std::string(text, len);
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, bool ownsMpi)
      : comm_(comm), ownsMpi_(ownsMpi) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL,
                              &local),
          "MPI_Comm_split_type");
    MPI_Comm_rank(local, &localRank_);
    MPI_Comm_size(local, &localSize_);
    MPI_Comm_free(&local);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    // "Open MPI v4.1.4, package: Debian OpenMPI, ident: ..." -> its name.
    std::string lib(version, len);
    lib = lib.substr(0, lib.find_first_of(",\n"));
    description_ = "MPI rank " + std::to_string(rank_) + " of " +
                   std::to_string(size_) + " (" + lib + ")";
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  std::string description() const override { return description_; }

  void allReduce(void *buf, int64_t count, CommDType t, CommOp op) override {
    checkCount("allReduce", count);
    drain();
    std::lock_guard<std::mutex> lock(mpiMutex_);
    char *p = static_cast<char *>(buf);
    for (int64_t at = 0; at < count; at += kMaxValuesPerCall) {
      int n = static_cast<int>(std::min(kMaxValuesPerCall, count - at));
      check(MPI_Allreduce(MPI_IN_PLACE, p + at * typeSize(t), n, mpiType(t),
                          mpiOp(op), comm_),
            "MPI_Allreduce");
    }
  }

  void broadcast(void *buf, int64_t bytes, int root) override {
    checkCount("broadcast", bytes);
    if (root < 0 || root >= size_)
      throw Error("broadcast from rank " + std::to_string(root) + " of " +
                  std::to_string(size_) + " ranks");
    drain();
    std::lock_guard<std::mutex> lock(mpiMutex_);
    char *p = static_cast<char *>(buf);
    for (int64_t at = 0; at < bytes; at += kMaxValuesPerCall) {
      int n = static_cast<int>(std::min(kMaxValuesPerCall, bytes - at));
      check(MPI_Bcast(p + at, n, MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  }

  void allGather(const void *send, void *recv, int64_t bytes) override {
    checkCount("allGather", bytes);
    checkFits("allGather", bytes);
    drain();
    std::lock_guard<std::mutex> lock(mpiMutex_);
    // This rank's share already in place: MPI wants that said.
    const void *from =
        send == static_cast<char *>(recv) + rank_ * bytes ? MPI_IN_PLACE : send;
    check(MPI_Allgather(from, static_cast<int>(bytes), MPI_BYTE, recv,
                        static_cast<int>(bytes), MPI_BYTE, comm_),
          "MPI_Allgather");
  }

  void reduceScatter(const void *send, void *recv, int64_t count,
                     CommDType t) override {
    checkCount("reduceScatter", count);
    checkFits("reduceScatter", count);
    drain();
    std::lock_guard<std::mutex> lock(mpiMutex_);
    const void *from = send == recv ? MPI_IN_PLACE : send;
    check(MPI_Reduce_scatter_block(from, recv, static_cast<int>(count),
                                   mpiType(t), MPI_SUM, comm_),
          "MPI_Reduce_scatter_block");
  }

  void barrier() override {
    drain();
    std::lock_guard<std::mutex> lock(mpiMutex_);
    check(MPI_Barrier(comm_), "MPI_Barrier");
  }

  void startMeanBucket(int64_t bucket,
                       const std::vector<CommBuffer> &buffers) override {
    checkBucketBuffers(bucket, buffers);
    enqueue("startMeanBucket", Job{Job::Mean, bucket, buffers, {}});
  }

  void startMeanScatterBucket(int64_t bucket, std::vector<float> send,
                              const std::vector<CommBuffer> &out) override {
    const char *what = "startMeanScatterBucket";
    int64_t piece = pieceOf(what, bucket, send.size());
    checkUnpackBuffers(what, bucket, out, piece, false);
    enqueue(what, Job{Job::MeanScatter, bucket, out, std::move(send)});
  }

  void startGatherBucket(int64_t bucket, std::vector<float> send,
                         const std::vector<CommBuffer> &out) override {
    const char *what = "startGatherBucket";
    int64_t n = int64_t(send.size());
    checkFits(what, n * size_);
    checkUnpackBuffers(what, bucket, out, n * size_, true);
    enqueue(what, Job{Job::Gather, bucket, out, std::move(send)});
  }

  void waitBucket(int64_t bucket) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = buckets_.find(bucket);
    if (it == buckets_.end())
      throw Error("waitBucket(" + std::to_string(bucket) + "): bucket " +
                  std::to_string(bucket) +
                  " was not started (or was waited for already)");
    doneCv_.wait(lock, [&] { return it->second.done; });
    std::string error = std::move(it->second.error);
    buckets_.erase(it);
    if (!error.empty())
      throw Error(error);
  }

  [[noreturn]] void abortAll(int code) override {
    aborted_ = true;
    sayAborting(code);
    // Not under mpiMutex_: the communicator's thread may be inside a
    // collective that will never finish, which is why we are here.
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code); // MPI_Abort returned (it should not)
  }

  /// At exit, with its status (see the file's comment).
  void finish(int status) {
    if (aborted_.exchange(true))
      return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || !ownsMpi_)
      return;
    if (status != 0) {
      sayAborting(status);
      MPI_Abort(MPI_COMM_WORLD, status);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    workCv_.notify_all();
    if (thread_.joinable())
      thread_.join();
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

private:
  struct Job {
    enum Kind { Mean, MeanScatter, Gather } kind;
    int64_t bucket;
    std::vector<CommBuffer> buffers; // Mean: in place; else the outputs
    std::vector<float> send;         // MeanScatter, Gather: packed input
  };

  void enqueue(const char *what, Job job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!buckets_.emplace(job.bucket, BucketState{}).second)
      throw Error(std::string(what) + "(" + std::to_string(job.bucket) +
                  "): bucket " + std::to_string(job.bucket) +
                  " was started before and not waited for");
    queue_.push_back(std::move(job));
    if (!thread_.joinable())
      thread_ = std::thread([this] { serve(); });
    workCv_.notify_one();
  }

  /// Values of one rank's piece of a reduce-scatter's `n` values.
  int64_t pieceOf(const char *what, int64_t bucket, size_t n) const {
    if (n % size_t(size_))
      throw Error(std::string(what) + "(" + std::to_string(bucket) +
                  "): " + std::to_string(n) + " values are not " +
                  std::to_string(size_) + " pieces of equal length");
    int64_t piece = int64_t(n / size_t(size_));
    checkFits(what, piece);
    return piece;
  }
  struct BucketState {
    bool done = false;
    std::string error; // empty: averaged
  };

  /// The communicator's thread: the started buckets, one at a time, in
  /// start order. At exit the buckets not yet begun are dropped: their
  /// buffers may be gone with the session, and every rank drops the same.
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      workCv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_)
        return;
      Job job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      std::string error;
      try {
        if (job.kind == Job::Mean)
          reduceMean(job);
        else if (job.kind == Job::MeanScatter)
          reduceScatterMean(job);
        else
          gather(job);
      } catch (const std::exception &e) {
        error = e.what();
      }
      lock.lock();
      busy_ = false;
      BucketState &s = buckets_[job.bucket];
      s.done = true;
      s.error = std::move(error);
      doneCv_.notify_all();
    }
  }

  /// Averages the bucket's buffers in place: a sum over the ranks, then a
  /// scale by 1/size (the same rounding on every rank, so the ranks'
  /// weights stay equal bit for bit). Several buffers are packed into one
  /// staging buffer and reduced by one MPI_Allreduce: for 50 buffers of
  /// 1K-1M floats on 2 ranks that took 33-45 ms against 73-124 ms for one
  /// call per buffer (docs/ARCHITECTURE.md, "Data-parallel runs").
  void reduceMean(const Job &job) {
    std::lock_guard<std::mutex> lock(mpiMutex_);
    const float scale = 1.0f / static_cast<float>(size_);
    const std::string what =
        "MPI_Allreduce of gradient bucket " + std::to_string(job.bucket);
    const std::vector<CommBuffer> &bufs = job.buffers;
    if (bufs.size() == 1) { // already contiguous: no copies
      const CommBuffer &b = bufs[0];
      for (int64_t at = 0; at < b.count; at += kMaxValuesPerCall) {
        int n = static_cast<int>(std::min(kMaxValuesPerCall, b.count - at));
        check(MPI_Allreduce(MPI_IN_PLACE, b.data + at, n, MPI_FLOAT, MPI_SUM,
                            comm_),
              what);
        for (int i = 0; i < n; ++i)
          b.data[at + i] *= scale;
      }
      return;
    }
    int64_t total = 0;
    for (const CommBuffer &b : bufs)
      total += b.count;
    const int64_t cap = std::min(total, stagingValues_);
    if (static_cast<int64_t>(staging_.size()) < cap)
      staging_.resize(cap); // kept: the next step's buckets are the same
    // Pieces of at most `cap` values, each the buffers' values from a
    // position (buffer k, offset off) on, packed, reduced, unpacked.
    size_t k = 0;
    int64_t off = 0;
    while (k < bufs.size()) {
      const size_t k0 = k;
      const int64_t off0 = off;
      int64_t n = 0;
      while (k < bufs.size() && n < cap) {
        int64_t take = std::min(bufs[k].count - off, cap - n);
        if (take) // an empty buffer's data may be null
          std::memcpy(staging_.data() + n, bufs[k].data + off,
                      static_cast<size_t>(take) * sizeof(float));
        n += take;
        off += take;
        if (off == bufs[k].count) {
          ++k;
          off = 0;
        }
      }
      if (n == 0)
        break; // only empty buffers were left
      check(MPI_Allreduce(MPI_IN_PLACE, staging_.data(), static_cast<int>(n),
                          MPI_FLOAT, MPI_SUM, comm_),
            what);
      size_t j = k0;
      int64_t o = off0;
      for (int64_t m = 0; m < n;) {
        int64_t take = std::min(bufs[j].count - o, n - m);
        const float *from = staging_.data() + m;
        float *to = bufs[j].data + o;
        for (int64_t i = 0; i < take; ++i)
          to[i] = from[i] * scale;
        m += take;
        o += take;
        if (o == bufs[j].count) {
          ++j;
          o = 0;
        }
      }
    }
  }

  /// A reduce-scatter bucket: one MPI_Reduce_scatter_block of the packed
  /// pieces, this rank's sum times 1/size (startMeanBucket's rounding) into
  /// the outputs. The caller packed `send`, so its gradients were free to be
  /// reused as soon as the bucket started.
  void reduceScatterMean(Job &job) {
    int64_t piece = int64_t(job.send.size()) / size_;
    std::vector<float> recv(static_cast<size_t>(piece));
    {
      std::lock_guard<std::mutex> lock(mpiMutex_);
      check(MPI_Reduce_scatter_block(job.send.data(), recv.data(),
                                     static_cast<int>(piece), MPI_FLOAT,
                                     MPI_SUM, comm_),
            "MPI_Reduce_scatter_block of gradient bucket " +
                std::to_string(job.bucket));
    }
    job.send = {};
    unpackBuffers(recv.data(), 1.0f / static_cast<float>(size_), job.buffers);
  }

  /// An all-gather bucket: one MPI_Allgather of every rank's packed shards,
  /// unpacked into the outputs (the whole parameters).
  void gather(Job &job) {
    int64_t n = int64_t(job.send.size());
    std::vector<float> recv(static_cast<size_t>(n * size_));
    {
      std::lock_guard<std::mutex> lock(mpiMutex_);
      check(MPI_Allgather(job.send.data(), static_cast<int>(n), MPI_FLOAT,
                          recv.data(), static_cast<int>(n), MPI_FLOAT, comm_),
            "MPI_Allgather of parameter bucket " + std::to_string(job.bucket));
    }
    job.send = {};
    unpackBuffers(recv.data(), 1.0f, job.buffers);
  }

  /// Waits until every started bucket is reduced (the order rule of
  /// Comm.h: a blocking collective comes after the buckets before it).
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    doneCv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

  /// Open MPI's own "MPI_ABORT was invoked on rank N" is sometimes lost
  /// when the job is torn down before mpirun receives it, so the rank
  /// says it first.
  void sayAborting(int code) const {
    std::fflush(nullptr);
    std::fprintf(stderr,
                 "tcc: MPI rank %d of %d failed (exit status %d): ending "
                 "the run on every rank\n",
                 rank_, size_, code);
    std::fflush(stderr);
  }

  void check(int rc, const std::string &what) const {
    if (rc != MPI_SUCCESS)
      throw Error(what + " failed on MPI rank " + std::to_string(rank_) + ": " +
                  mpiErrorString(rc));
  }
  static void checkCount(const char *what, int64_t n) {
    if (n < 0)
      throw Error(std::string(what) + " of a negative count (" +
                  std::to_string(n) + ")");
  }
  static void checkFits(const char *what, int64_t n) {
    if (n > INT_MAX)
      throw Error(std::string(what) + " of " + std::to_string(n) +
                  " values: MPI takes at most " + std::to_string(INT_MAX));
  }

  MPI_Comm comm_;
  bool ownsMpi_;
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  std::string description_;
  std::atomic<bool> aborted_{false};

  std::mutex mpiMutex_; // held around every MPI call (SERIALIZED)

  std::mutex mutex_; // guards what follows
  std::condition_variable workCv_, doneCv_;
  std::deque<Job> queue_;
  std::map<int64_t, BucketState> buckets_; // started, not yet waited for
  bool busy_ = false;                      // a bucket is being reduced
  bool stop_ = false;
  std::thread thread_; // started with the first bucket
  // The communicator thread's: where a bucket's buffers are packed, and
  // the most values it holds (TCC_COMM_STAGING_VALUES, for tests).
  std::vector<float> staging_;
  int64_t stagingValues_ = stagingValuesFromEnv();
};

void finishAtExit(int status, void *comm) {
  static_cast<MpiCommunicator *>(comm)->finish(status);
}

} // namespace
} // namespace tcc::rt

extern "C" tcc::rt::Communicator *tcc_comm_mpi_create(std::string *error) {
  using namespace tcc::rt;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // The ranks of a CPU run share the cores with their kernels' threads (and
    // the communicator's thread with its own rank's): a wait in MPI yields
    // the core instead of spinning on it. The user's setting wins.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    int provided = 0;
    int rc =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      *error = "MPI_Init_thread failed: " + mpiErrorString(rc);
      return nullptr;
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      *error = "this MPI runs threads at level " + std::to_string(provided) +
               " only; tcc needs MPI_THREAD_SERIALIZED";
      MPI_Abort(MPI_COMM_WORLD, 1);
      return nullptr;
    }
  }
  // Errors come back as return codes, which become tcc errors naming the
  // collective; a communicator of our own keeps tcc's collectives apart
  // from any other MPI user's in the process.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm comm;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (rc != MPI_SUCCESS) {
    *error = "MPI_Comm_dup failed: " + mpiErrorString(rc);
    return nullptr;
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  try {
    auto *c = new MpiCommunicator(comm, !initialized);
    on_exit(finishAtExit, c);
    return c;
  } catch (const std::exception &e) {
    *error = e.what();
    return nullptr;
  }
}
