//===- MemoryModel.h - IR-level liveness of a tcc function ------*- C++ -*-===//
//
// The bytes the runtime will hold while it executes a function in its block
// order, predicted from the IR alone: which values become temporaries, how
// long each lives and which persistent tensors (weights, optimizer state,
// inputs, constants) the function touches. tcc-plan-memory uses it to compare
// schedules and to annotate the function with its memory anatomy; the code
// generator's MemoryPlanner makes the authoritative plan from the same rules.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_MEMORYMODEL_H
#define TCC_PASSES_MEMORYMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace mlir::tcc {

/// Bytes the runtime stores for a tensor of type `t` (bools and all integers
/// as i64, as the code generator lowers them).
int64_t storageBytes(Type t);

/// The predicted memory anatomy of a function in one schedule (bytes).
/// Persistent: weights .. constants (weightCopies: tcc-shadow-weights' 16-bit
/// copies, state with `tcc.shadow_of`). The temporaries live at the peak split
/// into activations, gradients and other temporaries (their sum is
/// tempPeak); savedActivations is the total of all activations.
struct MemoryAnatomy {
  int64_t weights = 0, weightCopies = 0, optimizerState = 0,
          gradAccumulators = 0, otherState = 0, inputs = 0, constants = 0;
  int64_t activations = 0, gradients = 0, temporaries = 0;
  int64_t tempPeak = 0, savedActivations = 0;
  int64_t persistent() const {
    return weights + weightCopies + optimizerState + gradAccumulators +
           otherState + inputs + constants;
  }
  int64_t peak() const { return persistent() + tempPeak; }
};

/// The dependence graph and value facts of one function body. Op indices
/// are positions in the body (terminator excluded) when the model was built.
class FuncMemoryModel {
public:
  explicit FuncMemoryModel(func::FuncOp fn);

  size_t numOps() const { return ops.size(); }
  Operation *op(size_t i) const { return ops[i]; }
  /// Ops that must run before op i: producers of its operands, and readers
  /// of a parameter/state that op i overwrites in place.
  ArrayRef<int> predecessors(size_t i) const { return preds[i]; }
  ArrayRef<int> successors(size_t i) const { return succs[i]; }
  /// Whether op i produces an update result (an optimizer update, an
  /// accumulation, a running statistic), or feeds one such op and nothing
  /// else (e.g. the weight gradient of a layer): running those early frees
  /// gradients.
  bool producesUpdate(size_t i) const { return chainOf[i] == (int)i; }
  bool feedsUpdateOnly(size_t i) const { return chainOf[i] >= 0; }
  /// The producer whose chain op i belongs to (-1 if none), and the ops
  /// outside that chain which the chain depends on: once they have run, the
  /// whole chain can run and free its gradients.
  int chainProducer(size_t i) const { return chainOf[i]; }
  ArrayRef<int> chainInputs(size_t producer) const {
    return chainExternal[producer];
  }

  /// Temp values: the op that defines each, its bytes and the ops reading it.
  struct Temp {
    int def;
    int64_t bytes;
    SmallVector<int, 2> users;
    bool liveToEnd; // returned (not as an in-place update)
    bool gradient;  // a gradient (see MemoryAnatomy)
  };
  ArrayRef<Temp> temps() const { return tempValues; }
  /// Temp ids read by op i / defined by op i.
  ArrayRef<int> tempOperands(size_t i) const { return opTempIns[i]; }
  ArrayRef<int> tempResults(size_t i) const { return opTempOuts[i]; }

  /// Peak of live temp bytes when the ops run in `order` (a permutation of
  /// op indices), allocating each temp before its def and freeing it after
  /// its last reader. Fills `anatomy` when given.
  int64_t simulate(ArrayRef<int> order, MemoryAnatomy *anatomy = nullptr) const;

private:
  std::vector<Operation *> ops;
  std::vector<SmallVector<int, 4>> preds, succs;
  std::vector<int> chainOf; // the update producer op i feeds only, or -1
  std::vector<SmallVector<int, 4>> chainExternal;
  std::vector<Temp> tempValues;
  std::vector<SmallVector<int, 4>> opTempIns, opTempOuts;
  int lossOp = -1;
  MemoryAnatomy persistentPart;
};

} // namespace mlir::tcc

#endif // TCC_PASSES_MEMORYMODEL_H
