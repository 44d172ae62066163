// Sharded optimizer state's collectives on two ranks (ctest runs this under
// `mpirun -np 2`): the CPU kernels reduce_scatter, shard_slice, all_gather
// and shard_wait through MPI's communicator, and gatherState, which joins a
// state tensor's shards for a checkpoint. Values are multiples of 1/4, so
// the means are exact.
#include "runtime/core/Comm.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace tcc::rt;

namespace {

/// Runs CPU kernel `name` with attributes [2, bucket] on f32 buffers.
void runKernel(const std::string &name, std::vector<std::vector<float> *> in,
               std::vector<std::vector<int64_t>> inShapes,
               std::vector<std::vector<float> *> out,
               std::vector<std::vector<int64_t>> outShapes,
               int64_t bucket = 0) {
  Instr instr;
  instr.kernel = name;
  instr.iattrs = {2, bucket};
  KernelArgs a{instr, {}, {}};
  for (size_t i = 0; i < in.size(); ++i)
    a.in.push_back({in[i]->data(), DType::F32, &inShapes[i],
                    static_cast<int64_t>(in[i]->size())});
  for (size_t i = 0; i < out.size(); ++i)
    a.out.push_back({out[i]->data(), DType::F32, &outShapes[i],
                     static_cast<int64_t>(out[i]->size())});
  const KernelFn *f = findKernel(name);
  ASSERT_NE(f, nullptr) << name;
  (*f)(a);
}

float valueAt(int64_t i, int rank) { return 0.25f * float(i) + 4.0f * rank; }

} // namespace

TEST(ZeroShardsMpi, TwoRanks) {
  Communicator &comm = communicator();
  ASSERT_EQ(comm.size(), 2);
  checkZeroRanks(2, comm);
}

TEST(ZeroShardsMpi, ReduceScatterSliceGather) {
  const int r = communicator().rank();
  // A bucket of 7 and 4 elements: shards of 4 and 2.
  std::vector<float> g0(7), g1(4), s0(4, -1), s1(2, -1);
  for (int64_t i = 0; i < 7; ++i)
    g0[i] = valueAt(i, r);
  for (int64_t i = 0; i < 4; ++i)
    g1[i] = -valueAt(i, r);
  runKernel("reduce_scatter", {&g0, &g1}, {{7}, {2, 2}}, {&s0, &s1},
            {{4}, {2}});
  // The bucket is the communicator's until shard_wait: the gradients may be
  // reused at once (they were packed when it started).
  std::fill(g0.begin(), g0.end(), 99.0f);
  runKernel("shard_wait", {&s0, &s1}, {{4}, {2}}, {}, {});
  for (int64_t k = 0; k < 4; ++k) {
    int64_t i = r * 4 + k;
    // The mean over ranks 0 and 1 of valueAt(i, rank): valueAt(i, 0) + 2.
    EXPECT_EQ(s0[k], i < 7 ? valueAt(i, 0) + 2.0f : 0.0f) << "rank " << r;
  }
  for (int64_t k = 0; k < 2; ++k)
    EXPECT_EQ(s1[k], -(valueAt(r * 2 + k, 0) + 2.0f)) << "rank " << r;

  // This rank's shard of a parameter the ranks share, and back.
  std::vector<float> w(7), ws(4, -1), wf(7, -1);
  for (int64_t i = 0; i < 7; ++i)
    w[i] = valueAt(i, 0);
  runKernel("shard_slice", {&w}, {{7}}, {&ws}, {{4}});
  for (int64_t k = 0; k < 4; ++k)
    EXPECT_EQ(ws[k], r * 4 + k < 7 ? w[r * 4 + k] : 0.0f);
  // Each rank changes its own shard: the gathered whole has both changes.
  for (float &x : ws)
    x += 1.0f + r;
  // One all-gather for a bucket of two parameters (7 and 3 elements:
  // shards of 4 and 2, rank 1's padded by 1 and 1).
  std::vector<float> vs = {10.0f + r, 20.0f + r}, vf(3, -1);
  runKernel("all_gather", {&ws, &vs}, {{4}, {2}}, {&wf, &vf}, {{7}, {3}}, 1);
  std::fill(ws.begin(), ws.end(), 99.0f); // packed when it started
  runKernel("shard_wait", {&wf, &vf}, {{7}, {3}}, {}, {}, 1);
  for (int64_t i = 0; i < 7; ++i)
    EXPECT_EQ(wf[i], w[i] + (i < 4 ? 1.0f : 2.0f)) << i;
  EXPECT_EQ(vf, (std::vector<float>{10.0f, 20.0f, 11.0f}));
}

// The buckets of a sharded step back to back: reduce-scatters started one
// after another (their outputs written on the communicator's thread),
// waited for out of order with a blocking collective (the sharded norm,
// which waits for the buckets started before it) among the waits, then
// all-gathers of the shards back into the whole tensors.
TEST(ZeroShardsMpi, BucketsInFlight) {
  const int r = communicator().rank();
  constexpr int kBuckets = 4;
  std::vector<std::vector<float>> g(kBuckets), s(kBuckets);
  for (int b = 0; b < kBuckets; ++b) {
    int64_t n = 1000 * (b + 1) + 1;
    g[b].resize(size_t(n));
    for (int64_t i = 0; i < n; ++i)
      g[b][size_t(i)] = valueAt(i % 64, r);
    s[b].assign(size_t((n + 1) / 2), -1.0f);
    runKernel("reduce_scatter", {&g[b]}, {{n}}, {&s[b]},
              {{int64_t(s[b].size())}}, b);
  }
  for (int b : {1, 0})
    runKernel("shard_wait", {&s[b]}, {{int64_t(s[b].size())}}, {}, {}, b);
  // A blocking collective while buckets 2 and 3 may still be on the wire.
  std::vector<float> n(1, -1);
  runKernel("sharded_global_norm", {&s[0], &s[1]},
            {{int64_t(s[0].size())}, {int64_t(s[1].size())}}, {&n}, {{}});
  EXPECT_GT(n[0], 0.0f);
  for (int b : {3, 2})
    runKernel("shard_wait", {&s[b]}, {{int64_t(s[b].size())}}, {}, {}, b);
  for (int b = 0; b < kBuckets; ++b) {
    int64_t n = int64_t(g[b].size());
    for (size_t k = 0; k < s[b].size(); ++k) {
      int64_t i = r * int64_t(s[b].size()) + int64_t(k);
      ASSERT_EQ(s[b][k], i < n ? valueAt(i % 64, 0) + 2.0f : 0.0f)
          << "bucket " << b << " element " << k;
    }
  }
  std::vector<std::vector<float>> whole(kBuckets);
  for (int b = 0; b < kBuckets; ++b) {
    whole[b].assign(g[b].size(), -1.0f);
    runKernel("all_gather", {&s[b]}, {{int64_t(s[b].size())}}, {&whole[b]},
              {{int64_t(g[b].size())}}, kBuckets + b);
  }
  for (int b = 0; b < kBuckets; ++b) {
    runKernel("shard_wait", {&whole[b]}, {{int64_t(whole[b].size())}}, {}, {},
              kBuckets + b);
    for (size_t i = 0; i < whole[b].size(); ++i)
      ASSERT_EQ(whole[b][i], valueAt(int64_t(i) % 64, 0) + 2.0f)
          << "bucket " << b << " element " << i;
  }
}

TEST(ZeroShardsMpi, GatherState) {
  Communicator &comm = communicator();
  ShardedState s;
  s.state = "w.exp_avg";
  s.param = "w";
  s.numel = 5;
  s.shardNumel = 3;
  std::vector<float> full(5), shard(3);
  for (int64_t i = 0; i < 5; ++i)
    full[i] = valueAt(i, 1);
  sliceShard(full.data(), 5, 2, comm.rank(), shard.data());
  EXPECT_EQ(gatherState(comm, s, shard.data()), full);
}

// The global norm of a gradient of 7 elements from each rank's shard of 4
// (rank 1's last element padding): every rank gets global_norm of the
// whole, and the same bits. Squares of multiples of 1/4 add exactly.
TEST(ZeroShardsMpi, ShardedGlobalNorm) {
  const int r = communicator().rank();
  std::vector<float> whole(7), shard(4, 0.0f), n(1, -1), ref(1, -1);
  for (int64_t i = 0; i < 7; ++i)
    whole[i] = valueAt(i, 1) - 5.0f;
  for (int64_t k = 0; k < 4 && r * 4 + k < 7; ++k)
    shard[k] = whole[r * 4 + k];
  // A second operand (a bias's shard of 1), as a bucket has several.
  std::vector<float> bias(1, r == 0 ? 3.0f : -1.5f);
  std::vector<float> bothBias = {3.0f, -1.5f};
  runKernel("sharded_global_norm", {&shard, &bias}, {{4}, {1}}, {&n}, {{}});
  runKernel("global_norm", {&whole, &bothBias}, {{7}, {2}}, {&ref}, {{}});
  EXPECT_EQ(n[0], ref[0]) << "rank " << r;
  std::vector<float> all(2);
  communicator().allGather(n.data(), all.data(), sizeof(float));
  EXPECT_EQ(all[0], all[1]);
}
