//===- KernelsComm.cpp - Gradient buckets of a data-parallel run ----------===//
//
// all_reduce hands its bucket to the communicator's thread and returns, so
// the backward goes on while the gradients travel; all_reduce_wait, which
// the compiler puts before the first reader, blocks until they are
// averaged. In one process both return at once, without touching MPI.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Comm.h"
#include "runtime/cpu/KernelsInternal.h"

namespace tcc::rt::kernels {

namespace {
/// Whether this process is one rank of several (decided once: the launcher's
/// environment does not change while the process runs).
bool dataParallel() {
  static const bool ranks = launchedAsRanks();
  return ranks;
}
} // namespace

void run_all_reduce(const KernelArgs &a) {
  if (!dataParallel())
    return;
  std::vector<CommBuffer> buffers;
  buffers.reserve(a.in.size());
  for (const TensorView &g : a.in)
    buffers.push_back({g.f32(), g.numel});
  communicator().startMeanBucket(abi::attrs<KernelId::AllReduce>(a.instr).bucket,
                                 buffers);
}

void run_all_reduce_wait(const KernelArgs &a) {
  if (!dataParallel())
    return;
  communicator().waitBucket(
      abi::attrs<KernelId::AllReduceWait>(a.instr).bucket);
}

} // namespace tcc::rt::kernels
