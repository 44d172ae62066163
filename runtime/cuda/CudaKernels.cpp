//===- CudaKernels.cpp - The CUDA kernel table and generated kernels ------===//
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/CudaCheck.h"

#include <algorithm>
#include <climits>

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

using E = CudaErrKind;
using K = abi::KernelId;

// One entry per kernel of KernelList.def, in its order (checked below). No
// launcher (an Error at load, "run it on the CPU"): the convolutions in a
// build without cuDNN.
#if TCC_CUDA_HAS_CUDNN
#define TCC_CUDNN(f) f
#else
#define TCC_CUDNN(f) nullptr
#endif
static constexpr CudaKernelDef kCudaKernels[] = {
    {K::AdafactorUpdate, launch_adafactor_update, nullptr, E::None},
    {K::AdamwUpdate, launch_adamw_update, prepare_adamw_update, E::None},
    {K::Add, launch_binary, prepareRank, E::None},
    {K::AllGather, launch_shard, prepare_shard, E::None},
    {K::AllReduce, launch_all_reduce, prepare_all_reduce, E::None},
    {K::AllReduceWait, launch_all_reduce, prepare_all_reduce, E::None},
    {K::ArgMax, launch_arg_extremum, nullptr, E::None},
    {K::ArgMin, launch_arg_extremum, nullptr, E::None},
    {K::Attention, launch_attention, prepare_attention, E::None},
    {K::AttentionGrad, launch_attention_grad, prepare_attention, E::None},
    {K::AvgPool2d, launch_avg_pool2d, nullptr, E::None},
    {K::AvgPool2dGrad, launch_avg_pool2d_grad, nullptr, E::None},
    {K::BatchNormTrain, launch_batch_norm_train, prepare_batch_norm, E::None},
    {K::BatchNormTrainGrad, launch_batch_norm_train_grad, prepare_batch_norm,
     E::None},
    {K::BroadcastTo, launch_broadcast_to, prepareRank, E::None},
    {K::Cast, launch_cast, nullptr, E::None},
    {K::Compare, launch_compare, prepareRank, E::None},
    {K::Concat, launch_concat, nullptr, E::None},
    {K::Conv2d, TCC_CUDNN(launch_conv), TCC_CUDNN(prepare_conv), E::None},
    {K::Conv2dGradInput, TCC_CUDNN(launch_conv), TCC_CUDNN(prepare_conv),
     E::None},
    {K::Conv2dGradWeight, TCC_CUDNN(launch_conv), TCC_CUDNN(prepare_conv),
     E::None},
    {K::Copy, launch_copy, nullptr, E::None},
    {K::CumSum, launch_cumsum, nullptr, E::None},
    {K::Div, launch_binary, prepareRank, E::None},
    {K::Dropout, launch_dropout, nullptr, E::None},
    {K::Erf, launch_unary, nullptr, E::None},
    {K::ErfGrad, launch_unary_grad, nullptr, E::None},
    {K::Exp, launch_unary, nullptr, E::None},
    {K::Fused, launch_fused, nullptr, E::Label},
    {K::Gather, launch_gather, nullptr, E::Index},
    {K::GatherElements, launch_gather_elements, prepareRank, E::Index},
    {K::GatherGrad, launch_gather_grad, prepare_gather_grad, E::Index},
    {K::GatherNd, launch_gather_nd, prepareRank, E::Index},
    {K::Gelu, launch_unary, nullptr, E::None},
    {K::GeluGrad, launch_unary_grad, nullptr, E::None},
    {K::GlobalNorm, launch_global_norm, prepare_global_norm, E::None},
    {K::Increment, launch_increment, nullptr, E::None},
    {K::LayerNorm, launch_layer_norm, nullptr, E::None},
    {K::LayerNormGrad, launch_layer_norm_grad, prepare_layer_norm_grad,
     E::None},
    // The same scratch: the row slices of the column sums.
    {K::LayerNormParamGrad, launch_layer_norm_param_grad,
     prepare_layer_norm_grad, E::None},
    {K::LinearCrossEntropy, launch_linear_cross_entropy,
     prepare_linear_cross_entropy, E::Label},
    {K::LinearCrossEntropyGrad, launch_linear_cross_entropy_grad,
     prepare_linear_cross_entropy_grad, E::None},
    {K::LionUpdate, launch_lion_update, nullptr, E::None},
    {K::Log, launch_unary, nullptr, E::None},
    {K::LogSoftmax, launch_softmax, nullptr, E::None},
    {K::LogSoftmaxGrad, launch_softmax_grad, nullptr, E::None},
    {K::Logic, launch_logic, prepareRank, E::None},
    {K::Matmul, launch_matmul, prepare_matmul, E::None},
    {K::MatmulEpilogue, launch_matmul_epilogue, prepare_matmul_epilogue,
     E::None},
    {K::MaxPool2d, launch_max_pool2d, nullptr, E::None},
    {K::MaxPool2dGrad, launch_max_pool2d_grad, nullptr, E::PoolIndex},
    {K::Maximum, launch_maximum, prepareRank, E::None},
    {K::Minimum, launch_minimum, prepareRank, E::None},
    {K::Mod, launch_mod, prepareRank, E::None},
    {K::MseLoss, launch_mse_loss, prepare_mse_loss, E::None},
    {K::MseLossGrad, launch_mse_loss_grad, nullptr, E::None},
    {K::Mul, launch_binary, prepareRank, E::None},
    {K::Neg, launch_unary, nullptr, E::None},
    {K::Pow, launch_binary, prepareRank, E::None},
    {K::PowGrad, launch_pow_grad, nullptr, E::None},
    {K::PowScalar, launch_unary, nullptr, E::None},
    {K::PowScalarGrad, launch_unary_grad, nullptr, E::None},
    {K::Random, launch_random, nullptr, E::None},
    {K::ReduceMax, launch_reduce_extremum, prepare_reduce_extremum, E::None},
    {K::ReduceMean, launch_reduce, prepare_reduce, E::None},
    {K::ReduceMin, launch_reduce_extremum, prepare_reduce_extremum, E::None},
    {K::ReduceProd, launch_reduce_prod, prepare_reduce_extremum, E::None},
    {K::ReduceProdGrad, launch_reduce_prod_grad, prepare_reduce_extremum,
     E::None},
    {K::ReduceScatter, launch_shard, prepare_shard, E::None},
    {K::ReduceSum, launch_reduce, prepare_reduce, E::None},
    {K::Relu, launch_unary, nullptr, E::None},
    {K::ReluGrad, launch_unary_grad, nullptr, E::None},
    {K::ScatterElements, launch_scatter_elements, prepareRank, E::Index},
    {K::ScatterNd, launch_scatter_nd, prepareRank, E::Index},
    {K::SgdMomentumUpdate, launch_sgd_momentum_update, nullptr, E::None},
    {K::SgdUpdate, launch_sgd_update, nullptr, E::None},
    {K::ShardSlice, launch_shard, prepare_shard, E::None},
    {K::ShardWait, launch_shard_wait, prepare_shard, E::None},
    {K::ShardedGlobalNorm, launch_sharded_global_norm,
     prepare_sharded_global_norm, E::None},
    {K::Sigmoid, launch_unary, nullptr, E::None},
    {K::SigmoidGrad, launch_unary_grad, nullptr, E::None},
    {K::Slice, launch_slice, prepareRank, E::None},
    {K::SliceGrad, launch_slice_grad, prepareRank, E::None},
    {K::Softmax, launch_softmax, nullptr, E::None},
    {K::SoftmaxCrossEntropy, launch_softmax_cross_entropy,
     prepare_softmax_cross_entropy, E::Label},
    {K::SoftmaxCrossEntropyGrad, launch_softmax_cross_entropy_grad, nullptr,
     E::Label},
    {K::SoftmaxGrad, launch_softmax_grad, nullptr, E::None},
    {K::Sqrt, launch_unary, nullptr, E::None},
    {K::SqrtGrad, launch_unary_grad, nullptr, E::None},
    {K::Sub, launch_binary, prepareRank, E::None},
    {K::Tanh, launch_unary, nullptr, E::None},
    {K::TanhGrad, launch_unary_grad, nullptr, E::None},
    {K::TopK, launch_top_k, nullptr, E::None},
    {K::Transpose, launch_transpose, prepareRank, E::None},
    {K::UnaryFn, launch_unary_fn, nullptr, E::None},
    {K::UnaryFnGrad, launch_unary_fn_grad, nullptr, E::None},
    {K::Where, launch_where, prepareRank, E::None},
};
static_assert(abi::coversInOrder(kCudaKernels),
              "kCudaKernels needs one entry per kernel, in KernelList.def's "
              "order");

const CudaKernelDef *findCudaKernel(const std::string &name) {
  std::optional<K> id = abi::kernelByName(name);
  if (!id)
    return nullptr;
  const CudaKernelDef &d = kCudaKernels[static_cast<size_t>(*id)];
  return d.launch ? &d : nullptr;
}

std::string cudaKernelMissing(const std::string &name) {
  std::optional<K> id = abi::kernelByName(name);
  if (id && (*id == K::Conv2d || *id == K::Conv2dGradInput ||
             *id == K::Conv2dGradWeight))
    return "no CUDA kernel: this build of the CUDA backend has no cuDNN, "
           "which its convolutions need (rebuild with cuDNN in the CUDA "
           "toolkit); run it on the CPU (--device cpu)";
  return "no CUDA kernel yet; run it on the CPU (--device cpu)";
}

std::vector<std::string> cudaKernelNames() {
  std::vector<std::string> names;
  for (const CudaKernelDef &d : kCudaKernels)
    if (d.launch)
      names.push_back(abi::name(d.id));
  return names;
}

// A generated kernel of the artifact's cubin, with the ABI of Artifact.h
// (DeviceKernel): one pointer per operand, then partials and err.
void launch_fused(const CudaArgs &a) {
  const FusedHandle &h =
      a.fused->at(static_cast<size_t>(abi::attrs<K::Fused>(a.instr).kernel));
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
