//===- CudaGemm.h - Matrix products on cuBLASLt -----------------*- C++ -*-===//
//
// The `matmul` kernel of runtime/cpu/Kernels.h on the GPU: row-major
// operands, transA/transB, batch dims broadcast (numpy) to C's. A row-major
// C[M,N] = op(A) op(B) is the column-major C^T[N,M] = op(B)^T op(A)^T, so
// cuBLASLt gets B in its "A" slot and A in its "B" slot, with no copies.
// Batches become one strided-batched call (stride 0 for a broadcast
// operand) when the batch dims merge into one; otherwise the outer batch
// dims loop over strided-batched calls of the inner ones. A shared B and a
// non-transposed A fold the batch into M (one large GEMM), as on the CPU.
//
// Types: f32 (compute 32F, or 32F_FAST_TF32 with CudaOptions::tf32), bf16
// and f16 (f32 compute, 16-bit in and out, or 16-bit in and f32 out).
// The algorithm is chosen once per problem (shape, types, transposes,
// batch layout, pointer alignments, epilogue) by cuBLASLt's heuristic and
// cached with its descriptors; one 32 MiB workspace serves every call.
//
// Epilogues (bias add, ReLU/GELU with or without bias) are exposed for a
// later compiler pass that folds them into the GEMM; the bias has N
// elements (one per column of C) in C's dtype. cuBLASLt's GELU is the tanh
// approximation (tcc's gelu with approximate = 1).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAGEMM_H
#define TCC_RUNTIME_CUDA_CUDAGEMM_H

#include "runtime/core/Artifact.h"
#include "runtime/cpu/Kernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace tcc::rt::cuda {

class CudaGemm {
public:
  /// Workspace handed to cuBLASLt (allocated once).
  static constexpr int64_t kWorkspaceBytes = 32ll << 20;

  enum class Epilogue { None, Bias, Relu, ReluBias, Gelu, GeluBias };

  /// One (strided-batched) row-major GEMM: C[b] = op(A[b]) op(B[b]) for
  /// b < batch, A[b] at A + b * strideA elements (likewise B, C; a stride
  /// of 0 repeats the matrix).
  struct Problem {
    DType ab = DType::F32; // A and B
    DType c = DType::F32;
    bool transA = false, transB = false;
    int64_t m = 0, n = 0, k = 0;
    int64_t batch = 1;
    int64_t strideA = 0, strideB = 0, strideC = 0;
  };

  CudaGemm(cudaStream_t stream, bool tf32);
  ~CudaGemm();
  CudaGemm(const CudaGemm &) = delete;
  CudaGemm &operator=(const CudaGemm &) = delete;

  /// Enqueues one GEMM on the stream; `bias` (N elements, C's dtype) for
  /// the epilogues with a bias. Needs m, n, k >= 1. Throws Error.
  void gemm(const Problem &p, const void *a, const void *b, void *c,
            Epilogue ep = Epilogue::None, const void *bias = nullptr);

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
  using Key =
      std::tuple<int, int, bool, bool, int64_t, int64_t, int64_t, int64_t,
                 int64_t, int64_t, int64_t, int, int, int, int, int>;
  Plan &plan(const Problem &p, Epilogue ep, int alignA, int alignB, int alignC,
             int alignBias);

  cudaStream_t stream_;
  bool tf32_;
  void *handle_ = nullptr; // cublasLtHandle_t
  void *workspace_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAGEMM_H
