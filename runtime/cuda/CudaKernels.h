//===- CudaKernels.h - The CUDA kernel table --------------------*- C++ -*-===//
//
// How the GPU runs the kernel ABI of runtime/core/abi/Kernels.h: one entry
// per kernel of KernelList.def, a launcher or none. Every launcher computes
// exactly what the CPU kernel of that name computes (same operand
// conventions; f32 arithmetic; 16-bit float operands widened on load and
// rounded once on store, as the CPU's KernelsHalf.cpp does), enqueued on the
// session's stream. CudaSession looks every instr's kernel up at
// construction; a kernel without a launcher (the convolutions in a build
// without cuDNN) is an Error there, never a silent fallback to the CPU.
//
// Files: CudaKernelsElementwise.cu (unary/binary math, where, cast,
// dropout), CudaKernelsLayout.cu (transpose, broadcast_to, slice, gather,
// concat, reductions), CudaKernelsRows.cu (softmax family, losses, layer
// norm: one block per row), CudaKernelsOptim.cu (SGD, AdamW single and
// multi-tensor), CudaGemm.cpp (matmul, matmul_epilogue),
// CudaGemmEpilogue.cpp (matmul_epilogue's checks and fallback),
// CudaAttention.cpp + CudaKernelsAttention.cu (attention, attention_grad:
// chunked, see CudaAttention.h), CudaKernels.cpp (the table, the generated
// `fused` kernels).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAKERNELS_H
#define TCC_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/Kernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

class CudaBuckets;
class CudaGemm;
class CudnnConv;

/// One generated kernel of the artifact's cubin, resolved at load.
struct FusedHandle {
  cudaKernel_t fn = nullptr, fin = nullptr;
  const DeviceKernel *info = nullptr;
};

/// Everything a launcher gets. Views hold device pointers.
struct CudaArgs {
  const Instr &instr;
  std::vector<TensorView> in, out;
  cudaStream_t stream = nullptr;
  /// This instr's 4 device words for data errors (kernels whose ErrKind is
  /// not None): {position, value, bound, flag}; flag 0 means no error.
  long long *err = nullptr;
  /// Device scratch of at least the bytes `prepare` asked for; shared by
  /// all instrs (they run in stream order).
  void *scratch = nullptr;
  int smCount = 1;
  CudaGemm *gemm = nullptr;                        // matmul
  const std::vector<FusedHandle> *fused = nullptr; // fused
  const CudnnConv *conv = nullptr; // conv2d and its gradients (cuDNN)
  /// all_reduce, all_reduce_wait: the session's NCCL buckets, or null when
  /// there is nothing to average (one rank).
  CudaBuckets *buckets = nullptr;
  /// The session's data-parallel rank (SessionOptions::rank): dropout's
  /// element indices start at rank * its element count. A host argument,
  /// fixed for the session's life, so captured graphs stay valid.
  int64_t rank = 0;
};

using CudaLaunchFn = void (*)(const CudaArgs &);
/// Called once per instr at construction, after checkInstr: throws Error
/// when the CUDA kernel does not cover this case (e.g. a rank above
/// kCudaMaxRank); returns the device scratch bytes a launch needs.
using CudaPrepareFn = int64_t (*)(const Instr &,
                                  const std::vector<TensorInfo> &);

/// What err[] of a failed launch means (CudaSession words the message).
enum class CudaErrKind {
  None,
  Label, // {position, label, classes}: a label outside [0, classes)
  Index, // {position, index, size}: an index outside [-size, size)
  PoolIndex, // {position, index, plane size}: a max_pool2d_grad index
             // outside its plane (a corrupted artifact)
};

struct CudaKernelDef {
  abi::KernelId id;
  CudaLaunchFn launch;   // null: no CUDA kernel (run it on the CPU)
  CudaPrepareFn prepare; // null: always supported, no scratch
  CudaErrKind err;
};

/// The CUDA kernel of the kernel named `name`, or null: an unknown name or
/// a kernel the GPU does not run.
const CudaKernelDef *findCudaKernel(const std::string &name);
/// The names of the kernels the GPU runs, sorted.
std::vector<std::string> cudaKernelNames();
/// Why the GPU does not run kernel `name`, in a user's words (for a kernel
/// findCudaKernel has none of).
std::string cudaKernelMissing(const std::string &name);

/// Strided kernels index with up to this many (merged) dimensions.
constexpr int kCudaMaxRank = 8;

/// Grid for a grid-stride loop over n items with `block` threads: enough
/// blocks to fill the GPU, never 0.
unsigned gridFor(int64_t n, int block, int smCount);

// --- Launchers, one per table entry (defined in the .cu files) -----------
#define TCC_CUDA_KERNEL(name) void launch_##name(const CudaArgs &a);
// CudaKernelsElementwise.cu
TCC_CUDA_KERNEL(unary) // neg relu exp log sqrt tanh sigmoid erf gelu pow_scalar
TCC_CUDA_KERNEL(unary_grad) // relu/sqrt/tanh/sigmoid/erf/gelu/pow_scalar grads
TCC_CUDA_KERNEL(binary)     // add sub mul div pow
TCC_CUDA_KERNEL(unary_fn)   // runtime/core/prelude/UnaryFn.h
TCC_CUDA_KERNEL(unary_fn_grad)
TCC_CUDA_KERNEL(pow_grad)
TCC_CUDA_KERNEL(where)
TCC_CUDA_KERNEL(cast)
TCC_CUDA_KERNEL(random)
TCC_CUDA_KERNEL(dropout)
TCC_CUDA_KERNEL(increment)
// CudaKernelsLogic.cu
TCC_CUDA_KERNEL(compare)
TCC_CUDA_KERNEL(logic)
TCC_CUDA_KERNEL(maximum)
TCC_CUDA_KERNEL(minimum)
TCC_CUDA_KERNEL(mod)
TCC_CUDA_KERNEL(reduce_extremum) // reduce_max, reduce_min
TCC_CUDA_KERNEL(arg_extremum)    // arg_max, arg_min
TCC_CUDA_KERNEL(reduce_prod)
TCC_CUDA_KERNEL(reduce_prod_grad)
TCC_CUDA_KERNEL(cumsum)
// CudaKernelsIndex.cu
TCC_CUDA_KERNEL(gather_elements)
TCC_CUDA_KERNEL(scatter_elements)
TCC_CUDA_KERNEL(gather_nd)
TCC_CUDA_KERNEL(scatter_nd)
TCC_CUDA_KERNEL(top_k)
// CudaComm.cpp
TCC_CUDA_KERNEL(all_reduce) // all_reduce, all_reduce_wait
// CudaShard.cpp
TCC_CUDA_KERNEL(shard) // reduce_scatter, shard_slice, all_gather
TCC_CUDA_KERNEL(shard_wait)
TCC_CUDA_KERNEL(sharded_global_norm)
// CudaKernelsLayout.cu
TCC_CUDA_KERNEL(copy)
TCC_CUDA_KERNEL(transpose)
TCC_CUDA_KERNEL(broadcast_to)
TCC_CUDA_KERNEL(slice)
TCC_CUDA_KERNEL(slice_grad)
TCC_CUDA_KERNEL(gather)
TCC_CUDA_KERNEL(gather_grad)
TCC_CUDA_KERNEL(concat)
TCC_CUDA_KERNEL(global_norm)
TCC_CUDA_KERNEL(reduce) // reduce_sum, reduce_mean
// CudaKernelsBatchNorm.cu
TCC_CUDA_KERNEL(batch_norm_train)
TCC_CUDA_KERNEL(batch_norm_train_grad)
// CudaKernelsPool.cu
TCC_CUDA_KERNEL(max_pool2d)
TCC_CUDA_KERNEL(max_pool2d_grad)
TCC_CUDA_KERNEL(avg_pool2d)
TCC_CUDA_KERNEL(avg_pool2d_grad)
// CudaKernelsRows.cu
TCC_CUDA_KERNEL(softmax)      // softmax, log_softmax
TCC_CUDA_KERNEL(softmax_grad) // softmax_grad, log_softmax_grad
TCC_CUDA_KERNEL(softmax_cross_entropy)
TCC_CUDA_KERNEL(softmax_cross_entropy_grad)
TCC_CUDA_KERNEL(mse_loss)
// CudaLinearCrossEntropy.cu (cuBLASLt GEMMs per vocabulary slice)
TCC_CUDA_KERNEL(linear_cross_entropy)
TCC_CUDA_KERNEL(linear_cross_entropy_grad)
TCC_CUDA_KERNEL(mse_loss_grad)
TCC_CUDA_KERNEL(layer_norm)
TCC_CUDA_KERNEL(layer_norm_grad)
TCC_CUDA_KERNEL(layer_norm_param_grad)
// CudaKernelsOptim.cu
TCC_CUDA_KERNEL(sgd_update)
TCC_CUDA_KERNEL(sgd_momentum_update)
TCC_CUDA_KERNEL(lion_update)
TCC_CUDA_KERNEL(adafactor_update)
TCC_CUDA_KERNEL(adamw_update)
// CudaAttention.cpp (chunk loops) and CudaKernelsAttention.cu (row passes)
TCC_CUDA_KERNEL(attention)
TCC_CUDA_KERNEL(attention_grad)
// CudnnConv.cpp: conv2d, conv2d_grad_input, conv2d_grad_weight by cuDNN
TCC_CUDA_KERNEL(conv)
// CudaGemm.cpp, CudaKernels.cpp
TCC_CUDA_KERNEL(matmul)
TCC_CUDA_KERNEL(matmul_epilogue) // cuBLASLt epilogue, else the fallback
TCC_CUDA_KERNEL(fused)
#undef TCC_CUDA_KERNEL
/// matmul_epilogue after a plain GEMM wrote op(A) op(B) into D: the
/// epilogue by the table's kernels (CudaGemmEpilogue.cpp).
void epilogueFallback(const CudaArgs &a);
/// Its bias gradient alone (a sum of A, B or D), when the GEMM ran with an
/// epilogue that left it out (CudaGemm.cpp: DGELU without BGRAD).
void epilogueBiasGrad(const CudaArgs &a);
/// TCC_CUDA_DGELU_BGRAD's value: unset, empty or 'split' (cuBLASLt's DGELU
/// epilogue, then the bias gradient as a column sum: true) or 'fused' (one
/// DGELU_BGRAD epilogue: false); anything else throws Error naming it.
bool dgeluBgradSplit(const char *value);

/// How a weight gradient's bias gradient (bgrad_lhs / bgrad_rhs) runs.
enum class BiasGradWay {
  /// Where the line pays (onesLineFor), the GEMM computes the sums: the
  /// operand not summed gains a line of ones, the product one more row or
  /// column; elsewhere Split. The default.
  Line,
  Split, ///< a plain GEMM, then the summed operand's column sum
  Fused, ///< cuBLASLt's BGRADA / BGRADB epilogue
};
/// TCC_CUDA_BGRAD's value: unset, empty or 'line' (Line), 'split' (Split)
/// or 'fused' (Fused); anything else throws Error naming it.
BiasGradWay biasGradWay(const char *value);
/// TCC_CUDA_BGRAD's way (read once).
BiasGradWay biasGradWayOfEnvironment();

/// A weight gradient D [m, n] = op(A) [m, k] op(B) [k, n] whose bias
/// gradient the GEMM computes itself. bgrad_lhs sums op(A) over k (m
/// sums): op(B) gains columns, the first of them ones and the rest zeros,
/// to n + extra (a multiple of 8, so rows stay 16-byte aligned), and the
/// product [m, n + extra] holds the sums in column n. bgrad_rhs sums op(B)
/// (n sums): op(A) gains rows to m + extra, the product [m + extra, n]
/// holds them in row m. The widened operand and the product live in the
/// instr's scratch. The GEMM's sums are in f32 like the column sum's; D
/// and the sums share a type (the sums are D's words).
struct OnesLine {
  bool lhs = true;
  int64_t m = 0, n = 0, k = 0, extra = 0;
  DType ab = DType::F32, d = DType::F32;
  /// The widened operand's stored shape (op(B) or op(A) as stored:
  /// transposed ones gain columns where the others gain rows).
  int64_t wRows = 0, wCols = 0;
  /// Bytes of the widened operand in the scratch (rounded up to 256) and of
  /// the product after it.
  int64_t widenedBytes = 0, productBytes = 0;
};
/// The line for a matmul_epilogue of code `epilogue`, transposes ta / tb
/// and these shapes and types, when `way` is Line and it moves fewer bytes
/// than the column sum it replaces (it copies the other operand and the
/// product once more: GPT-2's LM head, whose summed operand is 6.6 GB at
/// batch 64, and not its other weight gradients); else none.
std::optional<OnesLine>
onesLineFor(int64_t epilogue, bool ta, bool tb, const std::vector<int64_t> &a,
            const std::vector<int64_t> &b, const std::vector<int64_t> &d,
            DType ab, DType dType, DType sumType, BiasGradWay way);
/// The weight gradient and its sums by the line: widens the operand, runs
/// `gemm` (a plain GEMM of op(A) op(B) into the product, given as views),
/// then splits the product into out[0] and out[1].
using PlainGemm = std::function<void(const TensorView &, const TensorView &,
                                     const TensorView &, bool, bool)>;
void biasGradByOnesLine(const CudaArgs &a, const OnesLine &line,
                        const PlainGemm &gemm);
/// matmul_epilogue `a` by the line when onesLineFor (with TCC_CUDA_BGRAD's
/// way) gives one for its operands: true, having run it; else false,
/// having run nothing.
bool runByOnesLine(const CudaArgs &a, const PlainGemm &gemm);
/// The copies around it (CudaKernelsOnesLine.cu), 2- or 4-byte words of
/// float type t: y [yRows, yCols] = x [rows, cols], then a line of ones
/// (column `cols` or row `rows`: one of yRows > rows, yCols > cols), then
/// zeros; and y [rows, cols] = x [xRows, xCols]'s corner, `line` its
/// column `cols` or row `rows`.
void widenWithOnes(const void *x, void *y, DType t, long long rows,
                   long long cols, long long yRows, long long yCols,
                   cudaStream_t stream, int smCount);
void splitOffLine(const void *x, void *y, void *line, DType t, long long rows,
                  long long cols, long long xRows, long long xCols,
                  cudaStream_t stream, int smCount);

// --- Scratch needs (CudaKernelsRows.cu, CudaKernelsLayout.cu) -------------
int64_t prepare_softmax_cross_entropy(const Instr &,
                                      const std::vector<TensorInfo> &);
int64_t prepare_mse_loss(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_layer_norm_grad(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_linear_cross_entropy(const Instr &,
                                     const std::vector<TensorInfo> &);
int64_t prepare_linear_cross_entropy_grad(const Instr &,
                                          const std::vector<TensorInfo> &);
int64_t prepare_gather_grad(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_adamw_update(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_global_norm(const Instr &, const std::vector<TensorInfo> &);
/// all_reduce: Error when the run has several ranks and this build has no
/// NCCL (CudaNccl.h).
int64_t prepare_all_reduce(const Instr &, const std::vector<TensorInfo> &);
/// reduce_scatter, shard_slice, all_gather, shard_wait: Error for more than one
/// shard (no device collectives yet).
int64_t prepare_shard(const Instr &, const std::vector<TensorInfo> &);
/// sharded_global_norm: global_norm's scratch at one shard, the same Error
/// as prepare_shard's for more.
int64_t prepare_sharded_global_norm(const Instr &,
                                    const std::vector<TensorInfo> &);
int64_t prepare_matmul(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_reduce(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_reduce_extremum(const Instr &, const std::vector<TensorInfo> &);
int64_t prepare_matmul_epilogue(const Instr &, const std::vector<TensorInfo> &);
/// batch_norm_train and its gradient: a channel's slice sums
/// (CudaKernelsBatchNorm.cu).
int64_t prepare_batch_norm(const Instr &, const std::vector<TensorInfo> &);
/// The convolutions: sizes cuDNN's int descriptors hold (their workspace
/// is known only on the GPU: CudnnConv::scratchBytes).
int64_t prepare_conv(const Instr &, const std::vector<TensorInfo> &);
/// attention and attention_grad: one chunk's scores (CudaAttention.h).
int64_t prepare_attention(const Instr &, const std::vector<TensorInfo> &);

// --- Multi-tensor AdamW (CudaKernelsOptim.cu) -----------------------------
/// One tensor of a multi-tensor AdamW launch: inputs p, g, m, v and outputs
/// p', m', v' (usually the same buffers), n elements, dtype codes (DType).
struct AdamEntry {
  const void *p, *g, *m, *v;
  void *pOut, *mOut, *vOut;
  long long n;
  int dtP, dtG, dtM, dtV;
  /// The new parameter rounded to dtLow (bf16/f16), or null: the copy
  /// tcc-shadow-weights keeps for the next step's GEMMs.
  void *lowOut = nullptr;
  int dtLow = 0;
  int unused = 0; // no padding bytes: tables are compared with memcmp
};
/// Block b of a multi-tensor launch updates entry `entry` from `start`.
struct AdamBlock {
  int entry;
  long long start;
};
/// Elements one block of a multi-tensor launch updates.
constexpr int64_t kAdamChunk = 4096;
/// The table entry of adamw_update instr `in` whose operands live at
/// `buffers[id]` (a fourth output sets lowOut).
inline AdamEntry adamEntry(const Instr &in, const std::vector<TensorInfo> &t,
                           const std::vector<void *> &buffers) {
  auto dtype = [&](int32_t id) { return static_cast<int>(t[id].dtype); };
  AdamEntry e{buffers[in.inputs[0]],  buffers[in.inputs[1]],
              buffers[in.inputs[2]],  buffers[in.inputs[3]],
              buffers[in.outputs[0]], buffers[in.outputs[1]],
              buffers[in.outputs[2]], t[in.inputs[0]].numElements(),
              dtype(in.inputs[0]),    dtype(in.inputs[1]),
              dtype(in.inputs[2]),    dtype(in.inputs[3])};
  if (in.outputs.size() == 4) {
    e.lowOut = buffers[in.outputs[3]];
    e.dtLow = dtype(in.outputs[3]);
  }
  return e;
}

/// fp16 loss scaling inside AdamW (the instr's inputs 6 and 7): the
/// gradient is multiplied by *inv (f32), and nothing changes when *finite
/// (a bool, i64 0/1) is 0. Both null without loss scaling.
struct AdamScaling {
  const void *inv = nullptr;
  const void *finite = nullptr;
};
inline AdamScaling adamScaling(const Instr &in,
                               const std::vector<void *> &buffers) {
  if (in.inputs.size() != 8)
    return {};
  return {buffers[in.inputs[6]], buffers[in.inputs[7]]};
}

/// Updates every entry of the device table `entries` (hyper-parameters `h`
/// of the instrs, `step` an f32-like scalar of dtype `stepDt`, `lr` the f32
/// learning rate, loss scaling `sc`), blocks as laid out in the device
/// table `blocks`.
void launchAdamwMulti(const AdamEntry *entries, const AdamBlock *blocks,
                      int64_t numBlocks, const void *step, DType stepDt,
                      const float *lr, AdamScaling sc, const abi::AdamwAttrs &h,
                      cudaStream_t stream);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAKERNELS_H
