//===- ProgramBuilder.h - Hand-built programs for the tests -----*- C++ -*-===//
//
// A program over f32 tensors built instr by instr, for the tests of what
// reads a schedule (the memory planner, the trace's memory track).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_PROGRAMBUILDER_H
#define TCC_TESTS_UNIT_PROGRAMBUILDER_H

#include "runtime/core/Artifact.h"

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

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_PROGRAMBUILDER_H
