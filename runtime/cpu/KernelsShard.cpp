//===- KernelsShard.cpp - Sharded optimizer state (ZeRO stage 1) ----------===//
//
// reduce_scatter averages a bucket of gradients over the ranks and leaves
// each rank its shard of each; shard_slice takes this rank's shard of a
// parameter; all_gather joins every rank's new shard into the parameter
// (runtime/core/ZeroShards.h has the layout); sharded_global_norm is the
// global norm of gradients whose shards the ranks hold. All are blocking
// collectives through the communicator, called in schedule order, which is
// the same on every rank. The artifact fixes the number of shards, so a run
// with another number of ranks stops at the first of them with an error.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Comm.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cmath>

namespace tcc::rt::kernels {

namespace {
/// The communicator, once the run is known to have `shards` ranks.
Communicator &ranksOf(int64_t shards) {
  Communicator &comm = communicator();
  checkZeroRanks(shards, comm);
  return comm;
}
} // namespace

void run_reduce_scatter(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::ReduceScatter>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  // One collective for the bucket: the send buffer holds, rank by rank,
  // that rank's shard of every gradient in bucket order.
  std::vector<int64_t> offset(a.in.size() + 1, 0);
  for (size_t i = 0; i < a.in.size(); ++i)
    offset[i + 1] = offset[i] + a.out[i].numel;
  int64_t total = offset.back();
  std::vector<float> send(static_cast<size_t>(total * at.shards));
  std::vector<float> recv(static_cast<size_t>(total));
  for (int64_t r = 0; r < at.shards; ++r)
    for (size_t i = 0; i < a.in.size(); ++i)
      sliceShard(a.in[i].f32(), a.in[i].numel, at.shards, r,
                 send.data() + r * total + offset[i]);
  comm.reduceScatter(send.data(), recv.data(), total, CommDType::F32);
  // The mean as the all_reduce buckets take it: the sum times 1/N.
  const float scale = 1.0f / static_cast<float>(at.shards);
  for (size_t i = 0; i < a.in.size(); ++i) {
    float *out = a.out[i].f32();
    for (int64_t k = 0; k < a.out[i].numel; ++k)
      out[k] = recv[size_t(offset[i] + k)] * scale;
  }
}

void run_shard_slice(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::ShardSlice>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  sliceShard(a.in[0].f32(), a.in[0].numel, at.shards, comm.rank(),
             a.out[0].f32());
}

void run_all_gather(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::AllGather>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  int64_t c = a.in[0].numel;
  std::vector<float> all(size_t(c * at.shards));
  comm.allGather(a.in[0].f32(), all.data(), c * int64_t(sizeof(float)));
  joinShards(all.data(), a.out[0].numel, at.shards, a.out[0].f32());
}

// Each rank's f64 sum of squares of its shards (zero padding adds nothing,
// and no element is in two shards), all-gathered rather than all-reduced:
// every rank then adds the N partial sums itself in rank order, so the
// result is the same bits on every rank and in every run, whatever order
// the MPI library would reduce in.
void run_sharded_global_norm(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::ShardedGlobalNorm>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  double mine = sumOfSquares(a.in);
  std::vector<double> all(size_t(at.shards));
  comm.allGather(&mine, all.data(), int64_t(sizeof(double)));
  double total = 0;
  for (double s : all)
    total += s;
  a.out[0].f32()[0] = static_cast<float>(std::sqrt(total));
}

} // namespace tcc::rt::kernels
