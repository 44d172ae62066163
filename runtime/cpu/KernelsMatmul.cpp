//===- KernelsMatmul.cpp - (Batched) matrix multiplication via OpenBLAS ---===//
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cblas.h>

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

void check_matmul(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  expectIAttrs(s, 2);
  for (int64_t t : s.instr.iattrs)
    if (t != 0 && t != 1)
      throw Error("transpose flags must be 0 or 1, got " +
                  formatShape(s.instr.iattrs));
  for (size_t i = 0; i < 3; ++i) {
    const TensorInfo &t = i < 2 ? *s.in[i] : *s.out[0];
    if (t.shape.size() < 2)
      throw Error(operandName(s, i < 2, i < 2 ? i : 0) + " has shape " +
                  formatShape(t.shape) + "; matmul needs rank >= 2");
  }
  const auto &a = s.in[0]->shape, &b = s.in[1]->shape, &c = s.out[0]->shape;
  bool ta = s.instr.iattrs[0], tb = s.instr.iattrs[1];
  size_t ra = a.size(), rb = b.size(), rc = c.size();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], ka = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (ka != kb || m != c[rc - 2] || n != c[rc - 1])
    throw Error("shapes " + formatShape(a) + (ta ? "^T" : "") + " x " +
                formatShape(b) + (tb ? "^T" : "") + " -> " + formatShape(c) +
                " do not agree");
  for (size_t i = 0; i < 2; ++i)
    if (!broadcasts(batchShape(s.in[i]->shape), batchShape(c)))
      throw Error(operandName(s, true, i) + " has batch dims " +
                  formatShape(batchShape(s.in[i]->shape)) +
                  " that do not broadcast to the output's " +
                  formatShape(batchShape(c)));
  // OpenBLAS takes 32-bit sizes.
  for (int64_t d : {m, n, ka})
    if (d > INT_MAX)
      throw Error("matrix dimension " + std::to_string(d) +
                  " is too large for BLAS");
}

void checkGemmDTypes(const KernelSig &s) {
  // Arity and attributes are the f32 check's; only what is there is read.
  if (s.in.size() < 2 || s.out.empty())
    return;
  DType ab = s.in[0]->dtype, d = s.out[0]->dtype;
  if (s.in[1]->dtype != ab)
    throw Error("the GEMM's operands must share one element type; " +
                operandName(s, true, 0) + " is " + dtypeName(ab) + ", " +
                operandName(s, true, 1) + " " + dtypeName(s.in[1]->dtype));
  const GemmEpilogueInfo *e = nullptr;
  if (s.instr.kernel == "matmul_epilogue" && s.instr.iattrs.size() == 3)
    e = gemmEpilogueByCode(s.instr.iattrs[2]);
  // A plain GEMM: the product is the result (matmul, bias gradients).
  bool isMatmul = s.instr.kernel == "matmul";
  bool plain = isMatmul || (e && !e->rowsFlatten());
  if ((isMatmul || e) ? !gemmWritesDType(ab, d, e) : d != ab)
    throw Error(operandName(s, false, 0) + " is " + dtypeName(d) + "; a " +
                dtypeName(ab) + " GEMM" +
                (e ? std::string(" with the ") + e->name + " epilogue" : "") +
                " writes " + dtypeName(ab) +
                (plain && isHalfDType(ab) ? " or f32" : ""));
  if (!e)
    return;
  for (size_t i = 2; i < s.in.size(); ++i)
    if (s.in[i]->dtype != ab)
      throw Error(operandName(s, true, i) + " is " + dtypeName(s.in[i]->dtype) +
                  "; the " + e->name +
                  " epilogue reads it in the operands' type " + dtypeName(ab));
  if (s.out.size() > 1) {
    DType aux = s.out[1]->dtype;
    bool ok = e->preactOut ? aux == d : aux == ab || aux == DType::F32;
    if (!ok)
      throw Error(operandName(s, false, 1) + " is " + dtypeName(aux) + "; " +
                  (e->preactOut ? "the pre-activation has the output's type " +
                                      std::string(dtypeName(d))
                                : "a bias gradient has the operands' type " +
                                      std::string(dtypeName(ab)) + " or f32"));
  }
}

static void gemm(const MatmulDims &d, int64_t m, const float *a, const float *b,
                 float *c) {
  int lda = static_cast<int>(d.transA ? d.m : d.k);
  int ldb = static_cast<int>(d.transB ? d.k : d.n);
  cblas_sgemm(CblasRowMajor, d.transA ? CblasTrans : CblasNoTrans,
              d.transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(d.n), static_cast<int>(d.k), 1.0f, a, lda, b,
              ldb, 0.0f, c, static_cast<int>(d.n));
}

void run_matmul(const KernelArgs &args) {
  const TensorView &A = args.in[0], &B = args.in[1], &C = args.out[0];
  MatmulDims d{args.instr.iattrs[0] != 0, args.instr.iattrs[1] != 0, 0, 0, 0};
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
  nest.forEachOuter(0, [&](const std::array<int64_t, 3> &off) {
    gemm(d, d.m, A.f32() + off[1] * aMat, B.f32() + off[2] * bMat,
         c + off[0] * cMat);
  });
}

} // namespace tcc::rt::kernels
