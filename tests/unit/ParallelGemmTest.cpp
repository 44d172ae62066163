//===- ParallelGemmTest.cpp - sgemm split across the thread pool ----------===//
//
// parallelSgemm against a double-precision reference for every transpose,
// leading dimensions wider than the matrices (C's extra columns must stay
// untouched), alpha and beta, split by rows and by columns, on 1, 2 and 3
// threads, with the blocks on oneDNN (the default) and on OpenBLAS
// (TCC_CPU_GEMM=openblas), and with OpenBLAS's own threads
// (TCC_CPU_GEMM=blas); the same bits from run to run; and an unknown
// TCC_CPU_GEMM is an error naming it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/ParallelGemm.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/CnnPath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace tcc::rt;
using tcc::rt::kernels::parallelSgemm;

namespace {
struct Case {
  bool ta, tb;
  int64_t m, n, k;
  int64_t pad; // added to every leading dimension
  float alpha, beta;
};

std::string describe(const Case &c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k) + (c.ta ? " A^T" : "") + (c.tb ? " B^T" : "") +
         " pad " + std::to_string(c.pad) + " alpha " + std::to_string(c.alpha) +
         " beta " + std::to_string(c.beta);
}

/// Runs `c` once and checks it against the reference; C into `result`.
void check(const Case &c, unsigned seed, std::vector<float> *result = nullptr) {
  SCOPED_TRACE(describe(c));
  int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;
  int64_t br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;
  int64_t lda = ac + c.pad, ldb = bc + c.pad, ldc = c.n + c.pad;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(ar * lda)),
      b(static_cast<size_t>(br * ldb)), out(static_cast<size_t>(c.m * ldc));
  for (float &x : a)
    x = u(rng);
  for (float &x : b)
    x = u(rng);
  for (float &x : out)
    x = u(rng);
  const std::vector<float> before = out;
  parallelSgemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(),
                ldb, c.beta, out.data(), ldc);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        double x = c.ta ? a[p * lda + i] : a[i * lda + p];
        double y = c.tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
        mag += std::fabs(x * y);
      }
      double c0 = before[i * ldc + j];
      double want = c.alpha * sum + (c.beta == 0.0f ? 0.0 : c.beta * c0);
      double tol = (double(c.k) + 4) * 1.2e-7 *
                   (std::fabs(c.alpha) * mag + std::fabs(c.beta * c0));
      ASSERT_NEAR(out[i * ldc + j], want, tol + 1e-30)
          << "row " << i << " column " << j;
    }
    for (int64_t j = c.n; j < ldc; ++j) // the padding is not C's
      ASSERT_EQ(out[i * ldc + j], before[i * ldc + j])
          << "row " << i << " padding column " << j;
  }
  if (result)
    *result = std::move(out);
}

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      // The GPT example's shapes, scaled down: forward (rows), weight
      // gradients (columns, transposed A), input gradients (B^T).
      {false, false, 520, 384, 128, 0, 1.0f, 0.0f},
      {true, false, 128, 384, 300, 0, 1.0f, 0.0f},
      {false, true, 300, 128, 160, 0, 1.0f, 0.0f},
      {true, true, 70, 200, 90, 3, 1.0f, 0.0f},
      // Accumulating (beta 1, as the head's input gradient), scaled.
      {false, false, 257, 65, 100, 5, 1.0f, 1.0f},
      {false, true, 33, 1000, 64, 1, -0.5f, 0.25f},
      // Too small to split; edges that are no multiple of 16.
      {false, false, 17, 5, 3, 2, 1.0f, 0.0f},
      {true, false, 47, 33, 250, 0, 2.0f, 0.0f},
      {false, false, 5, 7, 0, 1, 1.0f, 0.5f},
      {false, false, 5, 7, 0, 0, 1.0f, 0.0f},
  };
  return all;
}

struct GemmEnv {
  std::string saved;
  bool had;
  explicit GemmEnv(const char *value) {
    const char *s = std::getenv("TCC_CPU_GEMM");
    had = s != nullptr;
    saved = s ? s : "";
    if (value)
      setenv("TCC_CPU_GEMM", value, 1);
    else
      unsetenv("TCC_CPU_GEMM");
  }
  ~GemmEnv() {
    if (had)
      setenv("TCC_CPU_GEMM", saved.c_str(), 1);
    else
      unsetenv("TCC_CPU_GEMM");
  }
};
} // namespace

TEST(ParallelGemm, MatchesReferenceOnAnyThreadCount) {
  for (const char *way :
       {static_cast<const char *>(nullptr), "openblas", "blas"}) {
    GemmEnv env(way);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(way ? way : "pool") + ", " +
                   std::to_string(threads) + " threads");
      ThreadPool::setGlobalThreads(threads);
      unsigned seed = 1;
      for (const Case &c : cases())
        check(c, seed++);
    }
  }
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
}

TEST(ParallelGemm, SameBitsFromRunToRun) {
  GemmEnv env(nullptr);
  ThreadPool::setGlobalThreads(2);
  for (const Case &c : {cases()[0], cases()[1], cases()[4]}) {
    std::vector<float> first, again;
    check(c, 7, &first);
    for (int rep = 0; rep < 3; ++rep) {
      check(c, 7, &again);
      ASSERT_EQ(again, first) << describe(c);
    }
  }
  ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
}

TEST(ParallelGemm, UnknownLibraryIsAnError) {
  GemmEnv env("mkl");
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64);
  try {
    parallelSgemm(false, false, 64, 64, 64, 1.0f, a.data(), 64, b.data(), 64,
                  0.0f, c.data(), 64);
    FAIL() << "TCC_CPU_GEMM=mkl was accepted";
  } catch (const tcc::rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("TCC_CPU_GEMM='mkl'"),
              std::string::npos)
        << e.what();
  }
}

// oneDNN asked for by name on the path that never loads it.
TEST(ParallelGemm, OneDnnWithoutTheModuleIsAnError) {
  GemmEnv env("onednn");
  tcc::rt::cpu::CnnPath saved = tcc::rt::cpu::cnnPath();
  tcc::rt::cpu::setCnnPath(tcc::rt::cpu::CnnPath::Reference);
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64);
  std::string what;
  try {
    parallelSgemm(false, false, 64, 64, 64, 1.0f, a.data(), 64, b.data(), 64,
                  0.0f, c.data(), 64);
  } catch (const tcc::rt::Error &e) {
    what = e.what();
  }
  tcc::rt::cpu::setCnnPath(saved);
  EXPECT_NE(what.find("TCC_CPU_GEMM=onednn"), std::string::npos) << what;
}
