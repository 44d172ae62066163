//===- CheckIndex.cpp - gather_elements, scatters, gather_nd, top_k -------===//
//
// Shapes and dtypes only: index values are data, range-checked by the
// kernels as they read them.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/KernelCheck.h"

namespace tcc::rt::abi {

static void expectDType(const KernelSig &s, bool isInput, size_t i,
                        DType want) {
  const TensorInfo *t = isInput ? s.in[i] : s.out[i];
  if (t->dtype != want)
    throw Error(operandName(s, isInput, i) + " is " + dtypeName(t->dtype) +
                ", expected " + dtypeName(want));
}

/// A reduction code; any but None combines values, so f32 or i64 only.
static void expectReduction(const KernelSig &s, int64_t reduction) {
  if (reduction < 0 || reduction > int64_t(ScatterReduction::Min))
    throw Error("reduction " + std::to_string(reduction) +
                " is not one of 0..4");
  DType t = s.in[0]->dtype;
  if (reduction != 0 && t != DType::F32 && t != DType::I64)
    throw Error(operandName(s, true, 0) + " is " + dtypeName(t) +
                ", but a reducing scatter takes f32 or i64");
}

/// indices (rank of data, no larger off `axis`) for the element kernels.
static void expectElementIndices(const KernelSig &s, int64_t axis,
                                 const std::vector<int64_t> &data,
                                 const std::vector<int64_t> &indices) {
  int64_t rank = static_cast<int64_t>(data.size());
  if (axis < 0 || axis >= rank)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  bool fits = indices.size() == data.size();
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == axis || indices[d] <= data[d];
  if (!fits)
    throw Error(operandName(s, true, 1) + " has shape " + formatShape(indices) +
                ", which does not fit data of shape " + formatShape(data) +
                " off axis " + std::to_string(axis));
}

void check_gather_elements(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectDType(s, true, 1, DType::I64);
  expectDType(s, false, 0, s.in[0]->dtype);
  expectElementIndices(s, attrs<KernelId::GatherElements>(s.instr).axis,
                       s.in[0]->shape, s.in[1]->shape);
  expectShape(s, false, 0, s.in[1]->shape);
}

void check_scatter_elements(const KernelSig &s) {
  expectArity(s, 3, 1);
  expectDType(s, true, 1, DType::I64);
  expectDType(s, true, 2, s.in[0]->dtype);
  expectDType(s, false, 0, s.in[0]->dtype);
  ScatterAttrs a = attrs<KernelId::ScatterElements>(s.instr);
  expectReduction(s, a.reduction);
  expectElementIndices(s, a.axis, s.in[0]->shape, s.in[1]->shape);
  expectShape(s, true, 2, s.in[1]->shape);
  expectShape(s, false, 0, s.in[0]->shape);
}

/// The shape of gather_nd's result for `data` and `indices`.
static std::vector<int64_t> ndSliceShape(const KernelSig &s, int64_t b,
                                         const std::vector<int64_t> &data,
                                         const std::vector<int64_t> &indices) {
  int64_t r = static_cast<int64_t>(data.size());
  int64_t q = static_cast<int64_t>(indices.size());
  int64_t m = q ? indices.back() : 0;
  bool ok = b >= 0 && b < std::min(q, r) && m >= 1 && m <= r - b;
  for (int64_t d = 0; ok && d < b; ++d)
    ok = data[d] == indices[d];
  if (!ok)
    throw Error(operandName(s, true, 1) + " has shape " + formatShape(indices) +
                ", which does not index data of " + "shape " +
                formatShape(data) + " with batch_dims " + std::to_string(b));
  std::vector<int64_t> shape(indices.begin(), indices.end() - 1);
  shape.insert(shape.end(), data.begin() + b + m, data.end());
  return shape;
}

void check_gather_nd(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectDType(s, true, 1, DType::I64);
  expectDType(s, false, 0, s.in[0]->dtype);
  expectShape(s, false, 0,
              ndSliceShape(s, attrs<KernelId::GatherNd>(s.instr).batchDims,
                           s.in[0]->shape, s.in[1]->shape));
}

void check_scatter_nd(const KernelSig &s) {
  expectArity(s, 3, 1);
  expectDType(s, true, 1, DType::I64);
  expectDType(s, true, 2, s.in[0]->dtype);
  expectDType(s, false, 0, s.in[0]->dtype);
  ScatterNdAttrs a = attrs<KernelId::ScatterNd>(s.instr);
  expectReduction(s, a.reduction);
  expectShape(s, true, 2,
              ndSliceShape(s, a.batchDims, s.in[0]->shape, s.in[1]->shape));
  expectShape(s, false, 0, s.in[0]->shape);
}

void check_top_k(const KernelSig &s) {
  expectArity(s, 1, 1);
  DType t = s.in[0]->dtype;
  if (t != DType::F32 && t != DType::I64)
    throw Error(operandName(s, true, 0) + " is " + dtypeName(t) +
                ", expected f32 or i64");
  expectDType(s, false, 0, DType::I64);
  const std::vector<int64_t> &xs = s.in[0]->shape;
  const std::vector<int64_t> &ys = s.out[0]->shape;
  int64_t axis = attrs<KernelId::TopK>(s.instr).axis;
  if (axis < 0 || axis >= static_cast<int64_t>(xs.size()))
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(xs.size()));
  std::vector<int64_t> want = xs;
  want[axis] = ys.size() == xs.size() ? ys[axis] : -1;
  if (want[axis] < 0 || want[axis] > xs[axis])
    want[axis] = xs[axis]; // shows the largest output expectShape accepts
  expectShape(s, false, 0, want);
}

} // namespace tcc::rt::abi
