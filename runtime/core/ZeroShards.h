//===- ZeroShards.h - Sharded optimizer state (ZeRO stage 1) ----*- C++ -*-===//
//
// An artifact compiled with `tcc compile --data-parallel --zero-shards N`
// keeps 1/N of its optimizer state on each of the N ranks of its run: for a
// parameter of n elements, c = ceil(n / N), rank r owns elements
// [r*c, min(n, (r+1)*c)) of the parameter flattened, and each optimizer
// state tensor of it (exp_avg, exp_avg_sq, momentum_buffer) is a 1-D tensor
// of c elements holding the state of those elements, zero past n.
//
// The artifact's meta records it: `zero_shards` = N and `zero_sharded_state`
// = "state=param,..." (the state tensors that are shards, each with the
// parameter whose shape the whole state has). This file reads that back and
// does the shard arithmetic the kernels (reduce_scatter, shard_slice,
// all_gather) and the training loop use: a checkpoint holds whole tensors,
// so before rank 0 writes one every rank joins its shards (gatherState),
// and on resume each rank takes its own shard of the saved tensor
// (sliceShard).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ZEROSHARDS_H
#define TCC_RUNTIME_CORE_ZEROSHARDS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tcc::rt {

struct Artifact;
struct TensorInfo;
class Communicator;

/// Elements of each shard of a tensor of `numel` elements: ceil(numel / N).
int64_t shardSize(int64_t numel, int64_t shards);
/// [begin, end) of the elements rank `rank` owns (end <= numel; empty for a
/// rank past the end of a small tensor).
std::pair<int64_t, int64_t> shardRange(int64_t numel, int64_t shards,
                                       int64_t rank);
/// shard[0, c) = full's elements of rank `rank`, zero past numel.
void sliceShard(const float *full, int64_t numel, int64_t shards, int64_t rank,
                float *shard);
/// full[0, numel) = the rank-ordered shards (shards * c floats at
/// `all`), each shard's padding dropped.
void joinShards(const float *all, int64_t numel, int64_t shards, float *full);

/// One sharded state tensor of an artifact.
struct ShardedState {
  std::string state; // the state tensor (1-D, shardSize(numel) elements)
  std::string param; // the parameter whose shape the whole state has
  int32_t stateId = -1, paramId = -1; // in Artifact::tensors
  int64_t numel = 0;                  // elements of the whole state
  int64_t shardNumel = 0;
};

struct ZeroPlan {
  int64_t shards = 0; // 0: the artifact's state is not sharded
  std::vector<ShardedState> states;
  /// The entry of state tensor `name`, or null when it is whole.
  const ShardedState *find(const std::string &name) const;
};

/// The sharding the artifact's meta records; Error when the meta is
/// inconsistent with its tensors.
ZeroPlan zeroPlan(const Artifact &a);

/// `tensors` (an artifact's) as the unsharded artifact has them: each
/// sharded state of `plan` with its parameter's shape. What a checkpoint of
/// the run holds, so it is the checkpoint of the run without sharding.
std::vector<TensorInfo> wholeStateTensors(std::vector<TensorInfo> tensors,
                                          const ZeroPlan &plan);

/// Error unless the run has as many ranks as the artifact's shards (a run of
/// N ranks keeps the whole state only between them).
void checkZeroRanks(int64_t shards, const Communicator &comm);

/// The whole state (s.numel floats) from every rank's shard (`shard`,
/// s.shardNumel floats): an all-gather, every rank calls it in the same
/// order.
std::vector<float> gatherState(Communicator &comm, const ShardedState &s,
                               const float *shard);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ZEROSHARDS_H
