// A run in which rank 1 dies while rank 0 waits in a collective, for
// rank_death.sh: mpirun must end the run, non-zero and naming the rank,
// within seconds instead of leaving rank 0 waiting forever.
//
//   CommMpiRankDeath HOW WHERE
//     HOW:   error (rank 1 returns 1 from main after an Error, as the tools
//            do), abort (rank 1 calls abortAll(3)), kill (rank 1 SIGKILLs
//            itself)
//     WHERE: allreduce (rank 0 in a blocking all-reduce), bucket (rank 0 in
//            waitBucket while the communicator's thread all-reduces),
//            scatter and gather (the same for a reduce-scatter or an
//            all-gather bucket of sharded optimizer state)
#include "runtime/core/Artifact.h"
#include "runtime/core/Comm.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

using namespace tcc::rt;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: %s error|abort|kill allreduce|bucket|scatter|gather\n",
                 argv[0]);
    return 2;
  }
  std::string how = argv[1], where = argv[2];
  try {
    Communicator &c = communicator();
    c.barrier(); // both ranks are up
    if (c.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::fprintf(stderr, "rank 1: dying (%s)\n", how.c_str());
      if (how == "kill")
        std::raise(SIGKILL);
      if (how == "abort")
        c.abortAll(3);
      throw Error("rank 1 failed on purpose");
    }
    std::vector<float> g(1000, 1.0f);
    if (where == "bucket") {
      c.startMeanBucket(0, {{g.data(), 1000}});
      c.waitBucket(0);
    } else if (where == "scatter") {
      c.startMeanScatterBucket(0, g, {{g.data(), 500}});
      c.waitBucket(0);
    } else if (where == "gather") {
      c.startGatherBucket(0, std::vector<float>(500, 1.0f), {{g.data(), 1000}});
      c.waitBucket(0);
    } else {
      c.allReduce(g.data(), 1000, CommDType::F32, CommOp::Sum);
    }
    std::fprintf(stderr, "rank 0: the collective returned without rank 1\n");
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
