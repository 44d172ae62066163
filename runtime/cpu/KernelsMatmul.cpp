//===- KernelsMatmul.cpp - (Batched) matrix multiplication via OpenBLAS ---===//
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/KernelsInternal.h"
#include "runtime/cpu/ParallelGemm.h"

#include <algorithm>
#include <climits>

namespace tcc::rt::kernels {

namespace {
/// The matrix dims of one matmul: C[M,N] = op(A)[M,K] * op(B)[K,N].
struct MatmulDims {
  bool transA, transB;
  int64_t m, n, k;
};
} // namespace

static std::vector<int64_t> batchShape(const std::vector<int64_t> &shape) {
  return {shape.begin(), shape.end() - 2};
}

/// One product on the pool's threads (ParallelGemm.h).
static void gemm(const MatmulDims &d, int64_t m, const float *a, const float *b,
                 float *c) {
  parallelSgemm(d.transA, d.transB, m, d.n, d.k, 1.0f, a, d.transA ? d.m : d.k,
                b, d.transB ? d.k : d.n, 0.0f, c, d.n);
}

/// One product of a batch, on the calling thread.
static void gemmHere(const MatmulDims &d, const float *a, const float *b,
                     float *c) {
  sgemmHere(d.transA, d.transB, d.m, d.n, d.k, 1.0f, a, d.transA ? d.m : d.k, b,
            d.transB ? d.k : d.n, 0.0f, c, d.n);
}

void run_matmul(const KernelArgs &args) {
  const TensorView &A = args.in[0], &B = args.in[1], &C = args.out[0];
  const abi::MatmulAttrs at = abi::attrs<KernelId::Matmul>(args.instr);
  MatmulDims d{at.transA, at.transB, 0, 0, 0};
  d.m = C.dim(C.rank() - 2);
  d.n = C.dim(C.rank() - 1);
  d.k = d.transA ? A.dim(A.rank() - 2) : A.dim(A.rank() - 1);
  float *c = C.f32();
  if (C.numel == 0)
    return;
  if (d.k == 0) { // BLAS rejects lda = 0; the empty sum is zero.
    std::fill(c, c + C.numel, 0.0f);
    return;
  }
  int64_t aMat = d.m * d.k, bMat = d.k * d.n, cMat = d.m * d.n;
  int64_t batchA = A.numel / aMat, batchB = B.numel / bMat,
          batchC = C.numel / cMat;
  if (batchC == 1)
    return gemm(d, d.m, A.f32(), B.f32(), c);
  // A shared B and a non-transposed A: the batch folds into M.
  if (batchB == 1 && !d.transA && batchA == batchC && batchC * d.m <= INT_MAX)
    return gemm(d, batchC * d.m, A.f32(), B.f32(), c);

  std::vector<int64_t> cb = batchShape(*C.shape);
  LoopNest<3> nest(cb, {contiguousStrides(cb),
                        broadcastStrides(batchShape(*A.shape), cb.size()),
                        broadcastStrides(batchShape(*B.shape), cb.size())});
  ThreadPool &pool = ThreadPool::global();
  double work = double(batchC) * double(cMat) * double(d.k);
  if (pool.size() < 2 || batchC < pool.size() || work < 65536.0 * 4 ||
      !gemmOnPool()) {
    nest.forEachOuter(0, [&](const std::array<int64_t, 3> &off) {
      gemm(d, d.m, A.f32() + off[1] * aMat, B.f32() + off[2] * bMat,
           c + off[0] * cMat);
    });
    return;
  }
  // At least one product per thread: each runs whole on one thread (as
  // OpenBLAS would run one of this size: the same bits).
  std::vector<std::array<int64_t, 3>> offsets;
  nest.forEachOuter(
      0, [&](const std::array<int64_t, 3> &off) { offsets.push_back(off); });
  SingleThreadedBlas single;
  pool.parallelFor(static_cast<int64_t>(offsets.size()), [&](int64_t i) {
    const std::array<int64_t, 3> &off = offsets[static_cast<size_t>(i)];
    gemmHere(d, A.f32() + off[1] * aMat, B.f32() + off[2] * bMat,
             c + off[0] * cMat);
  });
}

} // namespace tcc::rt::kernels
