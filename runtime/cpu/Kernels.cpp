//===- Kernels.cpp - The CPU kernel table ---------------------------------===//
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/KernelsInternal.h"

namespace tcc::rt {

using namespace kernels;
using K = abi::KernelId;

namespace {
struct KernelDef {
  K id;
  KernelFn run;
};
} // namespace

// One entry per kernel of KernelList.def, in its order (checked below): the
// CPU runs every kernel.
static constexpr KernelDef kKernels[] = {
    {K::AdafactorUpdate, run_adafactor_update},
    {K::AdamwUpdate, run_adamw_update},
    {K::Add, run_add},
    {K::AllGather, run_all_gather},
    {K::AllReduce, run_all_reduce},
    {K::AllReduceWait, run_all_reduce_wait},
    {K::ArgMax, run_arg_max},
    {K::ArgMin, run_arg_min},
    {K::Attention, run_attention},
    {K::AttentionGrad, run_attention_grad},
    {K::AvgPool2d, run_avg_pool2d},
    {K::AvgPool2dGrad, run_avg_pool2d_grad},
    {K::BatchNormTrain, run_batch_norm_train},
    {K::BatchNormTrainGrad, run_batch_norm_train_grad},
    {K::BroadcastTo, run_broadcast_to},
    {K::Cast, run_cast},
    {K::Compare, run_compare},
    {K::Concat, run_concat},
    {K::Conv2d, run_conv2d},
    {K::Conv2dGradInput, run_conv2d_grad_input},
    {K::Conv2dGradWeight, run_conv2d_grad_weight},
    {K::Copy, run_copy},
    {K::CumSum, run_cumsum},
    {K::Div, run_div},
    {K::Dropout, run_dropout},
    {K::Erf, run_erf},
    {K::ErfGrad, run_erf_grad},
    {K::Exp, run_exp},
    {K::Fused, run_fused},
    {K::Gather, run_gather},
    {K::GatherElements, run_gather_elements},
    {K::GatherGrad, run_gather_grad},
    {K::GatherNd, run_gather_nd},
    {K::Gelu, run_gelu},
    {K::GeluGrad, run_gelu_grad},
    {K::GlobalNorm, run_global_norm},
    {K::Increment, run_increment},
    {K::LayerNorm, run_layer_norm},
    {K::LayerNormGrad, run_layer_norm_grad},
    {K::LayerNormParamGrad, run_layer_norm_param_grad},
    {K::LinearCrossEntropy, run_linear_cross_entropy},
    {K::LinearCrossEntropyGrad, run_linear_cross_entropy_grad},
    {K::LionUpdate, run_lion_update},
    {K::Log, run_log},
    {K::LogSoftmax, run_log_softmax},
    {K::LogSoftmaxGrad, run_log_softmax_grad},
    {K::Logic, run_logic},
    {K::Matmul, run_matmul},
    {K::MatmulEpilogue, run_matmul_epilogue},
    {K::MaxPool2d, run_max_pool2d},
    {K::MaxPool2dGrad, run_max_pool2d_grad},
    {K::Maximum, run_maximum},
    {K::Minimum, run_minimum},
    {K::Mod, run_mod},
    {K::MseLoss, run_mse_loss},
    {K::MseLossGrad, run_mse_loss_grad},
    {K::Mul, run_mul},
    {K::Neg, run_neg},
    {K::Pow, run_pow},
    {K::PowGrad, run_pow_grad},
    {K::PowScalar, run_pow_scalar},
    {K::PowScalarGrad, run_pow_scalar_grad},
    {K::Random, run_random},
    {K::ReduceMax, run_reduce_max},
    {K::ReduceMean, run_reduce_mean},
    {K::ReduceMin, run_reduce_min},
    {K::ReduceProd, run_reduce_prod},
    {K::ReduceProdGrad, run_reduce_prod_grad},
    {K::ReduceScatter, run_reduce_scatter},
    {K::ReduceSum, run_reduce_sum},
    {K::Relu, run_relu},
    {K::ReluGrad, run_relu_grad},
    {K::ScatterElements, run_scatter_elements},
    {K::ScatterNd, run_scatter_nd},
    {K::SgdMomentumUpdate, run_sgd_momentum_update},
    {K::SgdUpdate, run_sgd_update},
    {K::ShardSlice, run_shard_slice},
    {K::ShardWait, run_shard_wait},
    {K::ShardedGlobalNorm, run_sharded_global_norm},
    {K::Sigmoid, run_sigmoid},
    {K::SigmoidGrad, run_sigmoid_grad},
    {K::Slice, run_slice},
    {K::SliceGrad, run_slice_grad},
    {K::Softmax, run_softmax},
    {K::SoftmaxCrossEntropy, run_softmax_cross_entropy},
    {K::SoftmaxCrossEntropyGrad, run_softmax_cross_entropy_grad},
    {K::SoftmaxGrad, run_softmax_grad},
    {K::Sqrt, run_sqrt},
    {K::SqrtGrad, run_sqrt_grad},
    {K::Sub, run_sub},
    {K::Tanh, run_tanh},
    {K::TanhGrad, run_tanh_grad},
    {K::TopK, run_top_k},
    {K::Transpose, run_transpose},
    {K::UnaryFn, run_unary_fn},
    {K::UnaryFnGrad, run_unary_fn_grad},
    {K::Where, run_where},
};
static_assert(abi::coversInOrder(kKernels),
              "kKernels needs one entry per kernel, in KernelList.def's order");

const KernelFn *findKernel(const std::string &name) {
  std::optional<K> id = abi::kernelByName(name);
  return id ? &kKernels[static_cast<size_t>(*id)].run : nullptr;
}

void runKernel(const Instr &instr, const std::vector<TensorInfo> &tensors,
               const std::vector<void *> &buffers, int64_t rank) {
  checkInstr(instr, tensors);
  KernelArgs args{instr, {}, {}};
  args.rank = rank;
  auto view = [&](int32_t id) {
    const TensorInfo &t = tensors[id];
    return TensorView{buffers.at(id), t.dtype, &t.shape, t.numElements()};
  };
  for (int32_t id : instr.inputs)
    args.in.push_back(view(id));
  for (int32_t id : instr.outputs)
    args.out.push_back(view(id));
  kernelFor(instr, tensors)(args);
}

} // namespace tcc::rt
