//===- CheckLogic.cpp - compare, logic, extrema, arg_max/arg_min ----------===//
#include "runtime/core/abi/KernelCheck.h"

namespace tcc::rt::abi {

static void expectDType(const KernelSig &s, bool isInput, size_t i,
                        DType want) {
  const TensorInfo *t = isInput ? s.in[i] : s.out[i];
  if (t->dtype != want)
    throw Error(operandName(s, isInput, i) + " is " + dtypeName(t->dtype) +
                ", expected " + dtypeName(want));
}

static void expectInputsBroadcast(const KernelSig &s) {
  for (size_t i = 0; i < s.in.size(); ++i)
    if (!broadcasts(s.in[i]->shape, s.out[0]->shape))
      throw Error(operandName(s, true, i) + " has shape " +
                  formatShape(s.in[i]->shape) +
                  ", which does not broadcast to the output shape " +
                  formatShape(s.out[0]->shape));
}

/// An enumerator attribute in [0, count).
static void expectCode(int64_t v, int64_t count, const char *what) {
  if (v < 0 || v >= count)
    throw Error(std::string(what) + " " + std::to_string(v) +
                " is not one of 0.." + std::to_string(count - 1));
}

void check_compare(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectDType(s, true, 1, s.in[0]->dtype);
  expectDType(s, false, 0, DType::I64);
  expectInputsBroadcast(s);
  expectCode(attrs<KernelId::Compare>(s.instr).predicate, 5, "predicate");
}

void check_logic(const KernelSig &s) {
  expectArity(s, 2, 1);
  for (size_t i = 0; i < 2; ++i)
    expectDType(s, true, i, DType::I64);
  expectDType(s, false, 0, DType::I64);
  expectInputsBroadcast(s);
  expectCode(attrs<KernelId::Logic>(s.instr).kind, 3, "kind");
}

// f32 or i64, all three alike (a 16-bit call is checked as its f32 view).
void check_extremum(const KernelSig &s) {
  expectArity(s, 2, 1);
  DType t = s.out[0]->dtype;
  if (t != DType::F32 && t != DType::I64)
    throw Error(operandName(s, false, 0) + " is " + dtypeName(t) +
                ", expected f32 or i64");
  for (size_t i = 0; i < 2; ++i)
    expectDType(s, true, i, t);
  expectInputsBroadcast(s);
}

// As extremum: f32 or i64, all three alike.
void check_mod(const KernelSig &s) { check_extremum(s); }

void check_arg_extremum(const KernelSig &s) {
  expectArity(s, 1, 1);
  DType t = s.in[0]->dtype;
  if (t != DType::F32 && t != DType::I64)
    throw Error(operandName(s, true, 0) + " is " + dtypeName(t) +
                ", expected f32 or i64");
  expectDType(s, false, 0, DType::I64);
  const std::vector<int64_t> &xs = s.in[0]->shape;
  int64_t axis = attrsOf<ArgAttrs>(s.instr).axis;
  if (axis < 0 || axis >= static_cast<int64_t>(xs.size()))
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(xs.size()));
  if (xs[axis] == 0)
    throw Error(operandName(s, true, 0) + " is empty along axis " +
                std::to_string(axis));
  std::vector<int64_t> ys = xs;
  ys.erase(ys.begin() + axis);
  expectShape(s, false, 0, ys);
}

} // namespace tcc::rt::abi
