//===- TrainRanksTest.cpp - A data-parallel rank's share of the machine ---===//
//
// What a rank decides from the launcher's environment before anything
// starts (TrainRun.h): its CPU threads, whether it writes, its GPU. The
// environment is set as Open MPI's mpirun sets it and restored after.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/TrainRun.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <sched.h>
#include <string>
#include <thread>

using namespace tcc::rt;

namespace {

/// Sets (or with nullopt unsets) environment variables for one test and
/// puts the previous values back.
class ScopedEnv {
public:
  explicit ScopedEnv(
      const std::map<std::string, std::optional<std::string>> &vars) {
    for (const auto &[name, value] : vars) {
      const char *old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      set(name, value);
    }
  }
  ~ScopedEnv() {
    for (const auto &[name, value] : saved_)
      set(name, value);
  }

private:
  static void set(const std::string &name,
                  const std::optional<std::string> &v) {
    if (v)
      ::setenv(name.c_str(), v->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

std::map<std::string, std::optional<std::string>>
rankEnv(int rank, int size, int localRank, int localSize) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(localRank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(localSize)},
          {"TCC_NUM_THREADS", std::nullopt}};
}

std::string threadsSet() {
  const char *v = std::getenv("TCC_NUM_THREADS");
  return v ? v : "(unset)";
}

} // namespace

TEST(TrainRanks, OneProcessDecidesNothing) {
  ScopedEnv env({{"OMPI_COMM_WORLD_RANK", std::nullopt},
                 {"OMPI_COMM_WORLD_SIZE", std::nullopt},
                 {"PMIX_RANK", std::nullopt},
                 {"PMI_RANK", std::nullopt},
                 {"PMI_SIZE", std::nullopt},
                 {"TCC_NUM_THREADS", std::nullopt}});
  shareMachineAmongRanks();
  EXPECT_EQ(threadsSet(), "(unset)");
  EXPECT_TRUE(isLeadRank());
  EXPECT_EQ(sessionOptionsOf(TrainFlags()).gpu, -1);
  EXPECT_EQ(sessionOptionsOf(TrainFlags()).rank, 0);
}

TEST(TrainRanks, RanksShareTheNodesThreadsWithinTheirBinding) {
  ScopedEnv env(rankEnv(3, 4, 1, 2));
  shareMachineAmongRanks();
  int hw = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int want = std::max(1, std::min(CPU_COUNT(&set), hw / 2));
  EXPECT_EQ(threadsSet(), std::to_string(want));
  EXPECT_FALSE(isLeadRank());
  // Local rank 1 takes the second visible GPU (modulo their count).
  EXPECT_EQ(sessionOptionsOf(TrainFlags()).gpu, 1);
  // Dropout draws as global rank 3 (its elements numbered from 3 n).
  EXPECT_EQ(sessionOptionsOf(TrainFlags()).rank, 3);
}

TEST(TrainRanks, TheUsersThreadCountWins) {
  auto vars = rankEnv(0, 2, 0, 2);
  vars["TCC_NUM_THREADS"] = "3";
  ScopedEnv env(vars);
  shareMachineAmongRanks();
  EXPECT_EQ(threadsSet(), "3");
  EXPECT_TRUE(isLeadRank());
}
