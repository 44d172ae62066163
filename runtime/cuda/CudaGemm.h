//===- CudaGemm.h - Matrix products on cuBLASLt -----------------*- C++ -*-===//
//
// The `matmul` kernel of runtime/core/abi/Kernels.h on the GPU: row-major
// operands, transA/transB, batch dims broadcast (numpy) to C's. A row-major
// C[M,N] = op(A) op(B) is the column-major C^T[N,M] = op(B)^T op(A)^T, so
// cuBLASLt gets B in its "A" slot and A in its "B" slot, with no copies.
// Batches become one strided-batched call (stride 0 for a broadcast
// operand) when the batch dims merge into one; otherwise the outer batch
// dims loop over strided-batched calls of the inner ones. A shared B and a
// non-transposed A fold the batch into M (one large GEMM), as on the CPU.
//
// Types: f32 (compute 32F, or 32F_FAST_TF32 with SessionOptions::tf32), bf16
// and f16 (f32 compute, 16-bit in and out, or 16-bit in and f32 out).
// The algorithm is chosen once per problem (shape, types, transposes,
// batch layout, pointer alignments, epilogue) by cuBLASLt's heuristic and
// cached with its descriptors; one 32 MiB workspace serves every call.
// TCC_CUDA_GEMM_AUTOTUNE=N (2 to 16) instead times the heuristic's first N
// answers on the first call of each problem and keeps the fastest (the
// choice can then differ between runs, and with it the last bits);
// TCC_CUDA_GEMM_AUTOTUNE_CACHE=FILE keeps the picks in FILE for later runs
// (GemmAlgoCache.h).
//
// Epilogues (the `matmul_epilogue` kernel, runtime/core/abi/GemmEpilogue.h) run
// in the GEMM: bias add, ReLU/GELU with or without bias, GELU saving its
// pre-activation (aux), GELU's gradient from a saved pre-activation, and
// bias gradients. Named in row-major terms here; in cuBLASLt's
// column-major view (C^T = op(B)^T op(A)^T: its A is our B, its rows our
// columns) a bias of N elements is one per row of its D, and the sums are
//   BgradRhs: sum over K of op(B), N elements = CUBLASLT_EPILOGUE_BGRADA,
//   BgradLhs: sum over K of op(A), M elements = CUBLASLT_EPILOGUE_BGRADB,
//   DgeluBgrad: D summed over its M rows, N elements (DGELU_BGRAD),
// and the aux matrix has C's layout (leading dimension ldc, N when packed,
// which cuBLASLt needs to be a multiple of 8). cuBLASLt's GELU is the tanh
// approximation (tcc's gelu with approximate = 1). When cuBLASLt offers no
// algorithm for an epilogue, tryGemm says so and the caller runs a plain GEMM
// and the element-wise kernels instead (launch_matmul_epilogue).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAGEMM_H
#define TCC_RUNTIME_CUDA_CUDAGEMM_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/Kernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace tcc::rt::cuda {

class GemmAlgoCache;

class CudaGemm {
public:
  /// Workspace handed to cuBLASLt (allocated once).
  static constexpr int64_t kWorkspaceBytes = 32ll << 20;

  enum class Epilogue {
    None,
    Bias,
    Relu,
    ReluBias,
    Gelu,
    GeluBias,
    GeluAux,     // aux (out) = the pre-activation
    GeluAuxBias, // aux (out) = acc + bias
    BgradLhs,    // biasGrad = sum over K of op(A) (M elements)
    BgradRhs,    // biasGrad = sum over K of op(B) (N elements)
    Dgelu,       // C = gelu'(aux) * acc, aux (in) = the pre-activation
    DgeluBgrad,  // and biasGrad = C summed over rows (N elements)
  };

  /// The epilogue's extra operands (device pointers).
  struct EpilogueArgs {
    const void *bias = nullptr; // Bias, ReluBias, GeluBias, GeluAuxBias
    void *biasGrad = nullptr;   // Bgrad*, DgeluBgrad
    /// The type of bias / biasGrad (C's, or f32 for a bias gradient).
    DType biasType = DType::F32;
    void *aux = nullptr; // GeluAux* (written), Dgelu* (read): C's layout
  };

  /// One (strided-batched) row-major GEMM: C[b] = op(A[b]) op(B[b]) for
  /// b < batch, A[b] at A + b * strideA elements (likewise B, C; a stride
  /// of 0 repeats the matrix). lda, ldb, ldc: elements from one stored row
  /// to the next (>= its length), 0 = packed (ldOf). Rows further apart
  /// than their length address a matrix inside a wider one, such as one
  /// head of a [T, H, D] tensor: ld H * D and batch stride D make the heads
  /// batch entries whose rows interleave without overlapping.
  struct Problem {
    DType ab = DType::F32; // A and B
    DType c = DType::F32;
    bool transA = false, transB = false;
    int64_t m = 0, n = 0, k = 0;
    int64_t batch = 1;
    int64_t strideA = 0, strideB = 0, strideC = 0;
    int64_t lda = 0, ldb = 0, ldc = 0;
  };

  /// The leading dims `p` stands for: its lda, ldb, ldc, or where 0 the
  /// packed ones (stored A is [m, k], or [k, m] with transA: k or m; B
  /// likewise; C n).
  struct Lds {
    int64_t a, b, c;
  };
  static Lds ldOf(const Problem &p) {
    int64_t a = p.transA ? p.m : p.k, b = p.transB ? p.k : p.n;
    return {p.lda ? p.lda : a, p.ldb ? p.ldb : b, p.ldc ? p.ldc : p.n};
  }

  CudaGemm(cudaStream_t stream, bool tf32);
  ~CudaGemm();
  CudaGemm(const CudaGemm &) = delete;
  CudaGemm &operator=(const CudaGemm &) = delete;

  /// Enqueues one GEMM on the stream; `bias` (N elements, C's dtype) for
  /// the epilogues with a bias. Needs m, n, k >= 1. Throws Error, also when
  /// cuBLASLt has no algorithm for the problem.
  void gemm(const Problem &p, const void *a, const void *b, void *c,
            Epilogue ep = Epilogue::None, const void *bias = nullptr);
  /// The same with any epilogue (batch 1): returns false, having enqueued
  /// nothing, when cuBLASLt has no algorithm for it (the answer is cached
  /// per problem) or epilogues are disabled. Throws Error otherwise.
  bool tryGemm(const Problem &p, const void *a, const void *b, void *c,
               Epilogue ep, const EpilogueArgs &args);
  /// Off: tryGemm declines every epilogue, so matmul_epilogue always runs
  /// its fallback (SessionOptions::gemmEpilogues; tests of the fallback).
  void setEpilogues(bool on) { epilogues_ = on; }

  /// The `matmul` kernel (operands as checkInstr accepts them, device
  /// pointers).
  void matmul(const TensorView &a, const TensorView &b, const TensorView &c,
              bool transA, bool transB);

  /// Whether cuBLASLt takes these operand types (A and B alike: f32, bf16
  /// or f16; C the same, or f32 for 16-bit A and B).
  static bool supports(DType ab, DType b, DType c);

  int64_t workspaceBytes() const { return kWorkspaceBytes; }
  /// Problems planned so far (each planned once).
  size_t plans() const { return plans_.size(); }

private:
  struct Plan;
  /// Problem (leading dims as ldOf gives them), epilogue, bias type and
  /// the alignments of A, B, C, bias, aux.
  using Key = std::tuple<int, int, bool, bool, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int, int, int, int, int, int, int>;
  /// tryGemm whatever setEpilogues says.
  bool enqueue(const Problem &p, const void *a, const void *b, void *c,
               Epilogue ep, const EpilogueArgs &args);
  /// The cached plan (null: cuBLASLt has no algorithm for this epilogue).
  Plan *plan(const Problem &p, Epilogue ep, DType biasType, int alignA,
             int alignB, int alignC, int alignBias, int alignAux);

  /// One cuBLASLt call of plan `pl` with `algo` (a cublasLtMatmulAlgo_t)
  /// on the stream: its cublasStatus_t.
  int run(const Plan &pl, const void *algo, const void *a, const void *b,
          void *c);
  /// Times the plan's candidate algorithms on these operands and keeps the
  /// one pickTimedAlgo chooses (TCC_CUDA_GEMM_AUTOTUNE, GemmAlgoPick.h).
  void autotune(Plan &pl, const void *a, const void *b, void *c);

  cudaStream_t stream_;
  bool tf32_;
  int candidates_; // heuristic answers asked for (1: no autotuning)
  double margin_;  // TCC_CUDA_GEMM_AUTOTUNE_MARGIN, percent
  /// TCC_CUDA_GEMM_AUTOTUNE_CACHE's picks (GemmAlgoCache.h), or none.
  std::unique_ptr<GemmAlgoCache> algoCache_;
  bool epilogues_ = true;
  void *handle_ = nullptr; // cublasLtHandle_t
  void *workspace_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

/// TCC_CUDA_GEMM_AUTOTUNE's value: how many of cuBLASLt's heuristic
/// answers a problem's first call times (unset, empty, 0 or 1: none, the
/// first answer is used untimed; up to 16); anything else throws Error
/// naming it.
int gemmAutotuneCandidates(const char *value);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAGEMM_H
