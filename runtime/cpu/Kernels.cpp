//===- Kernels.cpp - Kernel registry and shared check helpers -------------===//
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace tcc::rt {

using namespace kernels;

namespace {
struct KernelDef {
  const char *name;
  KernelFn run;
  CheckFn check;
  bool inPlace; // element-wise: outputs may alias same-sized inputs
};
} // namespace

// Sorted by name so lookup can binary-search.
static const KernelDef kKernels[] = {
    {"adamw_update", run_adamw_update, check_adamw_update, true},
    {"add", run_add, check_binary, true},
    {"attention", run_attention, check_attention, false},
    {"attention_grad", run_attention_grad, check_attention_grad, false},
    {"avg_pool2d", run_avg_pool2d, check_avg_pool2d, false},
    {"avg_pool2d_grad", run_avg_pool2d_grad, check_avg_pool2d_grad, false},
    {"batch_norm_train", run_batch_norm_train, check_batch_norm_train, false},
    {"batch_norm_train_grad", run_batch_norm_train_grad,
     check_batch_norm_train_grad, false},
    {"broadcast_to", run_broadcast_to, check_broadcast_to, false},
    {"cast", run_cast, check_cast, false},
    {"concat", run_concat, check_concat, false},
    {"conv2d", run_conv2d, check_conv2d, false},
    {"conv2d_grad_input", run_conv2d_grad_input, check_conv2d_grad_input,
     false},
    {"conv2d_grad_weight", run_conv2d_grad_weight, check_conv2d_grad_weight,
     false},
    {"copy", run_copy, check_copy, true},
    {"div", run_div, check_binary, true},
    {"dropout", run_dropout, check_dropout, true},
    {"equal", run_equal, check_equal, false},
    {"erf", run_erf, check_unary, true},
    {"erf_grad", run_erf_grad, check_unary_grad, true},
    {"exp", run_exp, check_unary, true},
    {"fused", run_fused, check_fused, false},
    {"gather", run_gather, check_gather, false},
    {"gather_grad", run_gather_grad, check_gather_grad, false},
    {"gelu", run_gelu, check_gelu, true},
    {"gelu_grad", run_gelu_grad, check_gelu_grad, true},
    {"increment", run_increment, check_increment, true},
    {"layer_norm", run_layer_norm, check_layer_norm, false},
    {"layer_norm_grad", run_layer_norm_grad, check_layer_norm_grad, false},
    {"layer_norm_param_grad", run_layer_norm_param_grad,
     check_layer_norm_param_grad, false},
    {"log", run_log, check_unary, true},
    {"log_softmax", run_log_softmax, check_softmax_like, false},
    {"log_softmax_grad", run_log_softmax_grad, check_softmax_grad_like, false},
    {"matmul", run_matmul, check_matmul, false},
    {"matmul_epilogue", run_matmul_epilogue, check_matmul_epilogue, false},
    {"max_pool2d", run_max_pool2d, check_max_pool2d, false},
    {"max_pool2d_grad", run_max_pool2d_grad, check_max_pool2d_grad, false},
    {"mse_loss", run_mse_loss, check_mse_loss, false},
    {"mse_loss_grad", run_mse_loss_grad, check_mse_loss_grad, false},
    {"mul", run_mul, check_binary, true},
    {"neg", run_neg, check_unary, true},
    {"pow", run_pow, check_pow, true},
    {"pow_grad", run_pow_grad, check_pow_grad, true},
    {"pow_scalar", run_pow_scalar, check_pow_scalar, true},
    {"pow_scalar_grad", run_pow_scalar_grad, check_pow_scalar_grad, true},
    {"reduce_mean", run_reduce_mean, check_reduce, false},
    {"reduce_sum", run_reduce_sum, check_reduce, false},
    {"relu", run_relu, check_unary, true},
    {"relu_grad", run_relu_grad, check_relu_grad, true},
    {"sgd_momentum_update", run_sgd_momentum_update, check_sgd_momentum_update,
     true},
    {"sgd_update", run_sgd_update, check_sgd_update, true},
    {"sigmoid", run_sigmoid, check_unary, true},
    {"sigmoid_grad", run_sigmoid_grad, check_unary_grad, true},
    {"slice", run_slice, check_slice, false},
    {"slice_grad", run_slice_grad, check_slice_grad, false},
    {"softmax", run_softmax, check_softmax_like, false},
    {"softmax_cross_entropy", run_softmax_cross_entropy,
     check_softmax_cross_entropy, false},
    {"softmax_cross_entropy_grad", run_softmax_cross_entropy_grad,
     check_softmax_cross_entropy_grad, false},
    {"softmax_grad", run_softmax_grad, check_softmax_grad_like, false},
    {"sqrt", run_sqrt, check_unary, true},
    {"sqrt_grad", run_sqrt_grad, check_unary_grad, true},
    {"sub", run_sub, check_binary, true},
    {"tanh", run_tanh, check_unary, true},
    {"tanh_grad", run_tanh_grad, check_unary_grad, true},
    {"transpose", run_transpose, check_transpose, false},
    {"where", run_where, check_where, true},
};

static const KernelDef *findDef(const std::string &name) {
  auto *end = std::end(kKernels);
  auto *it = std::lower_bound(
      std::begin(kKernels), end, name,
      [](const KernelDef &d, const std::string &n) { return d.name < n; });
  return it != end && it->name == name ? it : nullptr;
}

const KernelFn *findKernel(const std::string &name) {
  const KernelDef *d = findDef(name);
  return d ? &d->run : nullptr;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const KernelDef &d : kKernels)
    names.push_back(d.name);
  return names;
}

bool kernelAllowsInPlace(const std::string &name) {
  const KernelDef *d = findDef(name);
  return d && d->inPlace;
}

bool isPrefixWindow(const Instr &instr, const std::vector<int64_t> &full,
                    const std::vector<int64_t> &window) {
  size_t rank = full.size();
  if (rank == 0 || window.size() != rank || instr.iattrs.size() != 2 * rank ||
      window[0] > full[0])
    return false;
  for (size_t d = 0; d < rank; ++d)
    if (instr.iattrs[d] != 0 || instr.iattrs[rank + d] != 1 ||
        (d > 0 && window[d] != full[d]))
      return false;
  return true;
}

bool isPrefixSlice(const Instr &instr, const std::vector<int64_t> &in,
                   const std::vector<int64_t> &out) {
  return instr.kernel == "slice" && isPrefixWindow(instr, in, out);
}

std::vector<std::pair<int64_t, int64_t>> fusedInPlacePairs(const Instr &instr) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (instr.kernel == "fused")
    for (size_t k = 1; k + 1 < instr.iattrs.size(); k += 2)
      pairs.push_back({instr.iattrs[k], instr.iattrs[k + 1]});
  return pairs;
}

bool instrAllowsInPlace(const Instr &instr, size_t output, size_t input) {
  if (kernelAllowsInPlace(instr.kernel))
    return true;
  auto pairs = fusedInPlacePairs(instr);
  return std::find(pairs.begin(), pairs.end(),
                   std::make_pair((int64_t)output, (int64_t)input)) !=
         pairs.end();
}

static std::atomic<int64_t> scratchHeld{0};

void noteKernelScratch(int64_t deltaBytes) { scratchHeld += deltaBytes; }

int64_t kernelScratchBytes() { return scratchHeld.load(); }

void checkInstr(const Instr &instr, const std::vector<TensorInfo> &tensors) {
  const KernelDef *d = findDef(instr.kernel);
  if (!d)
    throw Error("unknown kernel '" + instr.kernel + "'");
  KernelSig sig{instr, {}, {}};
  auto resolve = [&](const std::vector<int32_t> &ids,
                     std::vector<const TensorInfo *> &out) {
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= tensors.size())
        throw Error("tensor id " + std::to_string(id) + " is out of range");
      out.push_back(&tensors[id]);
    }
  };
  resolve(instr.inputs, sig.in);
  resolve(instr.outputs, sig.out);
  if (needsHalfAdapter(sig))
    checkAsF32(sig, d->check);
  else
    d->check(sig);
}

void runKernel(const Instr &instr, const std::vector<TensorInfo> &tensors,
               const std::vector<void *> &buffers) {
  checkInstr(instr, tensors);
  KernelArgs args{instr, {}, {}};
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

namespace kernels {

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

void expectFAttrs(const KernelSig &s, size_t n) {
  if (s.instr.fattrs.size() != n)
    throw Error("expects " + std::to_string(n) + " float attributes, got " +
                std::to_string(s.instr.fattrs.size()));
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

int64_t expectAxis(const KernelSig &s, int64_t rank) {
  expectIAttrs(s, 1);
  int64_t axis = s.instr.iattrs[0];
  if (axis < 0) // accept numpy-style negative axes too
    axis += rank;
  if (axis < 0 || axis >= rank)
    throw Error("axis " + std::to_string(s.instr.iattrs[0]) +
                " is out of range for rank " + std::to_string(rank));
  return axis;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      size_t rank) {
  std::vector<int64_t> st(rank, 0), own = contiguousStrides(shape);
  size_t shift = rank - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    st[i + shift] = shape[i] == 1 ? 0 : own[i];
  return st;
}

} // namespace kernels

namespace {
/// Where an operand lives in the static layout: its own buffer (region =
/// tensor id) or a byte range of the program arena (region = -1).
struct Placement {
  int64_t region, begin, end;
  bool overlaps(const Placement &o) const {
    return region == o.region && begin < o.end && o.begin < end;
  }
  bool sameAs(const Placement &o) const {
    return region == o.region && begin == o.begin && end == o.end;
  }
};
} // namespace

static Placement placement(const std::vector<TensorInfo> &tensors, int32_t id) {
  const TensorInfo &t = tensors[id];
  if (t.kind == TensorKind::Temp)
    return {-1, t.arenaOffset, t.arenaOffset + t.byteSize()};
  return {id, 0, t.byteSize()};
}

void checkAliasing(const Instr &in, const std::vector<TensorInfo> &tensors) {
  auto name = [&](const char *role, size_t i, int32_t id) {
    return std::string(role) + " " + std::to_string(i) + " '" +
           tensors[id].name + "'";
  };
  for (size_t o = 0; o < in.outputs.size(); ++o) {
    Placement po = placement(tensors, in.outputs[o]);
    for (size_t o2 = 0; o2 < o; ++o2)
      if (po.overlaps(placement(tensors, in.outputs[o2])))
        throw Error(name("output", o, in.outputs[o]) + " overlaps " +
                    name("output", o2, in.outputs[o2]) + " in memory");
    for (size_t i = 0; i < in.inputs.size(); ++i) {
      Placement pi = placement(tensors, in.inputs[i]);
      if (!po.overlaps(pi))
        continue;
      // A view: the window is the input's first bytes (run as a copy that
      // skips equal pointers).
      if (po.region == pi.region && po.begin == pi.begin &&
          isPrefixSlice(in, tensors[in.inputs[i]].shape,
                        tensors[in.outputs[o]].shape))
        continue;
      if (!instrAllowsInPlace(in, o, i))
        throw Error(name("output", o, in.outputs[o]) + " overlaps " +
                    name("input", i, in.inputs[i]) + " in memory, but " +
                    in.kernel +
                    (in.kernel == "fused" ? " does not list that pair in place"
                                          : " cannot run in place"));
      if (!po.sameAs(pi))
        throw Error(name("output", o, in.outputs[o]) + " partially overlaps " +
                    name("input", i, in.inputs[i]) + " in memory");
    }
  }
}

} // namespace tcc::rt
