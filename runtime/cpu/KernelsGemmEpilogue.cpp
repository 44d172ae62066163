//===- KernelsGemmEpilogue.cpp - GEMM with a fused epilogue on OpenBLAS ---===//
//
// The `matmul_epilogue` kernel (tcc-gemm-epilogue's tcc.matmul_epilogue; the
// epilogues are listed in GemmEpilogue.h). It is the CPU fallback of what
// cuBLASLt does in one kernel on the GPU, and it fuses for real:
//
// * Bias: C's rows are initialized with the bias and sgemm runs with
//   beta = 1. OpenBLAS clears C itself when beta = 0 and skips that pass
//   when beta = 1, so the bias costs the same as the clearing it replaces
//   (a separate add would read and write C once more).
// * Activations, the saved pre-activation and dgelu: C is computed in
//   blocks of rows small enough to stay in the L2 cache, and each block's
//   epilogue runs right after its GEMM, over rows still in cache, split
//   across the ThreadPool. The formulas are the library kernels' (run_relu,
//   run_gelu, run_gelu_grad called on row ranges), so they match the
//   unfused ops bit for bit given the same accumulator.
// * Bias gradients: column sums in reduce_sum's order (ColumnSums: row
//   slices in double, then the slices in order), so a fused bias gradient
//   equals the unfused one bit for bit. bgrad_lhs/bgrad_rhs sum a
//   GEMM operand (cuBLASLt reduces it while loading it; OpenBLAS packs its
//   operands internally, so here it is one more read of that operand,
//   in the same call); dgelu_tanh_bgrad sums each block of D while cached.
//
// bf16/f16 operands go through the adapter of KernelsHalf.cpp like every
// kernel: the epilogue runs on the f32 accumulator and D (and aux) are
// rounded once, as cuBLASLt does.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ThreadPool.h"
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/cpu/KernelsInternal.h"
#include "runtime/cpu/ParallelGemm.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

namespace tcc::rt::kernels {

namespace {
/// The GEMM of one call: D[rows, N] = op(A)[rows, K] op(B)[K, N].
struct EpilogueDims {
  bool transA, transB;
  int64_t rows, n, k;
};
} // namespace

static void sgemm(const EpilogueDims &d, int64_t rows, const float *a,
                  const float *b, float beta, float *c) {
  parallelSgemm(d.transA, d.transB, rows, d.n, d.k, 1.0f, a,
                d.transA ? d.rows : d.k, b, d.transB ? d.k : d.n, beta, c, d.n);
}

/// Runs fn(r0, r1) over [0, rows) in chunks on the ThreadPool when the
/// work (elements x cost) is worth waking it for.
template <class F>
static void parallelRows(int64_t rows, int64_t work, F &&fn) {
  constexpr int64_t kMinParallelWork = 1 << 18;
  ThreadPool &pool = ThreadPool::global();
  int64_t chunks = 1;
  if (work >= kMinParallelWork)
    chunks = std::min<int64_t>(4 * (int64_t)pool.size(), rows);
  if (chunks <= 1) {
    fn(int64_t(0), rows);
    return;
  }
  pool.parallelFor(chunks, [&](int64_t c) {
    fn(rows * c / chunks, rows * (c + 1) / chunks);
  });
}

/// The library kernel `run` (relu, gelu, gelu_grad) over a range of
/// elements: the same formulas as the unfused ops.
static void runElementwise(void (*run)(const KernelArgs &), bool tanh, float *y,
                           const float *x, const float *x2, int64_t n) {
  Instr in;
  abi::setAttrs(in, abi::GeluAttrs{tanh}); // gelu's and gelu_grad's; relu: none
  std::vector<int64_t> shape{n};
  KernelArgs args{in, {}, {}};
  args.in.push_back(TensorView{const_cast<float *>(x), DType::F32, &shape, n});
  if (x2)
    args.in.push_back(
        TensorView{const_cast<float *>(x2), DType::F32, &shape, n});
  args.out.push_back(TensorView{y, DType::F32, &shape, n});
  run(args);
}

/// The element-wise part of the epilogue on rows [r0, r1) of a block that
/// starts at row `base` of D (C = D + base * n, already holding acc + bias).
static void epilogueRows(const GemmEpilogueInfo &e, const KernelArgs &args,
                         int64_t base, int64_t n, int64_t r0, int64_t r1) {
  float *c = args.out[0].f32() + (base + r0) * n;
  int64_t count = (r1 - r0) * n;
  if (e.preactOut)
    std::memcpy(args.out[1].f32() + (base + r0) * n, c,
                static_cast<size_t>(count) * sizeof(float));
  switch (e.act) {
  case GemmAct::Relu:
    runElementwise(run_relu, false, c, c, nullptr, count);
    break;
  case GemmAct::GeluTanh:
    runElementwise(run_gelu, true, c, c, nullptr, count);
    break;
  case GemmAct::DgeluTanh: // D = gelu_grad(dy = acc, x = preact)
    runElementwise(run_gelu_grad, true, c, c,
                   args.in[2].f32() + (base + r0) * n, count);
    break;
  case GemmAct::None:
    break;
  }
}

void run_matmul_epilogue(const KernelArgs &args) {
  const abi::MatmulEpilogueAttrs at =
      abi::attrs<KernelId::MatmulEpilogue>(args.instr);
  const GemmEpilogueInfo &e = *gemmEpilogueByCode(at.epilogue);
  const TensorView &A = args.in[0], &B = args.in[1], &D = args.out[0];
  EpilogueDims d{at.transA, at.transB, 0, 0, 0};
  d.n = D.dim(D.rank() - 1);
  d.rows = d.n ? D.numel / d.n : 0;
  d.k = d.transA ? A.dim(0) : A.dim(A.rank() - 1);
  float *c = D.f32();
  const float *a = A.f32(), *b = B.f32();
  float *bgrad = e.bgrad != GemmBiasGrad::None ? args.out[1].f32() : nullptr;
  // Operand sums (the GEMM's inputs, whatever D's size).
  if (e.bgrad == GemmBiasGrad::Lhs) // A [K, M]: sum its rows
    sumColumns(a, d.k, d.rows, d.rows, bgrad);
  else if (e.bgrad == GemmBiasGrad::Rhs) // B [K, N]
    sumColumns(b, d.k, d.n, d.n, bgrad);
  // D's sums, added block by block (each slice's rows still in order).
  std::optional<ColumnSums> outSums;
  if (e.bgrad == GemmBiasGrad::Out)
    outSums.emplace(d.rows, d.n);
  auto finishOut = [&] {
    if (outSums)
      outSums->finish(0, bgrad);
  };
  if (D.numel == 0) {
    finishOut();
    return;
  }

  const float *bias = e.bias ? args.in[2].f32() : nullptr;
  bool perElement =
      e.act != GemmAct::None || e.preactOut || e.bgrad == GemmBiasGrad::Out;
  // Rows per block: about half the L2 cache of D, so the epilogue finds
  // the block's rows there; one block when nothing follows the GEMM.
  constexpr int64_t kBlockBytes = 512 << 10;
  int64_t blockRows =
      perElement ? std::max<int64_t>(8, kBlockBytes / (d.n * 4)) : d.rows;
  int64_t cost =
      e.act == GemmAct::GeluTanh || e.act == GemmAct::DgeluTanh ? 16 : 1;
  for (int64_t r0 = 0; r0 < d.rows; r0 += blockRows) {
    int64_t rows = std::min(blockRows, d.rows - r0);
    float *cb = c + r0 * d.n;
    if (bias)
      parallelRows(rows, rows * d.n, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          std::memcpy(cb + i * d.n, bias, static_cast<size_t>(d.n) * 4);
      });
    if (d.k == 0) { // BLAS rejects lda = 0; the empty sum is zero.
      if (!bias)
        std::fill(cb, cb + rows * d.n, 0.0f);
    } else {
      // A block of rows of op(A): A is not transposed when rows flatten.
      const float *ab = d.transA ? a : a + r0 * d.k;
      sgemm(d, rows, ab, b, bias ? 1.0f : 0.0f, cb);
    }
    if (e.act != GemmAct::None || e.preactOut)
      parallelRows(rows, rows * d.n * cost, [&](int64_t i0, int64_t i1) {
        epilogueRows(e, args, r0, d.n, i0, i1);
      });
    if (outSums)
      parallelRows(d.n, rows * d.n, [&](int64_t c0, int64_t c1) {
        for (int64_t r = 0; r < rows; ++r)
          outSums->addRow(r0 + r, cb + r * d.n, c0, c1);
      });
  }
  finishOut();
}

} // namespace tcc::rt::kernels
