//===- KernelsInternal.h - Shared by the kernel implementation files ------===//
//
// Not part of the runtime's interface: the check/run function declarations
// the registry in Kernels.cpp collects, shape-check helpers, and the strided
// loop nest that broadcasting, transposes and reductions share.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_KERNELSINTERNAL_H
#define TCC_RUNTIME_CPU_KERNELSINTERNAL_H

#include "runtime/cpu/Kernels.h"

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace tcc::rt::kernels {

/// What checkInstr sees: the instr and the static types of its operands.
struct KernelSig {
  const Instr &instr;
  std::vector<const TensorInfo *> in, out;
};
using CheckFn = void (*)(const KernelSig &);

// --- Check helpers (throw Error) ------------------------------------------
void expectArity(const KernelSig &s, size_t nIn, size_t nOut);
void expectIAttrs(const KernelSig &s, size_t n);
void expectFAttrs(const KernelSig &s, size_t n);
/// Every operand is f32.
void expectAllF32(const KernelSig &s);
/// "input 1 'b'" / "output 0 'c'", for messages.
std::string operandName(const KernelSig &s, bool isInput, size_t i);
void expectNumel(const KernelSig &s, bool isInput, size_t i, int64_t numel);
/// `from` (rank <= to's rank, right-aligned) broadcasts to `to`.
bool broadcasts(const std::vector<int64_t> &from,
                const std::vector<int64_t> &to);
/// The single axis attribute, negative values counted from the end,
/// normalized to [0, rank).
int64_t expectAxis(const KernelSig &s, int64_t rank);
/// The same normalization at run time (the attribute is already checked).
inline int64_t runtimeAxis(const KernelArgs &a, size_t rank) {
  int64_t axis = a.instr.iattrs[0];
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// --- Column sums in the fused regions' order (KernelsReduce.cpp) ------------
/// Sums over rows, per column, added as a fused region's column sums add
/// them (compiler/codegen/FusedCodegen.cpp): rows in slices of
/// columnSumSliceRows(rows), each slice's sums in double in row order, then
/// each column's slices in order from 0, rounded once to f32. reduce_sum
/// over leading axes, the layer norms' parameter gradients and the GEMM
/// epilogues' bias gradients sum so, and a fused region's column sums
/// equal them bit for bit. `count` sums of `cols` columns each.
class ColumnSums {
public:
  ColumnSums(int64_t rows, int64_t cols, int count = 1);
  /// Sum k's partials of the slice that holds row r (cols doubles): rows
  /// of one slice must be added in order; slices may run in parallel.
  double *at(int64_t r, int k = 0) {
    return parts_.data() + ((r / sliceRows_) * count_ + k) * cols_;
  }
  /// Adds columns [c0, c1) of row r (`row` its values) into sum 0.
  void addRow(int64_t r, const float *row, int64_t c0, int64_t c1) {
    double *acc = at(r);
    for (int64_t j = c0; j < c1; ++j)
      acc[j] += static_cast<double>(row[j]);
  }
  /// Runs rows(r0, r1) for each slice's rows, the slices on the ThreadPool
  /// when `work` (element operations) is worth it.
  void forEachSlice(int64_t work,
                    const std::function<void(int64_t, int64_t)> &rows);
  /// Sum k's totals, into out[0..cols).
  void finish(int k, float *out) const;

private:
  int64_t rows_, cols_, sliceRows_, slices_;
  int count_;
  std::vector<double> parts_;
};

/// out[j] = the sum over r < rows of x[r * ld + j] (j < cols), in
/// ColumnSums' order.
void sumColumns(const float *x, int64_t rows, int64_t cols, int64_t ld,
                float *out);

// --- bf16/f16 operands (KernelsHalf.cpp) -------------------------------------
/// Whether some operand is bf16 or f16.
bool needsHalfAdapter(const KernelSig &s);
/// Runs `check` on the signature with every 16-bit operand seen as f32 (or
/// checks a float-to-float cast).
void checkAsF32(const KernelSig &s, CheckFn check);
/// The element types of a `matmul` / `matmul_epilogue` call with a 16-bit
/// operand, which the widened f32 check no longer sees (KernelsMatmul.cpp):
/// A and B share a type, D is theirs or, for a plain GEMM (matmul or a
/// bias-gradient epilogue) of 16-bit operands, f32.
void checkGemmDTypes(const KernelSig &s);

// --- Strided loop nest ------------------------------------------------------
/// Row-major element strides of `shape`, right-aligned in `rank` dims, with
/// stride 0 for size-1 and missing dims (numpy broadcasting).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      size_t rank);
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// A loop over `dims` (outer to inner) with an element stride per dim for
/// each of N operands. Size-1 dims are dropped and neighbouring dims that are
/// contiguous for every operand merged, so e.g. a bias add over [B,S,H]
/// becomes two loops, the inner one unit-stride.
template <size_t N> struct LoopNest {
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, N>> strides;

  LoopNest(const std::vector<int64_t> &shape,
           const std::array<std::vector<int64_t>, N> &operandStrides) {
    for (size_t d = 0; d < shape.size(); ++d) {
      empty = empty || shape[d] == 0;
      if (shape[d] == 1)
        continue;
      std::array<int64_t, N> st;
      for (size_t k = 0; k < N; ++k)
        st[k] = operandStrides[k][d];
      if (!dims.empty() && mergeable(st, shape[d])) {
        dims.back() *= shape[d];
        strides.back() = st;
        continue;
      }
      dims.push_back(shape[d]);
      strides.push_back(st);
    }
    if (dims.empty()) { // a single element
      dims.push_back(1);
      strides.push_back({});
    }
  }

  /// Calls f(offsets) for every index of all dims except the inner `keep`
  /// ones; offsets[k] is operand k's element offset.
  template <class F> void forEachOuter(size_t keep, F &&f) const {
    if (empty)
      return;
    size_t outer = dims.size() > keep ? dims.size() - keep : 0;
    std::array<int64_t, N> off{};
    std::vector<int64_t> idx(outer, 0);
    for (;;) {
      f(off);
      size_t d = outer;
      while (d > 0) {
        --d;
        for (size_t k = 0; k < N; ++k)
          off[k] += strides[d][k];
        if (++idx[d] < dims[d])
          break;
        for (size_t k = 0; k < N; ++k)
          off[k] -= strides[d][k] * dims[d];
        idx[d] = 0;
        if (d == 0)
          return;
      }
      if (outer == 0)
        return;
    }
  }

  int64_t innerDim() const { return dims.back(); }
  const std::array<int64_t, N> &innerStrides() const { return strides.back(); }

private:
  bool empty = false; // some dim is 0: there is nothing to visit

  bool mergeable(const std::array<int64_t, N> &inner, int64_t innerDim) const {
    for (size_t k = 0; k < N; ++k)
      if (strides.back()[k] != inner[k] * innerDim)
        return false;
    return true;
  }
};

// --- Kernels and their checks, one pair per registry entry ------------------
#define TCC_KERNEL(name)                                                       \
  void run_##name(const KernelArgs &a);                                        \
  void check_##name(const KernelSig &s);
TCC_KERNEL(matmul)
TCC_KERNEL(matmul_epilogue) // KernelsGemmEpilogue.cpp
TCC_KERNEL(binary) // add, sub, mul, div share the check
TCC_KERNEL(add)
TCC_KERNEL(sub)
TCC_KERNEL(mul)
TCC_KERNEL(div)
TCC_KERNEL(unary) // neg, relu share the check
TCC_KERNEL(neg)
TCC_KERNEL(relu)
TCC_KERNEL(relu_grad)
TCC_KERNEL(reduce)
TCC_KERNEL(reduce_sum)
TCC_KERNEL(reduce_mean)
TCC_KERNEL(broadcast_to)
TCC_KERNEL(copy)
TCC_KERNEL(transpose)
TCC_KERNEL(softmax_like) // the four softmax kernels share the check
TCC_KERNEL(softmax_grad_like)
TCC_KERNEL(softmax)
TCC_KERNEL(log_softmax)
TCC_KERNEL(softmax_grad)
TCC_KERNEL(log_softmax_grad)
TCC_KERNEL(softmax_cross_entropy)
TCC_KERNEL(softmax_cross_entropy_grad)
TCC_KERNEL(mse_loss)
TCC_KERNEL(mse_loss_grad)
TCC_KERNEL(sgd_update)
TCC_KERNEL(sgd_momentum_update)
TCC_KERNEL(adamw_update)
// Data movement (KernelsShape.cpp).
TCC_KERNEL(gather)
TCC_KERNEL(gather_grad)
TCC_KERNEL(concat)
TCC_KERNEL(slice)
TCC_KERNEL(slice_grad)
TCC_KERNEL(where)
TCC_KERNEL(equal)
TCC_KERNEL(cast)
// Convolution, pooling, batch norm (KernelsConv/Pool/BatchNorm.cpp).
TCC_KERNEL(conv2d)
TCC_KERNEL(conv2d_grad_input)
TCC_KERNEL(conv2d_grad_weight)
TCC_KERNEL(max_pool2d)
TCC_KERNEL(max_pool2d_grad)
TCC_KERNEL(avg_pool2d)
TCC_KERNEL(avg_pool2d_grad)
TCC_KERNEL(batch_norm_train)
TCC_KERNEL(batch_norm_train_grad)
// Element-wise math, GELU, dropout (KernelsMath.cpp), layer norm
// (KernelsNorm.cpp).
TCC_KERNEL(unary_grad) // the [dy, v] -> dx gradients share the check
TCC_KERNEL(exp)
TCC_KERNEL(log)
TCC_KERNEL(sqrt)
TCC_KERNEL(tanh)
TCC_KERNEL(sigmoid)
TCC_KERNEL(erf)
TCC_KERNEL(sqrt_grad)
TCC_KERNEL(tanh_grad)
TCC_KERNEL(sigmoid_grad)
TCC_KERNEL(erf_grad)
TCC_KERNEL(pow)
TCC_KERNEL(pow_grad)
TCC_KERNEL(pow_scalar)
TCC_KERNEL(pow_scalar_grad)
TCC_KERNEL(gelu)
TCC_KERNEL(gelu_grad)
TCC_KERNEL(dropout)
TCC_KERNEL(increment)
TCC_KERNEL(layer_norm)
TCC_KERNEL(layer_norm_grad)
TCC_KERNEL(layer_norm_param_grad)
// Generated kernels (FusedLibrary.cpp).
TCC_KERNEL(fused)
// Fused attention (KernelsAttention.cpp); bf16/f16 handled natively.
TCC_KERNEL(attention)
TCC_KERNEL(attention_grad)
#undef TCC_KERNEL

} // namespace tcc::rt::kernels

#endif // TCC_RUNTIME_CPU_KERNELSINTERNAL_H
