//===- ParallelGemm.h - sgemm split across the runtime's thread pool ------===//
//
// OpenBLAS (Debian's pthreads build) runs a GEMM on threads of its own. The
// runtime's ThreadPool runs everything else, so during a step two pools'
// idle threads spin on the same cores, and on a busy machine OpenBLAS's
// fixed split waits for whichever of its threads was descheduled.
// parallelSgemm instead cuts C into one block of rows or columns per pool
// thread and runs each block as a single-threaded sgemm on that thread (the
// threads claim blocks, so a late one leaves its block to the others).
// The blocks run on oneDNN's JIT sgemm (the CNN module's library, CnnPath.h),
// which beats OpenBLAS 0.3.21's kernels on the transformer's and the MLP's
// shapes (benchmarks/results/); TCC_CPU_GEMM=openblas runs them on OpenBLAS,
// as TCC_CPU_CONV=im2col (which never loads oneDNN) does too.
// Every element of C is still one call's dot product over the whole depth;
// a library may take another path for a block than for the whole product,
// so the last bits can differ from a whole-product call's, and they are the
// same from run to run for a given thread count. TCC_CPU_GEMM=blas keeps
// OpenBLAS's own threads (read on every call, for benchmarks).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_PARALLELGEMM_H
#define TCC_RUNTIME_CPU_PARALLELGEMM_H

#include <cstdint>

namespace tcc::rt::kernels {

/// C = alpha op(A) op(B) + beta C, row-major: op(A) is [m, k], op(B)
/// [k, n], C [m, n], each with its leading dimension (k = 0: C = beta C).
void parallelSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc);

/// The same product on the calling thread alone (a batch's products spread
/// over the pool; OpenBLAS held to one thread by the caller).
void sgemmHere(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b,
               int64_t ldb, float beta, float *c, int64_t ldc);

/// Whether parallelSgemm splits over the pool (TCC_CPU_GEMM is not `blas`).
bool gemmOnPool();

/// Holds OpenBLAS to one thread while alive (it restores the count), for
/// code that calls sgemm from the pool's threads.
class SingleThreadedBlas {
public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas &) = delete;
  SingleThreadedBlas &operator=(const SingleThreadedBlas &) = delete;

private:
  int saved_;
};

} // namespace tcc::rt::kernels

#endif // TCC_RUNTIME_CPU_PARALLELGEMM_H
