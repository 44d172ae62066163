//===- ParallelGemm.cpp - sgemm split across the runtime's thread pool ----===//
#include "runtime/cpu/ParallelGemm.h"

#include "runtime/core/Backend.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/CnnPath.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tcc::rt::kernels {

namespace {
enum class GemmLib { OneDnn, OpenBlasOnPool, OpenBlasThreads };
} // namespace

/// TCC_CPU_GEMM, read on every call (benchmarks switch it in one process).
static GemmLib gemmLib() {
  const char *env = std::getenv("TCC_CPU_GEMM");
  if (!env || !*env)
    // TCC_CPU_CONV=im2col never loads oneDNN; a build without OpenMP has
    // no module.
    return cpu::oneDnnKernelsIfLoadable() ? GemmLib::OneDnn
                                          : GemmLib::OpenBlasOnPool;
  if (std::strcmp(env, "onednn") == 0) // asked for: its errors are reported
    return GemmLib::OneDnn;
  if (std::strcmp(env, "openblas") == 0)
    return GemmLib::OpenBlasOnPool;
  if (std::strcmp(env, "blas") == 0)
    return GemmLib::OpenBlasThreads;
  throw Error(std::string("TCC_CPU_GEMM='") + env +
              "' is none of 'onednn', 'openblas' and 'blas'");
}

bool gemmOnPool() { return gemmLib() != GemmLib::OpenBlasThreads; }

SingleThreadedBlas::SingleThreadedBlas() : saved_(openblas_get_num_threads()) {
  if (saved_ != 1)
    openblas_set_num_threads(1);
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (saved_ != 1)
    openblas_set_num_threads(saved_);
}

static void blasCall(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const float *b,
                     int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

/// One block on the calling thread with `lib` (OpenBLAS held to one thread
/// by the caller, or oneDNN's sgemm, which runs on this thread only).
static void blockCall(GemmLib lib, bool ta, bool tb, int64_t m, int64_t n,
                      int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc) {
  if (lib == GemmLib::OneDnn) {
    const cpu::OneDnnKernels *dnn = cpu::oneDnnKernels();
    if (!dnn)
      throw Error("TCC_CPU_GEMM=onednn: oneDNN is not loaded with "
                  "TCC_CPU_CONV=im2col");
    if (dnn->sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
      return;
  }
  blasCall(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemmHere(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb,
               float beta, float *c, int64_t ldc) {
  blockCall(gemmLib(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void parallelSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc) {
  // Below this many multiply-adds OpenBLAS itself stays on one thread
  // (65536 times its GEMM_MULTITHREAD_THRESHOLD of 4).
  constexpr double kMinParallelWork = 65536.0 * 4;
  // Blocks are whole multiples of this many rows or columns (OpenBLAS's
  // register tiles are 16 wide), so only the last block has an edge.
  constexpr int64_t kAlign = 16;
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) { // BLAS rejects a zero leading dimension; the sum is empty
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  ThreadPool &pool = ThreadPool::global();
  int threads = pool.size();
  double work = double(m) * double(n) * double(k);
  bool byRows = m >= n; // each block packs all of the other operand
  int64_t extent = byRows ? m : n;
  GemmLib lib = gemmLib();
  if (lib == GemmLib::OpenBlasThreads)
    return blasCall(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (threads < 2 || work <= kMinParallelWork || extent < 2 * kAlign) {
    SingleThreadedBlas single;
    return blockCall(lib, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  int64_t per = (extent + threads - 1) / threads;
  per = (per + kAlign - 1) / kAlign * kAlign;
  int64_t blocks = (extent + per - 1) / per;
  SingleThreadedBlas single;
  pool.parallelFor(blocks, [&](int64_t i) {
    int64_t s = i * per, len = std::min(per, extent - s);
    if (byRows) // rows s.. of op(A) and C
      blockCall(lib, ta, tb, len, n, k, alpha, ta ? a + s : a + s * lda, lda, b,
                ldb, beta, c + s * ldc, ldc);
    else // columns s.. of op(B) and C
      blockCall(lib, ta, tb, m, len, k, alpha, a, lda, tb ? b + s * ldb : b + s,
                ldb, beta, c + s, ldc);
  });
}

} // namespace tcc::rt::kernels
