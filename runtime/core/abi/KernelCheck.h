//===- KernelCheck.h - The instr checks of the kernel ABI -------*- C++ -*-===//
//
// What checkInstr runs after the generic attribute check: one check per
// kernel of KernelList.def (several kernels share one), each validating the
// operand counts, dtypes and shapes of Kernels.h's conventions, and the
// attribute values the counts cannot (axes in range, windows that fit).
// Every backend relies on them, so they live here and include no backend.
// The helpers throw Error with the operand's position and name.
//
// Files: CheckElementwise.cpp (element-wise, layout, reductions, softmax),
// CheckMath.cpp (math, GELU, dropout, layer norm), CheckLoss.cpp (losses,
// optimizer updates), CheckShape.cpp (gather, concat, slice, where,
// cast), CheckLogic.cpp (compare, logic, extrema, arg_max/arg_min),
// CheckConv.cpp (convolution, pooling, batch norm), CheckMatmul.cpp (GEMMs),
// CheckAttention.cpp, FusedAbi.cpp (fused); KernelCheck.cpp holds the helpers,
// the 16-bit rules and the table checkInstr dispatches on.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_KERNELCHECK_H
#define TCC_RUNTIME_CORE_ABI_KERNELCHECK_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/KernelAbi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt::abi {

/// What checkInstr sees: the instr and the static types of its operands.
struct KernelSig {
  const Instr &instr;
  std::vector<const TensorInfo *> in, out;
};
using CheckFn = void (*)(const KernelSig &);

/// The kernel check of `id` (without the generic attribute check).
CheckFn checkOf(KernelId id);

// --- Check helpers (throw Error) ------------------------------------------
void expectArity(const KernelSig &s, size_t nIn, size_t nOut);
/// Exactly n integer attributes: for kernels whose count depends on the
/// operands (slice: two per dim), beyond what checkAttrs could know.
void expectIAttrs(const KernelSig &s, size_t n);
/// Every operand is f32.
void expectAllF32(const KernelSig &s);
/// "input 1 'b'" / "output 0 'c'", for messages.
std::string operandName(const KernelSig &s, bool isInput, size_t i);
void expectNumel(const KernelSig &s, bool isInput, size_t i, int64_t numel);
void expectShape(const KernelSig &s, bool isInput, size_t i,
                 const std::vector<int64_t> &shape);
/// `from` (rank <= to's rank, right-aligned) broadcasts to `to`.
bool broadcasts(const std::vector<int64_t> &from,
                const std::vector<int64_t> &to);
/// An axis attribute, negative values counted from the end, normalized to
/// [0, rank); Error when it is out of range.
int64_t expectAxis(int64_t axis, int64_t rank);

// --- bf16/f16 operands ------------------------------------------------------
/// Kernels that load and store 16-bit words themselves: the generated ones
/// (`fused`), attention, which rounds its intermediate P and dS, AdamW,
/// whose only 16-bit operand is the copy of the new parameter it rounds,
/// and `copy` (a reshape), which moves bytes between two tensors of one
/// type: widened and rounded back, every element would be touched, also of
/// a view, and signaling NaNs quieted on the way. Every other kernel sees
/// 16-bit operands as the f32 tensors it computes on.
bool handlesHalf(const Instr &instr);
/// Whether `instr` is a `cast` between two float types (in and out its
/// operands' types): a conversion, not an f32 kernel behind widening.
bool isFloatCast(const Instr &instr, DType in, DType out);
/// Whether some operand is bf16 or f16 and the kernel does not handle it.
bool needsHalfAdapter(const KernelSig &s);
/// Runs `check` on the signature with every 16-bit operand seen as f32 (or
/// checks a float-to-float cast).
void checkAsF32(const KernelSig &s, CheckFn check);
/// The element types of a `matmul` / `matmul_epilogue` call with a 16-bit
/// operand, which the widened f32 check no longer sees (CheckMatmul.cpp):
/// A and B share a type, D is theirs or, for a plain GEMM (matmul or a
/// bias-gradient epilogue) of 16-bit operands, f32.
void checkGemmDTypes(const KernelSig &s);

// --- The checks, by the kernels they serve ----------------------------------
#define TCC_CHECK(name) void check_##name(const KernelSig &s);
// CheckElementwise.cpp
TCC_CHECK(binary) // add, sub, mul, div, pow
TCC_CHECK(unary)  // neg, relu, exp, log, sqrt, tanh, sigmoid, erf
TCC_CHECK(relu_grad)
TCC_CHECK(copy)
TCC_CHECK(all_reduce) // all_reduce, all_reduce_wait
// CheckShard.cpp
TCC_CHECK(reduce_scatter)
TCC_CHECK(shard_slice)
TCC_CHECK(all_gather)
TCC_CHECK(shard_wait)
TCC_CHECK(sharded_global_norm)
TCC_CHECK(broadcast_to)
TCC_CHECK(transpose)
TCC_CHECK(reduce) // reduce_sum, reduce_mean, reduce_prod
TCC_CHECK(reduce_prod_grad)
TCC_CHECK(cumsum)
TCC_CHECK(softmax_like)      // softmax, log_softmax
TCC_CHECK(softmax_grad_like) // softmax_grad, log_softmax_grad
TCC_CHECK(global_norm)
// CheckMath.cpp
TCC_CHECK(unary_grad) // the [dy, v] -> dx gradients
TCC_CHECK(pow_scalar)
TCC_CHECK(pow_scalar_grad)
TCC_CHECK(pow_grad)
TCC_CHECK(unary_fn)
TCC_CHECK(unary_fn_grad)
TCC_CHECK(gelu)
TCC_CHECK(gelu_grad)
TCC_CHECK(dropout)
TCC_CHECK(random)
TCC_CHECK(increment)
TCC_CHECK(layer_norm)
TCC_CHECK(layer_norm_grad)
TCC_CHECK(layer_norm_param_grad)
// CheckLoss.cpp
TCC_CHECK(softmax_cross_entropy)
TCC_CHECK(softmax_cross_entropy_grad)
TCC_CHECK(linear_cross_entropy)
TCC_CHECK(linear_cross_entropy_grad)
TCC_CHECK(mse_loss)
TCC_CHECK(mse_loss_grad)
TCC_CHECK(sgd_update)
TCC_CHECK(sgd_momentum_update)
TCC_CHECK(lion_update)
TCC_CHECK(adafactor_update)
TCC_CHECK(adamw_update)
// CheckShape.cpp
TCC_CHECK(gather)
TCC_CHECK(gather_grad)
TCC_CHECK(concat)
TCC_CHECK(slice)
TCC_CHECK(slice_grad)
TCC_CHECK(where)
TCC_CHECK(cast)
// CheckIndex.cpp
TCC_CHECK(gather_elements)
TCC_CHECK(scatter_elements)
TCC_CHECK(gather_nd)
TCC_CHECK(scatter_nd)
TCC_CHECK(top_k)
// CheckLogic.cpp
TCC_CHECK(compare)
TCC_CHECK(logic)
TCC_CHECK(extremum)     // maximum, minimum
TCC_CHECK(arg_extremum) // arg_max, arg_min
TCC_CHECK(mod)
// CheckConv.cpp
TCC_CHECK(conv2d)
TCC_CHECK(conv2d_grad_input)
TCC_CHECK(conv2d_grad_weight)
TCC_CHECK(max_pool2d)
TCC_CHECK(max_pool2d_grad)
TCC_CHECK(avg_pool2d)
TCC_CHECK(avg_pool2d_grad)
TCC_CHECK(batch_norm_train)
TCC_CHECK(batch_norm_train_grad)
// CheckMatmul.cpp
TCC_CHECK(matmul)
TCC_CHECK(matmul_epilogue)
// CheckAttention.cpp
TCC_CHECK(attention)
TCC_CHECK(attention_grad)
// FusedAbi.cpp
TCC_CHECK(fused)
#undef TCC_CHECK

} // namespace tcc::rt::abi

#endif // TCC_RUNTIME_CORE_ABI_KERNELCHECK_H
