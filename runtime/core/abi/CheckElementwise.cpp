//===- CheckElementwise.cpp - Element-wise, layout, reduce, softmax -------===//
#include "runtime/core/abi/KernelCheck.h"

#include <algorithm>

namespace tcc::rt::abi {

void check_binary(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  for (size_t i = 0; i < 2; ++i)
    if (!broadcasts(s.in[i]->shape, s.out[0]->shape))
      throw Error(operandName(s, true, i) + " has shape " +
                  formatShape(s.in[i]->shape) +
                  ", which does not broadcast to the output shape " +
                  formatShape(s.out[0]->shape));
}

void check_unary(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  expectNumel(s, false, 0, s.in[0]->numElements());
}

void check_relu_grad(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  expectNumel(s, true, 1, s.in[0]->numElements());
  expectNumel(s, false, 0, s.in[0]->numElements());
}

/// The output has the input's dtype (data movement of any type).
static void expectSameDTypeAsInput(const KernelSig &s) {
  if (s.in[0]->dtype != s.out[0]->dtype)
    throw Error(operandName(s, false, 0) + " is " + dtypeName(s.out[0]->dtype) +
                " but the input is " + dtypeName(s.in[0]->dtype));
}

void check_copy(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectSameDTypeAsInput(s);
  expectNumel(s, false, 0, s.in[0]->numElements());
}

void check_broadcast_to(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectSameDTypeAsInput(s);
  if (!broadcasts(s.in[0]->shape, s.out[0]->shape))
    throw Error(operandName(s, true, 0) + " has shape " +
                formatShape(s.in[0]->shape) + ", which does not broadcast to " +
                formatShape(s.out[0]->shape));
}

void check_transpose(const KernelSig &s) {
  expectArity(s, 1, 1);
  const AttrList perm = attrs<KernelId::Transpose>(s.instr).perm;
  const auto &xs = s.in[0]->shape, &ys = s.out[0]->shape;
  expectSameDTypeAsInput(s);
  if (perm.size() != xs.size() || ys.size() != xs.size())
    throw Error("perm has " + std::to_string(perm.size()) +
                " entries for input rank " + std::to_string(xs.size()) +
                " and output rank " + std::to_string(ys.size()));
  std::vector<bool> seen(xs.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(xs.size()) || seen[p])
      throw Error("perm " + formatShape(perm.vec()) + " is not a permutation");
    seen[p] = true;
    if (ys[i] != xs[p])
      throw Error("output shape " + formatShape(ys) + " is not input shape " +
                  formatShape(xs) + " permuted by " + formatShape(perm.vec()));
  }
}

/// The element count of a reduction of `xs` over the instr's AxesAttrs
/// (checked: sorted, unique, in range).
static int64_t reducedCount(const KernelSig &s,
                            const std::vector<int64_t> &xs) {
  const AttrList axes = attrsOf<AxesAttrs>(s.instr).axes;
  int64_t kept = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(xs.size()))
      throw Error("reduced axis " + std::to_string(axes[i]) +
                  " is out of range for input shape " + formatShape(xs));
    if (i > 0 && axes[i] <= axes[i - 1])
      throw Error("reduced axes " + formatShape(axes.vec()) +
                  " are not sorted and unique");
  }
  for (size_t d = 0; d < xs.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(d)))
      kept *= xs[d];
  return kept;
}

void check_reduce(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  // keepdims only inserts size-1 dims, so the element count is what matters.
  expectNumel(s, false, 0, reducedCount(s, s.in[0]->shape));
}

void check_reduce_prod_grad(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  expectNumel(s, true, 0, reducedCount(s, s.in[1]->shape));
  expectShape(s, false, 0, s.in[1]->shape);
}

void check_global_norm(const KernelSig &s) {
  if (s.in.empty() || s.out.size() != 1)
    throw Error("expects at least 1 input and 1 output, got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
  expectAllF32(s);
  expectShape(s, false, 0, {});
}

void check_all_reduce(const KernelSig &s) {
  if (s.in.empty() || !s.out.empty())
    throw Error("expects at least 1 input and no output, got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
  expectAllF32(s);
  if (attrsOf<AllReduceAttrs>(s.instr).bucket < 0)
    throw Error("bucket must be non-negative");
}

void check_cumsum(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  expectShape(s, false, 0, s.in[0]->shape);
  int64_t axis = attrsOf<CumSumAttrs>(s.instr).axis;
  if (axis < 0 || axis >= static_cast<int64_t>(s.in[0]->shape.size()))
    throw Error("axis " + std::to_string(axis) +
                " is out of range for input shape " +
                formatShape(s.in[0]->shape));
}

void check_softmax_like(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  if (s.out[0]->shape != s.in[0]->shape)
    throw Error(operandName(s, false, 0) + " has shape " +
                formatShape(s.out[0]->shape) + ", expected the input's " +
                formatShape(s.in[0]->shape));
  expectAxis(attrsOf<AxisAttrs>(s.instr).axis,
             static_cast<int64_t>(s.in[0]->shape.size()));
}

void check_softmax_grad_like(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  for (size_t i = 0; i < 2; ++i) {
    const auto &shape = i == 0 ? s.in[1]->shape : s.out[0]->shape;
    if (shape != s.in[0]->shape)
      throw Error(operandName(s, i != 0, i == 0 ? 1 : 0) + " has shape " +
                  formatShape(shape) + ", expected dy's " +
                  formatShape(s.in[0]->shape));
  }
  expectAxis(attrsOf<AxisAttrs>(s.instr).axis,
             static_cast<int64_t>(s.in[0]->shape.size()));
}

} // namespace tcc::rt::abi
