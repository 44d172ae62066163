//===- ProgramBuilder.h - Hand-built programs for the tests -----*- C++ -*-===//
//
// A program over f32 tensors built instr by instr, for the tests of what
// reads a schedule (the memory planner, the trace's memory track).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_PROGRAMBUILDER_H
#define TCC_TESTS_UNIT_PROGRAMBUILDER_H

#include "runtime/core/Artifact.h"

#include <random>
#include <string>
#include <vector>

namespace tcc::test {

struct ProgramBuilder {
  rt::Artifact a;
  rt::Program p;
  /// A tensor of `kind`: temporaries belong to train_step, params and the
  /// like get zeros in the blob.
  int32_t tensor(rt::TensorKind kind, std::vector<int64_t> shape) {
    rt::TensorInfo t;
    t.name = "t" + std::to_string(a.tensors.size());
    t.kind = kind;
    t.shape = std::move(shape);
    if (kind == rt::TensorKind::Temp)
      t.program = "train_step";
    else if (kind != rt::TensorKind::Input) {
      std::vector<float> zeros(t.numElements(), 0.0f);
      t.dataOffset = a.addBlob(zeros.data(), zeros.size() * sizeof(float));
    }
    a.tensors.push_back(t);
    return (int32_t)a.tensors.size() - 1;
  }
  /// Appends `kernel` over `in` with one new temporary of `shape`.
  int32_t op(const std::string &kernel, std::vector<int32_t> in,
             std::vector<int64_t> shape, std::vector<int64_t> iattrs = {}) {
    int32_t out = tensor(rt::TensorKind::Temp, std::move(shape));
    p.instrs.push_back({kernel, std::move(in), {out}, std::move(iattrs), {}});
    return out;
  }
};

/// A program "train_step" of 30 random element-wise instrs over [rows, 8]
/// f32 tensors (rows 4, 8 or 16; broadcast_to where an operand's rows
/// differ) from one input to the last value: add, relu, copy and, with
/// `fused`, generated kernels that list a random in-place pair or none.
inline ProgramBuilder randomProgram(std::mt19937 &rng, bool fused) {
  ProgramBuilder b;
  std::vector<int32_t> values = {b.tensor(rt::TensorKind::Input, {4, 8})};
  const char *withFused[] = {"add", "relu", "fused", "copy"};
  const char *plain[] = {"add", "relu", "copy"};
  for (int i = 0; i < 30; ++i) {
    int32_t lhs = values[rng() % values.size()];
    int32_t rhs = values[rng() % values.size()];
    int64_t rows = 4 << (rng() % 3);
    std::string k = fused ? withFused[rng() % 4] : plain[rng() % 3];
    if (b.a.tensors[lhs].shape[0] != rows || b.a.tensors[rhs].shape[0] != rows)
      k = "broadcast_to", rhs = -1;
    std::vector<int32_t> in = {lhs};
    std::vector<int64_t> iattrs;
    if (k == "add" || (k == "fused" && rhs >= 0))
      in.push_back(rhs);
    if (k == "fused")
      iattrs = rng() % 3
                   ? std::vector<int64_t>{0, 0, int64_t(rng() % in.size())}
                   : std::vector<int64_t>{0};
    values.push_back(b.op(k, in, {rows, 8}, iattrs));
  }
  b.p.name = "train_step";
  b.p.outputs = {values.back()};
  return b;
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_PROGRAMBUILDER_H
