//===- Kernels.h - The kernel ABI: operands, checks, aliasing -*- C++ -*-===//
//
// The kernel ABI every backend implements: an Instr names a kernel of
// runtime/core/abi/KernelList.def, lists its operands by tensor id and
// carries its attributes as two flat lists, integers (i) and doubles (f),
// laid out as the kernel's struct in KernelAttrs.h says (read them with
// abi::attrs<KernelId::X>(instr), write them with abi::setAttrs). Operand
// conventions (f32 unless noted; "in-place" kernels allow an output to
// alias an input of the same element count):
//
//   matmul            in [A,B] out [C], i [transA, transB]. A [...,M,K]
//                     ([...,K,M] if transA), B [...,K,N] ([...,N,K] if
//                     transB), C [...,M,N]; batch dims broadcast to C's.
//   matmul_epilogue   in [A, B (, bias [N] | preact)] out [D (, aux)],
//                     i [transA, transB, epilogue]: a GEMM with a fused
//                     epilogue (codes and formulas in GemmEpilogue.h). A
//                     [...,M,K] (rows flatten, not transposed) and B 2-D,
//                     or both 2-D for bgrad_lhs/bgrad_rhs.
//   add sub mul div   in [a,b] out [c]; a, b broadcast (numpy) to c. in-place
//   neg relu          in [x] out [y]. in-place
//   relu_grad         in [dy,x] out [dx] = x > 0 ? dy : 0. in-place
//   reduce_sum        in [x] out [y], i = reduced axes of x (sorted, >= 0);
//   reduce_mean       y keeps x's order of the other axes.
//   global_norm       in [x0, x1, ...] (>= 1) out [n []] = sqrt(sum of x*x
//                     over every element of every input), summed in f64 in
//                     a fixed order (gradient clipping's global norm).
//   all_reduce        in [g0, g1, ...] (>= 1, f32) out [], i [bucket]:
//                     starts averaging the gradients over the ranks of a
//                     data-parallel run, in place (Comm.h's buckets); they
//                     are neither read nor written until
//   all_reduce_wait   in [g0, g1, ...] out [], i [bucket]: returns once
//                     the bucket is averaged (the compiler puts it before
//                     the first reader). Both do nothing in one process.
//   reduce_scatter    in [g0, g1, ...] (>= 1, f32) out [s0, s1, ...],
//                     i [shards, bucket]: s_k = this rank's shard of g_k
//                     (1-D, ceil(n_k / shards) elements, zero past n_k)
//                     averaged over the ranks; one collective, started
//                     (the inputs are packed before it returns) and
//                     written on the communicator's thread: the outputs
//                     are neither read nor written until shard_wait
//                     (runtime/core/ZeroShards.h: layout, rank check).
//   shard_slice       in [x] out [s], i [shards, 0]: this rank's shard of x.
//   all_gather        in [s0, s1, ...] out [x0, x1, ...], i [shards,
//                     bucket]: x_k = every rank's shard s_k, in rank order,
//                     padding dropped; one collective for the bucket,
//                     started as reduce_scatter's.
//   shard_wait        in [x0, x1, ...] (the bucket's outputs) out [], i
//                     [shards, bucket]: returns once the reduce_scatter or
//                     all_gather bucket is written. The four need a run of
//                     exactly `shards` ranks (sharded optimizer state, tcc
//                     compile --zero-shards).
//   sharded_global_norm  in [s0, s1, ...] (>= 1, 1-D) out [n []], i [shards,
//                     0]: global_norm of the tensors whose shards these are,
//                     every rank holding its own: this rank's f64 sum of
//                     squares, all-gathered, added in rank order, sqrt.
//   reduce_prod       in [x] out [y], i = reduced axes (as reduce_sum).
//   reduce_prod_grad  in [dy, x] out [dx], i = reduced axes: dy times the
//                     product of the other elements of x's group.
//   cumsum            in [x] out [y], i [axis, exclusive, reverse]: the
//                     running sum along axis.
//   broadcast_to      in [x] out [y], numpy broadcast.
//   copy              in [x] out [y], same element count, f32 or i64. in-place
//   transpose         in [x] out [y], i = perm, y.shape[i] = x.shape[perm[i]].
//   softmax           in [x] out [y], i [axis].
//   log_softmax       in [x] out [y], i [axis].
//   softmax_grad      in [dy,y] out [dx], i [axis]: y * (dy - sum(dy*y)).
//   log_softmax_grad  in [dy,y] out [dx], i [axis]: dy - exp(y) * sum(dy).
//   softmax_cross_entropy       in [logits [...,C], labels i64 [...]]
//                               out [loss []]: mean -log_softmax[label].
//   softmax_cross_entropy_grad  in [dloss [], logits, labels] out [dlogits].
//   linear_cross_entropy       in [hidden [...,D], weight [D,V] ([V,D] with
//                              transpose_weight), labels i64 [...]
//                              (, bias [V])] out [loss [], lse [...]]: the
//                              softmax_cross_entropy of hidden op(weight) +
//                              bias without storing the logits (vocabulary
//                              slices of `block` columns), lse = each row's
//                              log-sum-exp; LinearCrossEntropyAttrs.
//   linear_cross_entropy_grad  in [dloss [] (per counted position), hidden,
//                              weight, labels, lse (, bias)] out [dhidden,
//                              dweight (, dbias)], logits recomputed.
//   mse_loss          in [pred,target] out [loss []] = mean((pred-target)^2).
//   mse_loss_grad     in [dloss [],pred,target] out [dpred].
//   The optimizer updates read the learning rate `lr` (f32 []) from memory:
//   the train loop may change it between steps (CUDA graphs replay the
//   launches, so it cannot be a launch argument).
//   sgd_update        in [p,g,lr []] out [p'], f [wd]. in-place
//   sgd_momentum_update  in [p,g,buf,lr []] out [p',buf'], f [momentum, wd],
//                        i [nesterov]; torch.optim.SGD. in-place
//   lion_update       in [p,g,m,lr []] out [p',m'], f [beta1, beta2, wd];
//                     Lion (Chen et al. 2023). in-place
//   adafactor_update  in [p,g,step [],lr [],row,col] out [p',row',col']
//                     (rank >= 2: row/col are p's shape with the last /
//                     second-to-last dimension 1), or in [p,g,step,lr,v]
//                     out [p',v'] (rank < 2: v like p);
//                     f [beta2_decay, eps1, eps2, d, wd];
//                     torch.optim.Adafactor. in-place
//   adamw_update      in [p,g,m,v,step [],lr [] (, inv [], finite [] i64)]
//                     out [p',m',v' (, low)],
//                     f [beta1, beta2, eps, wd], i [l2_decay];
//                     torch.optim.AdamW (l2_decay: torch.optim.Adam).
//                     in-place. The optional `low` (bf16/f16) receives p'
//                     rounded to nearest-even (tcc-shadow-weights). With
//                     `inv` and `finite` (fp16 loss scaling) the gradient
//                     is g * inv, and finite == 0 leaves every output its
//                     old value (low: p rounded).
//
// Data movement (f32 or i64 unless noted; bools are i64 0/1):
//   gather            in [data, indices i64] out [y], i [axis >= 0]:
//                     y = data[:axis] + indices + data[axis+1:]; an index
//                     outside [-n, n) is a run-time Error.
//   gather_grad       in [dy f32, indices i64] out [dx f32], i [axis]: zeros
//                     with each dy slice added at its index (dx is `data`).
//   concat            in [x0, x1, ...] out [y], i [axis >= 0].
//   gather_elements   in [data, indices i64] out [y], i [axis]: y has the
//                     indices' shape (same rank, <= data's off axis),
//                     y[i] = data[i with i[axis] = indices[i]].
//   scatter_elements  in [data, indices i64, updates] out [y], i [axis,
//                     reduction]: y = data with updates[i] put (or added,
//                     multiplied, max'd, min'd: f32/i64 only) at i with
//                     i[axis] = indices[i], in index order.
//   gather_nd         in [data, indices i64] out [y], i [batch_dims b]:
//                     tuples in indices' last dim index data dims [b, b+m).
//   scatter_nd        in [data, indices i64, updates] out [y], i [b,
//                     reduction]: the inverse of gather_nd, in index order.
//   top_k             in [x f32/i64] out [indices i64], i [axis, largest]:
//                     sorted, ties by lower index, NaN largest.
//   (indices outside [-n, n) of these are run-time Errors, as gather's.)
//   slice             in [x] out [y], i = starts ++ steps (one per dim of x):
//                     y[i] = x[starts + i * steps]; y's shape is the window.
//   slice_grad        in [dy f32] out [dx f32], i = starts ++ steps of dx:
//                     zeros with dy written into the window.
//   where             in [cond i64, a, b] out [y] = cond ? a : b, numpy
//                     broadcast. in-place
//   equal             in [a, b] out [y i64] = a == b, numpy broadcast.
//   cast              in [x] out [y], i [to_bool]: f32 <-> i64 (truncating,
//                     NaN -> 0, saturating); to_bool: y = x != 0.
//
// bf16 / f16: any kernel takes 16-bit float tensors wherever it takes f32
// ones; it computes in f32 and rounds its 16-bit outputs once (the CPU:
// runtime/cpu/KernelsHalf.cpp; attention, adamw_update, copy and fused
// handle 16-bit operands themselves, handlesHalf in KernelCheck.h).
// `cast` also converts between f32, bf16 and f16 (to_bool 0).
//
// Convolution, pooling, batch norm (NCHW; pads are [top, left, bottom,
// right]; window geometry as in dialects/tcc/TccOpsConv.td):
//   conv2d            in [x [N,C,H,W], w [O,C/g,kH,kW] (, bias [O])] out [y],
//                     i [sH, sW, pT, pL, pB, pR, dH, dW, groups].
//   conv2d_grad_input   in [dy, w] out [dx], i as conv2d.
//   conv2d_grad_weight  in [dy, x] out [dw], i as conv2d. The conv kernels
//                     unfold into per-thread scratch outside the arena.
//   max_pool2d        in [x] out [y, indices i64 (h * W + w in the plane)],
//                     i [kH, kW, sH, sW, pT, pL, pB, pR, dH, dW, ceil_mode].
//   max_pool2d_grad   in [dy, indices] out [dx]; an index outside the plane
//                     is a run-time Error.
//   avg_pool2d        in [x] out [y], i as max_pool2d (dilations 1) and
//                     count_include_pad.
//   avg_pool2d_grad   in [dy] out [dx], i as avg_pool2d.
//   batch_norm_train  in [x [N,C,...], scale, bias] out [y, mean, var
//                     (population)], f [eps].
//   batch_norm_train_grad  in [dy, x, scale, mean, var]
//                     out [dx, dscale, dbias], f [eps].
//
// Math, normalization, dropout (f32 unless noted; all element-wise ones are
// in-place; PyTorch's formulas):
//   exp log sqrt tanh sigmoid erf   in [x] out [y].
//   sqrt_grad tanh_grad sigmoid_grad  in [dy, y] out [dx] (y: the output).
//   erf_grad          in [dy, x] out [dx] (x: the input).
//   pow               in [a, b] out [c] = a^b, numpy broadcast.
//   pow_grad          in [dy, a, b] out [da, db], all of one shape.
//   pow_scalar        in [x] out [y], f [exponent].
//   pow_scalar_grad   in [dy, x] out [dx], f [exponent].
//   unary_fn          in [x] out [y], i [fn] f [alpha, beta]: the function
//                     of runtime/core/prelude/UnaryFn.h's list numbered fn.
//   unary_fn_grad     in [dy, x] out [dx], i [fn] f [alpha, beta].
//   gelu, gelu_grad   in [x] / [dy, x] out [y] / [dx], i [approximate: 0 erf,
//                     1 tanh].
//   layer_norm        in [x, scale, bias] out [y, mean, rstd], i [axis],
//                     f [eps]: rows are x's dims before axis; scale and bias
//                     have the element count of the rest, mean and rstd one
//                     element per row. Not in-place.
//   layer_norm_grad   in [dy, x, scale, mean, rstd] out [dx, dscale, dbias],
//                     i [axis]. Not in-place.
//   layer_norm_param_grad in [dy, x, mean, rstd] out [dscale, dbias],
//                     i [axis]: layer_norm_grad's column sums alone.
//   dropout           in [x, step i64 []] out [y, mask], i [seed],
//                     f [ratio]: mask = 0 or 1/(1-ratio) from a counter-based
//                     hash of (seed, step, index); y = x * mask.
//   increment         in [s i64 []] out [s + 1].
//
// Fused attention (tcc.attention's semantics; the CPU kernel:
// runtime/cpu/KernelsAttention.cpp). q
// [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv], equal batch dims (rank >=
// 3), or with seq_major q [B..., Tq, H, D], k [B..., Tk, H, D], v [B..., Tk,
// H, Dv] whose batch entries are (B..., H) (runtime/core/AttentionPlan.h);
// q, k, v, out, dout and the gradients share one float type and layout, lse
// [entries..., Tq] and mask are f32. The mask (rank 2 or lse's + 1)
// broadcasts to [entries..., Tq, Tk]: batch dims all 1 or the entries',
// each of the last two 1 or full. 16-bit: P and dS are rounded to the type
// before their GEMMs. With fused_qkv (i[2], sequence-major only) q, k and v
// are one tensor [B..., T, 3H, D] (the same id thrice) read as its thirds,
// and attention_grad writes one gradient of that shape. Not in-place.
//   attention         in [q, k, v (, mask)] out [out, lse], i [causal,
//                     seq_major (, fused_qkv)], f [scale]: out =
//                     softmax(scale q k^T + mask) v, keys j > i masked when
//                     causal; lse = the rows' logsumexp.
//   attention_grad    in [q, k, v, out, lse, dout (, mask)] out [dq, dk, dv]
//                     (fused_qkv: [dqkv] or [dqkv, sums]), i [causal,
//                     seq_major (, fused_qkv)], f [scale]: P recomputed
//                     from lse; sums (f32 [3HD]): dqkv's column sums over
//                     every leading axis, added as reduce_sum adds them
//                     (the CUDA kernels: runtime/core/AttentionColumnSums.h).
//
// Generated kernels (runtime/core/abi/FusedAbi.h):
//   fused             in [...] out [...], i [kernel, in_place...]: kernel
//                     `kernel` of the artifact's generated code (the host
//                     library or the GPU code), rows split across threads.
//                     Operands are checked against the code's signature
//                     table. Only the (output, input) pairs listed after
//                     the index (and allowed by that table) run in place.
//
// checkInstr validates an Instr against these conventions once (the
// attribute counts from KernelAttrs.h, then the kernel's check in
// runtime/core/abi/Check*.cpp), so every backend's kernels index their
// operands and read their attributes without further checks.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_KERNELS_H
#define TCC_RUNTIME_CORE_ABI_KERNELS_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/KernelAbi.h"

#include <string>
#include <utility>
#include <vector>

namespace tcc::rt {

/// One operand of a kernel call: a buffer (host or device memory, as the
/// backend runs it) and the static type it holds.
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  const std::vector<int64_t> *shape = nullptr;
  int64_t numel = 0;

  float *f32() const { return static_cast<float *>(data); }
  int64_t *i64() const { return static_cast<int64_t *>(data); }
  size_t rank() const { return shape->size(); }
  int64_t dim(size_t i) const { return (*shape)[i]; }
};

/// Every kernel name, sorted (KernelList.def).
std::vector<std::string> kernelNames();
/// Whether `name` is element-wise, i.e. an output may alias an input with the
/// same element count (in-place update). False for unknown names.
bool kernelAllowsInPlace(const std::string &name);
/// Whether output `output` of `instr` may be the same bytes as input
/// `input`: any pair of an element-wise kernel, or a pair a `fused` instr
/// lists after its kernel index (FusedAttrs::inPlace; the generated
/// kernel's table must allow it, checkFusedOperands).
bool instrAllowsInPlace(const Instr &instr, size_t output, size_t input);
/// Whether `instr` is a `slice` whose output is its input's first bytes:
/// zero starts, unit steps, every axis but the first whole (a padded
/// leading axis cut back, as a padded vocabulary's weight gradient is). The
/// output may then be placed at its input's offset (a view; checkAliasing),
/// and the kernel copies the output's bytes unless the two are the same.
/// `in` and `out` are the operands' shapes.
bool isPrefixSlice(const Instr &instr, const std::vector<int64_t> &in,
                   const std::vector<int64_t> &out);
/// Whether the window that a slice or slice_grad's attributes (WindowAttrs)
/// select in `full` is its first elements, as isPrefixSlice describes;
/// `window` is the window's shape.
bool isPrefixWindow(const Instr &instr, const std::vector<int64_t> &full,
                    const std::vector<int64_t> &window);
/// The (output, input) pairs a `fused` instr lists after its kernel index
/// (FusedAttrs::inPlace); none for other kernels.
std::vector<std::pair<int64_t, int64_t>> fusedInPlacePairs(const Instr &instr);

/// Kernel scratch outside the arenas (buffers a kernel keeps between calls,
/// e.g. convolution's unfolded input): kernels report every allocation and
/// release with noteKernelScratch(+/-bytes); kernelScratchBytes() is what
/// the process holds now, counted in the session's measured peak.
void noteKernelScratch(int64_t deltaBytes);
int64_t kernelScratchBytes();

/// Checks operand counts, dtypes, shapes and attributes of `instr` (tensor ids
/// index `tensors`): first the attribute counts and flags of the kernel's
/// KernelAttrs.h struct, then its own check. Throws Error saying what is
/// wrong, without naming the instr: the caller knows its program and index.
void checkInstr(const Instr &instr, const std::vector<TensorInfo> &tensors);

/// Checks where `instr`'s operands live in the static layout (own buffers,
/// arena offsets): outputs never overlap each other and overlap an input
/// only as exactly the same bytes of a pair instrAllowsInPlace accepts (each
/// element is read before it is written), or a prefix slice's output as the
/// first bytes of its input. Both the CPU and the CUDA session rely on it.
/// Throws Error like checkInstr.
void checkAliasing(const Instr &instr, const std::vector<TensorInfo> &tensors);

/// Converts n elements of a float tensor of type `t` (f32, bf16, f16) to or
/// from f32, rounding to nearest-even (runtime/core/prelude/Half.h).
void widenToF32(const void *src, DType t, float *dst, int64_t n);
void narrowFromF32(const float *src, DType t, void *dst, int64_t n);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ABI_KERNELS_H
