//===- KernelCasesShard.h - Sharded optimizer state's kernels -------------===//
//
// reduce_scatter, shard_slice, all_gather and sharded_global_norm (and
// all_reduce's buckets) at the one rank a conformance run has (shards = 1: the
// shard is the whole tensor, flattened, and the average over one rank is the
// gradient itself). Several ranks are tests/mpi's (ZeroShardsMpiTest, and the
// training run of zero_shards.py).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESSHARD_H
#define TCC_TESTS_UNIT_KERNELCASESSHARD_H

#include "KernelCases.h"

namespace tcc::rt::test {

inline void shardCases(std::vector<KernelCase> &cases) {
  KernelCase c{"shards"};
  OneProgram &p = c.prog;
  // A bucket of two gradients, a matrix and a vector.
  int32_t g0 = p.random(DType::F32, {3, 5}), g1 = p.random(DType::F32, {7});
  int32_t s0 = p.out(DType::F32, {15}), s1 = p.out(DType::F32, {7});
  p.instr("reduce_scatter", {g0, g1}, {s0, s1}, {1, 0});
  p.instr("shard_wait", {s0, s1}, {}, {1, 0});
  // A parameter's shard and the parameter back from it.
  // A bucket of two parameters' shards and the parameters back from them.
  int32_t w = p.random(DType::F32, {4, 6});
  int32_t ws = p.out(DType::F32, {24}), wf = p.out(DType::F32, {4, 6});
  p.instr("shard_slice", {w}, {ws}, {1, 0});
  int32_t v = p.random(DType::F32, {5});
  int32_t vs = p.out(DType::F32, {5}), vf = p.out(DType::F32, {5});
  p.instr("shard_slice", {v}, {vs}, {1, 0});
  p.instr("all_gather", {ws, vs}, {wf, vf}, {1, 1});
  p.instr("shard_wait", {wf, vf}, {}, {1, 1});
  // The global norm of the bucket from its shards (the whole at one rank).
  int32_t n = p.out(DType::F32, {});
  p.instr("sharded_global_norm", {s0, s1}, {n}, {1, 0});
  c.outs = {s0, s1, ws, wf, vs, vf, n};
  cases.push_back(std::move(c));

  // The all-reduce buckets of one process: started and waited for, the
  // gradients stay as they are (the average over one rank).
  KernelCase b{"all_reduce_one_rank"};
  OneProgram &q = b.prog;
  int32_t a0 = q.random(DType::F32, {3, 5}), a1 = q.random(DType::F32, {7});
  q.instr("all_reduce", {a0, a1}, {}, {0});
  q.instr("all_reduce_wait", {a0, a1}, {}, {0});
  b.outs = {a0, a1};
  cases.push_back(std::move(b));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESSHARD_H
