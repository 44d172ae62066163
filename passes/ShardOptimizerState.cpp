//===- ShardOptimizerState.cpp - ZeRO stage 1 in the step -----------------===//
//
// tcc-shard-optimizer-state: each of N data-parallel ranks keeps and updates
// 1/N of the optimizer state. After tcc-all-reduce-gradients and
// tcc-apply-optimizer, per parameter p of n elements (c = ceil(n/N), rank r
// owns elements [r*c, min(n, (r+1)*c)) of p flattened):
//
//   %r = tcc.all_reduce %g ...            ->  %gs = tcc.reduce_scatter %g ...
//   %p1, %m1 = tcc.lion_update %p, %r, %m ->  %ps = tcc.shard_slice %p
//                                             %u, %m1 = tcc.lion_update
//                                                 %ps, %gs, %m   (all [c])
//                                             %p1 = tcc.all_gather %u
//
// (one tcc.all_gather per bucket, after the last update of its parameters,
// numbered after the reduce-scatter buckets: the code generator starts both
// kinds of bucket asynchronously and waits before the first reader).
//
// The state arguments the update reads become tensor<c x f32>, so the
// memory plan and the report count 1/N of them. Element-wise optimizers
// only: Adafactor's factored moments need whole rows and columns, and its
// step size and clipping the RMS of the whole parameter and update.
//
// The averaged gradient may be read by the update through multiplies by
// scalars (tcc-accumulate-gradients' `* (1/K)`, tcc-clip-gradients'
// `* coefficient`), which are taken of the shard, and by clipping's
// tcc.global_norm, which becomes tcc.sharded_global_norm of the shards:
// each rank's sum of squares of its shards, added over the ranks. The
// padding is zero and the shards are disjoint, so it is the norm of the
// whole gradients. fp16 loss scaling (tcc-mixed-precision, later) checks
// the shards for overflow with the same op, so every rank skips the same
// steps.
//
// The module gets `tcc.zero = {shards = N, states = {<state> = <param>}}`,
// from which the compiler writes the artifact's meta (runtime/core/
// ZeroShards.h reads it back for checkpoints).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "tcc-shard-optimizer-state"

namespace mlir::tcc {
#define GEN_PASS_DEF_SHARDOPTIMIZERSTATEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

StringRef argAttr(func::FuncOp fn, unsigned i, StringRef name) {
  auto a = fn.getArgAttrOfType<StringAttr>(i, name);
  return a ? a.getValue() : StringRef();
}

/// A multiply of `v` by a scalar (gradient accumulation's mean `* (1/K)`,
/// clipping's `* coefficient`) that is `v`'s only use, or null. Taking it
/// of the shard gives the shard of the product: the zero padding stays zero.
MulOp scalarMultiply(Operation *op, Value v) {
  auto m = dyn_cast<MulOp>(op);
  if (!m || m.getLhs() != v || m.getRhs() == v ||
      cast<RankedTensorType>(m.getRhs().getType()).getRank() != 0 ||
      !m.getResult().hasOneUse())
    return {};
  return m;
}

/// How one averaged gradient is read: through scalar multiplies (`muls`,
/// in order) by its optimizer update, and perhaps by clipping's norm.
struct Reader {
  SmallVector<MulOp> muls;
  Operation *update = nullptr;
};

struct ShardOptimizerStatePass final
    : public tcc::impl::ShardOptimizerStatePassBase<ShardOptimizerStatePass> {
  using Base::Base;

  void runOnOperation() override;
  Operation *shardUpdate(func::FuncOp fn, Operation *u, Value gradShard,
                         NamedAttrList &states);
};

} // namespace

/// A copy of update `u` on this rank's shards, its state arguments made
/// shards; `u`'s new states are replaced by the copy's, its new parameter
/// (result 0) is left for the bucket's all-gather. Null after an error.
Operation *ShardOptimizerStatePass::shardUpdate(func::FuncOp fn, Operation *u,
                                                Value gradShard,
                                                NamedAttrList &states) {
  auto p = dyn_cast<BlockArgument>(u->getOperand(0));
  if (!p || argAttr(fn, p.getArgNumber(), "tcc.kind") != "param") {
    u->emitError("tcc-shard-optimizer-state: the update does not read a "
                 "parameter of the step");
    return nullptr;
  }
  StringRef pname = argAttr(fn, p.getArgNumber(), "tcc.name");
  Type shard = gradShard.getType();
  OpBuilder b(u);
  Location loc = u->getLoc();
  int64_t n = shards;

  SmallVector<Value> operands;
  operands.push_back(
      ShardSliceOp::create(b, loc, shard, p, b.getI64IntegerAttr(n)));
  operands.push_back(gradShard);
  // The operands after (param, grad) that are per-element state.
  unsigned numStates = isa<AdamWUpdateOp>(u)                       ? 2
                       : isa<SgdMomentumUpdateOp, LionUpdateOp>(u) ? 1
                                                                   : 0;
  for (auto [k, x] : llvm::enumerate(u->getOperands().drop_front(2))) {
    if (k >= numStates) {
      operands.push_back(x); // the learning rate, the step
      continue;
    }
    auto s = dyn_cast<BlockArgument>(x);
    if (!s || argAttr(fn, s.getArgNumber(), "tcc.kind") != "state" ||
        !s.hasOneUse()) {
      u->emitError("tcc-shard-optimizer-state: the optimizer state of '")
          << pname << "' is not a state argument read by its update alone";
      return nullptr;
    }
    s.setType(shard);
    states.set(argAttr(fn, s.getArgNumber(), "tcc.name"),
               b.getStringAttr(pname));
    operands.push_back(s);
  }
  // Every result is the new param or a new state.
  SmallVector<Type> types(u->getNumResults(), shard);
  OperationState st(loc, u->getName(), operands, types, u->getAttrs());
  Operation *nu = b.create(st);
  for (unsigned k = 1; k < u->getNumResults(); ++k)
    u->getResult(k).replaceAllUsesWith(nu->getResult(k));
  return nu;
}

void ShardOptimizerStatePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fail = [&](Operation *at) {
    signalPassFailure();
    return at->emitError("tcc-shard-optimizer-state: ");
  };
  if (shards < 2) {
    fail(module) << "shards must be at least 2, got " << int64_t(shards);
    return;
  }
  auto fn = module.lookupSymbol<func::FuncOp>("train_step");
  if (!fn)
    return;
  if (!module->hasAttr("tcc.optimizer")) {
    fail(fn) << "run tcc-apply-optimizer first";
    return;
  }
  SmallVector<AllReduceOp> buckets;
  fn.walk([&](AllReduceOp ar) { buckets.push_back(ar); });
  if (buckets.empty()) {
    fail(fn) << "@train_step has no tcc.all_reduce buckets (run "
                "tcc-all-reduce-gradients first)";
    return;
  }

  // Every averaged gradient is read by its update, through scalar
  // multiplies, and perhaps by the global norm (tcc-clip-gradients): both
  // work on a shard. Anything else would need the whole gradient.
  SmallVector<GlobalNormOp> norms;
  fn.walk([&](GlobalNormOp n) { norms.push_back(n); });
  llvm::DenseSet<Value> averaged;
  for (AllReduceOp ar : buckets)
    averaged.insert(ar.getResults().begin(), ar.getResults().end());
  for (GlobalNormOp n : norms)
    if (!llvm::all_of(n.getInputs(),
                      [&](Value x) { return averaged.contains(x); })) {
      fail(n) << "the global norm reads a value that is not an averaged "
                 "gradient, and a rank holds only its shards of those";
      return;
    }
  SmallVector<Reader> readers;
  SmallVector<size_t> bucketOfReader; // index into `buckets`
  for (auto [k, ar] : llvm::enumerate(buckets))
    for (Value r : ar.getResults()) {
      Operation *user = nullptr;
      for (Operation *u : r.getUsers()) {
        if (isa<GlobalNormOp>(u))
          continue;
        if (user) {
          fail(ar) << "an averaged gradient is read by several ops ('"
                   << user->getName() << "' and '" << u->getName()
                   << "'), and a rank holds only its shard of it";
          return;
        }
        user = u;
      }
      if (!user) {
        fail(ar) << "an averaged gradient is read by no optimizer update";
        return;
      }
      Reader reader;
      Value g = r;
      while (MulOp m = scalarMultiply(user, g)) {
        reader.muls.push_back(m);
        g = m.getResult();
        user = *g.getUsers().begin();
      }
      if (isa<AdafactorUpdateOp>(user)) {
        fail(user) << "adafactor cannot be sharded: its factored second "
                      "moment averages over whole rows and columns and its "
                      "step size and update clipping take the RMS of the "
                      "whole parameter and update, which a rank's flat shard "
                      "does not hold (its state is already small: use "
                      "adamw, adam, lion or sgd with --zero-shards, or "
                      "adafactor without it)";
        return;
      }
      if (!isa<SgdUpdateOp, SgdMomentumUpdateOp, AdamWUpdateOp, LionUpdateOp>(
              user) ||
          user->getOperand(1) != g) {
        fail(user) << "an averaged gradient is read by '" << user->getName()
                   << "', not by an element-wise optimizer update; only the "
                      "update (through multiplies by scalars) and the "
                      "global norm may read a rank's shard";
        return;
      }
      reader.update = user;
      readers.push_back(std::move(reader));
      bucketOfReader.push_back(k);
    }

  // The buckets, scattered.
  llvm::DenseMap<Value, Value> shardOf;
  SmallVector<Value> scattered;
  for (AllReduceOp ar : buckets) {
    OpBuilder b(ar);
    SmallVector<Type> types;
    for (Value x : ar.getInputs()) {
      int64_t n = cast<RankedTensorType>(x.getType()).getNumElements();
      types.push_back(
          RankedTensorType::get({(n + shards - 1) / shards}, b.getF32Type()));
    }
    auto rs = ReduceScatterOp::create(b, ar.getLoc(), types, ar.getInputs(),
                                      ar.getBucketAttr(),
                                      b.getI64IntegerAttr(shards));
    for (auto [r, s] : llvm::zip(ar.getResults(), rs.getResults())) {
      shardOf[r] = s;
      scattered.push_back(s);
    }
  }
  // The norm of the whole gradients from every rank's shards.
  for (GlobalNormOp n : norms) {
    OpBuilder b(n);
    SmallVector<Value> inputs;
    for (Value x : n.getInputs())
      inputs.push_back(shardOf.lookup(x));
    Value sharded =
        ShardedGlobalNormOp::create(b, n.getLoc(), n.getResult().getType(),
                                    inputs, b.getI64IntegerAttr(shards));
    n.getResult().replaceAllUsesWith(sharded);
    n.erase();
  }
  // The multiplies and the update of each, on the shard.
  Builder builder(&getContext());
  NamedAttrList states;
  SmallVector<SmallVector<std::pair<Operation *, Operation *>>> updatesOf(
      buckets.size()); // per bucket: (old update, its sharded copy)
  for (auto [i, reader] : llvm::enumerate(readers)) {
    Value g = scattered[i];
    for (MulOp m : reader.muls) {
      OpBuilder mb(m);
      g = MulOp::create(mb, m.getLoc(), g.getType(), g, m.getRhs());
    }
    Operation *nu = shardUpdate(fn, reader.update, g, states);
    if (!nu)
      return signalPassFailure();
    updatesOf[bucketOfReader[i]].push_back({reader.update, nu});
  }
  // One all-gather per bucket, after the last of its updates: the gather
  // buckets are numbered after the reduce-scatter buckets.
  int64_t nextBucket = 0;
  for (AllReduceOp ar : buckets)
    nextBucket = std::max(nextBucket, (int64_t)ar.getBucket() + 1);
  for (auto [k, updates] : llvm::enumerate(updatesOf)) {
    if (updates.empty())
      continue;
    Operation *last = updates.front().second;
    SmallVector<Value> shardsIn;
    SmallVector<Type> wholeTypes;
    for (auto [u, nu] : updates) {
      if (last->isBeforeInBlock(nu))
        last = nu;
      shardsIn.push_back(nu->getResult(0));
      wholeTypes.push_back(u->getResult(0).getType());
    }
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    auto gather =
        AllGatherOp::create(b, last->getLoc(), wholeTypes, shardsIn,
                            b.getI64IntegerAttr(nextBucket + (int64_t)k),
                            b.getI64IntegerAttr(shards));
    for (auto [j, update] : llvm::enumerate(updates)) {
      Operation *u = update.first;
      for (Operation *user : u->getResult(0).getUsers())
        if (user->getBlock() == gather->getBlock() &&
            user->isBeforeInBlock(gather)) {
          fail(user) << "the new value of a parameter is read before the "
                        "last update of its bucket, where its all-gather "
                        "goes";
          return;
        }
      u->getResult(0).replaceAllUsesWith(gather.getResult(j));
      u->erase();
    }
  }
  for (Reader &reader : readers)
    for (MulOp m : llvm::reverse(reader.muls))
      m.erase();
  for (AllReduceOp ar : buckets)
    ar.erase();

  // Arguments and results changed type.
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  fn.setFunctionType(FunctionType::get(&getContext(),
                                       fn.getBody().front().getArgumentTypes(),
                                       ret.getOperandTypes()));
  NamedAttrList zero;
  zero.set("shards", builder.getI64IntegerAttr(shards));
  zero.set("states", states.getDictionary(&getContext()));
  module->setAttr("tcc.zero", zero.getDictionary(&getContext()));
}
