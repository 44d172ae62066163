//===- Rematerialize.cpp - Recompute activations to fit a budget ----------===//
//
// tcc-rematerialize keeps at most `memory-budget` bytes of activations (see
// ActivationAnalysis.h) alive across the loss of a training step, by
// recomputing the others in the backward from what is kept.
//
// Choice: a parametric minimum cut (AOTAutograd's formulation, plus a price
// on recomputation). The forward (the ops before the loss) becomes a flow
// network:
//
//   source --cost(o)*Sc--> op o --bytes(v)*Sb--> value v --inf--> each user
//   op of v in the forward; value v --inf--> sink when the backward reads v.
//
// Ops on the sink side of a cut are recomputed in the backward; a value whose
// op is on the source side and whose node is on the sink side is kept. An
// infinite edge source->o bans recomputing o: ops with side effects or
// regions, ops the cost model does not know, and with `recompute=cheap`
// matmul, convolution and fused attention. A finite cut is a valid plan (every
// value the backward reads is kept or recomputable from kept values,
// parameters, inputs and constants) and its value is
//   Sb * kept bytes + Sc * recompute cost,
// so the minimum cut is the plan minimizing bytes + lambda * cost with
// lambda = Sc / Sb. lambda = 0 gives the fewest bytes any plan can keep (the
// budget is refused below it); lambda = inf keeps every activation. A binary
// search on lambda (log scale) finds the cheapest plan of this family within
// the budget. Unlike a greedy knapsack over single activations, a cut sees
// chains: recomputing softmax -> dropout from the kept scores frees both.
// Every plan the search returns is optimal for its lambda; a budget between
// two such plans gets the one with less memory (a knapsack on the gap could
// shave some recomputation; not done).
//
// Cost per op: about its time in ns on one CPU thread (see recomputeCost),
// from ~1 per element for data movement and arithmetic to ~26 for softmax;
// matmul, convolution and fused attention cost their FLOPs / 26 (attention
// plus its softmax-like row pass). The cut therefore takes the
// cheap ops first and a GEMM only when that is cheaper than the alternative
// (on the GPT example, half the activations cannot be reached without
// recomputing attention scores: every other kept value is a GEMM output).
//
// Rewrite: each recomputed op is cloned right before the first op after the
// loss that reads it (or reads a clone that needs it), operands first, and
// the backward's uses are redirected to the clones. The originals stay for
// the forward and now die before the loss. This must run after the last CSE,
// which would merge the clones back into the originals.
//
// Random ops: tcc.dropout's mask is a pure function of (seed, rng.step,
// element index) (docs/ARCHITECTURE.md, "Random numbers"), so a cloned
// dropout reads the same `rng.step` argument and reproduces its mask bit for
// bit: nothing is redrawn. (The step's `update` is written after the clone
// reads the old value; the code generator copies it at the end when a read
// follows the increment.)
//
// Passes after this one must not move the clones back before the loss
// (tcc-fuse must not merge an op after the loss into a region of ops before
// it), or the memory is not saved; the results stay correct either way.
//
// Not handled: ops with regions, activations inside nested blocks.
//
//===----------------------------------------------------------------------===//
#include "passes/ActivationAnalysis.h"
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "runtime/core/prelude/UnaryFn.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

#define DEBUG_TYPE "tcc-rematerialize"

namespace mlir::tcc {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

//===----------------------------------------------------------------------===//
// Maximum flow (Dinic) on int64 capacities
//===----------------------------------------------------------------------===//

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

class FlowNetwork {
public:
  explicit FlowNetwork(int n) : adj(n), level(n), next(n) {}

  void addEdge(int from, int to, int64_t cap) {
    adj[from].push_back((int)edges.size());
    edges.push_back({to, cap});
    adj[to].push_back((int)edges.size());
    edges.push_back({from, 0});
  }

  void maxFlow(int s, int t) {
    while (bfs(s, t)) {
      std::fill(next.begin(), next.end(), 0);
      while (dfs(s, t, kInf) > 0) {
      }
    }
  }

  /// Nodes reachable from `s` in the residual graph: the source side of a
  /// minimum cut once maxFlow has run.
  std::vector<bool> sourceSide(int s) const {
    std::vector<bool> seen(adj.size(), false);
    std::vector<int> stack{s};
    seen[s] = true;
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (int e : adj[u])
        if (edges[e].cap > 0 && !seen[edges[e].to]) {
          seen[edges[e].to] = true;
          stack.push_back(edges[e].to);
        }
    }
    return seen;
  }

private:
  struct Edge {
    int to;
    int64_t cap; // residual capacity
  };

  bool bfs(int s, int t) {
    std::fill(level.begin(), level.end(), -1);
    std::queue<int> q;
    level[s] = 0;
    q.push(s);
    while (!q.empty()) {
      int u = q.front();
      q.pop();
      for (int e : adj[u])
        if (edges[e].cap > 0 && level[edges[e].to] < 0) {
          level[edges[e].to] = level[u] + 1;
          q.push(edges[e].to);
        }
    }
    return level[t] >= 0;
  }

  // Recursion depth is bounded by the BFS level of the sink, at most the
  // forward's depth plus two.
  int64_t dfs(int u, int t, int64_t f) {
    if (u == t)
      return f;
    for (int &i = next[u]; i < (int)adj[u].size(); ++i) {
      Edge &e = edges[adj[u][i]];
      if (e.cap <= 0 || level[e.to] != level[u] + 1)
        continue;
      int64_t got = dfs(e.to, t, std::min(f, e.cap));
      if (got > 0) {
        e.cap -= got;
        edges[adj[u][i] ^ 1].cap += got;
        return got;
      }
    }
    return 0;
  }

  std::vector<Edge> edges;
  std::vector<std::vector<int>> adj;
  std::vector<int> level, next;
};

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

static int64_t numElements(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.hasStaticShape() ? r.getNumElements() : -1;
}

/// The cost unit is about a nanosecond of one CPU thread, measured with
/// `TCC_NUM_THREADS=1 tcc bench --profile` on the GPT example's kernels:
/// OpenBLAS's sgemm does ~26 GFLOP/s, so a GEMM costs FLOPs / 26; data
/// movement and arithmetic ~1 ns per element, layer norm ~7, GELU ~16,
/// softmax ~26 (exp and two passes over each row).
constexpr int64_t kGemmFlopsPerUnit = 26;

/// Relative cost of recomputing `op` (see above), or -1 when it is never
/// recomputed: ops with side effects or regions, ops not listed here, and
/// matmul, convolution and attention unless `gemms`.
static int64_t recomputeCost(Operation *op, bool gemms) {
  if (op->getNumRegions() != 0 || !isPure(op) || op->getNumResults() == 0)
    return -1;
  int64_t out = 0;
  for (Value r : op->getResults()) {
    int64_t n = numElements(r.getType());
    if (n < 0)
      return -1;
    out += n;
  }
  int64_t in =
      op->getNumOperands() ? numElements(op->getOperand(0).getType()) : out;
  if (in < 0)
    return -1;
  auto dim = [](Value v, int fromEnd) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getRank() >= fromEnd ? t.getDimSize(t.getRank() - fromEnd) : 1;
  };
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    if (!gemms)
      return -1;
    int64_t k = dim(mm.getLhs(), mm.getTransposeLhs() ? 2 : 1);
    return std::max<int64_t>(1, 2 * out * k / kGemmFlopsPerUnit);
  }
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    // Two GEMMs per batch entry (q k^T and P v) and a softmax-like pass
    // over the [Tq, Tk] scores, which a GEMM-priced recomputation is.
    if (!gemms)
      return -1;
    auto q = cast<RankedTensorType>(attn.getQuery().getType());
    int64_t rows = q.getNumElements() / q.getShape().back(); // batch * Tq
    int64_t tk = dim(attn.getKey(), attn.getSeqMajor() ? 3 : 2),
            d = dim(attn.getKey(), 1);
    int64_t dv = dim(attn.getValue(), 1);
    int64_t flops = 2 * rows * tk * (d + dv);
    return std::max<int64_t>(1, flops / kGemmFlopsPerUnit + 26 * rows * tk);
  }
  if (auto conv = dyn_cast<Conv2dOp>(op)) {
    if (!gemms)
      return -1;
    auto w = cast<RankedTensorType>(conv.getWeight().getType());
    int64_t k = w.getNumElements() / std::max<int64_t>(1, w.getDimSize(0));
    return std::max<int64_t>(1, 2 * out * k / kGemmFlopsPerUnit);
  }
  // Per element of the results.
  int64_t factor =
      llvm::TypeSwitch<Operation *, int64_t>(op)
          .Case<ReshapeOp, BroadcastToOp, TransposeOp, SliceOp, SliceGradOp,
                ConcatOp, GatherOp, CastOp, WhereOp, NegOp, ReluOp, AddOp,
                SubOp, MulOp, DivOp, CompareOp, LogicOp, MaximumOp, MinimumOp,
                ModOp, GatherElementsOp, GatherNdOp>([](auto) { return 1; })
          // Counter-based hash per element, two results.
          .Case<DropoutOp, RandomOp>([](auto) { return 2; })
          .Case<ExpOp, LogOp, SqrtOp, TanhOp, SigmoidOp, ErfOp, PowOp,
                PowScalarOp>([](auto) { return 8; })
          .Case<GeluOp>([](auto) { return 16; })
          // The family's transcendental functions cost as exp does.
          .Case<UnaryFnOp>([](UnaryFnOp f) {
            int fn = f.getFnCode();
            bool cheap = fn == TCC_UFN_ABS || fn == TCC_UFN_SIGN ||
                         fn == TCC_UFN_FLOOR || fn == TCC_UFN_CEIL ||
                         fn == TCC_UFN_ROUND || fn == TCC_UFN_HARD_SWISH ||
                         fn == TCC_UFN_HARD_SIGMOID ||
                         fn == TCC_UFN_LEAKY_RELU || fn == TCC_UFN_CLIP ||
                         fn == TCC_UFN_SOFTSIGN || fn == TCC_UFN_SHRINK ||
                         fn == TCC_UFN_THRESHOLDED_RELU;
            return cheap ? 1 : 8;
          })
          .Default([](Operation *) { return -1; });
  if (factor > 0)
    return std::max<int64_t>(1, factor * out);
  // Per element of the input, which reductions and normalizations read
  // more than once.
  factor = llvm::TypeSwitch<Operation *, int64_t>(op)
               .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                     ReduceProdOp, CumSumOp, ArgMaxOp, ArgMinOp>(
                   [](auto) { return 1; })
               .Case<AvgPool2dOp, MaxPool2dOp>([](auto) { return 4; })
               .Case<LayerNormOp, BatchNormTrainOp>([](auto) { return 8; })
               .Case<SoftmaxOp, LogSoftmaxOp>([](auto) { return 26; })
               .Default([](Operation *) { return -1; });
  return factor > 0 ? std::max<int64_t>(1, factor * std::max(in, out)) : -1;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// The forward of one function as a flow network.
struct ForwardGraph {
  Operation *lossOp = nullptr;
  std::vector<Operation *> ops;             // the forward, in block order
  llvm::DenseMap<Operation *, int> opIndex; // op -> index in `ops`
  std::vector<int64_t> cost;                // -1: never recomputed
  std::vector<Value> needed;                // activations, in order
  // Network units: bytes / byteQuantum and cost / costQuantum stay below
  // 2^40 in total, so that scales up to 2^20 cannot overflow int64.
  int64_t byteQuantum = 1, costQuantum = 1;
};

struct Plan {
  std::vector<bool> cut;            // per forward op: recomputable
  llvm::DenseSet<Value> forcedKeep; // kept although cut allows
  llvm::DenseSet<Operation *> recompute;
  llvm::SmallVector<Value> kept;
  int64_t keptBytes = 0;
  int64_t cost = 0;
};

static int64_t valueBytes(Value v) {
  return std::max<int64_t>(0, runtimeTensorBytes(v.getType()));
}

/// A forward op whose result must be kept or recomputed (not a block
/// argument, not a constant).
static Operation *forwardDef(const ForwardGraph &g, Value v) {
  Operation *def = v.getDefiningOp();
  return def && g.opIndex.count(def) ? def : nullptr;
}

/// Follows the needs of the backward through the ops the cut recomputes,
/// keeping the values of `forcedKeep` even so.
static Plan planFromCut(const ForwardGraph &g, std::vector<bool> recomputed,
                        llvm::DenseSet<Value> forcedKeep = {}) {
  Plan p;
  p.cut = std::move(recomputed);
  p.forcedKeep = std::move(forcedKeep);
  llvm::DenseSet<Value> seen;
  llvm::SmallVector<Value> work(g.needed.begin(), g.needed.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    Operation *def = forwardDef(g, v);
    if (!def)
      continue;
    int i = g.opIndex.lookup(def);
    if (!p.cut[i] || p.forcedKeep.contains(v)) {
      p.kept.push_back(v);
      p.keptBytes += valueBytes(v);
      continue;
    }
    if (p.recompute.insert(def).second)
      p.cost += g.cost[i];
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  return p;
}

/// The plan minimizing Sb * kept bytes + Sc * recompute cost.
static Plan solve(const ForwardGraph &g, int64_t sb, int64_t sc) {
  // Nodes: 0 source, 1 sink, 2.. ops, then one per result.
  int n = 2 + (int)g.ops.size();
  llvm::DenseMap<Value, int> valueNode;
  for (Operation *op : g.ops)
    for (Value r : op->getResults())
      valueNode[r] = n++;
  FlowNetwork net(n);
  auto scaled = [](int64_t x, int64_t quantum, int64_t s) {
    return (x + quantum - 1) / quantum * s;
  };
  llvm::DenseSet<Value> needed(g.needed.begin(), g.needed.end());
  for (auto [i, op] : llvm::enumerate(g.ops)) {
    int opNode = 2 + (int)i;
    net.addEdge(0, opNode,
                g.cost[i] < 0 ? kInf : scaled(g.cost[i], g.costQuantum, sc));
    for (Value r : op->getResults()) {
      int vn = valueNode.lookup(r);
      net.addEdge(opNode, vn, scaled(valueBytes(r), g.byteQuantum, sb));
      if (needed.contains(r))
        net.addEdge(vn, 1, kInf);
    }
    for (Value operand : op->getOperands())
      if (forwardDef(g, operand))
        net.addEdge(valueNode.lookup(operand), opNode, kInf);
  }
  net.maxFlow(0, 1);
  std::vector<bool> side = net.sourceSide(0);
  std::vector<bool> recomputed(g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i)
    recomputed[i] = !side[2 + i];
  return planFromCut(g, std::move(recomputed));
}

/// A plan optimal for some lambda may keep less than the budget allows (the
/// next plan of the family keeps too much). Spends the slack greedily: each
/// recomputed value, by the cost saved per byte added when it is kept
/// instead (rated once, against `p`), is kept while the plan still fits.
/// O(recomputed values x forward size).
static Plan fillSlack(const ForwardGraph &g, Plan p, int64_t budget) {
  struct Candidate {
    Value value;
    double ratio;
  };
  std::vector<Candidate> candidates;
  for (Operation *op : g.ops) { // in order, so that ties are deterministic
    if (!p.recompute.contains(op))
      continue;
    for (Value r : op->getResults()) {
      llvm::DenseSet<Value> forced = p.forcedKeep;
      forced.insert(r);
      Plan q = planFromCut(g, p.cut, std::move(forced));
      if (q.keptBytes > budget || q.cost >= p.cost)
        continue;
      candidates.push_back(
          {r, double(p.cost - q.cost) /
                  double(std::max<int64_t>(1, q.keptBytes - p.keptBytes))});
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate &a, const Candidate &b) { return a.ratio > b.ratio; });
  for (const Candidate &c : candidates) {
    if (p.forcedKeep.contains(c.value))
      continue;
    llvm::DenseSet<Value> forced = p.forcedKeep;
    forced.insert(c.value);
    Plan q = planFromCut(g, p.cut, std::move(forced));
    if (q.keptBytes <= budget && q.cost < p.cost)
      p = std::move(q);
  }
  return p;
}

/// lambda = 2^t bytes per cost unit, as integer scales; |t| <= 20.
static Plan solveAt(const ForwardGraph &g, double t) {
  t = std::clamp(t, -20.0, 20.0);
  if (t >= 0)
    return solve(g, 1, (int64_t)std::llround(std::exp2(t)));
  return solve(g, (int64_t)std::llround(std::exp2(-t)), 1);
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

/// Clones the recomputed ops into the backward, each right before the first
/// op after the loss that needs it, and redirects the backward's uses.
static void applyPlan(const ForwardGraph &g, const Plan &plan) {
  Block *body = g.lossOp->getBlock();
  llvm::DenseMap<Operation *, Operation *> clones;
  OpBuilder b(g.lossOp->getContext());
  std::function<Operation *(Operation *, Operation *)> materialize =
      [&](Operation *orig, Operation *before) -> Operation * {
    if (Operation *c = clones.lookup(orig))
      return c;
    IRMapping map;
    for (Value operand : orig->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && plan.recompute.contains(def))
        map.map(def->getResults(), materialize(def, before)->getResults());
    b.setInsertionPoint(before);
    Operation *c = b.clone(*orig, map);
    clones[orig] = c;
    return c;
  };
  llvm::SmallVector<Operation *> backward;
  for (Operation *op = g.lossOp->getNextNode(); op; op = op->getNextNode())
    if (!op->hasTrait<OpTrait::IsTerminator>())
      backward.push_back(op);
  for (Operation *user : backward)
    for (OpOperand &use : user->getOpOperands()) {
      auto r = dyn_cast<OpResult>(use.get());
      if (!r || !plan.recompute.contains(r.getOwner()) ||
          r.getOwner()->getBlock() != body)
        continue;
      use.set(materialize(r.getOwner(), user)->getResult(r.getResultNumber()));
    }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct RematerializePass final
    : tcc::impl::RematerializePassBase<RematerializePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    int64_t budget = memoryBudget;
    if (budget <= 0)
      return;
    if (recompute != "all" && recompute != "cheap") {
      mlir::emitError(fn.getLoc())
          << "tcc-rematerialize: recompute must be 'all' or 'cheap', got '"
          << recompute << "'";
      return signalPassFailure();
    }
    std::optional<ActivationInfo> info = analyzeActivations(fn);
    if (!info)
      return;
    activationBytesBefore = info->totalBytes;
    activationBytesAfter = info->totalBytes;
    if (info->totalBytes <= budget)
      return;

    ForwardGraph g;
    g.lossOp = info->lossOp;
    for (Operation &op : fn.getBody().front()) {
      if (&op == g.lossOp)
        break;
      if (matchPattern(&op, m_Constant()))
        continue;
      g.opIndex[&op] = (int)g.ops.size();
      g.ops.push_back(&op);
      g.cost.push_back(recomputeCost(&op, recompute == "all"));
    }
    for (const Activation &a : info->activations)
      g.needed.push_back(a.value);
    int64_t totalBytes = 0, totalCost = 0;
    for (Operation *op : g.ops)
      for (Value r : op->getResults())
        totalBytes += valueBytes(r);
    for (int64_t c : g.cost)
      totalCost += std::max<int64_t>(c, 0);
    g.byteQuantum = std::max<int64_t>(1, totalBytes >> 40);
    g.costQuantum = std::max<int64_t>(1, totalCost >> 40);

    // lambda = 0: recomputation is free, so this keeps the fewest bytes.
    Plan fewest = solve(g, 1, 0);
    if (fewest.keptBytes > budget) {
      // What that plan keeps comes from ops that are never recomputed
      // (itself, or upstream when a tie kept a recomputable successor).
      llvm::SetVector<StringRef> kinds;
      llvm::SmallVector<Operation *> work;
      llvm::DenseSet<Operation *> seen;
      for (Value v : fewest.kept)
        work.push_back(v.getDefiningOp());
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!op || !g.opIndex.count(op) || !seen.insert(op).second)
          continue;
        if (g.cost[g.opIndex.lookup(op)] < 0) {
          kinds.insert(op->getName().getStringRef());
          continue;
        }
        for (Value operand : op->getOperands())
          work.push_back(operand.getDefiningOp());
      }
      std::string names;
      for (StringRef k : kinds)
        names += (names.empty() ? "" : ", ") + k.str();
      mlir::emitError(fn.getLoc())
          << "memory budget of " << budget << " bytes (" << formatBytes(budget)
          << ") is below the " << formatBytes(fewest.keptBytes) << " ("
          << fewest.keptBytes << " bytes) of activations that any schedule of @"
          << fn.getSymName() << " must keep (outputs of " << names
          << ", which are not recomputed"
          << (recompute == "cheap" ? " with recompute=cheap" : "")
          << "); its activations total " << formatBytes(info->totalBytes)
          << " (" << info->totalBytes << " bytes)";
      return signalPassFailure();
    }

    // Largest lambda (least recomputation) whose plan fits.
    double lo = -20, hi = 20;
    Plan best = solveAt(g, lo);
    if (best.keptBytes > budget)
      best = std::move(fewest);
    Plan top = solveAt(g, hi);
    if (top.keptBytes <= budget) {
      best = std::move(top);
    } else {
      for (int it = 0; it < 48 && hi - lo > 1e-3; ++it) {
        double mid = 0.5 * (lo + hi);
        Plan p = solveAt(g, mid);
        if (p.keptBytes <= budget) {
          lo = mid;
          best = std::move(p);
        } else {
          hi = mid;
        }
      }
    }
    best = fillSlack(g, std::move(best), budget);
    LLVM_DEBUG(llvm::dbgs()
               << "@" << fn.getSymName() << ": activations " << info->totalBytes
               << " B, minimum " << fewest.keptBytes << " B, plan keeps "
               << best.keptBytes << " B, recomputes " << best.recompute.size()
               << " ops (cost " << best.cost << ")\n");
    applyPlan(g, best);
    numRecomputed = best.recompute.size();
    int64_t kept = info->totalBytes;
    if (auto after = analyzeActivations(fn))
      kept = after->totalBytes;
    activationBytesAfter = kept;
    // The outcome, for --emit and the memory report (statistics are compiled
    // out of release builds of LLVM).
    Builder b(fn.getContext());
    fn->setAttr(
        "tcc.remat",
        b.getDictionaryAttr(
            {b.getNamedAttr("budget", b.getI64IntegerAttr(budget)),
             b.getNamedAttr("activation_bytes",
                            b.getI64IntegerAttr(info->totalBytes)),
             b.getNamedAttr("kept_bytes", b.getI64IntegerAttr(kept)),
             b.getNamedAttr("recomputed_ops",
                            b.getI64IntegerAttr(best.recompute.size()))}));
  }
};

} // namespace
