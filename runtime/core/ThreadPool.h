//===- ThreadPool.h - The runtime's pool for the generated kernels --------===//
//
// A small fork-join pool: parallelFor(n, fn) runs fn(i) for every i in
// [0, n) on the calling thread and the pool's workers, and returns when all
// are done. Size: TCC_NUM_THREADS (as for OpenBLAS), else the hardware
// threads. Between jobs a worker spins for a bounded time (kernels come back
// to back within a step, and a futex wake-up costs tens of microseconds),
// then sleeps, so an idle pool costs nothing. The spin is TCC_POOL_SPIN_US
// microseconds (default 100; 0: sleep at once): its first few microseconds
// on `pause`, the rest on sched_yield, so that OpenBLAS's threads (Debian's
// libopenblas0-pthread, whose idle threads also yield-spin) get the core at
// once when a GEMM follows. Not OpenMP: two pools of pause-spinning threads
// on the same cores would fight.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_THREADPOOL_H
#define TCC_RUNTIME_CORE_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tcc::rt {

class ThreadPool {
public:
  /// `threads` in total, counting the caller (at least 1); workers spin
  /// `spinMicros` between jobs before they sleep.
  explicit ThreadPool(int threads, int spinMicros = defaultSpinMicros());
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return (int)workers_.size() + 1; }
  /// Runs fn(0..n-1), each index once, on up to size() threads. Not
  /// reentrant: fn must not call parallelFor (calls from several threads
  /// are serialized).
  void parallelFor(int64_t n, const std::function<void(int64_t)> &fn);

  /// The process-wide pool, sized from TCC_NUM_THREADS on first use.
  static ThreadPool &global();
  /// Replaces the process-wide pool by one of `threads` (tests compare
  /// thread counts). No kernel may be running.
  static void setGlobalThreads(int threads);
  /// The thread count TCC_NUM_THREADS asks for, else the hardware's.
  static int defaultThreads();
  /// The workers' spin between jobs, microseconds: TCC_POOL_SPIN_US, else
  /// 100 (read when a pool is made).
  static int defaultSpinMicros();

private:
  struct Job {
    const std::function<void(int64_t)> *fn = nullptr;
    int64_t n = 0;
    std::atomic<int64_t> next{0}, done{0};
  };
  void work();
  static void runChunks(Job &job);

  std::vector<std::thread> workers_;
  std::mutex callMutex_; // one parallelFor at a time
  std::mutex mutex_;     // guards job_, users_, stop_
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  Job *job_ = nullptr; // the job being run, null between jobs
  int users_ = 0;      // workers holding job_
  int sleepers_ = 0;   // workers waiting on wake_ (the caller notifies
                       // only when one is)
  bool stop_ = false;
  int spinMicros_ = 100;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_THREADPOOL_H
