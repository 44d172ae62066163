//===- ActivationAnalysis.h - Activations of a training step ----*- C++ -*-===//
//
// The activations of a training step are the tensors the forward computes
// before the loss and the backward reads after it: what a training step must
// keep alive across the loss. tcc-rematerialize trades them for recomputation
// and the memory report counts them.
//
// Definition (shared with the memory report): in a function with a result of
// kind `loss` (@train_step, or @accumulate_step with gradient accumulation),
// the loss op is the producer of that result; an activation is a result of an
// op of the entry block strictly before the loss op that is read by an op
// after it. Not activations: block arguments (parameters, inputs, state
// live anyway), constants (stored in the artifact, not computed), and values
// only returned (their uses by `func.return` are outputs written to the
// tensors they update, such as running statistics and `rng.step`).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_ACTIVATIONANALYSIS_H
#define TCC_PASSES_ACTIVATIONANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tcc {

struct Activation {
  Value value;
  int64_t bytes = 0;
};

struct ActivationInfo {
  /// Producer of the `loss` result.
  Operation *lossOp = nullptr;
  /// In definition order.
  std::vector<Activation> activations;
  int64_t totalBytes = 0;
};

/// Bytes a tensor of `type` takes at run time: element count times the
/// element size, with i1 stored as i64 (see docs/ARCHITECTURE.md, "Bools").
/// -1 for anything that is not a statically shaped tensor.
int64_t runtimeTensorBytes(Type type);

/// The activations of `fn`, or nullopt when it has no result of kind `loss`
/// produced by an op of its body (nothing to analyze, e.g. @forward or the
/// optimizer-only @train_step of gradient accumulation).
std::optional<ActivationInfo> analyzeActivations(func::FuncOp fn);

/// True when `v` is an activation of a body whose loss op is `lossOp`.
bool isActivation(Value v, Operation *lossOp);

/// "12.4 MiB", "512 KiB", "96 B": for messages.
std::string formatBytes(int64_t bytes);

} // namespace mlir::tcc

#endif // TCC_PASSES_ACTIVATIONANALYSIS_H
