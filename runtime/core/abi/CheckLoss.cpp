//===- CheckLoss.cpp - Losses and optimizer updates -----------------------===//
#include "runtime/core/abi/KernelCheck.h"

namespace tcc::rt::abi {

static void expectScalar(const KernelSig &s, bool isInput, size_t i) {
  expectNumel(s, isInput, i, 1);
}

/// logits [..., C] and labels i64 with one label per position.
static void checkLogitsLabels(const KernelSig &s, size_t logits,
                              size_t labels) {
  const TensorInfo &l = *s.in[logits], &y = *s.in[labels];
  if (l.dtype != DType::F32)
    throw Error(operandName(s, true, logits) + " must be f32");
  if (y.dtype != DType::I64)
    throw Error(operandName(s, true, labels) + " must be i64 class indices");
  if (l.shape.empty() || l.shape.back() == 0)
    throw Error(operandName(s, true, logits) + " has shape " +
                formatShape(l.shape) + "; expected [..., classes]");
  expectNumel(s, true, labels, l.numElements() / l.shape.back());
}

void check_softmax_cross_entropy(const KernelSig &s) {
  expectArity(s, 2, 1);
  checkLogitsLabels(s, 0, 1);
  if (s.out[0]->dtype != DType::F32)
    throw Error(operandName(s, false, 0) + " must be f32");
  expectScalar(s, false, 0);
}

void check_softmax_cross_entropy_grad(const KernelSig &s) {
  expectArity(s, 3, 1);
  if (s.in[0]->dtype != DType::F32)
    throw Error(operandName(s, true, 0) + " must be f32");
  expectScalar(s, true, 0);
  checkLogitsLabels(s, 1, 2);
  if (s.out[0]->dtype != DType::F32 || s.out[0]->shape != s.in[1]->shape)
    throw Error(operandName(s, false, 0) + " must be f32 " +
                formatShape(s.in[1]->shape) + " like the logits");
}

void check_mse_loss(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  expectNumel(s, true, 1, s.in[0]->numElements());
  expectScalar(s, false, 0);
}

void check_mse_loss_grad(const KernelSig &s) {
  expectArity(s, 3, 1);
  expectAllF32(s);
  expectScalar(s, true, 0);
  expectNumel(s, true, 2, s.in[1]->numElements());
  expectNumel(s, false, 0, s.in[1]->numElements());
}

//===----------------------------------------------------------------------===//
// Optimizer updates (hyper-parameters: SgdAttrs, SgdMomentumAttrs,
// AdamwAttrs, LionAttrs, whose counts checkAttrs checked)
//===----------------------------------------------------------------------===//

/// All operands f32 with the parameter's element count; `scalars` inputs at
/// the end are single elements instead.
static void checkUpdate(const KernelSig &s, size_t nIn, size_t nOut,
                        size_t scalars) {
  expectArity(s, nIn, nOut);
  expectAllF32(s);
  int64_t n = s.in[0]->numElements();
  for (size_t i = 1; i < nIn; ++i)
    expectNumel(s, true, i, i + scalars >= nIn ? 1 : n);
  for (size_t i = 0; i < nOut; ++i)
    expectNumel(s, false, i, n);
}

// The last input of each is the learning rate, one f32 element.
void check_sgd_update(const KernelSig &s) { checkUpdate(s, 3, 1, 1); }

void check_sgd_momentum_update(const KernelSig &s) { checkUpdate(s, 4, 2, 1); }

void check_lion_update(const KernelSig &s) { checkUpdate(s, 4, 2, 1); }

/// Adafactor: p, g, the step and the rate, then the factored second moment
/// (rank >= 2: row and column factors) or the full one; each output like
/// its input.
void check_adafactor_update(const KernelSig &s) {
  if (s.in.size() != 5 && s.in.size() != 6)
    throw Error("takes 5 or 6 inputs (p, g, step, lr, then the second "
                "moment: v, or its row and column factors), got " +
                std::to_string(s.in.size()));
  expectArity(s, s.in.size(), s.in.size() - 3);
  expectAllF32(s);
  const std::vector<int64_t> &shape = s.in[0]->shape;
  expectNumel(s, true, 1, s.in[0]->numElements());
  expectNumel(s, true, 2, 1);
  expectNumel(s, true, 3, 1);
  std::vector<std::vector<int64_t>> want;
  if (s.in.size() == 6) {
    if (shape.size() < 2)
      throw Error("a factored second moment needs a parameter of rank >= 2, "
                  "got rank " +
                  std::to_string(shape.size()));
    std::vector<int64_t> row = shape, col = shape;
    row.back() = 1;
    col[col.size() - 2] = 1;
    want = {row, col};
  } else {
    want = {shape};
  }
  for (size_t k = 0; k < want.size(); ++k) {
    if (s.in[4 + k]->shape != want[k])
      throw Error(operandName(s, true, 4 + k) +
                  " (second moment) has the "
                  "wrong shape for the parameter's");
    if (s.out[1 + k]->shape != want[k])
      throw Error(operandName(s, false, 1 + k) +
                  " (second moment) has the "
                  "wrong shape for the parameter's");
  }
  expectNumel(s, false, 0, s.in[0]->numElements());
}

/// A fourth output, when there, is the new parameter rounded to bf16 or f16
/// (tcc-shadow-weights); the kernel writes it itself (handlesHalf). Two more
/// inputs, when there, are fp16 loss scaling's inverse scale (f32) and
/// finiteness flag (a bool: i64 0/1), one element each.
void check_adamw_update(const KernelSig &s) {
  bool scaled = s.in.size() == 8;
  if (scaled) {
    const char *what[2] = {"the inverse loss scale, f32",
                           "the finiteness flag, a bool"};
    for (size_t i : {6, 7}) {
      DType want = i == 6 ? DType::F32 : DType::I64;
      if (s.in[i]->dtype != want)
        throw Error(operandName(s, true, i) + " (" + what[i - 6] +
                    ") must be " + dtypeName(want) + ", is " +
                    dtypeName(s.in[i]->dtype));
      expectNumel(s, true, i, 1);
    }
  }
  // p, g, m, v, step, lr and p', m', v' are checked as an f32 update's.
  KernelSig f32{s.instr,
                {s.in.begin(), s.in.end() - (scaled ? 2 : 0)},
                {s.out.begin(), s.out.end() - (s.out.size() == 4 ? 1 : 0)}};
  checkUpdate(f32, 6, 3, 2);
  if (s.out.size() != 4)
    return;
  const TensorInfo *low = s.out[3];
  if (!isHalfDType(low->dtype))
    throw Error(operandName(s, false, 3) +
                " (the 16-bit copy of the new "
                "parameter) must be bf16 or f16, is " +
                dtypeName(low->dtype));
  expectNumel(s, false, 3, s.in[0]->numElements());
}

} // namespace tcc::rt::abi
