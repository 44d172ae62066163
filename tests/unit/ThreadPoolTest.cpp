//===- ThreadPoolTest.cpp - The generated kernels' thread pool ------------===//
//
// Also run under ThreadSanitizer by `./setup.sh test` (runtime-only build).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using tcc::rt::ThreadPool;

// Every index runs exactly once, for sizes below, at and above the thread
// count, many times in a row (jobs come back to back within a step, while
// workers may still be finishing or waking for the previous one).
TEST(ThreadPool, RunsEachIndexOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000}) {
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallelFor(n, [&](int64_t i) { hits[i].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "n " << n << " index " << i;
    }
  }
}

// Writes made by the workers are visible to the caller once parallelFor
// returns (plain, non-atomic stores: TSan checks the happens-before).
TEST(ThreadPool, ResultsAreVisibleAfterReturn) {
  ThreadPool pool(4);
  std::vector<int64_t> out(4096);
  for (int rep = 0; rep < 50; ++rep) {
    pool.parallelFor((int64_t)out.size(), [&](int64_t i) { out[i] = i * rep; });
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], (int64_t)i * rep);
  }
}

// Both indices of a two-index job run at the same time (each waits for the
// other to start), so the worker must take one: whether it is still spinning
// from the last job, or has gone to sleep (no spin, or a pause longer than
// the spin) and has to be woken.
TEST(ThreadPool, WorkersWakeAfterSpinningOrSleeping) {
  using namespace std::chrono;
  for (int spin : {0, 50, 100000}) {
    ThreadPool pool(2, spin);
    for (int rep = 0; rep < 20; ++rep) {
      if (rep % 4 == 3)
        std::this_thread::sleep_for(milliseconds(2));
      std::atomic<int> started{0};
      std::atomic<bool> together{true};
      pool.parallelFor(2, [&](int64_t) {
        started.fetch_add(1);
        auto limit = steady_clock::now() + seconds(20);
        while (started.load() < 2)
          if (steady_clock::now() > limit) {
            together = false;
            break;
          }
      });
      ASSERT_TRUE(together.load()) << "spin " << spin << " rep " << rep;
    }
  }
}

// Calls from several threads are serialized, not interleaved.
TEST(ThreadPool, ConcurrentCallersAreSerialized) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 100; ++rep)
        pool.parallelFor(100, [&](int64_t i) { total.fetch_add(i); });
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(total.load(), 3 * 100 * (99 * 100 / 2));
}

// A one-thread pool runs everything on the caller; creating and destroying
// pools joins their workers.
TEST(ThreadPool, SingleThreadAndShutdown) {
  {
    ThreadPool one(1);
    EXPECT_EQ(one.size(), 1);
    std::thread::id caller = std::this_thread::get_id();
    one.parallelFor(
        10, [&](int64_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
  }
  for (int i = 0; i < 20; ++i) {
    ThreadPool p(3);
    std::atomic<int> n{0};
    p.parallelFor(5, [&](int64_t) { n++; });
    EXPECT_EQ(n.load(), 5);
  }
}
