// Sharded optimizer state's collectives on two ranks (ctest runs this under
// `mpirun -np 2`): the CPU kernels reduce_scatter, shard_slice and
// all_gather through MPI's communicator, and gatherState, which joins a
// state tensor's shards for a checkpoint. Values are multiples of 1/4, so
// the means are exact.
#include "runtime/core/Comm.h"
#include "runtime/core/ZeroShards.h"
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <vector>

using namespace tcc::rt;

namespace {

/// Runs CPU kernel `name` with attributes [2, bucket] on f32 buffers.
void runKernel(const std::string &name, std::vector<std::vector<float> *> in,
               std::vector<std::vector<int64_t>> inShapes,
               std::vector<std::vector<float> *> out,
               std::vector<std::vector<int64_t>> outShapes) {
  Instr instr;
  instr.kernel = name;
  instr.iattrs = {2, 0};
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
  runKernel("all_gather", {&ws}, {{4}}, {&wf}, {{7}});
  for (int64_t i = 0; i < 7; ++i)
    EXPECT_EQ(wf[i], w[i] + (i < 4 ? 1.0f : 2.0f)) << i;
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
