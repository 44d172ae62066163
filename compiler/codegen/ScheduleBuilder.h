//===- ScheduleBuilder.h - Lowering tcc functions to schedules --*- C++ -*-===//
#ifndef TCC_COMPILER_CODEGEN_SCHEDULEBUILDER_H
#define TCC_COMPILER_CODEGEN_SCHEDULEBUILDER_H

#include "runtime/core/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <string>
#include <vector>

namespace tcc {

/// Lowers functions in the tcc dialect to flat programs over a shared tensor
/// table. Arguments of kind param/state become persistent tensors shared by
/// every program (by name); inputs are shared by name too; everything else is
/// a temp of its program. Results of kind `update` are written straight into
/// the persistent tensor they replace when that is safe, so optimizer updates
/// happen in place. Results of kind `offload` (tcc-offload-optimizer's cut)
/// are written into the input tensor of their name, which the program that
/// reads it (@optimizer_step) takes as an argument.
class ScheduleBuilder {
public:
  /// `initialParams` gives the initial value of each parameter by name, and
  /// of state that has one (running statistics); other state starts at 0.
  ScheduleBuilder(rt::Artifact &artifact,
                  const std::map<std::string, std::vector<float>> &initialParams)
      : artifact(artifact), initialParams(initialParams) {}

  /// Appends a program named `name`. Emits diagnostics and fails on ops or
  /// types it cannot lower.
  mlir::LogicalResult lower(mlir::func::FuncOp fn, const std::string &name);

  /// False (`tcc compile --no-plan-memory`): every temp gets its own bytes
  /// in the arena, no reuse (see MemoryPlanner.h).
  bool planMemory = true;

  /// `tcc compile --weights seeded`: parameters and state get an
  /// rt::InitSpec drawn at load instead of bytes in the blob: a constant
  /// when all elements are equal, else a normal of the initializer's mean
  /// and standard deviation (state: the constant mean). Each tensor's seed
  /// is a hash of `weightsSeed` and its name.
  bool seededWeights = false;
  uint64_t weightsSeed = 0;

private:
  mlir::FailureOr<int32_t> persistent(mlir::BlockArgument arg);
  int32_t addTensor(rt::TensorInfo info);
  /// The input tensor offload result `i` (value `v`) of `fn` is written to.
  mlir::FailureOr<int32_t> offloadTarget(mlir::func::FuncOp fn, unsigned i,
                                         mlir::Value v);
  mlir::FailureOr<int32_t> constantTensor(mlir::DenseElementsAttr dense,
                                          const std::string &program,
                                          mlir::Location loc);

  rt::Artifact &artifact;
  const std::map<std::string, std::vector<float>> &initialParams;
};

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_SCHEDULEBUILDER_H
