// The single-process communicator, the launcher's environment as
// launchInfo() reads it, and the error of a tcc without MPI's module. MPI's
// communicator is tested on two ranks by tests/mpi.
#include "runtime/core/Comm.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/CommModule.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

using namespace tcc::rt;

namespace {

/// Every variable launchInfo() reads, cleared for one test and restored
/// after it (the test binary may itself run under a launcher).
class LaunchEnv {
public:
  LaunchEnv() {
    for (const char *n : kNames) {
      if (const char *v = std::getenv(n))
        saved_[n] = v;
      unsetenv(n);
    }
  }
  ~LaunchEnv() {
    for (const char *n : kNames) {
      unsetenv(n);
      if (auto it = saved_.find(n); it != saved_.end())
        setenv(n, it->second.c_str(), 1);
    }
  }
  void set(const char *name, const char *value) { setenv(name, value, 1); }

private:
  static constexpr const char *kNames[] = {"OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                                           "PMIX_RANK",
                                           "PMI_RANK",
                                           "PMI_SIZE",
                                           "MPI_LOCALRANKID",
                                           "MPI_LOCALNRANKS",
                                           "SLURM_STEP_NUM_TASKS"};
  std::map<std::string, std::string> saved_;
};

std::string errorOf(void (*f)()) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(LaunchInfo, NoLauncherIsOneProcess) {
  LaunchEnv env;
  LaunchInfo i = launchInfo();
  EXPECT_EQ(i.rank, 0);
  EXPECT_EQ(i.size, 1);
  EXPECT_EQ(i.localRank, 0);
  EXPECT_EQ(i.localSize, 1);
  EXPECT_FALSE(launchedAsRanks());
}

TEST(LaunchInfo, OpenMpi) {
  LaunchEnv env;
  // What Open MPI 4.1's mpirun -np 4 sets in rank 3, two ranks a node.
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  env.set("PMIX_RANK", "3");
  LaunchInfo i = launchInfo();
  EXPECT_EQ(i.rank, 3);
  EXPECT_EQ(i.size, 4);
  EXPECT_EQ(i.localRank, 1);
  EXPECT_EQ(i.localSize, 2);
  EXPECT_TRUE(launchedAsRanks());
}

TEST(LaunchInfo, OneRankIsNotLaunchedAsRanks) {
  LaunchEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "0");
  env.set("OMPI_COMM_WORLD_SIZE", "1");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "1");
  EXPECT_EQ(launchInfo().size, 1);
  EXPECT_FALSE(launchedAsRanks());
}

TEST(LaunchInfo, HydraPmi) {
  LaunchEnv env;
  // MPICH's and Intel MPI's launcher.
  env.set("PMI_RANK", "2");
  env.set("PMI_SIZE", "3");
  env.set("MPI_LOCALRANKID", "0");
  env.set("MPI_LOCALNRANKS", "1");
  LaunchInfo i = launchInfo();
  EXPECT_EQ(i.rank, 2);
  EXPECT_EQ(i.size, 3);
  EXPECT_EQ(i.localRank, 0);
  EXPECT_EQ(i.localSize, 1);
}

TEST(LaunchInfo, SlurmPmix) {
  LaunchEnv env;
  env.set("PMIX_RANK", "1");
  env.set("SLURM_STEP_NUM_TASKS", "2");
  LaunchInfo i = launchInfo();
  EXPECT_EQ(i.rank, 1);
  EXPECT_EQ(i.size, 2);
  // No node-local variables: as if all ranks shared this node.
  EXPECT_EQ(i.localRank, 1);
  EXPECT_EQ(i.localSize, 2);
}

TEST(LaunchInfo, OpenMpiWinsOverPmi) {
  LaunchEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "1");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("PMI_RANK", "5");
  env.set("PMI_SIZE", "8");
  EXPECT_EQ(launchInfo().rank, 1);
  EXPECT_EQ(launchInfo().size, 2);
}

TEST(LaunchInfo, BadValuesAreErrors) {
  {
    LaunchEnv env;
    env.set("OMPI_COMM_WORLD_RANK", "one");
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    EXPECT_NE(errorOf([] {
                launchInfo();
              }).find("OMPI_COMM_WORLD_RANK='one' is not a rank"),
              std::string::npos);
  }
  {
    LaunchEnv env;
    env.set("OMPI_COMM_WORLD_RANK", "2");
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    EXPECT_NE(errorOf([] { launchInfo(); }).find("is not below its rank count"),
              std::string::npos);
  }
  {
    LaunchEnv env;
    env.set("OMPI_COMM_WORLD_RANK", "0");
    env.set("OMPI_COMM_WORLD_SIZE", "0");
    EXPECT_NE(errorOf([] { launchInfo(); }), "");
  }
  {
    LaunchEnv env;
    env.set("PMIX_RANK", "1");
    EXPECT_NE(
        errorOf([] { launchInfo(); }).find("set PMIX_RANK but no rank count"),
        std::string::npos);
  }
  {
    LaunchEnv env;
    env.set("OMPI_COMM_WORLD_RANK", "0");
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    env.set("OMPI_COMM_WORLD_LOCAL_RANK", "2");
    env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    EXPECT_NE(errorOf([] { launchInfo(); }).find("does not fit"),
              std::string::npos);
  }
}

TEST(Communicator, WithoutLauncherIsSingleProcess) {
  // The test binary runs without mpirun, so the process's communicator is
  // the single-process one and nothing of MPI is loaded.
  Communicator &c = communicator();
  EXPECT_EQ(&c, &communicator());
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.localRank(), 0);
  EXPECT_EQ(c.localSize(), 1);
  EXPECT_EQ(c.description(), "single process");
}

TEST(Communicator, SingleProcessCollectives) {
  Communicator &c = communicator();
  float f[3] = {1.5f, -2.0f, 3.25f};
  c.allReduce(f, 3, CommDType::F32, CommOp::Sum);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[2], 3.25f);
  int64_t i[2] = {7, -9};
  c.allReduce(i, 2, CommDType::I64, CommOp::Max);
  EXPECT_EQ(i[1], -9);
  double d = 0.1;
  c.broadcast(&d, sizeof d, 0);
  EXPECT_EQ(d, 0.1);
  EXPECT_THROW(c.broadcast(&d, sizeof d, 1), Error);

  int64_t send[2] = {4, 5}, recv[2] = {0, 0};
  c.allGather(send, recv, sizeof send);
  EXPECT_EQ(recv[0], 4);
  EXPECT_EQ(recv[1], 5);
  double rs[2] = {1.25, 2.5}, out[2] = {0, 0};
  c.reduceScatter(rs, out, 2, CommDType::F64);
  EXPECT_EQ(out[0], 1.25);
  EXPECT_EQ(out[1], 2.5);
  c.reduceScatter(rs, rs, 2, CommDType::F64); // in place
  EXPECT_EQ(rs[1], 2.5);
  c.barrier();
}

TEST(Communicator, SingleProcessBuckets) {
  Communicator &c = communicator();
  std::vector<float> a = {1, 2, 3}, b = {4};
  c.startMeanBucket(0, {{a.data(), 3}, {b.data(), 1}});
  c.startMeanBucket(1, {{b.data(), 1}});
  c.waitBucket(1); // out of order
  c.waitBucket(0);
  EXPECT_EQ(a[2], 3.0f); // the mean over one rank
  EXPECT_EQ(b[0], 4.0f);

  auto message = [&](auto f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([&] { c.waitBucket(0); }),
            "waitBucket(0): bucket 0 was not started (or was waited for "
            "already)");
  EXPECT_NE(
      message([&] { c.waitBucket(42); }).find("bucket 42 was not started"),
      std::string::npos);
  c.startMeanBucket(5, {});
  EXPECT_NE(message([&] {
              c.startMeanBucket(5, {});
            }).find("bucket 5 was started before and not waited for"),
            std::string::npos);
  c.waitBucket(5);
  EXPECT_NE(message([&] { c.startMeanBucket(6, {{nullptr, 4}}); }), "");
}

// One rank's reduce-scatter and all-gather buckets: its piece is the
// whole, written into the outputs (a null one drops its values) when the
// bucket starts; the sent values are the communicator's.
TEST(Communicator, SingleProcessShardBuckets) {
  Communicator &c = communicator();
  std::vector<float> s0(2, -1), s1(3, -1);
  c.startMeanScatterBucket(20, {1, 2, 3, 4, 5},
                           {{s0.data(), 2}, {s1.data(), 3}});
  c.waitBucket(20);
  EXPECT_EQ(s0, (std::vector<float>{1, 2}));
  EXPECT_EQ(s1, (std::vector<float>{3, 4, 5}));
  std::vector<float> p(3, -1);
  c.startGatherBucket(21, {7, 8, 9, 0}, {{p.data(), 3}, {nullptr, 1}});
  c.waitBucket(21);
  EXPECT_EQ(p, (std::vector<float>{7, 8, 9}));

  auto message = [&](auto f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([&] {
              c.startMeanScatterBucket(22, {1, 2}, {{s0.data(), 1}});
            }),
            "startMeanScatterBucket(22): the output buffers hold 1 values, "
            "the collective gives 2");
  EXPECT_NE(message([&] {
              c.startMeanScatterBucket(22, {1, 2}, {{nullptr, 2}});
            }).find("an output buffer of 2 values at null"),
            std::string::npos);
  c.startGatherBucket(23, {1}, {{p.data(), 1}});
  EXPECT_NE(message([&] {
              c.startGatherBucket(23, {1}, {{p.data(), 1}});
            }).find("bucket 23 was started before and not waited for"),
            std::string::npos);
  c.waitBucket(23);
}

TEST(CommunicatorDeathTest, AbortAllFlushesAndExits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // Fully buffered: the text reaches the pipe only if abortAll
        // flushes before it ends the process.
        static char buf[256];
        std::setvbuf(stderr, buf, _IOFBF, sizeof buf);
        std::fputs("rank 0 failed: why", stderr);
        communicator().abortAll(3);
      },
      testing::ExitedWithCode(3), "rank 0 failed: why");
}

TEST(Communicator, WithoutMpiModuleSaysHowToGetIt) {
  try {
    loadMpiCommunicator("/nonexistent-tcc-dir");
    FAIL() << "loaded a module from a missing folder";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "this tcc was built without MPI (no "
              "/nonexistent-tcc-dir/libtcc_comm_mpi.so): install Debian's "
              "libopenmpi-dev and rebuild; or run without mpirun");
  }
}
