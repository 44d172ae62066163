//===- KernelAttrs.h - Typed views of a kernel call's attributes -*- C++ -*-===//
//
// An Instr stores its attributes as the artifact does: two flat lists,
// integers (iattrs) and doubles (fattrs). Each kernel of KernelList.def names
// one struct here, whose `visit` lists its fields in storage order; reading
// (attrsOf), writing (setAttrs) and the count check every instr gets
// (checkAttrs) all follow that one list, so no code indexes iattrs by
// position. Field kinds, in the order a visitor sees them:
//
//   v.integer(x, name)        one integer
//   v.flag(b, name)           one integer, 0 or 1
//   v.real(d, name)           one double
//   v.optionalFlag(b, name)   one trailing integer that may be absent (false)
//   v.list(xs, name)          every remaining integer
//   v.halves(a, b, na, nb)    every remaining integer, split in two halves
//
// Lists are views into the instr's iattrs (AttrList), so reading allocates
// nothing and they live as long as the instr.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_KERNELATTRS_H
#define TCC_RUNTIME_CORE_ABI_KERNELATTRS_H

#include "runtime/core/Artifact.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tcc::rt::abi {

/// A run of integer attributes: a view into an Instr's iattrs (reading) or
/// into the writer's own values (setAttrs copies them).
struct AttrList {
  const int64_t *data = nullptr;
  size_t count = 0;

  AttrList() = default;
  AttrList(const int64_t *d, size_t n) : data(d), count(n) {}
  AttrList(const std::vector<int64_t> &v) : data(v.data()), count(v.size()) {}
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  int64_t operator[](size_t i) const { return data[i]; }
  const int64_t *begin() const { return data; }
  const int64_t *end() const { return data + count; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
};

struct NoAttrs {
  template <class V> void visit(V &) {}
};

/// all_reduce, all_reduce_wait: the gradient bucket (runtime/core/Comm.h)
/// that one starts averaging and the other waits for.
struct AllReduceAttrs {
  int64_t bucket = 0;
  template <class V> void visit(V &v) { v.integer(bucket, "bucket"); }
};

/// reduce_scatter, shard_slice, all_gather, shard_wait: the ranks a tensor
/// is sharded over (sharded optimizer state) and, for reduce_scatter and
/// all_gather, the bucket they start (shard_wait: the one it waits for).
struct ShardAttrs {
  int64_t shards = 1, bucket = 0;
  template <class V> void visit(V &v) {
    v.integer(shards, "shards");
    v.integer(bucket, "bucket");
  }
};

/// matmul: op(A) = A^T when transA (B likewise).
struct MatmulAttrs {
  bool transA = false, transB = false;
  template <class V> void visit(V &v) {
    v.flag(transA, "transA");
    v.flag(transB, "transB");
  }
};

/// matmul_epilogue: `epilogue` is a code of GemmEpilogue.h.
struct MatmulEpilogueAttrs {
  bool transA = false, transB = false;
  int64_t epilogue = 0;
  template <class V> void visit(V &v) {
    v.flag(transA, "transA");
    v.flag(transB, "transB");
    v.integer(epilogue, "epilogue");
  }
};

/// One axis (negative: counted from the end where the kernel allows it):
/// softmax family, gather, concat, the layer norms' gradients.
struct AxisAttrs {
  int64_t axis = 0;
  template <class V> void visit(V &v) { v.integer(axis, "axis"); }
};

/// A checked axis of a tensor of rank `rank`, negative ones counted from
/// the end (the kernels that allow them: the softmax family).
inline int64_t normalizeAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

/// reduce_sum, reduce_mean: the reduced axes, sorted.
struct AxesAttrs {
  AttrList axes;
  template <class V> void visit(V &v) { v.list(axes, "axes"); }
};

/// cumsum: the running sum along `axis` (>= 0), leaving the element itself
/// out when exclusive, from the end when reverse.
struct CumSumAttrs {
  int64_t axis = 0;
  bool exclusive = false, reverse = false;
  template <class V> void visit(V &v) {
    v.integer(axis, "axis");
    v.flag(exclusive, "exclusive");
    v.flag(reverse, "reverse");
  }
};

/// transpose: y.shape[i] = x.shape[perm[i]].
struct PermAttrs {
  AttrList perm;
  template <class V> void visit(V &v) { v.list(perm, "perm"); }
};

/// slice, slice_grad: one start and one step per dim of the full tensor.
struct WindowAttrs {
  AttrList starts, steps;
  template <class V> void visit(V &v) {
    v.halves(starts, steps, "starts", "steps");
  }
};

/// cast: toBool converts to 0/1 (x != 0).
struct CastAttrs {
  bool toBool = false;
  template <class V> void visit(V &v) { v.flag(toBool, "to_bool"); }
};

/// compare: y = lhs PRED rhs, as 0/1 words.
enum class ComparePredicate : int64_t { Eq, Lt, Le, Gt, Ge };
struct CompareAttrs {
  int64_t predicate = 0; // a ComparePredicate
  template <class V> void visit(V &v) { v.integer(predicate, "predicate"); }
};

/// logic: y = lhs KIND rhs on 0/1 words (ONNX Not is xor with 1).
enum class LogicKind : int64_t { And, Or, Xor };
struct LogicAttrs {
  int64_t kind = 0; // a LogicKind
  template <class V> void visit(V &v) { v.integer(kind, "kind"); }
};

/// arg_max, arg_min: the index along `axis` (dropped from the output); of
/// equal values the first, or the last with selectLast.
struct ArgAttrs {
  int64_t axis = 0;
  bool selectLast = false;
  template <class V> void visit(V &v) {
    v.integer(axis, "axis");
    v.flag(selectLast, "select_last_index");
  }
};

/// How a scatter combines an update with what is there (in index order).
enum class ScatterReduction : int64_t { None, Add, Mul, Max, Min };

/// scatter_elements: along `axis`; `reduction` a ScatterReduction.
struct ScatterAttrs {
  int64_t axis = 0;
  int64_t reduction = 0;
  template <class V> void visit(V &v) {
    v.integer(axis, "axis");
    v.integer(reduction, "reduction");
  }
};

/// gather_nd: the leading dimensions data and indices share.
struct GatherNdAttrs {
  int64_t batchDims = 0;
  template <class V> void visit(V &v) { v.integer(batchDims, "batch_dims"); }
};

/// scatter_nd: gather_nd's batch dimensions and a ScatterReduction.
struct ScatterNdAttrs {
  int64_t batchDims = 0;
  int64_t reduction = 0;
  template <class V> void visit(V &v) {
    v.integer(batchDims, "batch_dims");
    v.integer(reduction, "reduction");
  }
};

/// top_k: the indices of the k most extreme entries along `axis` (k is the
/// output's size there), largest first unless !largest.
struct TopKAttrs {
  int64_t axis = 0;
  bool largest = true;
  template <class V> void visit(V &v) {
    v.integer(axis, "axis");
    v.flag(largest, "largest");
  }
};

/// The strides, pads ([top, left, bottom, right]) and dilations that
/// convolutions and poolings share, in their storage order.
struct Window2dAttrs {
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilationH = 1, dilationW = 1;
  template <class V> void visit(V &v) {
    v.integer(strideH, "stride_h");
    v.integer(strideW, "stride_w");
    v.integer(padTop, "pad_top");
    v.integer(padLeft, "pad_left");
    v.integer(padBottom, "pad_bottom");
    v.integer(padRight, "pad_right");
    v.integer(dilationH, "dilation_h");
    v.integer(dilationW, "dilation_w");
  }
};

/// conv2d and its gradients.
struct Conv2dAttrs : Window2dAttrs {
  int64_t groups = 1;
  template <class V> void visit(V &v) {
    Window2dAttrs::visit(v);
    v.integer(groups, "groups");
  }
};

/// The window of a 2-D pooling.
struct Pool2dWindow : Window2dAttrs {
  int64_t kernelH = 1, kernelW = 1;
  bool ceilMode = false;
  template <class V> void visit(V &v) {
    v.integer(kernelH, "kernel_h");
    v.integer(kernelW, "kernel_w");
    Window2dAttrs::visit(v);
    v.flag(ceilMode, "ceil_mode");
  }
};

/// max_pool2d (its gradient reads the indices and takes no attributes).
struct MaxPool2dAttrs : Pool2dWindow {};

/// avg_pool2d and its gradient (dilations 1).
struct AvgPool2dAttrs : Pool2dWindow {
  bool countIncludePad = false;
  template <class V> void visit(V &v) {
    Pool2dWindow::visit(v);
    v.flag(countIncludePad, "count_include_pad");
  }
};

/// batch_norm_train and its gradient.
struct EpsAttrs {
  double eps = 1e-5;
  template <class V> void visit(V &v) { v.real(eps, "eps"); }
};

struct LayerNormAttrs {
  int64_t axis = -1;
  double eps = 1e-5;
  template <class V> void visit(V &v) {
    v.integer(axis, "axis");
    v.real(eps, "eps");
  }
};

/// unary_fn and its gradient: `fn` is a code of runtime/core/prelude/
/// UnaryFn.h's list, alpha and beta its parameters (clip's bounds may be
/// infinite).
struct UnaryFnAttrs {
  int64_t fn = 0;
  double alpha = 0, beta = 0;
  template <class V> void visit(V &v) {
    v.integer(fn, "fn");
    v.real(alpha, "alpha");
    v.real(beta, "beta");
  }
};

/// pow_scalar and its gradient.
struct PowScalarAttrs {
  double exponent = 1;
  template <class V> void visit(V &v) { v.real(exponent, "exponent"); }
};

/// mod: C's fmod (the dividend's sign), else NumPy's mod (the divisor's).
struct ModAttrs {
  bool fmod = false;
  template <class V> void visit(V &v) { v.flag(fmod, "fmod"); }
};

/// gelu and its gradient: the tanh approximation, else the exact erf form.
struct GeluAttrs {
  bool tanh = false;
  template <class V> void visit(V &v) { v.flag(tanh, "approximate_tanh"); }
};

struct DropoutAttrs {
  int64_t seed = 0;
  double ratio = 0;
  template <class V> void visit(V &v) {
    v.integer(seed, "seed");
    v.real(ratio, "ratio");
  }
};

/// random: uniform in [a, b), or (normal) mean a and scale b; the seed as
/// dropout's.
struct RandomAttrs {
  int64_t seed = 0;
  bool normal = false;
  double a = 0, b = 1;
  template <class V> void visit(V &v) {
    v.integer(seed, "seed");
    v.flag(normal, "normal");
    v.real(a, "a");
    v.real(b, "b");
  }
};

/// attention, attention_grad (runtime/core/AttentionPlan.h: layouts).
struct AttentionAttrs {
  bool causal = false, seqMajor = false, fusedQkv = false;
  double scale = 1;
  template <class V> void visit(V &v) {
    v.flag(causal, "causal");
    v.flag(seqMajor, "seq_major");
    v.optionalFlag(fusedQkv, "fused_qkv");
    v.real(scale, "scale");
  }
};

/// softmax_cross_entropy and its gradient: positions labelled ignoreIndex
/// are left out; labelSmoothing (in [0, 1]) weighs the uniform target.
struct CrossEntropyAttrs {
  int64_t ignoreIndex = -100;
  double labelSmoothing = 0;
  template <class V> void visit(V &v) {
    v.integer(ignoreIndex, "ignore_index");
    v.real(labelSmoothing, "label_smoothing");
  }
};

/// linear_cross_entropy and its gradient: CrossEntropyAttrs' two, whether
/// the weight is [V, D] (read transposed), and the vocabulary columns per
/// slice the kernels stream.
struct LinearCrossEntropyAttrs {
  bool transposeWeight = false;
  int64_t ignoreIndex = -100;
  double labelSmoothing = 0;
  int64_t block = 2048;
  template <class V> void visit(V &v) {
    v.flag(transposeWeight, "transpose_weight");
    v.integer(ignoreIndex, "ignore_index");
    v.real(labelSmoothing, "label_smoothing");
    v.integer(block, "block");
  }
};

// Optimizer updates. The learning rate is an operand (an f32 scalar the
// train loop may change between steps), not an attribute.
struct SgdAttrs {
  double weightDecay = 0;
  template <class V> void visit(V &v) { v.real(weightDecay, "weight_decay"); }
};

struct SgdMomentumAttrs {
  double momentum = 0, weightDecay = 0;
  bool nesterov = false;
  template <class V> void visit(V &v) {
    v.real(momentum, "momentum");
    v.real(weightDecay, "weight_decay");
    v.flag(nesterov, "nesterov");
  }
};

/// `l2Decay`: torch.optim.Adam's weight decay (added to the gradient)
/// instead of AdamW's decoupled one.
struct AdamwAttrs {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  bool l2Decay = false;
  template <class V> void visit(V &v) {
    v.real(beta1, "beta1");
    v.real(beta2, "beta2");
    v.real(eps, "eps");
    v.real(weightDecay, "weight_decay");
    v.flag(l2Decay, "l2_decay");
  }
};

/// torch.optim.Adafactor's hyper-parameters (the rate and step are
/// operands).
struct AdafactorAttrs {
  double beta2Decay = -0.8, eps1 = 0, eps2 = 1e-3, d = 1, weightDecay = 0;
  template <class V> void visit(V &v) {
    v.real(beta2Decay, "beta2_decay");
    v.real(eps1, "eps1");
    v.real(eps2, "eps2");
    v.real(d, "d");
    v.real(weightDecay, "weight_decay");
  }
};

struct LionAttrs {
  double beta1 = 0.9, beta2 = 0.99, weightDecay = 0;
  template <class V> void visit(V &v) {
    v.real(beta1, "beta1");
    v.real(beta2, "beta2");
    v.real(weightDecay, "weight_decay");
  }
};

/// fused: generated kernel `kernel` of the artifact's code, and the
/// (output, input) pairs it may run in place (flattened: o0, i0, o1, i1...).
struct FusedAttrs {
  int64_t kernel = 0;
  AttrList inPlace;
  template <class V> void visit(V &v) {
    v.integer(kernel, "kernel");
    v.list(inPlace, "in_place");
  }
  size_t inPlacePairs() const { return inPlace.size() / 2; }
  std::pair<int64_t, int64_t> inPlacePair(size_t k) const {
    return {inPlace[2 * k], inPlace[2 * k + 1]};
  }
};

namespace detail {

/// Reads fields from an instr whose counts checkAttrs accepted.
class AttrReader {
public:
  explicit AttrReader(const Instr &in) : in_(in) {}
  void integer(int64_t &x, const char *) { x = in_.iattrs[i_++]; }
  void flag(bool &b, const char *) { b = in_.iattrs[i_++] != 0; }
  void real(double &d, const char *) { d = in_.fattrs[f_++]; }
  void optionalFlag(bool &b, const char *) {
    b = i_ < in_.iattrs.size() && in_.iattrs[i_++] != 0;
  }
  void list(AttrList &xs, const char *) {
    xs = rest();
  }
  void halves(AttrList &a, AttrList &b, const char *, const char *) {
    AttrList all = rest();
    a = AttrList(all.data, all.count / 2);
    b = AttrList(all.data + all.count / 2, all.count - all.count / 2);
  }

private:
  AttrList rest() {
    AttrList r(in_.iattrs.data() + i_, in_.iattrs.size() - i_);
    i_ = in_.iattrs.size();
    return r;
  }
  const Instr &in_;
  size_t i_ = 0, f_ = 0;
};

/// Appends fields to an instr's attribute lists.
class AttrWriter {
public:
  explicit AttrWriter(Instr &in) : in_(in) {}
  void integer(const int64_t &x, const char *) { in_.iattrs.push_back(x); }
  void flag(const bool &b, const char *) { in_.iattrs.push_back(b ? 1 : 0); }
  void real(const double &d, const char *) { in_.fattrs.push_back(d); }
  void optionalFlag(const bool &b, const char *n) { flag(b, n); }
  void list(const AttrList &xs, const char *) {
    in_.iattrs.insert(in_.iattrs.end(), xs.begin(), xs.end());
  }
  void halves(const AttrList &a, const AttrList &b, const char *na,
              const char *nb) {
    list(a, na);
    list(b, nb);
  }

private:
  Instr &in_;
};

/// The shape of an attribute list: how many integers and doubles it takes.
struct AttrShape {
  size_t integers = 0, reals = 0;
  bool optional = false; // one more trailing integer may follow
  const char *optionalName = nullptr; // its name (a 0/1 flag)
  int tail = 0;          // 0: none; 1: any remaining integers; 2: an even count
  std::vector<const char *> flags; // names of the 0/1 fields, in order
  std::vector<size_t> flagAt;      // their integer positions
  std::string integerNames, realNames;

  void integer(const int64_t &, const char *n) { add(integerNames, n); ++integers; }
  void flag(const bool &, const char *n) {
    flags.push_back(n);
    flagAt.push_back(integers);
    integer(0, n);
  }
  void real(const double &, const char *n) { add(realNames, n); ++reals; }
  void optionalFlag(const bool &, const char *n) {
    add(integerNames, (std::string("[") + n + "]").c_str());
    optional = true;
    optionalName = n;
  }
  void list(const AttrList &, const char *n) {
    add(integerNames, (std::string(n) + "...").c_str());
    tail = 1;
  }
  void halves(const AttrList &, const AttrList &, const char *a,
              const char *b) {
    add(integerNames, (std::string(a) + "... ++ " + b + "...").c_str());
    tail = 2;
  }

private:
  static void add(std::string &s, const char *n) {
    s += s.empty() ? n : std::string(", ") + n;
  }
};

template <class A> AttrShape shapeOf() {
  AttrShape s;
  A a;
  a.visit(s);
  return s;
}

/// Error text when `in`'s attribute counts do not fit `s` ("" when they do).
std::string attrCountError(const Instr &in, const AttrShape &s);

} // namespace detail

/// Throws Error when `in`'s attributes do not have the counts A stores
/// ("expects 2 integer attributes (transA, transB), got 3") or a flag is
/// not 0 or 1. checkInstr runs it for every instr, so kernels read
/// attrsOf without further checks.
template <class A> void checkAttrs(const Instr &in) {
  static const detail::AttrShape shape = detail::shapeOf<A>();
  std::string e = detail::attrCountError(in, shape);
  if (!e.empty())
    throw Error(e);
}

/// The attributes of a checked instr.
template <class A> A attrsOf(const Instr &in) {
  A a;
  detail::AttrReader r(in);
  a.visit(r);
  return a;
}

/// The attributes of an instr that may not have been checked (cost models
/// and reports that run before validation): none when the counts differ.
template <class A> std::optional<A> tryAttrsOf(const Instr &in) {
  static const detail::AttrShape shape = detail::shapeOf<A>();
  if (!detail::attrCountError(in, shape).empty())
    return std::nullopt;
  return attrsOf<A>(in);
}

/// Replaces `in`'s attributes by `a`'s.
template <class A> void setAttrs(Instr &in, const A &a) {
  in.iattrs.clear();
  in.fattrs.clear();
  detail::AttrWriter w(in);
  const_cast<A &>(a).visit(w);
}

} // namespace tcc::rt::abi

#endif // TCC_RUNTIME_CORE_ABI_KERNELATTRS_H
