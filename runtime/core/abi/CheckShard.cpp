//===- CheckShard.cpp - Sharded optimizer state: reduce_scatter, ... ------===//
//
// The shard kernels' operands: a tensor of n elements and its 1-D shard of
// ceil(n / shards) elements (runtime/core/ZeroShards.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/ZeroShards.h"
#include "runtime/core/abi/KernelCheck.h"

namespace tcc::rt::abi {

static int64_t shardsOf(const KernelSig &s) {
  const ShardAttrs &a = attrsOf<ShardAttrs>(s.instr);
  if (a.shards < 1)
    throw Error("shards must be at least 1, got " + std::to_string(a.shards));
  if (a.bucket < 0)
    throw Error("bucket must be non-negative");
  return a.shards;
}

/// Output `o` (input `i` when !outIsShard) is the shard of the other.
static void expectShard(const KernelSig &s, size_t i, bool outIsShard) {
  const TensorInfo *full = outIsShard ? s.in[i] : s.out[i];
  int64_t c = shardSize(full->numElements(), shardsOf(s));
  expectShape(s, !outIsShard, i, {c});
}

// A bucket collective: input i and output i are a whole tensor and its
// shard, in the direction `outIsShard` says.
static void checkShardBucket(const KernelSig &s, bool outIsShard) {
  if (s.in.empty() || s.in.size() != s.out.size())
    throw Error("expects as many outputs as inputs (at least 1), got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
  expectAllF32(s);
  for (size_t i = 0; i < s.in.size(); ++i)
    expectShard(s, i, outIsShard);
}

void check_reduce_scatter(const KernelSig &s) { checkShardBucket(s, true); }

void check_shard_slice(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  expectShard(s, 0, true);
}

void check_all_gather(const KernelSig &s) { checkShardBucket(s, false); }

// The tensors a bucket's collective writes (what the wait makes readable).
void check_shard_wait(const KernelSig &s) {
  if (s.in.empty() || !s.out.empty())
    throw Error("expects at least 1 input and no output, got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
  shardsOf(s);
  expectAllF32(s);
}

void check_sharded_global_norm(const KernelSig &s) {
  if (s.in.empty() || s.out.size() != 1)
    throw Error("expects at least 1 input and 1 output, got " +
                std::to_string(s.in.size()) + " and " +
                std::to_string(s.out.size()));
  shardsOf(s);
  expectAllF32(s);
  for (size_t i = 0; i < s.in.size(); ++i)
    if (s.in[i]->shape.size() != 1)
      throw Error("input " + std::to_string(i) + " is not a 1-D shard");
  expectShape(s, false, 0, {});
}

} // namespace tcc::rt::abi
