//===- ThreadPool.cpp - The runtime's pool for the generated kernels ------===//
//
// A job is published under the mutex with a new generation number; workers
// take it (counted in users_), claim chunks from an atomic counter and count
// the chunks they finish. The caller claims chunks too and returns once all
// chunks are done and no worker still holds the job: a worker that wakes
// late (the machine is busy) finds no job or a newer one, so the caller
// never waits for a thread that has nothing to do. Workers spin on the
// generation number for spinMicros_ before they sleep; the caller signals
// the condition variable only when a worker sleeps, so back-to-back
// kernels cost no system call.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sched.h>

namespace tcc::rt {

int ThreadPool::defaultThreads() {
  if (const char *env = std::getenv("TCC_NUM_THREADS"); env && *env) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end == '\0' && n > 0 && n <= 4096)
      return (int)n; // Session reports a malformed value
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? (int)hw : 1;
}

int ThreadPool::defaultSpinMicros() {
  if (const char *env = std::getenv("TCC_POOL_SPIN_US"); env && *env) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end == '\0' && n >= 0 && n <= 1000000)
      return (int)n;
  }
  return 100;
}

static std::unique_ptr<ThreadPool> &globalPool() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}

ThreadPool &ThreadPool::global() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!globalPool())
      globalPool() = std::make_unique<ThreadPool>(defaultThreads());
  });
  return *globalPool();
}

void ThreadPool::setGlobalThreads(int threads) {
  global(); // the first creation must not race with this one
  globalPool() = std::make_unique<ThreadPool>(threads < 1 ? 1 : threads);
}

ThreadPool::ThreadPool(int threads, int spinMicros)
    : spinMicros_(spinMicros < 0 ? 0 : spinMicros) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_++;
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

static inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void ThreadPool::runChunks(Job &job) {
  for (int64_t i; (i = job.next.fetch_add(1)) < job.n;) {
    (*job.fn)(i);
    job.done.fetch_add(1);
  }
}

void ThreadPool::work() {
  using Clock = std::chrono::steady_clock;
  uint64_t seen = 0;
  for (;;) {
    // The next kernel of a step usually follows within microseconds: a few
    // on `pause` (the quickest to notice it), then yielding the core to
    // whoever wants it (OpenBLAS's threads during a GEMM) until the spin
    // time is up. Then sleep.
    if (spinMicros_ > 0) {
      Clock::time_point start = Clock::now();
      auto limit = std::chrono::microseconds(spinMicros_);
      for (int spin = 0; generation_.load() == seen; ++spin) {
        if (spin < 256) {
          cpuRelax();
          continue;
        }
        if (Clock::now() - start >= limit)
          break;
        sched_yield();
      }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ++sleepers_;
    wake_.wait(lock, [&] { return generation_.load() != seen; });
    --sleepers_;
    seen = generation_.load();
    if (stop_)
      return;
    Job *job = job_;
    if (!job)
      continue;
    ++users_;
    lock.unlock();
    runChunks(*job);
    lock.lock();
    if (--users_ == 0)
      done_.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t n,
                             const std::function<void(int64_t)> &fn) {
  if (n <= 0)
    return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::lock_guard<std::mutex> call(callMutex_);
  Job job;
  job.fn = &fn;
  job.n = n;
  bool sleeping;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    generation_++;
    sleeping = sleepers_ > 0;
  }
  if (sleeping)
    wake_.notify_all();
  runChunks(job);
  // Chunks other threads are still running.
  for (int spin = 0; job.done.load() < n; ++spin)
    if (spin > 100000)
      std::this_thread::yield();
    else
      cpuRelax();
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = nullptr;
  done_.wait(lock, [&] { return users_ == 0; });
}

} // namespace tcc::rt
