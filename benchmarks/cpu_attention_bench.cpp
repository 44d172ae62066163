//===- cpu_attention_bench.cpp - CPU attention kernels, tiles vs sgemm ----===//
//
// Times the CPU `attention` and `attention_grad` kernels on one shape with
// their products on the AVX-512 tiles and on OpenBLAS's sgemm
// (TCC_CPU_ATTENTION=blas) and a 512^3 sgemm for the machine's GEMM rate,
// in interleaved rounds in one process. Not part of the build or tests:
//
//   g++ -O2 -std=c++20 -I. benchmarks/cpu_attention_bench.cpp \
//     -Lbuild/runtime -ltcc_runtime -lopenblas -Wl,-rpath,$PWD/build/runtime \
//     -o /tmp/cpu_attention_bench
//   [TCC_NUM_THREADS=1] /tmp/cpu_attention_bench B H T D causal [rounds]
//
// B sequences of H heads: q, k, v [B, T, H, D] sequence-major (tcc's
// layout before the head transposes, what the GPT example runs).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/cpu/Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

using namespace tcc::rt;

/// Seconds: wall-clock, or with one thread (TCC_NUM_THREADS=1) the calling
/// thread's CPU time, which a machine shared with other jobs inflates far
/// less.
static bool cpuClock = false;
static double now() {
  if (cpuClock) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s B H T D causal [rounds]\n", argv[0]);
    return 2;
  }
  int64_t b = atol(argv[1]), h = atol(argv[2]), t = atol(argv[3]),
          d = atol(argv[4]);
  bool causal = atoi(argv[5]) != 0;
  int rounds = argc > 6 ? atoi(argv[6]) : 21;
  const char *threads = std::getenv("TCC_NUM_THREADS");
  if (threads && atoi(threads) == 1) {
    cpuClock = true;
    openblas_set_num_threads(1);
  }
  std::vector<int64_t> x = {b, t, h, d}, lse = {b, h, t};
  std::vector<TensorInfo> ts;
  auto add = [&](const std::vector<int64_t> &s) {
    TensorInfo i;
    i.name = "t" + std::to_string(ts.size());
    i.shape = s;
    ts.push_back(i);
    return (int32_t)ts.size() - 1;
  };
  int32_t q = add(x), k = add(x), v = add(x), out = add(x), l = add(lse),
          dout = add(x), dq = add(x), dk = add(x), dv = add(x);
  std::vector<std::vector<float>> data(ts.size());
  std::vector<void *> bufs;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < ts.size(); ++i) {
    int64_t n = 1;
    for (int64_t s : ts[i].shape)
      n *= s;
    data[i].resize(n);
    for (float &f : data[i])
      f = u(rng);
    bufs.push_back(data[i].data());
  }
  std::vector<int64_t> attrs = {causal, 1, 0};
  double scale = 1.0 / std::sqrt((double)d);
  Instr fwd{"attention", {q, k, v}, {out, l}, attrs, {scale}};
  Instr bwd{
      "attention_grad", {q, k, v, out, l, dout}, {dq, dk, dv}, attrs, {scale}};
  // Multiply-adds: forward 2 products, backward 5; causal about half.
  double macs = (double)b * h * t * t * d * (causal ? 0.5 : 1.0);
  double fwdFlop = 2 * 2 * macs, bwdFlop = 5 * 2 * macs;

  // Each round: both ways, then a 512^3 sgemm for the machine's GEMM rate
  // under the same load.
  const char *ways[] = {"tiles", "blas"};
  // For profiling one way: TCC_BENCH_ONLY=tiles or blas (no table).
  const char *only = std::getenv("TCC_BENCH_ONLY");
  std::vector<double> tf[2], tb[2], tg;
  const int n = 512;
  std::vector<float> A(n * n, 0.5f), B(n * n, 0.25f), C(n * n);
  for (int r = 0; r < rounds + 2; ++r) {
    for (int w = 0; w < 2; ++w) {
      if (only && std::strcmp(only, ways[w]) != 0)
        continue;
      setenv("TCC_CPU_ATTENTION", ways[w], 1);
      double t0 = now();
      runKernel(fwd, ts, bufs);
      double t1 = now();
      runKernel(bwd, ts, bufs);
      double t2 = now();
      if (r >= 2) { // two warm-up rounds
        tf[w].push_back(t1 - t0);
        tb[w].push_back(t2 - t1);
      }
    }
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                A.data(), n, B.data(), n, 0.0f, C.data(), n);
    if (r >= 2)
      tg.push_back(now() - t0);
  }
  double gemm = 2.0 * n * n * n / median(tg) / 1e9;
  if (only)
    return 0;
  std::printf("attention b%lld h%lld t%lld d%lld %s (%d rounds, medians); "
              "sgemm 512^3 %.1f GFLOP/s; %s\n",
              (long long)b, (long long)h, (long long)t, (long long)d,
              causal ? "causal" : "full", rounds, gemm,
              cpuClock ? "1 thread, CPU time" : "wall-clock");
  for (int w = 0; w < 2; ++w) {
    double f = median(tf[w]), g = median(tb[w]);
    std::printf("  %-6s fwd %8.3f ms %7.1f GFLOP/s (%4.1f%% of sgemm)   "
                "bwd %8.3f ms %7.1f GFLOP/s (%4.1f%%)   total %8.3f ms\n",
                ways[w], f * 1e3, fwdFlop / f / 1e9,
                100 * fwdFlop / f / 1e9 / gemm, g * 1e3, bwdFlop / g / 1e9,
                100 * bwdFlop / g / 1e9 / gemm, (f + g) * 1e3);
  }
  std::printf("  tiles vs blas: fwd %.2fx, bwd %.2fx\n",
              median(tf[1]) / median(tf[0]), median(tb[1]) / median(tb[0]));
  return 0;
}
