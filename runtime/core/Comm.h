//===- Comm.h - The processes of a data-parallel run ------------*- C++ -*-===//
//
// A run launched by `mpirun -np N` is N processes (ranks), each training the
// same artifact on its own share of every global batch; the gradients are
// averaged across them before the optimizer step (the compiled step's
// `all_reduce` kernels) and rank 0 alone writes what a run writes. This is
// the interface those pieces use. A process not launched by mpirun, or
// launched with one rank, has the single-process communicator: size 1, every
// collective a no-op, and nothing of MPI loaded, so a one-process run needs
// no MPI installed.
//
// Under mpirun with N > 1 the communicator is MPI's, in the module
// libtcc_comm_mpi.so beside libtcc_runtime.so (runtime/comm), loaded on
// first use. All collectives are on host memory; a GPU backend moves device
// buffers itself (NCCL, bootstrapped with broadcast()).
//
// Collectives are called by every rank in the same order. The asynchronous
// buckets (gradient means, reduce-scatters and all-gathers of sharded
// optimizer state) run on the communicator's own thread, one at a time, in
// the order they were started; the blocking collectives wait for every
// bucket started before them, so their order relative to the buckets is the
// same on every rank.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_COMM_H
#define TCC_RUNTIME_CORE_COMM_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

enum class CommDType { F32, F64, I64 };
enum class CommOp { Sum, Max, Min };

/// One buffer of a gradient bucket: `count` f32 values at `data`.
struct CommBuffer {
  float *data = nullptr;
  int64_t count = 0;
};

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Rank and rank count on this node (the GPU a rank takes, the share of
  /// the cores its threads use).
  virtual int localRank() const = 0;
  virtual int localSize() const = 0;
  /// "single process", "MPI rank 1 of 2 (Open MPI v4.1.4)".
  virtual std::string description() const = 0;

  // --- Blocking collectives (every rank calls them, in the same order) -----
  /// In place: buf[i] = op over ranks of buf[i].
  virtual void allReduce(void *buf, int64_t count, CommDType t, CommOp op) = 0;
  /// `bytes` bytes at `buf` of rank `root` copied to every rank's `buf`.
  virtual void broadcast(void *buf, int64_t bytes, int root) = 0;
  /// recv (size() * bytes bytes) = every rank's `send` (bytes each), in rank
  /// order.
  virtual void allGather(const void *send, void *recv, int64_t bytes) = 0;
  /// recv (count values) = the sum over ranks of the rank()-th `count`
  /// values of `send` (size() * count values).
  virtual void reduceScatter(const void *send, void *recv, int64_t count,
                             CommDType t) = 0;
  virtual void barrier() = 0;

  // --- Gradient buckets (asynchronous) ---------------------------------------
  /// Starts averaging the buffers over the ranks, in place (sum / size()),
  /// on the communicator's thread, and returns. `bucket` names it for
  /// waitBuckets(); the buffers must not be read or written until then. The
  /// buckets are reduced in start order: every rank starts the same buckets
  /// in the same order (the compiled step does).
  virtual void startMeanBucket(int64_t bucket,
                               const std::vector<CommBuffer> &buffers) = 0;
  /// Starts a reduce-scatter bucket (sharded optimizer state): `send` holds
  /// size() pieces of equal length in rank order, and this rank's piece
  /// averaged over the ranks (the sum times 1/size(), as startMeanBucket
  /// rounds) is written, in order, into the buffers of `out`, whose counts
  /// add up to a piece's. `send` is the communicator's from now on, so the
  /// caller's gradients may be reused at once; `out` must not be read or
  /// written until waitBucket(bucket).
  virtual void startMeanScatterBucket(int64_t bucket, std::vector<float> send,
                                      const std::vector<CommBuffer> &out) = 0;
  /// Starts an all-gather bucket: every rank's `send` (the same length on
  /// each), in rank order, is written in order into the buffers of `out`,
  /// whose counts add up to size() * send.size(); a buffer with null data
  /// drops its count values (a shard's padding). `out` as above.
  virtual void startGatherBucket(int64_t bucket, std::vector<float> send,
                                 const std::vector<CommBuffer> &out) = 0;
  /// Waits until bucket `bucket` (started before, of any kind) is done.
  /// Error (also for an unknown bucket) naming what failed.
  virtual void waitBucket(int64_t bucket) = 0;

  /// Ends the whole run now, every rank with it, with exit status `code`
  /// (after this rank printed why). Used where one rank fails and the
  /// others would otherwise wait forever in a collective.
  [[noreturn]] virtual void abortAll(int code) = 0;
};

/// Error naming `bucket` when a buffer has a negative count or no data for
/// a positive one: what every communicator checks before it starts a bucket.
void checkBucketBuffers(int64_t bucket, const std::vector<CommBuffer> &buffers);

/// Error naming `what` and `bucket` unless the buffers of `out` are valid
/// (null data only where `dropOk`) and their counts add up to `total`.
void checkUnpackBuffers(const char *what, int64_t bucket,
                        const std::vector<CommBuffer> &out, int64_t total,
                        bool dropOk);
/// Writes `from` (as many values as the buffers' counts add up to) into the
/// buffers of `out` in order, each value times `scale`; a buffer with null
/// data skips its count values.
void unpackBuffers(const float *from, float scale,
                   const std::vector<CommBuffer> &out);

/// Whether this process was started by mpirun (or another launcher that sets
/// Open MPI's, PMIx's or PMI's rank variables) with more than one rank.
bool launchedAsRanks();

/// The process's communicator, made on first call: MPI's when
/// launchedAsRanks(), else the single-process one. Error when MPI's is
/// needed and its module cannot be loaded (built without MPI).
Communicator &communicator();

/// Rank and size from the launcher's environment, without loading MPI:
/// (0, 1) when not launched as ranks. For decisions made before the
/// communicator exists (the CPU threads of each rank).
struct LaunchInfo {
  int rank = 0, size = 1, localRank = 0, localSize = 1;
};
LaunchInfo launchInfo();

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_COMM_H
