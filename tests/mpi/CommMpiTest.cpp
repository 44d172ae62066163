// MPI's communicator on two ranks: ctest runs this binary under
// `mpirun -np 2` (tests/mpi/CMakeLists.txt). Every test runs on both ranks
// and calls the collectives in the same order on each; checks are EXPECTs,
// so a failure on one rank does not leave the other waiting in a collective.
#include "runtime/core/Artifact.h"
#include "runtime/core/Comm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace tcc::rt;

namespace {

Communicator &comm() { return communicator(); }

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// A gradient-like buffer: rank r holds base + r * step at each index, all
/// multiples of 1/4 below 2^20, so sums and means are exact in f32.
std::vector<float> rankBuffer(int64_t n, int rank, float base) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = base + static_cast<float>(i % 1000) * 0.25f + rank * 8.0f;
  return v;
}
float meanAt(int64_t i, int size, float base) {
  // mean over r of (base + (i % 1000) / 4 + 8 r)
  return base + static_cast<float>(i % 1000) * 0.25f + 8.0f * (size - 1) / 2;
}

} // namespace

TEST(CommMpi, IsMpisOnTwoRanks) {
  Communicator &c = comm();
  ASSERT_EQ(c.size(), 2) << "run under mpirun -np 2";
  EXPECT_TRUE(launchedAsRanks());
  LaunchInfo li = launchInfo();
  EXPECT_EQ(li.rank, c.rank());
  EXPECT_EQ(li.size, c.size());
  // One node: the node-local ranks are the ranks.
  EXPECT_EQ(c.localSize(), 2);
  EXPECT_EQ(c.localRank(), c.rank());
  EXPECT_EQ(li.localRank, c.localRank());
  EXPECT_EQ(c.description().rfind(
                "MPI rank " + std::to_string(c.rank()) + " of 2 (", 0),
            0u)
      << c.description();
  EXPECT_NE(c.description().find("Open MPI"), std::string::npos)
      << c.description();
}

TEST(CommMpi, AllReduce) {
  Communicator &c = comm();
  int r = c.rank();
  float f[3] = {1.5f + r, -2.0f * r, 0.25f};
  c.allReduce(f, 3, CommDType::F32, CommOp::Sum);
  EXPECT_EQ(f[0], 4.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 0.5f);

  double d[2] = {r ? 3.5 : -1.0, r ? -7.0 : 2.0};
  c.allReduce(d, 2, CommDType::F64, CommOp::Max);
  EXPECT_EQ(d[0], 3.5);
  EXPECT_EQ(d[1], 2.0);

  int64_t i[3] = {int64_t(1) << 40, r ? 5 : -5, 10 * r};
  int64_t lo[3];
  std::memcpy(lo, i, sizeof i);
  c.allReduce(i, 3, CommDType::I64, CommOp::Sum);
  EXPECT_EQ(i[0], int64_t(1) << 41);
  EXPECT_EQ(i[1], 0);
  EXPECT_EQ(i[2], 10);
  c.allReduce(lo, 3, CommDType::I64, CommOp::Min);
  EXPECT_EQ(lo[1], -5);
  EXPECT_EQ(lo[2], 0);

  c.allReduce(nullptr, 0, CommDType::F32, CommOp::Sum); // nothing to do
}

TEST(CommMpi, Broadcast) {
  Communicator &c = comm();
  for (int root = 0; root < 2; ++root) {
    std::vector<char> buf(100003, static_cast<char>(c.rank() + 1));
    if (c.rank() == root)
      for (size_t k = 0; k < buf.size(); ++k)
        buf[k] = static_cast<char>(k * 7 + root);
    c.broadcast(buf.data(), static_cast<int64_t>(buf.size()), root);
    bool same = true;
    for (size_t k = 0; k < buf.size(); ++k)
      same = same && buf[k] == static_cast<char>(k * 7 + root);
    EXPECT_TRUE(same) << "from root " << root;
  }
  int x = 0;
  EXPECT_NE(errorOf([&] {
              c.broadcast(&x, sizeof x, 2);
            }).find("broadcast from rank 2 of 2 ranks"),
            std::string::npos);
}

TEST(CommMpi, AllGather) {
  Communicator &c = comm();
  int64_t send[3] = {c.rank() * 10 + 1, c.rank() * 10 + 2, c.rank() * 10 + 3};
  int64_t recv[6] = {};
  c.allGather(send, recv, sizeof send);
  EXPECT_EQ(std::vector<int64_t>(recv, recv + 6),
            (std::vector<int64_t>{1, 2, 3, 11, 12, 13}));
  // In place: this rank's share already at its slot.
  int64_t all[4] = {-1, -1, -1, -1};
  all[2 * c.rank()] = 100 + c.rank();
  all[2 * c.rank() + 1] = 200 + c.rank();
  c.allGather(all + 2 * c.rank(), all, 2 * sizeof(int64_t));
  EXPECT_EQ(std::vector<int64_t>(all, all + 4),
            (std::vector<int64_t>{100, 200, 101, 201}));
}

TEST(CommMpi, ReduceScatter) {
  Communicator &c = comm();
  int r = c.rank();
  // send: 2 ranks x 3 values; rank k gets the sum of the k-th three.
  float send[6] = {1.0f + r, 2, 3, 4, 5, 6.0f * r};
  float recv[3] = {};
  c.reduceScatter(send, recv, 3, CommDType::F32);
  if (r == 0)
    EXPECT_EQ(std::vector<float>(recv, recv + 3),
              (std::vector<float>{3, 4, 6}));
  else
    EXPECT_EQ(std::vector<float>(recv, recv + 3),
              (std::vector<float>{8, 10, 6}));
  int64_t io[4] = {r, 2 * r, 10, 20 + r}; // in place
  c.reduceScatter(io, io, 2, CommDType::I64);
  if (r == 0) {
    EXPECT_EQ(io[0], 1);
    EXPECT_EQ(io[1], 2);
  } else {
    EXPECT_EQ(io[0], 20);
    EXPECT_EQ(io[1], 41);
  }
}

TEST(CommMpi, Barrier) {
  comm().barrier();
  comm().barrier();
}

TEST(CommMpi, BucketsBackToBackWaitedOutOfOrder) {
  Communicator &c = comm();
  const int64_t sizes[4][3] = {
      {1, 1000, 0}, {100003, 7, 1}, {250000, 3, 4096}, {5, 5, 5}};
  std::vector<std::vector<float>> bufs;
  for (int b = 0; b < 4; ++b)
    for (int k = 0; k < 3; ++k)
      bufs.push_back(rankBuffer(sizes[b][k], c.rank(), 100.0f * b + k));
  for (int b = 0; b < 4; ++b) {
    std::vector<CommBuffer> bucket;
    for (int k = 0; k < 3; ++k)
      bucket.push_back({bufs[b * 3 + k].data(), sizes[b][k]});
    c.startMeanBucket(b, bucket);
  }
  for (int b : {2, 0, 3, 1})
    c.waitBucket(b);
  for (int b = 0; b < 4; ++b)
    for (int k = 0; k < 3; ++k) {
      const std::vector<float> &v = bufs[b * 3 + k];
      int64_t wrong = 0;
      for (int64_t i = 0; i < sizes[b][k]; ++i)
        wrong += v[i] != meanAt(i, 2, 100.0f * b + k);
      EXPECT_EQ(wrong, 0) << "bucket " << b << " buffer " << k;
    }
}

TEST(CommMpi, BucketsInterleavedWithBlockingCollectives) {
  Communicator &c = comm();
  std::vector<float> g0 = rankBuffer(50000, c.rank(), 1.0f);
  std::vector<float> g1 = rankBuffer(30, c.rank(), 2.0f);
  c.startMeanBucket(10, {{g0.data(), 50000}});
  // The blocking collective runs after bucket 10 on every rank.
  int64_t n = c.rank() + 1;
  c.allReduce(&n, 1, CommDType::I64, CommOp::Sum);
  EXPECT_EQ(n, 3);
  c.startMeanBucket(11, {{g1.data(), 30}});
  double seed = c.rank() == 1 ? 42.0 : 0.0;
  c.broadcast(&seed, sizeof seed, 1);
  EXPECT_EQ(seed, 42.0);
  c.barrier();
  c.waitBucket(11);
  c.waitBucket(10);
  for (int64_t i = 0; i < 50000; ++i)
    ASSERT_EQ(g0[i], meanAt(i, 2, 1.0f)) << i;
  for (int64_t i = 0; i < 30; ++i)
    ASSERT_EQ(g1[i], meanAt(i, 2, 2.0f)) << i;
}

TEST(CommMpi, BucketMeansAreTheSameBitsOnEveryRank) {
  // Rounded sums must not differ between ranks, or their weights drift.
  Communicator &c = comm();
  std::mt19937 gen(1234 + c.rank());
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> g(70001);
  for (float &x : g)
    x = dist(gen);
  c.startMeanBucket(0, {{g.data(), 40000}, {g.data() + 40000, 30001}});
  c.waitBucket(0);
  std::vector<float> both(2 * g.size());
  c.allGather(g.data(), both.data(), g.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(both.data(), both.data() + g.size(),
                        g.size() * sizeof(float)),
            0);
}

// Reduce-scatter buckets (sharded optimizer state): rank r gets piece r of
// the packed send buffer, averaged, in its output buffers; the send buffer
// is the communicator's, the outputs are written on its thread. Started
// back to back with gradient buckets and all-gather buckets, waited for out
// of order, across a blocking collective.
TEST(CommMpi, ScatterAndGatherBuckets) {
  Communicator &c = comm();
  const int r = c.rank();
  // Two pieces of 60001 values: output buffers of 1, 60000.
  std::vector<float> send = rankBuffer(120002, r, 3.0f);
  std::vector<float> a(1, -1), b(60000, -1);
  c.startMeanScatterBucket(30, send, {{a.data(), 1}, {b.data(), 60000}});
  std::vector<float> g = rankBuffer(5000, r, 1.0f);
  c.startMeanBucket(31, {{g.data(), 5000}});
  // An all-gather of 3 values a rank, rank 1's last dropped (padding).
  std::vector<float> whole(5, -1);
  c.startGatherBucket(32, {10.0f * r, 10.0f * r + 1, 10.0f * r + 2},
                      {{whole.data(), 3}, {whole.data() + 3, 2}, {nullptr, 1}});
  int64_t n = 1;
  c.allReduce(&n, 1, CommDType::I64, CommOp::Sum); // after the three
  EXPECT_EQ(n, 2);
  c.waitBucket(32);
  c.waitBucket(30);
  c.waitBucket(31);
  EXPECT_EQ(a[0], meanAt(r * 60001, 2, 3.0f));
  int64_t wrong = 0;
  for (int64_t i = 0; i < 60000; ++i)
    wrong += b[i] != meanAt(r * 60001 + 1 + i, 2, 3.0f);
  EXPECT_EQ(wrong, 0);
  for (int64_t i = 0; i < 5000; ++i)
    ASSERT_EQ(g[i], meanAt(i, 2, 1.0f)) << i;
  EXPECT_EQ(whole, (std::vector<float>{0, 1, 2, 10, 11}));
}

// The reduce-scatter's mean is the gradient bucket's: the same sum and the
// same scale by 1/N, so a sharded run's averaged gradients are the bits of
// the unsharded run's.
TEST(CommMpi, ScatterMeanIsTheBucketMean) {
  Communicator &c = comm();
  std::mt19937 gen(99 + c.rank());
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> g(4002);
  for (float &x : g)
    x = dist(gen);
  std::vector<float> piece(2001, -1);
  c.startMeanScatterBucket(40, g, {{piece.data(), 2001}});
  c.startMeanBucket(41, {{g.data(), 4002}});
  c.waitBucket(41);
  c.waitBucket(40);
  EXPECT_EQ(std::memcmp(piece.data(), g.data() + c.rank() * 2001,
                        2001 * sizeof(float)),
            0);
}

TEST(CommMpi, ScatterAndGatherErrors) {
  Communicator &c = comm();
  std::vector<float> out(2);
  EXPECT_EQ(errorOf([&] {
              c.startMeanScatterBucket(50, {1, 2, 3}, {{out.data(), 1}});
            }),
            "startMeanScatterBucket(50): 3 values are not 2 pieces of equal "
            "length");
  EXPECT_EQ(errorOf([&] {
              c.startMeanScatterBucket(50, {1, 2, 3, 4}, {{out.data(), 1}});
            }),
            "startMeanScatterBucket(50): the output buffers hold 1 values, "
            "the collective gives 2");
  EXPECT_EQ(errorOf([&] {
              c.startGatherBucket(51, {1}, {{out.data(), 1}});
            }),
            "startGatherBucket(51): the output buffers hold 1 values, the "
            "collective gives 2");
  c.startGatherBucket(52, {float(c.rank())}, {{out.data(), 2}});
  EXPECT_NE(errorOf([&] {
              c.startMeanScatterBucket(52, {1, 2}, {{out.data(), 1}});
            }).find("bucket 52 was started before and not waited for"),
            std::string::npos);
  c.waitBucket(52);
  EXPECT_EQ(out, (std::vector<float>{0, 1}));
  // Still in step after the errors.
  int64_t one = 1;
  c.allReduce(&one, 1, CommDType::I64, CommOp::Sum);
  EXPECT_EQ(one, 2);
}

TEST(CommMpi, BucketErrors) {
  Communicator &c = comm();
  EXPECT_EQ(errorOf([&] { c.waitBucket(77); }),
            "waitBucket(77): bucket 77 was not started (or was waited for "
            "already)");
  float x = c.rank();
  c.startMeanBucket(3, {{&x, 1}});
  EXPECT_NE(errorOf([&] {
              c.startMeanBucket(3, {{&x, 1}});
            }).find("bucket 3 was started before and not waited for"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { c.startMeanBucket(4, {{nullptr, 2}}); }), "");
  c.waitBucket(3);
  EXPECT_EQ(x, 0.5f);
  EXPECT_NE(errorOf([&] { c.waitBucket(3); }).find("was not started"),
            std::string::npos);
  // Still in step after the errors.
  int64_t one = 1;
  c.allReduce(&one, 1, CommDType::I64, CommOp::Sum);
  EXPECT_EQ(one, 2);
}
