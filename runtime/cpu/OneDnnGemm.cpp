//===- OneDnnGemm.cpp - One single-threaded sgemm through oneDNN ----------===//
//
// parallelSgemm (ParallelGemm.h) cuts a product into one block per pool
// thread; each block runs here, on the calling thread, as oneDNN's JIT
// sgemm for the host's widest ISA.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/OneDnn.h"

#include <omp.h>

namespace tcc::rt::onednn {

bool sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc) {
  // The pool already runs one block per thread: no OpenMP team of its own
  // (an OpenMP setting of this thread, put back for the convolutions).
  int saved = omp_get_max_threads();
  if (saved != 1)
    omp_set_num_threads(1);
  dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k,
                                    alpha, a, lda, b, ldb, beta, c, ldc);
  if (saved != 1)
    omp_set_num_threads(saved);
  return status == dnnl_success;
}

} // namespace tcc::rt::onednn
