//===- GemmEpilogue.h - The epilogues of the matmul_epilogue kernel -*- C++
//-*-===//
//
// One table shared by tcc.matmul_epilogue's verifier (TccOpsGemm.cpp; the
// header is self-contained, so the dialect links nothing of the runtime),
// the code generator (ScheduleBuilder maps the op's `epilogue` name to the
// code in the instr's third integer attribute), the CPU kernel
// (KernelsGemmEpilogue.cpp) and the CUDA session (CudaGemm maps each code to
// a cuBLASLt epilogue). Codes are part of the artifact format: append, never
// renumber.
//
// With acc = op(A) op(B) (f32 accumulation) and rows = all dims of D but the
// last:
//   bias                D = acc + bias[n]
//   relu, bias_relu     D = relu(acc (+ bias[n]))
//   gelu_tanh, bias_gelu_tanh
//                       D = gelu_tanh(acc (+ bias[n]))
//   gelu_tanh_aux, bias_gelu_tanh_aux
//                       the same, and aux = the pre-activation acc (+ bias)
//   bgrad_lhs           D = acc, aux[m] = sum_k op(A)[m, k]  (A transposed)
//   bgrad_rhs           D = acc, aux[n] = sum_k op(B)[k, n]  (B not transposed)
//   dgelu_tanh          D = gelu_tanh_grad(acc, preact)  (preact: an input)
//   dgelu_tanh_bgrad    the same, and aux[n] = sum over rows of D
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_GEMMEPILOGUE_H
#define TCC_RUNTIME_CORE_ABI_GEMMEPILOGUE_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <cstring>

namespace tcc::rt {

/// What an epilogue applies to the accumulator, after the optional bias.
enum class GemmAct : uint8_t { None, Relu, GeluTanh, DgeluTanh };
/// Which bias gradient it writes into `aux`: none, the sum over K of op(A)
/// (M elements) or of op(B) (N elements), or the sum over rows of D.
enum class GemmBiasGrad : uint8_t { None, Lhs, Rhs, Out };

struct GemmEpilogueInfo {
  const char *name;
  int64_t code;
  bool bias;          // input 2 is the bias [N]
  GemmAct act;        // DgeluTanh: input 2 is the pre-activation
  bool preactOut;     // output 1 is the pre-activation (D's shape)
  GemmBiasGrad bgrad; // output 1 is a bias gradient
  /// Forward shapes (A [..., M, K] not transposed, B [K, N] or [N, K]) or
  /// a plain 2-D GEMM (the weight-gradient forms).
  bool rowsFlatten() const {
    return bgrad != GemmBiasGrad::Lhs && bgrad != GemmBiasGrad::Rhs;
  }
  bool hasAux() const { return preactOut || bgrad != GemmBiasGrad::None; }
};

inline constexpr GemmEpilogueInfo kGemmEpilogues[] = {
    {"bias", 1, true, GemmAct::None, false, GemmBiasGrad::None},
    {"relu", 2, false, GemmAct::Relu, false, GemmBiasGrad::None},
    {"bias_relu", 3, true, GemmAct::Relu, false, GemmBiasGrad::None},
    {"gelu_tanh", 4, false, GemmAct::GeluTanh, false, GemmBiasGrad::None},
    {"bias_gelu_tanh", 5, true, GemmAct::GeluTanh, false, GemmBiasGrad::None},
    {"gelu_tanh_aux", 6, false, GemmAct::GeluTanh, true, GemmBiasGrad::None},
    {"bias_gelu_tanh_aux", 7, true, GemmAct::GeluTanh, true,
     GemmBiasGrad::None},
    {"bgrad_lhs", 8, false, GemmAct::None, false, GemmBiasGrad::Lhs},
    {"bgrad_rhs", 9, false, GemmAct::None, false, GemmBiasGrad::Rhs},
    {"dgelu_tanh", 10, false, GemmAct::DgeluTanh, false, GemmBiasGrad::None},
    {"dgelu_tanh_bgrad", 11, false, GemmAct::DgeluTanh, false,
     GemmBiasGrad::Out},
};

/// Whether a GEMM of `ab` operands (`e`: its epilogue, null for a plain
/// matmul) may write D of type `d`: the operands' type, or f32 from 16-bit
/// operands for a plain product (matmul and the bias-gradient forms, whose
/// accumulator is then written without rounding).
inline bool gemmWritesDType(DType ab, DType d, const GemmEpilogueInfo *e) {
  bool plain = !e || !e->rowsFlatten();
  return d == ab || (plain && isHalfDType(ab) && d == DType::F32);
}

/// The epilogue with this code / name, or null.
inline const GemmEpilogueInfo *gemmEpilogueByCode(int64_t code) {
  for (const GemmEpilogueInfo &e : kGemmEpilogues)
    if (e.code == code)
      return &e;
  return nullptr;
}
inline const GemmEpilogueInfo *gemmEpilogueByName(const char *name) {
  for (const GemmEpilogueInfo &e : kGemmEpilogues)
    if (std::strcmp(e.name, name) == 0)
      return &e;
  return nullptr;
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ABI_GEMMEPILOGUE_H
