//===- Kernels.h - CPU kernels and their registry -------------------------===//
//
// A kernel is looked up by the name an Instr carries. Operand conventions
// (f32 unless noted; "in-place" kernels allow an output to alias an input of
// the same element count):
//
//   matmul            in [A,B] out [C], i [transA, transB]. A [...,M,K]
//                     ([...,K,M] if transA), B [...,K,N] ([...,N,K] if
//                     transB), C [...,M,N]; batch dims broadcast to C's.
//   add sub mul div   in [a,b] out [c]; a, b broadcast (numpy) to c. in-place
//   neg relu          in [x] out [y]. in-place
//   relu_grad         in [dy,x] out [dx] = x > 0 ? dy : 0. in-place
//   reduce_sum        in [x] out [y], i = reduced axes of x (sorted, >= 0);
//   reduce_mean       y keeps x's order of the other axes.
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
//   mse_loss          in [pred,target] out [loss []] = mean((pred-target)^2).
//   mse_loss_grad     in [dloss [],pred,target] out [dpred].
//   sgd_update        in [p,g] out [p'], f [lr, wd]. in-place
//   sgd_momentum_update  in [p,g,buf] out [p',buf'], f [lr, momentum, wd].
//                        in-place
//   adamw_update      in [p,g,m,v,step []] out [p',m',v'],
//                     f [lr, beta1, beta2, eps, wd]; torch.optim.AdamW.
//                     in-place
//
// checkInstr validates an Instr against these conventions once, so kernels
// can index their operands without further checks.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_KERNELS_H
#define TCC_RUNTIME_CPU_KERNELS_H

#include "runtime/core/Artifact.h"

#include <string>
#include <vector>

namespace tcc::rt {

/// One operand of a kernel call: a buffer and the static type it holds.
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

struct KernelArgs {
  const Instr &instr;
  std::vector<TensorView> in, out;
};

using KernelFn = void (*)(const KernelArgs &);

/// The kernel registered under `name`, or null.
const KernelFn *findKernel(const std::string &name);
/// All registered kernel names, sorted.
std::vector<std::string> kernelNames();
/// Whether `name` is element-wise, i.e. an output may alias an input with the
/// same element count (in-place update). False for unknown names.
bool kernelAllowsInPlace(const std::string &name);
/// Checks operand counts, dtypes, shapes and attributes of `instr` (tensor ids
/// index `tensors`). Throws Error saying what is wrong, without naming the
/// instr: the caller knows its program and index.
void checkInstr(const Instr &instr, const std::vector<TensorInfo> &tensors);

/// Builds views for `instr` from tensor infos and buffers (indexed by id) and
/// runs the kernel; convenient for tests and one-off calls.
void runKernel(const Instr &instr, const std::vector<TensorInfo> &tensors,
               const std::vector<void *> &buffers);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CPU_KERNELS_H
