//===- KernelsInternal.h - Shared by the CPU kernel files -------*- C++ -*-===//
//
// Not part of the runtime's interface: the run function of every kernel
// (the table in Kernels.cpp collects them), the column sums several kernels
// add in one order, and the ABI's shape math the loops use (LoopNest.h).
// The checks that make these loops safe are the ABI's (runtime/core/abi/
// KernelCheck.h); a kernel reads its attributes as abi::attrs<Id>(instr).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_KERNELSINTERNAL_H
#define TCC_RUNTIME_CPU_KERNELSINTERNAL_H

#include "runtime/core/abi/KernelAbi.h"
#include "runtime/core/abi/LoopNest.h"
#include "runtime/cpu/Kernels.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace tcc::rt::kernels {

using abi::broadcastStrides;
using abi::contiguousStrides;
using abi::KernelId;
using abi::LoopNest;
using abi::normalizeAxis;

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

/// The sum of x * x over every element of every input, in f64, in a fixed
/// order (global_norm's, whatever the thread count; KernelsReduce.cpp).
double sumOfSquares(const std::vector<TensorView> &in);

/// out[j] = the sum over r < rows of x[r * ld + j] (j < cols), in
/// ColumnSums' order.
void sumColumns(const float *x, int64_t rows, int64_t cols, int64_t ld,
                float *out);

// --- Kernels, one per entry of the table in Kernels.cpp --------------------
#define TCC_KERNEL(name) void run_##name(const KernelArgs &a);
TCC_KERNEL(matmul)
TCC_KERNEL(matmul_epilogue) // KernelsGemmEpilogue.cpp
TCC_KERNEL(add)
TCC_KERNEL(sub)
TCC_KERNEL(mul)
TCC_KERNEL(div)
TCC_KERNEL(neg)
TCC_KERNEL(relu)
TCC_KERNEL(relu_grad)
TCC_KERNEL(reduce_sum)
TCC_KERNEL(global_norm) // KernelsReduce.cpp
TCC_KERNEL(all_reduce) // KernelsComm.cpp
TCC_KERNEL(all_reduce_wait)
TCC_KERNEL(reduce_scatter) // KernelsShard.cpp
TCC_KERNEL(shard_slice)
TCC_KERNEL(all_gather)
TCC_KERNEL(shard_wait)
TCC_KERNEL(sharded_global_norm)
TCC_KERNEL(reduce_mean)
TCC_KERNEL(reduce_prod)
TCC_KERNEL(reduce_prod_grad)
TCC_KERNEL(cumsum)
TCC_KERNEL(broadcast_to)
TCC_KERNEL(copy)
TCC_KERNEL(transpose)
TCC_KERNEL(softmax)
TCC_KERNEL(log_softmax)
TCC_KERNEL(softmax_grad)
TCC_KERNEL(log_softmax_grad)
TCC_KERNEL(softmax_cross_entropy)
TCC_KERNEL(softmax_cross_entropy_grad)
TCC_KERNEL(linear_cross_entropy) // KernelsLinearCrossEntropy.cpp
TCC_KERNEL(linear_cross_entropy_grad)
TCC_KERNEL(mse_loss)
TCC_KERNEL(mse_loss_grad)
TCC_KERNEL(sgd_update)
TCC_KERNEL(sgd_momentum_update)
TCC_KERNEL(lion_update)
TCC_KERNEL(adafactor_update)
TCC_KERNEL(adamw_update)
// Data movement (KernelsShape.cpp).
TCC_KERNEL(gather)
TCC_KERNEL(gather_grad)
TCC_KERNEL(concat)
TCC_KERNEL(slice)
TCC_KERNEL(slice_grad)
TCC_KERNEL(where)
TCC_KERNEL(cast)
// Indexing by data (KernelsIndex.cpp).
TCC_KERNEL(gather_elements)
TCC_KERNEL(scatter_elements)
TCC_KERNEL(gather_nd)
TCC_KERNEL(scatter_nd)
TCC_KERNEL(top_k)
// Comparisons, logic, extrema (KernelsLogic.cpp).
TCC_KERNEL(compare)
TCC_KERNEL(logic)
TCC_KERNEL(maximum)
TCC_KERNEL(minimum)
TCC_KERNEL(mod)
TCC_KERNEL(reduce_max)
TCC_KERNEL(reduce_min)
TCC_KERNEL(arg_max)
TCC_KERNEL(arg_min)
// Convolution, pooling, batch norm (KernelsConv/Pool/BatchNorm.cpp; the
// convolutions on oneDNN where it takes them, CnnPath.h).
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
TCC_KERNEL(unary_fn)      // KernelsUnaryFn.cpp
TCC_KERNEL(unary_fn_grad) // KernelsUnaryFn.cpp
TCC_KERNEL(random)
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
