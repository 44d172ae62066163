//===- KernelCheck.cpp - checkInstr, its table and shared helpers ---------===//
#include "runtime/core/abi/KernelCheck.h"

#include "runtime/core/abi/Kernels.h"

namespace tcc::rt {

namespace abi {

namespace {
struct CheckEntry {
  KernelId id;
  CheckFn check;
};
} // namespace

using K = KernelId;

// One entry per kernel of KernelList.def, in its order (checked below).
static constexpr CheckEntry kChecks[] = {
    {K::AdafactorUpdate, check_adafactor_update},
    {K::AdamwUpdate, check_adamw_update},
    {K::Add, check_binary},
    {K::AllGather, check_all_gather},
    {K::AllReduce, check_all_reduce},
    {K::AllReduceWait, check_all_reduce},
    {K::ArgMax, check_arg_extremum},
    {K::ArgMin, check_arg_extremum},
    {K::Attention, check_attention},
    {K::AttentionGrad, check_attention_grad},
    {K::AvgPool2d, check_avg_pool2d},
    {K::AvgPool2dGrad, check_avg_pool2d_grad},
    {K::BatchNormTrain, check_batch_norm_train},
    {K::BatchNormTrainGrad, check_batch_norm_train_grad},
    {K::BroadcastTo, check_broadcast_to},
    {K::Cast, check_cast},
    {K::Compare, check_compare},
    {K::Concat, check_concat},
    {K::Conv2d, check_conv2d},
    {K::Conv2dGradInput, check_conv2d_grad_input},
    {K::Conv2dGradWeight, check_conv2d_grad_weight},
    {K::Copy, check_copy},
    {K::CumSum, check_cumsum},
    {K::Div, check_binary},
    {K::Dropout, check_dropout},
    {K::Erf, check_unary},
    {K::ErfGrad, check_unary_grad},
    {K::Exp, check_unary},
    {K::Fused, check_fused},
    {K::Gather, check_gather},
    {K::GatherElements, check_gather_elements},
    {K::GatherGrad, check_gather_grad},
    {K::GatherNd, check_gather_nd},
    {K::Gelu, check_gelu},
    {K::GeluGrad, check_gelu_grad},
    {K::GlobalNorm, check_global_norm},
    {K::Increment, check_increment},
    {K::LayerNorm, check_layer_norm},
    {K::LayerNormGrad, check_layer_norm_grad},
    {K::LayerNormParamGrad, check_layer_norm_param_grad},
    {K::LinearCrossEntropy, check_linear_cross_entropy},
    {K::LinearCrossEntropyGrad, check_linear_cross_entropy_grad},
    {K::LionUpdate, check_lion_update},
    {K::Log, check_unary},
    {K::LogSoftmax, check_softmax_like},
    {K::LogSoftmaxGrad, check_softmax_grad_like},
    {K::Logic, check_logic},
    {K::Matmul, check_matmul},
    {K::MatmulEpilogue, check_matmul_epilogue},
    {K::MaxPool2d, check_max_pool2d},
    {K::MaxPool2dGrad, check_max_pool2d_grad},
    {K::Maximum, check_extremum},
    {K::Minimum, check_extremum},
    {K::Mod, check_mod},
    {K::MseLoss, check_mse_loss},
    {K::MseLossGrad, check_mse_loss_grad},
    {K::Mul, check_binary},
    {K::Neg, check_unary},
    {K::Pow, check_binary},
    {K::PowGrad, check_pow_grad},
    {K::PowScalar, check_pow_scalar},
    {K::PowScalarGrad, check_pow_scalar_grad},
    {K::Random, check_random},
    {K::ReduceMax, check_reduce},
    {K::ReduceMean, check_reduce},
    {K::ReduceMin, check_reduce},
    {K::ReduceProd, check_reduce},
    {K::ReduceProdGrad, check_reduce_prod_grad},
    {K::ReduceScatter, check_reduce_scatter},
    {K::ReduceSum, check_reduce},
    {K::Relu, check_unary},
    {K::ReluGrad, check_relu_grad},
    {K::ScatterElements, check_scatter_elements},
    {K::ScatterNd, check_scatter_nd},
    {K::SgdMomentumUpdate, check_sgd_momentum_update},
    {K::SgdUpdate, check_sgd_update},
    {K::ShardSlice, check_shard_slice},
    {K::ShardWait, check_shard_wait},
    {K::ShardedGlobalNorm, check_sharded_global_norm},
    {K::Sigmoid, check_unary},
    {K::SigmoidGrad, check_unary_grad},
    {K::Slice, check_slice},
    {K::SliceGrad, check_slice_grad},
    {K::Softmax, check_softmax_like},
    {K::SoftmaxCrossEntropy, check_softmax_cross_entropy},
    {K::SoftmaxCrossEntropyGrad, check_softmax_cross_entropy_grad},
    {K::SoftmaxGrad, check_softmax_grad_like},
    {K::Sqrt, check_unary},
    {K::SqrtGrad, check_unary_grad},
    {K::Sub, check_binary},
    {K::Tanh, check_unary},
    {K::TanhGrad, check_unary_grad},
    {K::TopK, check_top_k},
    {K::Transpose, check_transpose},
    {K::UnaryFn, check_unary_fn},
    {K::UnaryFnGrad, check_unary_fn_grad},
    {K::Where, check_where},
};
static_assert(coversInOrder(kChecks),
              "kChecks needs one entry per kernel, in KernelList.def's order");

CheckFn checkOf(KernelId id) { return kChecks[static_cast<size_t>(id)].check; }

std::string operandName(const KernelSig &s, bool isInput, size_t i) {
  const TensorInfo *t = isInput ? s.in[i] : s.out[i];
  return std::string(isInput ? "input " : "output ") + std::to_string(i) +
         " '" + t->name + "'";
}

void expectArity(const KernelSig &s, size_t nIn, size_t nOut) {
  if (s.in.size() != nIn || s.out.size() != nOut)
    throw Error("expects " + std::to_string(nIn) + " inputs and " +
                std::to_string(nOut) + " outputs, got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
}

void expectIAttrs(const KernelSig &s, size_t n) {
  if (s.instr.iattrs.size() != n)
    throw Error("expects " + std::to_string(n) + " integer attributes, got " +
                std::to_string(s.instr.iattrs.size()));
}

void expectAllF32(const KernelSig &s) {
  for (size_t i = 0; i < s.in.size(); ++i)
    if (s.in[i]->dtype != DType::F32)
      throw Error(operandName(s, true, i) + " must be f32, is " +
                  dtypeName(s.in[i]->dtype));
  for (size_t i = 0; i < s.out.size(); ++i)
    if (s.out[i]->dtype != DType::F32)
      throw Error(operandName(s, false, i) + " must be f32, is " +
                  dtypeName(s.out[i]->dtype));
}

void expectNumel(const KernelSig &s, bool isInput, size_t i, int64_t numel) {
  const TensorInfo *t = isInput ? s.in[i] : s.out[i];
  if (t->numElements() != numel)
    throw Error(operandName(s, isInput, i) + " has shape " +
                formatShape(t->shape) + " (" +
                std::to_string(t->numElements()) + " elements), expected " +
                std::to_string(numel) + " elements");
}

void expectShape(const KernelSig &s, bool isInput, size_t i,
                 const std::vector<int64_t> &shape) {
  const TensorInfo *t = isInput ? s.in[i] : s.out[i];
  if (t->shape != shape)
    throw Error(operandName(s, isInput, i) + " has shape " +
                formatShape(t->shape) + ", expected " + formatShape(shape));
}

bool broadcasts(const std::vector<int64_t> &from,
                const std::vector<int64_t> &to) {
  if (from.size() > to.size())
    return false;
  size_t shift = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[i + shift])
      return false;
  return true;
}

int64_t expectAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis; // numpy-style negative axes too
  if (a < 0 || a >= rank)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  return a;
}

//===----------------------------------------------------------------------===//
// bf16/f16 operands
//===----------------------------------------------------------------------===//

bool handlesHalf(const Instr &instr) {
  return is(instr, K::Fused) || is(instr, K::Attention) ||
         is(instr, K::AttentionGrad) || is(instr, K::AdamwUpdate) ||
         is(instr, K::Copy);
}

bool isFloatCast(const Instr &instr, DType in, DType out) {
  return is(instr, K::Cast) && isFloatDType(in) && isFloatDType(out);
}

static bool anyHalf(const KernelSig &s) {
  for (const auto *ops : {&s.in, &s.out})
    for (const TensorInfo *t : *ops)
      if (isHalfDType(t->dtype))
        return true;
  return false;
}

bool needsHalfAdapter(const KernelSig &s) {
  return anyHalf(s) && !handlesHalf(s.instr);
}

void checkAsF32(const KernelSig &s, CheckFn check) {
  if (s.in.size() == 1 && s.out.size() == 1 &&
      isFloatCast(s.instr, s.in[0]->dtype, s.out[0]->dtype)) {
    if (attrs<K::Cast>(s.instr).toBool)
      throw Error(std::string("the to_bool attribute is 1, expected 0 for a ") +
                  dtypeName(s.in[0]->dtype) + " -> " +
                  dtypeName(s.out[0]->dtype) + " conversion");
    expectNumel(s, false, 0, s.in[0]->numElements());
    return;
  }
  // GEMMs take one operand type and write it or (16-bit in) f32: a mix
  // the widening below would hide.
  if (is(s.instr, K::Matmul) || is(s.instr, K::MatmulEpilogue))
    checkGemmDTypes(s);
  // The f32 check sees each 16-bit operand as the f32 tensor the kernel
  // will be given; an operand that must be an integer is still refused.
  std::vector<TensorInfo> widened;
  widened.reserve(s.in.size() + s.out.size());
  KernelSig f32{s.instr, {}, {}};
  auto widen = [&](const std::vector<const TensorInfo *> &from,
                   std::vector<const TensorInfo *> &to) {
    for (const TensorInfo *t : from) {
      if (!isHalfDType(t->dtype)) {
        to.push_back(t);
        continue;
      }
      widened.push_back(*t);
      widened.back().dtype = DType::F32;
      to.push_back(&widened.back());
    }
  };
  widen(s.in, f32.in);
  widen(s.out, f32.out);
  try {
    check(f32);
  } catch (const Error &e) {
    throw Error(std::string(e.what()) +
                " (bf16/f16 operands are checked as the f32 tensors the "
                "kernel computes on)");
  }
}

} // namespace abi

void checkInstr(const Instr &instr, const std::vector<TensorInfo> &tensors) {
  std::optional<abi::KernelId> id = abi::kernelByName(instr.kernel);
  if (!id)
    throw Error("unknown kernel '" + instr.kernel + "'");
  abi::KernelSig sig{instr, {}, {}};
  auto resolve = [&](const std::vector<int32_t> &ids,
                     std::vector<const TensorInfo *> &out) {
    for (int32_t t : ids) {
      if (t < 0 || static_cast<size_t>(t) >= tensors.size())
        throw Error("tensor id " + std::to_string(t) + " is out of range");
      out.push_back(&tensors[t]);
    }
  };
  resolve(instr.inputs, sig.in);
  resolve(instr.outputs, sig.out);
  // Counts and flags first: the kernel's check then reads attrs<Id>.
  abi::info(*id).checkAttrs(instr);
  abi::CheckFn check = abi::checkOf(*id);
  if (abi::needsHalfAdapter(sig))
    abi::checkAsF32(sig, check);
  else
    check(sig);
}

} // namespace tcc::rt
