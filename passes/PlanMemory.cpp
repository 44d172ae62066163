//===- PlanMemory.cpp - Reorder ops to lower the peak of live bytes -------===//
//
// Each function's ops are rescheduled (always a valid topological order of
// the data dependences plus the anti-dependences of in-place updates, see
// MemoryModel.cpp) to lower the peak of live temporary bytes. Candidates:
//
//   original  the order the pipeline left.
//   hoist     the original order, except that an op producing an `update`
//             result (an optimizer update, an accumulation, a running
//             statistic) runs as soon as it is ready, and an op feeding only
//             one such op (a weight gradient) as soon as everything else the
//             update waits for has run: each gradient is made right before
//             its update and dies at once instead of living until the end of
//             the backward.
//   feed      hoist, but feeding ops run as soon as they are ready.
//   sink      hoist, then every other op whose results outweigh the operands
//             whose life it would extend moves down to just before its first
//             reader.
//   greedy    a list scheduler: update producers first, then the ready op
//             freeing the most bytes net (if any frees), then the feeding op
//             of hoist allocating least, else the earliest in the original
//             order.
//
// The candidate with the lowest simulated peak wins (ties keep the earlier
// in the list, so an order is only changed when that pays). Then
// (group-updates) an update producer moves down to just before the next
// AdamW update with the same attributes when the peak grows by at most
// 1/1024 of the winner's: the CUDA runtime runs consecutive AdamW updates as
// one multi-tensor launch, and hoisting alone leaves a bias's update (its
// gradient summed in the region that made the activation gradient) apart
// from its weight's, a launch each. The function is
// annotated with `tcc.memory`, the predicted anatomy in bytes (see
// docs/ARCHITECTURE.md, "Memory planning"); the code generator's arena plan
// of the final order is the authoritative figure.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryModel.h"
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <functional>

#define DEBUG_TYPE "tcc-plan-memory"

namespace mlir::tcc {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

const char *const names[] = {"original", "hoist", "feed", "sink", "greedy"};
constexpr int numStrategies = 5;

/// Picks the next op among the ready ones; `remaining[t]` is the number of
/// unscheduled readers of temp t, `done[i]` whether op i has run.
using Picker = std::function<int(const std::vector<int> &ready,
                                 const std::vector<int> &remaining,
                                 const std::vector<bool> &done)>;

/// A list schedule of `m` driven by `pick`. Returns an empty order if the
/// graph has a cycle (it has none: the model drops anti-dependences that
/// would make one).
std::vector<int> listSchedule(const FuncMemoryModel &m, const Picker &pick) {
  size_t n = m.numOps();
  std::vector<int> indeg(n), order, ready;
  for (size_t i = 0; i < n; ++i)
    if (!(indeg[i] = (int)m.predecessors(i).size()))
      ready.push_back((int)i);
  std::vector<int> remaining(m.temps().size());
  std::vector<bool> done(n, false);
  for (size_t t = 0; t < remaining.size(); ++t)
    remaining[t] = (int)m.temps()[t].users.size();
  while (!ready.empty()) {
    int k = pick(ready, remaining, done);
    int op = ready[k];
    ready.erase(ready.begin() + k);
    order.push_back(op);
    done[op] = true;
    for (int t : m.tempOperands(op))
      remaining[t]--;
    for (int s : m.successors(op))
      if (--indeg[s] == 0)
        ready.push_back(s);
  }
  if (order.size() != n)
    order.clear();
  return order;
}

/// 0 for an update producer; 1 for an op feeding only one producer (with
/// `urgentOnly`: once everything else that producer waits for has run, so
/// the gradient is made right before it is consumed); 2 for the rest.
int hoistRank(const FuncMemoryModel &m, int op, const std::vector<bool> &done,
              bool urgentOnly) {
  if (m.producesUpdate(op))
    return 0;
  int u = m.chainProducer(op);
  if (u < 0)
    return 2;
  if (urgentOnly)
    for (int p : m.chainInputs(u))
      if (!done[p])
        return 2;
  return 1;
}

/// The lowest rank, the earliest in the original order within a rank.
int pickHoist(const FuncMemoryModel &m, const std::vector<int> &ready,
              const std::vector<bool> &done, bool urgentOnly) {
  int best = 0, bestRank = hoistRank(m, ready[0], done, urgentOnly);
  for (size_t k = 1; k < ready.size(); ++k) {
    int r = hoistRank(m, ready[k], done, urgentOnly);
    if (r != bestRank ? r < bestRank : ready[k] < ready[best]) {
      best = (int)k;
      bestRank = r;
    }
  }
  return best;
}

/// Bytes freed minus bytes allocated by running `op` now.
int64_t netFreed(const FuncMemoryModel &m, int op,
                 const std::vector<int> &remaining) {
  int64_t net = 0;
  for (int t : m.tempOperands(op))
    if (remaining[t] == 1 && !m.temps()[t].liveToEnd)
      net += m.temps()[t].bytes;
  for (int t : m.tempResults(op))
    net -= m.temps()[t].users.empty() && !m.temps()[t].liveToEnd
               ? 0
               : m.temps()[t].bytes;
  return net;
}

/// Update producers first; then the ready op that frees the most bytes
/// net, if one frees any; then, among the ops that feed only an update
/// whose other inputs are ready, the one allocating least; else the
/// earliest in the original order.
int pickGreedy(const FuncMemoryModel &m, const std::vector<int> &ready,
               const std::vector<int> &remaining,
               const std::vector<bool> &done) {
  int best = -1, bestRank = 3;
  int64_t bestNet = 0;
  for (size_t k = 0; k < ready.size(); ++k) {
    int op = ready[k];
    int rank = hoistRank(m, op, done, /*urgentOnly=*/true);
    int64_t net = netFreed(m, op, remaining);
    // 0: producer, 1: frees bytes, 2: urgent feeder, 3: the rest.
    int cls = rank == 0 ? 0 : net > 0 ? 1 : rank == 1 ? 2 : 3;
    bool better = best < 0 || cls < bestRank ||
                  (cls == bestRank && ((cls == 1 || cls == 2) && net != bestNet
                                           ? net > bestNet
                                           : op < ready[best]));
    if (better) {
      best = (int)k;
      bestRank = cls;
      bestNet = net;
    }
  }
  return best;
}

/// Moves ops of `order` (not update chains) down to just before their first
/// successor when their results outweigh the operands whose life grows.
std::vector<int> sinkOps(const FuncMemoryModel &m, std::vector<int> order) {
  size_t n = order.size();
  std::vector<int> pos(m.numOps());
  auto renumber = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k)
      pos[order[k]] = (int)k;
  };
  renumber(0, n);
  std::vector<int> snapshot = order;
  for (size_t j = n; j-- > 0;) {
    int op = snapshot[j];
    if (m.feedsUpdateOnly(op))
      continue;
    int at = pos[op], target = (int)n; // the slot before its first successor
    for (int s : m.successors(op))
      target = std::min(target, pos[s]);
    target -= 1;
    if (target <= at)
      continue;
    int64_t grows = 0, results = 0;
    for (int t : m.tempResults(op))
      results += m.temps()[t].bytes;
    for (int t : m.tempOperands(op)) {
      const auto &v = m.temps()[t];
      int lastOther = -1;
      for (int u : v.users)
        if (u != op)
          lastOther = std::max(lastOther, pos[u]);
      if (!v.liveToEnd && lastOther < target)
        grows += v.bytes;
    }
    if (results <= grows)
      continue;
    order.erase(order.begin() + at);
    order.insert(order.begin() + target, op);
    renumber(at, target + 1);
  }
  return order;
}

/// Whether update producers `a` and `b` would run as one launch if
/// adjacent: AdamW updates with the same hyper-parameters (what the CUDA
/// runtime groups; an SGD update or a running statistic is one kernel
/// whatever its neighbours).
bool sameUpdateKind(Operation *a, Operation *b) {
  return isa<AdamWUpdateOp>(a) && isa<AdamWUpdateOp>(b) &&
         a->getAttrDictionary() == b->getAttrDictionary();
}

/// Moves each update producer of `order` down to just before the next
/// producer of its kind while the simulated peak stays at most `limit`.
/// Returns how many moved.
int groupUpdateRuns(const FuncMemoryModel &m, std::vector<int> &order,
                    int64_t limit) {
  int moved = 0;
  // From the end, so a producer joins a run its successors already formed.
  for (size_t a = order.size(); a-- > 0;) {
    int u = order[a];
    if (!m.producesUpdate(u))
      continue;
    size_t b = a + 1;
    while (b < order.size() && !m.producesUpdate(order[b]))
      ++b;
    if (b == order.size() || b == a + 1 ||
        !sameUpdateKind(m.op(u), m.op(order[b])))
      continue;
    // Nothing between may read what u produces (its results go to the
    // return, but the model's successors say so for certain).
    bool free = true;
    for (size_t k = a + 1; k < b && free; ++k)
      free = !llvm::is_contained(m.successors(u), order[k]);
    if (!free)
      continue;
    std::vector<int> trial = order;
    trial.erase(trial.begin() + a);
    trial.insert(trial.begin() + (b - 1), u);
    if (m.simulate(trial) > limit)
      continue;
    order = std::move(trial);
    ++moved;
  }
  return moved;
}

/// Moves every tcc.all_reduce (tcc.reduce_scatter) to just after the last
/// op it depends on, so its bucket starts as soon as its gradients exist; an
/// all_reduce's results and operands weigh the same (it averages in place),
/// a reduce_scatter's results weigh less. A tcc.all_gather likewise starts
/// right after the last update of its bucket, while the others run; its
/// results are the parameters themselves unless the step returns a copy.
void startBucketsEarly(const FuncMemoryModel &m, std::vector<int> &order) {
  std::vector<int> pos(order.size());
  for (size_t a = 0; a < order.size(); ++a) {
    if (!isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(m.op(order[a])))
      continue;
    for (size_t k = 0; k < order.size(); ++k)
      pos[order[k]] = (int)k;
    int after = -1;
    for (int p : m.predecessors(order[a]))
      after = std::max(after, pos[p]);
    int u = order[a];
    order.erase(order.begin() + a);
    order.insert(order.begin() + (after + 1), u);
  }
}

/// After the last bucket has started, runs first what reads the earliest
/// buckets (the optimizer updates of the last layers), so the step waits
/// for a bucket while later ones are still on the wire. Ready ops are taken
/// by the last bucket they read (none first), then in their order.
void readBucketsInOrder(const FuncMemoryModel &m, std::vector<int> &order) {
  size_t last = order.size();
  for (size_t a = 0; a < order.size(); ++a)
    if (isa<AllReduceOp, ReduceScatterOp>(m.op(order[a])))
      last = a;
  if (last == order.size())
    return;
  llvm::DenseMap<Value, int64_t> bucketOf;
  for (int i : order) {
    if (auto ar = dyn_cast<AllReduceOp>(m.op(i)))
      for (Value r : ar.getResults())
        bucketOf[r] = (int64_t)ar.getBucket();
    if (auto rs = dyn_cast<ReduceScatterOp>(m.op(i)))
      for (Value r : rs.getResults())
        bucketOf[r] = (int64_t)rs.getBucket();
  }
  std::vector<int> tail(order.begin() + last + 1, order.end());
  llvm::DenseMap<int, int> rank; // op -> position in the tail
  for (size_t k = 0; k < tail.size(); ++k)
    rank[tail[k]] = (int)k;
  std::vector<int64_t> key(tail.size(), -1);
  std::vector<int> waiting(tail.size(), 0);
  for (size_t k = 0; k < tail.size(); ++k) {
    m.op(tail[k])->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (auto it = bucketOf.find(v); it != bucketOf.end())
          key[k] = std::max(key[k], it->second);
    });
    for (int p : m.predecessors(tail[k]))
      waiting[k] += rank.count(p);
  }
  std::vector<int> out;
  std::vector<bool> done(tail.size(), false);
  while (out.size() < tail.size()) {
    int pick = -1;
    for (size_t k = 0; k < tail.size(); ++k)
      if (!done[k] && waiting[k] == 0 && (pick < 0 || key[k] < key[pick]))
        pick = (int)k;
    if (pick < 0)
      return; // not a valid order: leave the planner's
    done[pick] = true;
    out.push_back(tail[pick]);
    for (int su : m.successors(tail[pick]))
      if (auto it = rank.find(su); it != rank.end())
        --waiting[it->second];
  }
  std::copy(out.begin(), out.end(), order.begin() + last + 1);
}

DictionaryAttr anatomyAttr(MLIRContext *ctx, const MemoryAnatomy &a,
                           StringRef schedule) {
  Builder b(ctx);
  NamedAttrList attrs;
  auto set = [&](StringRef k, int64_t v) {
    attrs.set(k, b.getI64IntegerAttr(v));
  };
  set("weights", a.weights);
  if (a.weightCopies)
    set("weight_copies", a.weightCopies);
  set("optimizer_state", a.optimizerState);
  set("grad_accumulators", a.gradAccumulators);
  set("other_state", a.otherState);
  set("inputs", a.inputs);
  set("constants", a.constants);
  set("activations", a.activations);
  set("gradients", a.gradients);
  set("temporaries", a.temporaries);
  set("temp_peak", a.tempPeak);
  set("saved_activations", a.savedActivations);
  set("peak", a.peak());
  attrs.set("schedule", b.getStringAttr(schedule));
  return attrs.getDictionary(ctx);
}

struct PlanMemoryPass final
    : public tcc::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (strategy != "auto" && !llvm::is_contained(names, strategy)) {
      getOperation().emitError("tcc-plan-memory: unknown strategy '")
          << strategy << "' (valid: auto, original, hoist, feed, sink, greedy)";
      return signalPassFailure();
    }
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        planFunction(fn);
  }

  void planFunction(func::FuncOp fn) {
    FuncMemoryModel m(fn);
    std::vector<int> original(m.numOps());
    for (size_t i = 0; i < original.size(); ++i)
      original[i] = (int)i;
    auto hoisting = [&](bool urgentOnly) {
      return listSchedule(m, [&](const std::vector<int> &ready,
                                 const std::vector<int> &,
                                 const std::vector<bool> &done) {
        return pickHoist(m, ready, done, urgentOnly);
      });
    };
    std::vector<int> hoist = hoisting(true);
    std::vector<int> candidates[numStrategies] = {
        original, hoist, hoisting(false),
        hoist.empty() ? hoist : sinkOps(m, hoist),
        listSchedule(m, [&](const std::vector<int> &ready,
                            const std::vector<int> &remaining,
                            const std::vector<bool> &done) {
          return pickGreedy(m, ready, remaining, done);
        })};
    int chosen = 0;
    int64_t best = m.simulate(original);
    for (int c = 1; c < numStrategies; ++c) {
      if (candidates[c].empty())
        continue;
      int64_t peak = m.simulate(candidates[c]);
      LLVM_DEBUG(llvm::dbgs() << fn.getSymName() << ": " << names[c] << " peak "
                              << peak << "\n");
      if (strategy == names[c] || (strategy == "auto" && peak < best)) {
        chosen = c;
        best = peak;
      }
    }
    std::vector<int> order = candidates[chosen];
    if (groupUpdates)
      numGrouped += groupUpdateRuns(m, order, best + best / 1024);
    startBucketsEarly(m, order);
    readBucketsInOrder(m, order);
    Operation *ret = fn.getBody().front().getTerminator();
    for (int i : order)
      m.op(i)->moveBefore(ret);
    if (annotate) {
      MemoryAnatomy a;
      m.simulate(order, &a);
      fn->setAttr("tcc.memory", anatomyAttr(&getContext(), a, names[chosen]));
    }
  }
};
} // namespace
