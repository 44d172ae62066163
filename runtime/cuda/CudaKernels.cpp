//===- CudaKernels.cpp - The CUDA kernel registry and generated kernels ---===//
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/CudaCheck.h"

#include <algorithm>
#include <climits>
#include <iterator>

namespace tcc::rt::cuda {

/// The strided kernels index with at most kCudaMaxRank dims.
static int64_t prepareRank(const Instr &in, const std::vector<TensorInfo> &t) {
  for (const auto *ids : {&in.inputs, &in.outputs})
    for (int32_t id : *ids)
      if (t[id].shape.size() > static_cast<size_t>(kCudaMaxRank))
        throw Error("no CUDA kernel for rank " +
                    std::to_string(t[id].shape.size()) + " operands ('" +
                    t[id].name + "'); the CUDA kernels take rank <= " +
                    std::to_string(kCudaMaxRank));
  return 0;
}

int64_t prepare_adamw_update(const Instr &in,
                             const std::vector<TensorInfo> &t) {
  // p', m', v' are written in the dtypes of p, m, v; a fourth output (the
  // 16-bit copy of p') in its own (check_adamw_update: bf16 or f16).
  const int from[3] = {0, 2, 3};
  for (int k = 0; k < 3; ++k)
    if (t[in.outputs[k]].dtype != t[in.inputs[from[k]]].dtype)
      throw Error("the CUDA kernel writes output " + std::to_string(k) + " '" +
                  t[in.outputs[k]].name + "' in the dtype of input " +
                  std::to_string(from[k]) + " ('" +
                  dtypeName(t[in.inputs[from[k]]].dtype) + "'), not " +
                  dtypeName(t[in.outputs[k]].dtype));
  return 0;
}

using K = CudaErrKind;

// Sorted by name so lookup can binary-search. Missing on purpose (an Error
// at load, "run it on the CPU"): conv2d and its gradients, pooling, batch
// norm.
static const CudaKernelDef kCudaKernels[] = {
    {"adamw_update", launch_adamw_update, prepare_adamw_update, K::None},
    {"add", launch_binary, prepareRank, K::None},
    {"attention", launch_attention, prepare_attention, K::None},
    {"attention_grad", launch_attention_grad, prepare_attention, K::None},
    {"broadcast_to", launch_broadcast_to, prepareRank, K::None},
    {"cast", launch_cast, nullptr, K::None},
    {"concat", launch_concat, nullptr, K::None},
    {"copy", launch_copy, nullptr, K::None},
    {"div", launch_binary, prepareRank, K::None},
    {"dropout", launch_dropout, nullptr, K::None},
    {"equal", launch_equal, prepareRank, K::None},
    {"erf", launch_unary, nullptr, K::None},
    {"erf_grad", launch_unary_grad, nullptr, K::None},
    {"exp", launch_unary, nullptr, K::None},
    {"fused", launch_fused, nullptr, K::Label},
    {"gather", launch_gather, nullptr, K::Index},
    {"gather_grad", launch_gather_grad, prepare_gather_grad, K::Index},
    {"gelu", launch_unary, nullptr, K::None},
    {"gelu_grad", launch_unary_grad, nullptr, K::None},
    {"increment", launch_increment, nullptr, K::None},
    {"layer_norm", launch_layer_norm, nullptr, K::None},
    {"layer_norm_grad", launch_layer_norm_grad, prepare_layer_norm_grad,
     K::None},
    // The same scratch: the row slices of the column sums.
    {"layer_norm_param_grad", launch_layer_norm_param_grad,
     prepare_layer_norm_grad, K::None},
    {"log", launch_unary, nullptr, K::None},
    {"log_softmax", launch_softmax, nullptr, K::None},
    {"log_softmax_grad", launch_softmax_grad, nullptr, K::None},
    {"matmul", launch_matmul, prepare_matmul, K::None},
    {"matmul_epilogue", launch_matmul_epilogue, prepare_matmul_epilogue,
     K::None},
    {"mse_loss", launch_mse_loss, prepare_mse_loss, K::None},
    {"mse_loss_grad", launch_mse_loss_grad, nullptr, K::None},
    {"mul", launch_binary, prepareRank, K::None},
    {"neg", launch_unary, nullptr, K::None},
    {"pow", launch_binary, prepareRank, K::None},
    {"pow_grad", launch_pow_grad, nullptr, K::None},
    {"pow_scalar", launch_unary, nullptr, K::None},
    {"pow_scalar_grad", launch_unary_grad, nullptr, K::None},
    {"reduce_mean", launch_reduce, prepare_reduce, K::None},
    {"reduce_sum", launch_reduce, prepare_reduce, K::None},
    {"relu", launch_unary, nullptr, K::None},
    {"relu_grad", launch_unary_grad, nullptr, K::None},
    {"sgd_momentum_update", launch_sgd_momentum_update, nullptr, K::None},
    {"sgd_update", launch_sgd_update, nullptr, K::None},
    {"sigmoid", launch_unary, nullptr, K::None},
    {"sigmoid_grad", launch_unary_grad, nullptr, K::None},
    {"slice", launch_slice, prepareRank, K::None},
    {"slice_grad", launch_slice_grad, prepareRank, K::None},
    {"softmax", launch_softmax, nullptr, K::None},
    {"softmax_cross_entropy", launch_softmax_cross_entropy,
     prepare_softmax_cross_entropy, K::Label},
    {"softmax_cross_entropy_grad", launch_softmax_cross_entropy_grad, nullptr,
     K::Label},
    {"softmax_grad", launch_softmax_grad, nullptr, K::None},
    {"sqrt", launch_unary, nullptr, K::None},
    {"sqrt_grad", launch_unary_grad, nullptr, K::None},
    {"sub", launch_binary, prepareRank, K::None},
    {"tanh", launch_unary, nullptr, K::None},
    {"tanh_grad", launch_unary_grad, nullptr, K::None},
    {"transpose", launch_transpose, prepareRank, K::None},
    {"where", launch_where, prepareRank, K::None},
};

const CudaKernelDef *findCudaKernel(const std::string &name) {
  auto *end = std::end(kCudaKernels);
  auto *it = std::lower_bound(
      std::begin(kCudaKernels), end, name,
      [](const CudaKernelDef &d, const std::string &n) { return d.name < n; });
  return it != end && it->name == name ? it : nullptr;
}

std::vector<std::string> cudaKernelNames() {
  std::vector<std::string> names;
  for (const CudaKernelDef &d : kCudaKernels)
    names.push_back(d.name);
  return names;
}

// A generated kernel of the artifact's cubin, with the ABI of Artifact.h
// (DeviceKernel): one pointer per operand, then partials and err.
void launch_fused(const CudaArgs &a) {
  const FusedHandle &h = a.fused->at(static_cast<size_t>(a.instr.iattrs[0]));
  const DeviceKernel &k = *h.info;
  std::vector<void *> ptrs;
  for (const TensorView &v : a.in)
    ptrs.push_back(v.data);
  for (const TensorView &v : a.out)
    ptrs.push_back(v.data);
  double *partials = k.partialsPerRow || k.colSums
                         ? static_cast<double *>(a.scratch)
                         : nullptr;
  long long *err = a.err;
  std::vector<void *> params;
  for (void *&p : ptrs)
    params.push_back(&p);
  params.push_back(&partials);
  params.push_back(&err);
  if (k.partialsPerRow && k.rows)
    TCC_CUDA_CHECK(cudaMemsetAsync(
        partials, 0, static_cast<size_t>(k.rows * k.partialsPerRow) * 8,
        a.stream));
  int64_t block = k.block;
  bool perRow = k.mapping == "rows" || k.mapping == "block_rows";
  // A strided block_rows grid (gridPerSm): as many blocks as stay resident,
  // each prefetching its next row while it computes one.
  // Column sums: a block per row slice (CudaEmit.cpp), each writing its
  // slice's partial sums whole.
  int64_t grid =
      k.colSums ? k.slices()
      : k.mapping == "block_rows"
          ? (k.gridPerSm > 0 ? std::min<int64_t>(
                                   k.rows, k.gridPerSm * std::max(a.smCount, 1))
                             : k.rows)
      : k.mapping == "rows"
          ? (k.rows * 32 + block - 1) / block
          : gridFor(k.rows * k.cols, static_cast<int>(block), a.smCount);
  if (grid > INT_MAX)
    throw Error("generated kernel '" + k.symbol + "' needs " +
                std::to_string(grid) + " blocks, more than a launch takes");
  if (k.rows > 0 && (perRow || k.cols > 0)) {
    TCC_CUDA_CHECK(cudaLaunchKernel(
        reinterpret_cast<const void *>(h.fn), dim3(static_cast<unsigned>(grid)),
        dim3(static_cast<unsigned>(block)), params.data(),
        static_cast<size_t>(k.smem), a.stream));
  }
  if (h.fin && k.colSums) // 32 columns a block, their slices added in order
    TCC_CUDA_CHECK(cudaLaunchKernel(
        reinterpret_cast<const void *>(h.fin),
        dim3(static_cast<unsigned>((k.colSums * k.cols + 31) / 32)),
        dim3(static_cast<unsigned>(kColFinThreads)), params.data(), 0,
        a.stream));
  else if (h.fin)
    TCC_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(h.fin),
                                    dim3(1), dim3(static_cast<unsigned>(block)),
                                    params.data(), 0, a.stream));
}

} // namespace tcc::rt::cuda
