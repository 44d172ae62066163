//===- ZeroShards.cpp - Sharded optimizer state (ZeRO stage 1) ------------===//
#include "runtime/core/ZeroShards.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/Comm.h"

#include <algorithm>
#include <cstring>

namespace tcc::rt {

int64_t shardSize(int64_t numel, int64_t shards) {
  if (shards < 1 || numel < 0)
    throw Error("shardSize: " + std::to_string(numel) + " elements in " +
                std::to_string(shards) + " shards");
  return (numel + shards - 1) / shards;
}

std::pair<int64_t, int64_t> shardRange(int64_t numel, int64_t shards,
                                       int64_t rank) {
  int64_t c = shardSize(numel, shards);
  int64_t begin = std::min(numel, rank * c);
  return {begin, std::min(numel, begin + c)};
}

void sliceShard(const float *full, int64_t numel, int64_t shards, int64_t rank,
                float *shard) {
  auto [begin, end] = shardRange(numel, shards, rank);
  int64_t c = shardSize(numel, shards);
  if (end > begin)
    std::memcpy(shard, full + begin, size_t(end - begin) * sizeof(float));
  std::fill(shard + (end - begin), shard + c, 0.0f);
}

void joinShards(const float *all, int64_t numel, int64_t shards, float *full) {
  int64_t c = shardSize(numel, shards);
  for (int64_t r = 0; r < shards; ++r) {
    auto [begin, end] = shardRange(numel, shards, r);
    if (end > begin)
      std::memcpy(full + begin, all + r * c,
                  size_t(end - begin) * sizeof(float));
  }
}

const ShardedState *ZeroPlan::find(const std::string &name) const {
  for (const ShardedState &s : states)
    if (s.state == name)
      return &s;
  return nullptr;
}

ZeroPlan zeroPlan(const Artifact &a) {
  ZeroPlan plan;
  auto n = a.meta.find("zero_shards");
  if (n == a.meta.end())
    return plan;
  try {
    plan.shards = std::stoll(n->second);
  } catch (const std::exception &) {
    plan.shards = 0;
  }
  if (plan.shards < 2)
    throw Error("artifact meta zero_shards is '" + n->second +
                "', expected a number of ranks >= 2");
  auto list = a.meta.find("zero_sharded_state");
  std::string text = list == a.meta.end() ? "" : list->second;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string entry = text.substr(pos, comma - pos);
    pos = comma + 1;
    size_t eq = entry.find('=');
    ShardedState s;
    s.state = entry.substr(0, eq);
    s.param = eq == std::string::npos ? "" : entry.substr(eq + 1);
    s.stateId = a.findTensor(s.state);
    s.paramId = a.findTensor(s.param);
    if (s.stateId < 0 || s.paramId < 0)
      throw Error("artifact meta zero_sharded_state names '" + entry +
                  "', which is not a state and a parameter of the artifact");
    s.numel = a.tensors[s.paramId].numElements();
    s.shardNumel = shardSize(s.numel, plan.shards);
    if (a.tensors[s.stateId].numElements() != s.shardNumel)
      throw Error("state '" + s.state + "' has " +
                  std::to_string(a.tensors[s.stateId].numElements()) +
                  " elements, expected a shard of " +
                  std::to_string(s.shardNumel) + " of '" + s.param + "'");
    plan.states.push_back(std::move(s));
  }
  return plan;
}

std::vector<TensorInfo> wholeStateTensors(std::vector<TensorInfo> tensors,
                                          const ZeroPlan &plan) {
  for (const ShardedState &s : plan.states) {
    if (s.stateId < 0 || s.paramId < 0 ||
        s.stateId >= static_cast<int32_t>(tensors.size()) ||
        s.paramId >= static_cast<int32_t>(tensors.size()))
      throw Error("sharded state '" + s.state + "' is not in the tensors");
    TensorInfo &t = tensors[s.stateId];
    // The shards are f32 (gatherState and sliceShard move floats).
    if (t.dtype != DType::F32 || t.numElements() != s.shardNumel)
      throw Error("sharded state '" + s.state + "' is " + dtypeName(t.dtype) +
                  " " + formatShape(t.shape) + ", not an f32 shard of " +
                  std::to_string(s.shardNumel) + " elements");
    t.shape = tensors[s.paramId].shape;
    if (t.numElements() != s.numel)
      throw Error("sharded state '" + s.state + "': its parameter '" + s.param +
                  "' has " + std::to_string(t.numElements()) +
                  " elements, the plan says " + std::to_string(s.numel));
  }
  return tensors;
}

void checkZeroRanks(int64_t shards, const Communicator &comm) {
  if (comm.size() != shards)
    throw Error("this artifact keeps its optimizer state in " +
                std::to_string(shards) + " shards (--zero-shards " +
                std::to_string(shards) + "): run it as " +
                std::to_string(shards) + " ranks (mpirun -np " +
                std::to_string(shards) + "), not " +
                (comm.size() == 1 ? std::string("in one process")
                                  : std::to_string(comm.size()) + " ranks"));
}

std::vector<float> gatherState(Communicator &comm, const ShardedState &s,
                               const float *shard) {
  int64_t shards = comm.size();
  if (shardSize(s.numel, shards) != s.shardNumel)
    throw Error("gatherState: '" + s.state + "' is not a shard of " +
                std::to_string(shards) + " ranks");
  std::vector<float> all(static_cast<size_t>(shards * s.shardNumel));
  std::vector<float> full(static_cast<size_t>(s.numel));
  comm.allGather(shard, all.data(), s.shardNumel * int64_t(sizeof(float)));
  joinShards(all.data(), s.numel, shards, full.data());
  return full;
}

} // namespace tcc::rt
