//===- KernelsShard.cpp - Sharded optimizer state (ZeRO stage 1) ----------===//
//
// reduce_scatter averages a bucket of gradients over the ranks and leaves
// each rank its shard of each; shard_slice takes this rank's shard of a
// parameter; all_gather joins every rank's new shards into a bucket of
// parameters (runtime/core/ZeroShards.h has the layout); sharded_global_norm
// is the global norm of gradients whose shards the ranks hold.
// reduce_scatter and all_gather start buckets on the communicator's thread
// (asynchronous, as all_reduce's) and shard_wait waits for one;
// sharded_global_norm is a blocking collective. All are called in schedule
// order, which is the same on every rank. The artifact fixes the number of
// shards, so a run with another number of ranks stops at the first of them with
// an error.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Comm.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
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

// reduce_scatter packs, rank by rank, that rank's shard of every gradient
// of the bucket (so the gradients may be reused once it returns) and starts
// one reduce-scatter on the communicator's thread; the outputs are written
// there, and shard_wait, which the compiler puts before their first reader,
// waits for them.
void run_reduce_scatter(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::ReduceScatter>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  int64_t total = 0;
  std::vector<CommBuffer> out;
  for (const TensorView &s : a.out) {
    out.push_back({s.f32(), s.numel});
    total += s.numel;
  }
  std::vector<float> send(static_cast<size_t>(total * at.shards));
  float *to = send.data();
  for (int64_t r = 0; r < at.shards; ++r)
    for (size_t i = 0; i < a.in.size(); ++i) {
      sliceShard(a.in[i].f32(), a.in[i].numel, at.shards, r, to);
      to += a.out[i].numel;
    }
  comm.startMeanScatterBucket(at.bucket, std::move(send), out);
}

void run_shard_slice(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::ShardSlice>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  sliceShard(a.in[0].f32(), a.in[0].numel, at.shards, comm.rank(),
             a.out[0].f32());
}

// One all-gather for a bucket of parameters: this rank's new shards packed
// in order, and every rank's packed shards unpacked into the parameters on
// the communicator's thread (each shard's padding dropped) while the step
// goes on; shard_wait before the parameters' first reader, or at the end of
// the step.
void run_all_gather(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::AllGather>(a.instr);
  Communicator &comm = ranksOf(at.shards);
  int64_t total = 0;
  for (const TensorView &s : a.in)
    total += s.numel;
  std::vector<float> send(static_cast<size_t>(total));
  float *to = send.data();
  for (const TensorView &s : a.in) {
    std::copy(s.f32(), s.f32() + s.numel, to);
    to += s.numel;
  }
  std::vector<CommBuffer> out;
  for (int64_t r = 0; r < at.shards; ++r)
    for (size_t i = 0; i < a.in.size(); ++i) {
      int64_t c = a.in[i].numel;
      auto [begin, end] = shardRange(a.out[i].numel, at.shards, r);
      out.push_back({a.out[i].f32() + begin, end - begin});
      if (c > end - begin)
        out.push_back({nullptr, c - (end - begin)});
    }
  comm.startGatherBucket(at.bucket, std::move(send), out);
}

void run_shard_wait(const KernelArgs &a) {
  const abi::ShardAttrs &at = abi::attrs<KernelId::ShardWait>(a.instr);
  ranksOf(at.shards).waitBucket(at.bucket);
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
