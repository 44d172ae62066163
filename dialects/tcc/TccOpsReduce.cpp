//===- TccOpsReduce.cpp - reduce_prod, cumsum: inference and gradients ----===//
//
// Inference, verifiers and gradient rules of TccOpsReduce.td's ops.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

//===----------------------------------------------------------------------===//
// reduce_prod
//===----------------------------------------------------------------------===//

TCC_REDUCE_INFER(ReduceProdOp, "reduce_prod")

// Through a kernel of its own rather than prod / x, which is NaN where x is
// 0 although the product of the other elements is not.
SmallVector<Value> ReduceProdOp::buildGradients(OpBuilder &b,
                                                ValueRange grads) {
  return {
      ReduceProdGradOp::create(b, getLoc(), grads[0], getInput(), getAxes())};
}

LogicalResult ReduceProdGradOp::verify() {
  RankedTensorType in = rankedType(getInput());
  SmallVector<Type> reduced;
  if (failed(detail::inferReduce("reduce_prod_grad", getLoc(), in, getAxes(),
                                 false, reduced)))
    return failure();
  auto want = cast<RankedTensorType>(reduced[0]);
  RankedTensorType got = rankedType(getGrad());
  if (got.getNumElements() != want.getNumElements())
    return emitOpError("grad has shape ")
           << shapeStr(got.getShape()) << ", expected the reduction's "
           << shapeStr(want.getShape()) << " (with or without keepdims)";
  return success();
}

//===----------------------------------------------------------------------===//
// global_norm
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  return success();
}

//===----------------------------------------------------------------------===//
// all_reduce
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  if (!llvm::equal(getInputs().getTypes(), getResults().getTypes()))
    return emitOpError("results must have the operands' types");
  if ((int64_t)getBucket() < 0)
    return emitOpError("bucket must be non-negative, got ")
           << (int64_t)getBucket();
  return success();
}

//===----------------------------------------------------------------------===//
// reduce_scatter, shard_slice, all_gather, sharded_global_norm (ZeRO 1)
//===----------------------------------------------------------------------===//

/// Whether `shard` is the 1-D shard type of `full` among `shards` ranks.
static LogicalResult verifyShard(Operation *op, Type full, Type shard,
                                 int64_t shards) {
  if (shards < 1)
    return op->emitOpError("shards must be at least 1, got ") << shards;
  auto f = cast<RankedTensorType>(full), s = cast<RankedTensorType>(shard);
  if (!f.hasStaticShape() || !s.hasStaticShape())
    return op->emitOpError("needs static shapes");
  int64_t c = (f.getNumElements() + shards - 1) / shards;
  if (s.getRank() != 1 || s.getDimSize(0) != c)
    return op->emitOpError("a shard of ")
           << shapeStr(f.getShape()) << " among " << shards
           << " ranks is tensor<" << c << "xf32>, got "
           << shapeStr(s.getShape());
  return success();
}

/// A bucket collective's operands and results pair up, each pair a whole
/// tensor and its shard (`inputIsWhole`: reduce-scatter; else all-gather).
template <typename Op>
static LogicalResult verifyShardBucket(Op op, bool inputIsWhole) {
  if (op.getInputs().empty())
    return op.emitOpError("needs at least one operand");
  if (op.getInputs().size() != op.getResults().size())
    return op.emitOpError("needs one result per operand");
  if ((int64_t)op.getBucket() < 0)
    return op.emitOpError("bucket must be non-negative, got ")
           << (int64_t)op.getBucket();
  for (auto [x, r] : llvm::zip(op.getInputs(), op.getResults())) {
    Type whole = inputIsWhole ? x.getType() : r.getType();
    Type shard = inputIsWhole ? r.getType() : x.getType();
    if (failed(verifyShard(op, whole, shard, (int64_t)op.getShards())))
      return failure();
  }
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return verifyShardBucket(*this, /*inputIsWhole=*/true);
}

LogicalResult ShardSliceOp::verify() {
  return verifyShard(*this, getInput().getType(), getResult().getType(),
                     (int64_t)getShards());
}

LogicalResult AllGatherOp::verify() {
  return verifyShardBucket(*this, /*inputIsWhole=*/false);
}

LogicalResult ShardedGlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  if ((int64_t)getShards() < 1)
    return emitOpError("shards must be at least 1, got ")
           << (int64_t)getShards();
  for (Value x : getInputs())
    if (cast<RankedTensorType>(x.getType()).getRank() != 1)
      return emitOpError("operands are 1-D shards, got ")
             << shapeStr(cast<RankedTensorType>(x.getType()).getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

LogicalResult CumSumOp::verify() {
  int64_t rank = rankedType(getInput()).getRank();
  if ((int64_t)getAxis() < 0 || (int64_t)getAxis() >= rank)
    return emitOpError("axis ")
           << getAxis() << " is out of range for rank " << rank;
  return success();
}

// dx[j] = sum of dy[i] over the i whose sum includes x[j]: the same scan in
// the other direction, leaving the diagonal out where the forward did.
SmallVector<Value> CumSumOp::buildGradients(OpBuilder &b, ValueRange grads) {
  return {CumSumOp::create(b, getLoc(), grads[0], getAxis(), getExclusive(),
                           !getReverse())};
}
