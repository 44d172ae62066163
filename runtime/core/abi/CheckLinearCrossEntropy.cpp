//===- CheckLinearCrossEntropy.cpp - The fused LM head + loss -------------===//
#include "runtime/core/abi/KernelAttrs.h"
#include "runtime/core/abi/KernelCheck.h"

#include <algorithm>

namespace tcc::rt::abi {

namespace {
/// The problem both kernels read: N rows of D features, V classes.
struct Dims {
  int64_t rows, features, classes;
};
} // namespace

/// hidden [..., D], weight [D, V] or [V, D], labels i64 (N of them), an
/// optional bias [V] at input `biasAt`; all floats f32.
static Dims checkHead(const KernelSig &s, size_t first, size_t biasAt) {
  const LinearCrossEntropyAttrs at =
      attrs<KernelId::LinearCrossEntropy>(s.instr);
  const TensorInfo &h = *s.in[first], &w = *s.in[first + 1],
                   &y = *s.in[first + 2];
  if (h.dtype != DType::F32 || w.dtype != DType::F32)
    throw Error("hidden and weight must be f32");
  if (y.dtype != DType::I64)
    throw Error(operandName(s, true, first + 2) + " must be i64 class indices");
  if (h.shape.empty() || w.shape.size() != 2)
    throw Error("hidden " + formatShape(h.shape) +
                " must be [..., features] "
                "and weight " +
                formatShape(w.shape) + " rank 2");
  Dims d{h.numElements() / std::max<int64_t>(h.shape.back(), 1), h.shape.back(),
         w.shape[at.transposeWeight ? 0 : 1]};
  if (w.shape[at.transposeWeight ? 1 : 0] != d.features || d.classes < 1)
    throw Error("weight " + formatShape(w.shape) + " does not match hidden " +
                formatShape(h.shape) +
                (at.transposeWeight ? " (transpose_weight: [classes, features])"
                                    : " ([features, classes])"));
  expectNumel(s, true, first + 2, d.rows);
  if (s.in.size() > biasAt) {
    if (s.in[biasAt]->dtype != DType::F32)
      throw Error(operandName(s, true, biasAt) + " must be f32");
    expectShape(s, true, biasAt, {d.classes});
  }
  if (at.block < 1)
    throw Error("block must be positive");
  if (!(at.labelSmoothing >= 0.0 && at.labelSmoothing <= 1.0))
    throw Error("label_smoothing must be in [0, 1]");
  return d;
}

void check_linear_cross_entropy(const KernelSig &s) {
  if (s.in.size() != 3 && s.in.size() != 4)
    expectArity(s, 3, 2);
  expectArity(s, s.in.size(), 2);
  Dims d = checkHead(s, 0, 3);
  if (s.out[0]->dtype != DType::F32 || s.out[1]->dtype != DType::F32)
    throw Error("loss and lse must be f32");
  expectNumel(s, false, 0, 1);
  expectNumel(s, false, 1, d.rows);
}

void check_linear_cross_entropy_grad(const KernelSig &s) {
  if (s.in.size() != 5 && s.in.size() != 6)
    expectArity(s, 5, 2);
  bool bias = s.in.size() == 6;
  expectArity(s, s.in.size(), bias ? 3 : 2);
  if (s.in[0]->dtype != DType::F32)
    throw Error(operandName(s, true, 0) + " must be f32");
  expectNumel(s, true, 0, 1);
  Dims d = checkHead(s, 1, 5);
  if (s.in[4]->dtype != DType::F32)
    throw Error(operandName(s, true, 4) + " must be f32");
  expectNumel(s, true, 4, d.rows);
  for (size_t i = 0; i < s.out.size(); ++i) {
    if (s.out[i]->dtype != DType::F32)
      throw Error(operandName(s, false, i) + " must be f32");
    expectShape(s, false, i, s.in[i + 1 + (i == 2 ? 2 : 0)]->shape);
  }
}

} // namespace tcc::rt::abi
