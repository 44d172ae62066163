//===- CudaShard.cpp - Sharded optimizer state's kernels on CUDA ----------===//
//
// reduce_scatter, shard_slice and all_gather over one shard (shards = 1)
// are copies (and shard_wait has nothing to wait for): the shard is the whole
// tensor, the mean over one rank the gradient itself; sharded_global_norm over
// one shard is global_norm. Several shards need device collectives (NCCL) this
// backend does not have yet, so the load-time check refuses them with the way
// out instead of updating a shard no other rank completes.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

namespace tcc::rt::cuda {

int64_t prepare_shard(const Instr &in, const std::vector<TensorInfo> &) {
  int64_t shards = abi::attrsOf<abi::ShardAttrs>(in).shards;
  if (shards != 1)
    throw Error("sharded optimizer state (tcc compile --zero-shards " +
                std::to_string(shards) +
                ") is not built for CUDA yet: run the ranks with --device "
                "cpu");
  return 0;
}

int64_t prepare_sharded_global_norm(const Instr &in,
                                    const std::vector<TensorInfo> &t) {
  prepare_shard(in, t);
  return prepare_global_norm(in, t);
}

void launch_sharded_global_norm(const CudaArgs &a) { launch_global_norm(a); }

// At one shard the copies were made on the stream when the bucket started.
void launch_shard_wait(const CudaArgs &) {}

void launch_shard(const CudaArgs &a) {
  for (size_t i = 0; i < a.in.size(); ++i)
    TCC_CUDA_CHECK(cudaMemcpyAsync(a.out[i].data, a.in[i].data,
                                   size_t(a.in[i].numel) * sizeof(float),
                                   cudaMemcpyDeviceToDevice, a.stream));
}

} // namespace tcc::rt::cuda
