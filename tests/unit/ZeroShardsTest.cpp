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

TEST(ZeroShards, WholeStateTensors) {
  Artifact a;
  auto add = [&](const std::string &name, TensorKind kind,
                 std::vector<int64_t> shape, DType dtype = DType::F32) {
    TensorInfo t;
    t.name = name;
    t.kind = kind;
    t.dtype = dtype;
    t.shape = std::move(shape);
    a.tensors.push_back(t);
  };
  add("w", TensorKind::Param, {5, 3});
  add("w.exp_avg", TensorKind::State, {8});
  add("b", TensorKind::Param, {3});
  add("b.exp_avg", TensorKind::State, {2});
  add("adamw.step", TensorKind::State, {});
  a.meta["zero_shards"] = "2";
  a.meta["zero_sharded_state"] = "w.exp_avg=w,b.exp_avg=b";
  ZeroPlan plan = zeroPlan(a);
  std::vector<TensorInfo> whole = wholeStateTensors(a.tensors, plan);
  ASSERT_EQ(whole.size(), a.tensors.size());
  // The moments take their parameter's shape; everything else is as it was.
  EXPECT_EQ(whole[1].shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(whole[3].shape, (std::vector<int64_t>{3}));
  for (size_t i : {0u, 2u, 4u})
    EXPECT_EQ(whole[i].shape, a.tensors[i].shape) << a.tensors[i].name;
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(whole[i].name, a.tensors[i].name);
    EXPECT_EQ(whole[i].kind, a.tensors[i].kind);
  }
  // Without sharding nothing changes.
  EXPECT_EQ(wholeStateTensors(a.tensors, ZeroPlan{})[1].shape,
            (std::vector<int64_t>{8}));
  // Shards move floats: a state of another type is refused.
  a.tensors[1].dtype = DType::BF16;
  EXPECT_THROW(wholeStateTensors(a.tensors, plan), Error);
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
