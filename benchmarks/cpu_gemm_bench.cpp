//===- cpu_gemm_bench.cpp - The pool's GEMMs: oneDNN, OpenBLAS, threads ---===//
//
// Times parallelSgemm (runtime/cpu/ParallelGemm.h) on the GPT example's
// GEMM shapes (batch 16: 1024 tokens, d 128, 4d 512, QKV 384) and the MLP
// benchmark's (batch 256, 784-1024-1024-10), three ways alternating in runs
// of 10 calls in one process: one block per pool thread on oneDNN's sgemm
// (the default), the same blocks on OpenBLAS (TCC_CPU_GEMM=openblas), and
// OpenBLAS's own threading (TCC_CPU_GEMM=blas). On a machine shared with
// other jobs the minimum over many calls is the undisturbed time; the
// median says how the load treats each. Not part of the build or tests:
//
//   g++ -O2 -std=c++20 -I. benchmarks/cpu_gemm_bench.cpp \
//     -Lbuild/runtime -ltcc_runtime -lopenblas -Wl,-rpath,$PWD/build/runtime \
//     -o /tmp/cpu_gemm_bench
//   OPENBLAS_CORETYPE=SkylakeX TCC_NUM_THREADS=2 /tmp/cpu_gemm_bench [calls]
//
// (The tools choose OPENBLAS_CORETYPE themselves, runtime/cpu/BlasCore.h;
// this program does not, so set it to compare cores. It finds the oneDNN
// module beside libtcc_runtime.so.)
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/ParallelGemm.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace tcc::rt;

namespace {
struct Shape {
  const char *what;
  int64_t m, n, k;
  bool ta, tb;
};

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

int main(int argc, char **argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 200;
  const Shape shapes[] = {
      {"qkv fwd", 1024, 384, 128, false, true},
      {"proj fwd", 1024, 128, 128, false, true},
      {"ff1 fwd", 1024, 512, 128, false, true},
      {"ff2 fwd", 1024, 128, 512, false, true},
      {"qkv dX", 1024, 128, 384, false, false},
      {"ff1 dX", 1024, 128, 512, false, false},
      {"ff2 dX", 1024, 512, 128, false, false},
      {"qkv dW", 384, 128, 1024, true, false},
      {"ff1 dW", 512, 128, 1024, true, false},
      {"ff2 dW", 128, 512, 1024, true, false},
      {"proj dW", 128, 128, 1024, true, false},
      {"mlp fc2", 256, 1024, 1024, false, true},
      {"mlp dX2", 256, 1024, 1024, false, false},
      {"mlp dW2", 1024, 1024, 256, true, false},
      {"mlp fc1", 256, 1024, 784, false, true},
  };
  const char *ways[] = {"onednn", "openblas", "blas"};
  constexpr int kWays = 3;
  std::printf("OpenBLAS core %s, %d pool threads, %d OpenBLAS threads, %d "
              "calls each\n",
              openblas_get_corename(), ThreadPool::global().size(),
              openblas_get_num_threads(), calls);
  std::printf("%-9s %5s %5s %5s", "shape", "m", "n", "k");
  for (const char *w : ways)
    std::printf("  %8s min  median   GF/s", w);
  std::printf("\n");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  double total[kWays] = {};
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (float &x : a)
      x = u(rng);
    for (float &x : b)
      x = u(rng);
    int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    std::vector<double> t[kWays];
    // Runs of kRun calls, the ways alternating run by run: a step's GEMMs
    // come back to back, so the pool's workers are still spinning from the
    // last one (between runs they may have gone to sleep).
    constexpr int kRun = 10;
    for (int i = 0; i < calls / kRun + 1; ++i)
      for (int way = 0; way < kWays; ++way) {
        setenv("TCC_CPU_GEMM", ways[way], 1);
        for (int j = 0; j < kRun; ++j) {
          double t0 = seconds();
          tcc::rt::kernels::parallelSgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f,
                                          a.data(), lda, b.data(), ldb, 0.0f,
                                          c.data(), s.n);
          double t1 = seconds();
          if (i > 0 && j > 0) // warm-up run; the run's first call wakes
            t[way].push_back(t1 - t0);
        }
      }
    double flop = 2.0 * s.m * s.n * s.k;
    std::printf("%-9s %5ld %5ld %5ld", s.what, (long)s.m, (long)s.n, (long)s.k);
    for (int way = 0; way < kWays; ++way) {
      std::sort(t[way].begin(), t[way].end());
      double min = t[way].front(), med = t[way][t[way].size() / 2];
      total[way] += min;
      std::printf("  %10.1fus %7.1fus %6.1f", min * 1e6, med * 1e6,
                  flop / min / 1e9);
    }
    std::printf("\n");
  }
  std::printf("sum of minima:");
  for (int way = 0; way < kWays; ++way)
    std::printf(" %s %.1f us (%.2fx of onednn)", ways[way], total[way] * 1e6,
                total[way] / total[0]);
  std::printf("\n");
  return 0;
}
