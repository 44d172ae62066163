// The shard layout of sharded optimizer state (runtime/core/ZeroShards.h)
// at several ranks, without MPI: each rank's range, slicing with the zero
// tail, joining, and the artifact meta read back. The collectives
// themselves run on two ranks in tests/mpi.
#include "runtime/core/ZeroShards.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/Comm.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace tcc::rt;

using Range = std::pair<int64_t, int64_t>;

TEST(ZeroShards, Ranges) {
  EXPECT_EQ(shardSize(7, 3), 3);
  EXPECT_EQ(shardRange(7, 3, 0), (Range{0, 3}));
  EXPECT_EQ(shardRange(7, 3, 2), (Range{6, 7}));
  // A tensor smaller than the ranks: the last rank owns nothing.
  EXPECT_EQ(shardSize(2, 3), 1);
  EXPECT_EQ(shardRange(2, 3, 2), (Range{2, 2}));
  EXPECT_THROW(shardSize(4, 0), Error);
}

TEST(ZeroShards, SliceAndJoin) {
  for (int64_t n : {1, 2, 7, 9, 10}) {
    std::vector<float> full(n);
    std::iota(full.begin(), full.end(), 1.0f);
    const int64_t shards = 3, c = shardSize(n, shards);
    std::vector<float> all(shards * c, -1.0f);
    for (int64_t r = 0; r < shards; ++r) {
      sliceShard(full.data(), n, shards, r, all.data() + r * c);
      for (int64_t k = 0; k < c; ++k) {
        int64_t at = r * c + k;
        EXPECT_EQ(all[at], at < n ? full[at] : 0.0f)
            << "n " << n << " rank " << r << " element " << k;
      }
    }
    std::vector<float> back(n, -1.0f);
    joinShards(all.data(), n, shards, back.data());
    EXPECT_EQ(back, full) << "n " << n;
  }
}

TEST(ZeroShards, PlanFromMeta) {
  Artifact a;
  auto add = [&](const std::string &name, TensorKind kind,
                 std::vector<int64_t> shape) {
    TensorInfo t;
    t.name = name;
    t.kind = kind;
    t.shape = std::move(shape);
    a.tensors.push_back(t);
  };
  add("w", TensorKind::Param, {5, 3});
  add("w.exp_avg", TensorKind::State, {8});
  add("adamw.step", TensorKind::State, {});
  EXPECT_EQ(zeroPlan(a).shards, 0);
  a.meta["zero_shards"] = "2";
  a.meta["zero_sharded_state"] = "w.exp_avg=w";
  ZeroPlan plan = zeroPlan(a);
  ASSERT_EQ(plan.states.size(), 1u);
  EXPECT_EQ(plan.shards, 2);
  EXPECT_EQ(plan.states[0].numel, 15);
  EXPECT_EQ(plan.states[0].shardNumel, 8);
  EXPECT_EQ(plan.states[0].stateId, 1);
  EXPECT_NE(plan.find("w.exp_avg"), nullptr);
  EXPECT_EQ(plan.find("adamw.step"), nullptr);
  // A state that is not a shard of its parameter.
  a.meta["zero_shards"] = "3";
  EXPECT_THROW(zeroPlan(a), Error);
  a.meta["zero_shards"] = "2";
  a.meta["zero_sharded_state"] = "w.exp_avg=nothing";
  EXPECT_THROW(zeroPlan(a), Error);
}

TEST(ZeroShards, RanksMustMatch) {
  // This process is one rank (the test does not run under mpirun).
  if (launchedAsRanks())
    GTEST_SKIP() << "run as ranks";
  try {
    checkZeroRanks(2, communicator());
    ADD_FAILURE() << "2 shards accepted in one process";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("mpirun -np 2"), std::string::npos)
        << e.what();
  }
  checkZeroRanks(1, communicator());
}
