//===- MemoryModel.cpp - IR-level liveness of a tcc function --------------===//
//
// Mirrors how compiler/codegen/ScheduleBuilder lowers a function: every op
// result is a temporary of the program except
//   * constants kept in the artifact's blob (all but splats of more than one
//     f32 element, which are broadcast into a temporary), and
//   * `update` results, which are written into the parameter or state they
//     replace once every other reader of the old value has run.
// The second rule is also a scheduling constraint (an anti-dependence): the
// op producing an update must follow all other readers of what it
// overwrites, or the code generator has to fall back to a temporary and a
// copy. The graph carries those edges unless they would form a cycle.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryModel.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <deque>

using namespace mlir;
using namespace mlir::tcc;

int64_t mlir::tcc::storageBytes(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  Type e = shaped.getElementType();
  int64_t width = 4;
  if (e.isInteger())
    width = 8; // i1 and i64 are stored as i64
  else if (auto f = dyn_cast<FloatType>(e))
    width = std::max<int64_t>(1, f.getWidth() / 8);
  return shaped.getNumElements() * width;
}

static StringRef stringAttr(DictionaryAttr d, StringRef name) {
  if (d)
    if (auto s = d.getAs<StringAttr>(name))
      return s.getValue();
  return {};
}

static bool isOptimizerUpdate(Operation *op) {
  return isa<AdamWUpdateOp, SgdUpdateOp, SgdMomentumUpdateOp, LionUpdateOp,
             AdafactorUpdateOp>(op);
}

/// Whether `c` is lowered to a broadcast into a temporary (see
/// ScheduleBuilder): a splat of more than one f32 element.
static bool constantIsTemp(ConstantOp c) {
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.isSplat() && dense.getNumElements() > 1 &&
         dense.getElementType().isF32();
}

/// True if the graph (with the given edges) has a cycle.
static bool hasCycle(const std::vector<SmallVector<int, 4>> &succs) {
  std::vector<int> indeg(succs.size(), 0);
  for (const auto &s : succs)
    for (int j : s)
      indeg[j]++;
  std::deque<int> ready;
  for (size_t i = 0; i < succs.size(); ++i)
    if (!indeg[i])
      ready.push_back((int)i);
  size_t seen = 0;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    ++seen;
    for (int j : succs[i])
      if (--indeg[j] == 0)
        ready.push_back(j);
  }
  return seen != succs.size();
}

FuncMemoryModel::FuncMemoryModel(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  Operation *ret = body.getTerminator();
  llvm::DenseMap<Operation *, int> index;
  for (Operation &op : body.without_terminator()) {
    index[&op] = (int)ops.size();
    ops.push_back(&op);
  }
  size_t n = ops.size();
  preds.resize(n);
  succs.resize(n);
  opTempIns.resize(n);
  opTempOuts.resize(n);
  chainOf.assign(n, -1);

  // What the function returns: update targets by value, the loss, grads.
  llvm::StringMap<BlockArgument> argByName;
  for (BlockArgument a : fn.getArguments())
    argByName[stringAttr(fn.getArgAttrDict(a.getArgNumber()), "tcc.name")] = a;
  llvm::DenseMap<Value, BlockArgument> updateOf; // update value -> its target
  llvm::DenseSet<Value> returnedPlain, gradValues;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    DictionaryAttr d = fn.getResultAttrDict(i);
    StringRef kind = stringAttr(d, "tcc.kind");
    auto target = argByName.find(stringAttr(d, "tcc.name"));
    if (kind == "update" && target != argByName.end() && v.getDefiningOp() &&
        !updateOf.count(v))
      updateOf[v] = target->second;
    else
      returnedPlain.insert(v);
    if (kind == "grad")
      gradValues.insert(v);
    if (kind == "loss" && v.getDefiningOp())
      lossOp = index.lookup(body.findAncestorOpInBlock(*v.getDefiningOp()));
  }

  // The values each top-level op reads (including from nested regions).
  auto topLevel = [&](Operation *op) -> int {
    Operation *a = body.findAncestorOpInBlock(*op);
    return a && a != ret ? index.lookup(a) : -1;
  };
  std::vector<llvm::SetVector<Value>> reads(n);
  for (size_t i = 0; i < n; ++i)
    ops[i]->walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        if (auto a = dyn_cast<BlockArgument>(v)) {
          if (a.getOwner() == &body)
            reads[i].insert(v);
        } else if (Operation *d = v.getDefiningOp();
                   d && d->getBlock() == &body && d != ops[i]) {
          reads[i].insert(v);
        }
      }
    });

  // Gradients: grad results, gradient operands of optimizer updates, and
  // what is added into a `.grad_acc` accumulator.
  for (Operation *op : ops)
    if (isOptimizerUpdate(op))
      gradValues.insert(op->getOperand(1));
  for (auto [v, target] : updateOf)
    if (stringAttr(fn.getArgAttrDict(target.getArgNumber()), "tcc.name")
            .ends_with(".grad_acc"))
      for (Value operand : v.getDefiningOp()->getOperands())
        if (operand != target)
          gradValues.insert(operand);

  // Temps and data edges.
  llvm::DenseMap<Value, int> tempId;
  for (size_t i = 0; i < n; ++i) {
    Operation *op = ops[i];
    auto c = dyn_cast<ConstantOp>(op);
    for (Value r : op->getResults()) {
      if ((c && !constantIsTemp(c)) || updateOf.count(r)) {
        if (c)
          persistentPart.constants += storageBytes(r.getType());
        continue;
      }
      Temp t{(int)i,
             storageBytes(r.getType()),
             {},
             returnedPlain.count(r) > 0,
             gradValues.count(r) > 0};
      tempId[r] = (int)tempValues.size();
      opTempOuts[i].push_back((int)tempValues.size());
      tempValues.push_back(t);
    }
  }
  for (size_t i = 0; i < n; ++i)
    for (Value v : reads[i]) {
      if (isa<BlockArgument>(v))
        continue;
      int d = topLevel(v.getDefiningOp());
      if (d >= 0 && !llvm::is_contained(preds[i], d)) {
        preds[i].push_back(d);
        succs[d].push_back((int)i);
      }
      auto t = tempId.find(v);
      if (t != tempId.end()) {
        opTempIns[i].push_back(t->second);
        tempValues[t->second].users.push_back((int)i);
      }
    }

  // Anti-dependences: readers of an overwritten argument come first.
  auto dataPreds = preds;
  auto dataSuccs = succs;
  for (auto [v, target] : updateOf) {
    int u = topLevel(v.getDefiningOp());
    if (u < 0)
      continue;
    for (Operation *user : target.getUsers()) {
      int x = topLevel(user);
      if (x < 0 || x == u || llvm::is_contained(preds[u], x))
        continue;
      preds[u].push_back(x);
      succs[x].push_back(u);
    }
  }
  if (hasCycle(succs)) {
    preds = std::move(dataPreds);
    succs = std::move(dataSuccs);
  }

  // Data-parallel buckets (tcc.all_reduce, tcc.reduce_scatter) are started in
  // one order on every rank, and nothing reads an averaged gradient before the
  // last bucket has been started: a reader placed earlier would wait for its
  // bucket while later gradients are still to be computed, which is the
  // overlap the buckets are for.
  SmallVector<int> buckets;
  for (size_t i = 0; i < n; ++i)
    if (isa<AllReduceOp, ReduceScatterOp>(ops[i]))
      buckets.push_back((int)i);
  auto addEdge = [&](int from, int to) {
    if (from != to && !llvm::is_contained(preds[to], from)) {
      preds[to].push_back(from);
      succs[from].push_back(to);
    }
  };
  for (size_t k = 1; k < buckets.size(); ++k)
    addEdge(buckets[k - 1], buckets[k]);
  if (!buckets.empty())
    for (int b : buckets)
      for (Value r : ops[b]->getResults())
        for (Operation *user : r.getUsers()) {
          int x = topLevel(user);
          if (x >= 0 && !isa<AllReduceOp, ReduceScatterOp>(ops[x]))
            addEdge(buckets.back(), x);
        }

  // Update chains, from the end: producers of updates, and ops whose
  // readers all belong to the chain of one producer (and that return
  // nothing else). A weight-gradient GEMM that also sums the bias gradient
  // (tcc.matmul_epilogue, tcc-gemm-epilogue) feeds two chains, the
  // weight's and the bias's: it joins the earlier, and the later waits for
  // it as an external input.
  for (size_t k = n; k-- > 0;) {
    Operation *op = ops[k];
    if (llvm::any_of(op->getResults(),
                     [&](Value r) { return updateOf.count(r); })) {
      chainOf[k] = (int)k;
      continue;
    }
    bool joinsEarliest = isa<MatmulEpilogueOp>(op);
    int common = -1;
    bool exclusive = !op->use_empty();
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers()) {
        int x = topLevel(user);
        int c = x < 0 ? -1 : chainOf[x];
        if (c >= 0 && common >= 0 && c != common && joinsEarliest) {
          common = std::min(common, c);
          continue;
        }
        if (c < 0 || (common >= 0 && c != common))
          exclusive = false;
        common = c;
      }
    if (exclusive)
      chainOf[k] = common;
  }
  chainExternal.resize(n);
  for (size_t i = 0; i < n; ++i) {
    int u = chainOf[i];
    if (u < 0)
      continue;
    for (int p : preds[i])
      if (chainOf[p] != u && !llvm::is_contained(chainExternal[u], p))
        chainExternal[u].push_back(p);
  }

  // Persistent tensors by role.
  llvm::DenseSet<BlockArgument> optimizerState;
  for (auto [v, target] : updateOf) {
    bool optimizer = isOptimizerUpdate(v.getDefiningOp());
    for (OpOperand &use : v.getUses())
      if (isOptimizerUpdate(use.getOwner()) && use.getOperandNumber() >= 2)
        optimizer = true;
    if (optimizer)
      optimizerState.insert(target);
  }
  // State the updates read and nothing writes (the learning rate).
  for (BlockArgument a : fn.getArguments())
    for (OpOperand &use : a.getUses())
      if (isOptimizerUpdate(use.getOwner()) && use.getOperandNumber() >= 2)
        optimizerState.insert(a);
  for (BlockArgument a : fn.getArguments()) {
    DictionaryAttr d = fn.getArgAttrDict(a.getArgNumber());
    StringRef kind = stringAttr(d, "tcc.kind");
    int64_t bytes = storageBytes(a.getType());
    if (kind == "param")
      persistentPart.weights += bytes;
    else if (kind == "frozen") // tcc-lora's bases: constants in the artifact
      persistentPart.constants += bytes;
    else if (kind == "input")
      persistentPart.inputs += bytes;
    else if (d && d.get("tcc.shadow_of"))
      persistentPart.weightCopies += bytes;
    else if (stringAttr(d, "tcc.name").ends_with(".grad_acc"))
      persistentPart.gradAccumulators += bytes;
    else if (optimizerState.count(a))
      persistentPart.optimizerState += bytes;
    else
      persistentPart.otherState += bytes;
  }
}

int64_t FuncMemoryModel::simulate(ArrayRef<int> order,
                                  MemoryAnatomy *anatomy) const {
  size_t n = ops.size();
  std::vector<int> pos(n);
  for (size_t k = 0; k < order.size(); ++k)
    pos[order[k]] = (int)k;
  std::vector<int64_t> delta(n + 2, 0);
  std::vector<std::pair<int, int>> life(tempValues.size());
  for (size_t t = 0; t < tempValues.size(); ++t) {
    const Temp &v = tempValues[t];
    int first = pos[v.def], last = first;
    for (int u : v.users)
      last = std::max(last, pos[u]);
    if (v.liveToEnd)
      last = (int)n;
    life[t] = {first, last};
    delta[first] += v.bytes;
    delta[last + 1] -= v.bytes;
  }
  int64_t live = 0, peak = 0;
  int peakAt = 0;
  for (size_t k = 0; k <= n; ++k) {
    live += delta[k];
    if (live > peak) {
      peak = live;
      peakAt = (int)k;
    }
  }
  if (!anatomy)
    return peak;
  *anatomy = persistentPart;
  anatomy->tempPeak = peak;
  int loss = lossOp >= 0 ? pos[lossOp] : -1;
  for (size_t t = 0; t < tempValues.size(); ++t) {
    auto [first, last] = life[t];
    bool activation =
        loss >= 0 && first < loss && last > loss && !tempValues[t].gradient;
    if (activation)
      anatomy->savedActivations += tempValues[t].bytes;
    if (first > peakAt || last < peakAt)
      continue;
    if (tempValues[t].gradient)
      anatomy->gradients += tempValues[t].bytes;
    else if (activation)
      anatomy->activations += tempValues[t].bytes;
    else
      anatomy->temporaries += tempValues[t].bytes;
  }
  return peak;
}
