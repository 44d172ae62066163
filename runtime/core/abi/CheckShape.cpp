//===- CheckShape.cpp - gather, concat, slice, where, cast ----------------===//
#include "runtime/core/abi/KernelCheck.h"

namespace tcc::rt::abi {

static void expectSameDType(const KernelSig &s, bool isInput, size_t i,
                            DType want) {
  const TensorInfo *t = isInput ? s.in[i] : s.out[i];
  if (t->dtype != want)
    throw Error(operandName(s, isInput, i) + " is " + dtypeName(t->dtype) +
                ", expected " + dtypeName(want));
}

/// An axis in [0, rank): the compiler normalizes axes, so a negative one
/// means a malformed artifact.
static int64_t expectNonNegativeAxis(int64_t axis, size_t rank) {
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  return axis;
}

//===----------------------------------------------------------------------===//
// gather, gather_grad
//===----------------------------------------------------------------------===//

/// `data` (rank >= 1) gathered along the axis by `indices` has shape
/// `gathered`: data[:axis] + indices + data[axis+1:].
static void checkGatherShapes(const KernelSig &s,
                              const std::vector<int64_t> &data,
                              const std::vector<int64_t> &indices,
                              bool dataIsOutput) {
  // gather and gather_grad share AxisAttrs.
  int64_t axis =
      expectNonNegativeAxis(attrsOf<AxisAttrs>(s.instr).axis, data.size());
  std::vector<int64_t> gathered(data.begin(), data.begin() + axis);
  gathered.insert(gathered.end(), indices.begin(), indices.end());
  gathered.insert(gathered.end(), data.begin() + axis + 1, data.end());
  // The gathered tensor is output 0 of gather and input 0 of gather_grad.
  expectShape(s, /*isInput=*/dataIsOutput, 0, gathered);
}

void check_gather(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectSameDType(s, true, 1, DType::I64);
  expectSameDType(s, false, 0, s.in[0]->dtype);
  checkGatherShapes(s, s.in[0]->shape, s.in[1]->shape, false);
}

void check_gather_grad(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectSameDType(s, true, 0, DType::F32);
  expectSameDType(s, true, 1, DType::I64);
  expectSameDType(s, false, 0, DType::F32);
  checkGatherShapes(s, s.out[0]->shape, s.in[1]->shape, true);
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

void check_concat(const KernelSig &s) {
  if (s.in.empty() || s.out.size() != 1)
    throw Error("expects at least 1 input and 1 output, got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
  const std::vector<int64_t> &ys = s.out[0]->shape;
  int64_t axis =
      expectNonNegativeAxis(attrs<KernelId::Concat>(s.instr).axis, ys.size());
  int64_t total = 0;
  for (size_t i = 0; i < s.in.size(); ++i) {
    expectSameDType(s, true, i, s.out[0]->dtype);
    std::vector<int64_t> want = ys;
    want[axis] = s.in[i]->shape.size() == ys.size() ? s.in[i]->shape[axis] : -1;
    if (want[axis] < 0 || s.in[i]->shape != want)
      throw Error(operandName(s, true, i) + " has shape " +
                  formatShape(s.in[i]->shape) + ", which does not match " +
                  "the output shape " + formatShape(ys) + " outside axis " +
                  std::to_string(axis));
    total += want[axis];
  }
  if (total != ys[axis])
    throw Error("the inputs add up to " + std::to_string(total) +
                " along axis " + std::to_string(axis) + ", the output has " +
                std::to_string(ys[axis]));
}

//===----------------------------------------------------------------------===//
// slice, slice_grad
//===----------------------------------------------------------------------===//

/// WindowAttrs: one start and one step per dimension of `full`; the window
/// has `window`'s shape and must stay inside `full`.
static void checkWindow(const KernelSig &s, const std::vector<int64_t> &full,
                        const std::vector<int64_t> &window) {
  size_t rank = full.size();
  expectIAttrs(s, 2 * rank);
  WindowAttrs w = attrsOf<WindowAttrs>(s.instr);
  if (window.size() != rank)
    throw Error("the window has rank " + std::to_string(window.size()) +
                ", the sliced tensor " + std::to_string(rank));
  for (size_t d = 0; d < rank; ++d) {
    int64_t start = w.starts[d], step = w.steps[d];
    // Bounds before arithmetic: attributes are untrusted and must not
    // overflow in the check itself.
    bool ok = step != 0 && step >= -full[d] - 1 && step <= full[d] + 1 &&
              start >= 0 && start <= full[d];
    if (ok && window[d] > 0) {
      int64_t last = start + (window[d] - 1) * step;
      ok = start < full[d] && window[d] <= full[d] && last >= 0 &&
           last < full[d];
    }
    if (!ok)
      throw Error("dimension " + std::to_string(d) + ": " +
                  std::to_string(window[d]) + " elements from " +
                  std::to_string(start) + " in steps of " +
                  std::to_string(step) + " do not fit in size " +
                  std::to_string(full[d]));
  }
}

void check_slice(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectSameDType(s, false, 0, s.in[0]->dtype);
  checkWindow(s, s.in[0]->shape, s.out[0]->shape);
}

void check_slice_grad(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectSameDType(s, true, 0, DType::F32);
  expectSameDType(s, false, 0, DType::F32);
  checkWindow(s, s.out[0]->shape, s.in[0]->shape);
}

//===----------------------------------------------------------------------===//
// where, equal
//===----------------------------------------------------------------------===//

static void expectBroadcastsToOutput(const KernelSig &s) {
  for (size_t i = 0; i < s.in.size(); ++i)
    if (!broadcasts(s.in[i]->shape, s.out[0]->shape))
      throw Error(operandName(s, true, i) + " has shape " +
                  formatShape(s.in[i]->shape) +
                  ", which does not broadcast to the output shape " +
                  formatShape(s.out[0]->shape));
}

void check_where(const KernelSig &s) {
  expectArity(s, 3, 1);
  expectSameDType(s, true, 0, DType::I64);
  expectSameDType(s, true, 1, s.out[0]->dtype);
  expectSameDType(s, true, 2, s.out[0]->dtype);
  expectBroadcastsToOutput(s);
}

//===----------------------------------------------------------------------===//
// cast (to_bool is a flag: checkAttrs checked it is 0 or 1)
//===----------------------------------------------------------------------===//

void check_cast(const KernelSig &s) {
  expectArity(s, 1, 1);
  if (attrs<KernelId::Cast>(s.instr).toBool && s.out[0]->dtype != DType::I64)
    throw Error(operandName(s, false, 0) +
                " must be i64 (bools are stored as i64), is " +
                dtypeName(s.out[0]->dtype));
  expectNumel(s, false, 0, s.in[0]->numElements());
}

} // namespace tcc::rt::abi
