//===- CudaAttention.cpp - attention / attention_grad chunk loops ---------===//
//
// See CudaAttention.h. The chunk loops only enqueue work (GEMMs, row
// passes, memsets) on the stream: no allocation and no synchronization, so
// they run inside a CUDA graph capture. The plan depends on the shapes only,
// so `prepare` and every launch agree on the chunk and the scratch.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAttention.h"

#include "runtime/cuda/CudaCheck.h"

#include <algorithm>

namespace tcc::rt::cuda {

/// Checks what the chunk loops rely on beyond checkInstr (which validated
/// the operands against Kernels.h) and returns the plan.
static AttentionPlan planOf(const Instr &in, const std::vector<TensorInfo> &t) {
  bool grad = in.kernel == "attention_grad";
  size_t nIn = grad ? 6 : 3;
  if (in.inputs.size() < nIn || in.inputs.size() > nIn + 1 ||
      in.outputs.size() != (grad ? 3u : 2u))
    throw Error("the CUDA " + in.kernel + " kernel takes " +
                std::to_string(nIn) + " or " + std::to_string(nIn + 1) +
                " inputs and " + (grad ? "3" : "2") + " outputs");
  const TensorInfo &q = t[in.inputs[0]], &k = t[in.inputs[1]],
                   &v = t[in.inputs[2]];
  for (const TensorInfo *x : {&q, &k, &v})
    if (x->shape.size() < 3 || x->shape.size() != q.shape.size())
      throw Error("the CUDA " + in.kernel +
                  " kernel takes q, k and v of one rank >= 3 ('" + x->name +
                  "' has rank " + std::to_string(x->shape.size()) + ")");
  // cuBLASLt's types: f32, or bf16/f16 with an f32 S and dP.
  if (q.dtype != DType::F32 && !isHalfDType(q.dtype))
    throw Error("no CUDA " + in.kernel + " kernel for " + dtypeName(q.dtype) +
                " operands ('" + q.name + "'); it takes f32, bf16 or f16");
  return planAttention(q.shape, k.shape, v.shape, q.dtype);
}

int64_t prepare_attention(const Instr &in, const std::vector<TensorInfo> &t) {
  return planOf(in, t).scratchBytes;
}

/// One GEMM of the loop; an empty C is skipped and an empty sum (k = 0)
/// is zeros.
static void gemmOrZero(const AttentionGemm &gemm, const CudaGemm::Problem &p,
                       const void *a, const void *b, void *c,
                       cudaStream_t stream) {
  if (p.m == 0 || p.n == 0 || p.batch == 0)
    return;
  if (p.k == 0) {
    int64_t n = (p.batch - 1) * p.strideC + p.m * p.n;
    TCC_CUDA_CHECK(
        cudaMemsetAsync(c, 0, static_cast<size_t>(n) * dtypeSize(p.c), stream));
    return;
  }
  gemm(p, a, b, c);
}

static CudaGemm::Problem problem(DType ab, DType c, bool transA, bool transB,
                                 int64_t m, int64_t n, int64_t k, int64_t batch,
                                 int64_t strideA, int64_t strideB,
                                 int64_t strideC) {
  CudaGemm::Problem p;
  p.ab = ab;
  p.c = c;
  p.transA = transA;
  p.transB = transB;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.strideA = strideA;
  p.strideB = strideB;
  p.strideC = strideC;
  return p;
}

/// The row passes' view of chunk [b0, b0 + n): scale, causal and how the
/// mask (rank 2, or rank(q) with batch dims all 1 or all q's; each of its
/// last two dims 1 or full) broadcasts.
static AttentionRows rowsOf(const CudaArgs &a, const AttentionPlan &pl,
                            const TensorView *mask, int64_t b0, int64_t n) {
  AttentionRows r;
  r.rows = n * pl.tq;
  r.tq = pl.tq;
  r.tk = pl.tk;
  r.entryStride = pl.entryStride;
  r.firstRow = b0 * pl.tq;
  r.firstEntry = b0;
  r.causal = a.instr.iattrs[0] != 0;
  r.scale = static_cast<float>(a.instr.fattrs[0]);
  if (mask) {
    size_t mr = mask->rank();
    int64_t rowsDim = mask->dim(mr - 2), colsDim = mask->dim(mr - 1);
    int64_t plane = rowsDim * colsDim;
    r.mask = static_cast<const float *>(mask->data);
    r.mEntry = plane > 0 && mask->numel / plane > 1 ? plane : 0;
    r.mRow = rowsDim == 1 ? 0 : colsDim;
    r.mCol = colsDim == 1 ? 0 : 1;
  }
  return r;
}

static char *at(const TensorView &t, int64_t elements) {
  return static_cast<char *>(t.data) +
         elements * static_cast<int64_t>(dtypeSize(t.dtype));
}

void runAttention(const CudaArgs &a, const AttentionPlan &pl,
                  const AttentionGemm &gemm) {
  const TensorView &Q = a.in[0], &K = a.in[1], &V = a.in[2];
  const TensorView &O = a.out[0], &L = a.out[1];
  const TensorView *mask = a.in.size() > 3 ? &a.in[3] : nullptr;
  DType t = Q.dtype;
  float *S = static_cast<float *>(a.scratch);
  void *P = static_cast<char *>(a.scratch) + pl.pOffset;
  const int64_t tq = pl.tq, tk = pl.tk, d = pl.d, dv = pl.dv;
  for (int64_t b0 = 0; b0 < pl.batch; b0 += pl.chunk) {
    int64_t n = std::min(pl.chunk, pl.batch - b0);
    // S = Q K^T (f32).
    gemmOrZero(gemm,
               problem(t, DType::F32, false, true, tq, tk, d, n, tq * d, tk * d,
                       pl.entryStride),
               at(Q, b0 * tq * d), at(K, b0 * tk * d), S, a.stream);
    attentionRows(rowsOf(a, pl, mask, b0, n), S, P, static_cast<int>(t),
                  L.f32(), false, a.stream);
    // O = P V.
    gemmOrZero(gemm,
               problem(t, O.dtype, false, false, tq, dv, tk, n, pl.entryStride,
                       tk * dv, tq * dv),
               P, at(V, b0 * tk * dv), at(O, b0 * tq * dv), a.stream);
  }
}

void runAttentionGrad(const CudaArgs &a, const AttentionPlan &pl,
                      const AttentionGemm &gemm) {
  const TensorView &Q = a.in[0], &K = a.in[1], &V = a.in[2], &O = a.in[3],
                   &L = a.in[4], &dO = a.in[5];
  const TensorView &dQ = a.out[0], &dK = a.out[1], &dV = a.out[2];
  const TensorView *mask = a.in.size() > 6 ? &a.in[6] : nullptr;
  DType t = Q.dtype;
  float *S = static_cast<float *>(a.scratch);            // S, then dP
  void *P = static_cast<char *>(a.scratch) + pl.pOffset; // P, then dS
  const int64_t tq = pl.tq, tk = pl.tk, d = pl.d, dv = pl.dv;
  for (int64_t b0 = 0; b0 < pl.batch; b0 += pl.chunk) {
    int64_t n = std::min(pl.chunk, pl.batch - b0);
    const char *q = at(Q, b0 * tq * d), *k = at(K, b0 * tk * d),
               *v = at(V, b0 * tk * dv), *dout = at(dO, b0 * tq * dv);
    AttentionRows rows = rowsOf(a, pl, mask, b0, n);
    // S = Q K^T, then P = exp(scale S + mask - lse) from the saved lse.
    gemmOrZero(gemm,
               problem(t, DType::F32, false, true, tq, tk, d, n, tq * d, tk * d,
                       pl.entryStride),
               q, k, S, a.stream);
    attentionRows(rows, S, P, static_cast<int>(t), L.f32(), true, a.stream);
    // dV = P^T dO.
    gemmOrZero(gemm,
               problem(t, dV.dtype, true, false, tk, dv, tq, n, pl.entryStride,
                       tq * dv, tk * dv),
               P, dout, at(dV, b0 * tk * dv), a.stream);
    // dP = dO V^T (f32, over S).
    gemmOrZero(gemm,
               problem(t, DType::F32, false, true, tq, tk, dv, n, tq * dv,
                       tk * dv, pl.entryStride),
               dout, v, S, a.stream);
    // dS = P (dP - rowsum(dO O)) scale, over P (the pass offsets dO, O).
    attentionGradRows(rows, S, P, static_cast<int>(t), dO.data, O.data,
                      static_cast<int>(O.dtype), dv, a.stream);
    // dQ = dS K, dK = dS^T Q.
    gemmOrZero(gemm,
               problem(t, dQ.dtype, false, false, tq, d, tk, n, pl.entryStride,
                       tk * d, tq * d),
               P, k, at(dQ, b0 * tq * d), a.stream);
    gemmOrZero(gemm,
               problem(t, dK.dtype, true, false, tk, d, tq, n, pl.entryStride,
                       tq * d, tk * d),
               P, q, at(dK, b0 * tk * d), a.stream);
  }
}

static AttentionPlan planOfViews(const CudaArgs &a) {
  return planAttention(*a.in[0].shape, *a.in[1].shape, *a.in[2].shape,
                       a.in[0].dtype);
}

void launch_attention(const CudaArgs &a) {
  runAttention(a, planOfViews(a), attentionGemm(a));
}

void launch_attention_grad(const CudaArgs &a) {
  runAttentionGrad(a, planOfViews(a), attentionGemm(a));
}

} // namespace tcc::rt::cuda
