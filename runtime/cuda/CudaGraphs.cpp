//===- CudaGraphs.cpp - A program's launches replayed as a CUDA graph -----===//
#include "runtime/cuda/CudaGraphs.h"

#include "runtime/cuda/CudaCheck.h"

using namespace tcc::rt;
using namespace tcc::rt::cuda;

GraphCache::~GraphCache() { clear(); }

size_t GraphCache::graphs() const {
  size_t n = 0;
  for (const Entry &e : entries_)
    n += e.exec != nullptr;
  return n;
}

void GraphCache::clear() {
  for (Entry &e : entries_)
    if (e.exec)
      cudaGraphExecDestroy(e.exec);
  entries_.clear();
}

void GraphCache::turnOff(const std::string &why) {
  enabled_ = false;
  whyOff_ = why;
  clear();
}

void GraphCache::run(const std::vector<void *> &key, cudaStream_t stream,
                     const std::function<void()> &enqueue) {
  if (!enabled_) {
    enqueue();
    return;
  }
  Entry *entry = nullptr;
  for (Entry &e : entries_)
    if (e.key == key)
      entry = &e;
  if (!entry) {
    if (entries_.size() >= kMaxKeys) {
      turnOff("inputs were bound to more than " + std::to_string(kMaxKeys) +
              " different buffers");
      enqueue();
      return;
    }
    // First run with these buffers: uncaptured, so everything made on
    // first use (cuBLASLt plans, multi-tensor tables) exists before capture.
    entries_.push_back(Entry{key, nullptr});
    enqueue();
    return;
  }
  if (!entry->exec) {
    TCC_CUDA_CHECK(
        cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    std::string failed;
    try {
      enqueue();
    } catch (const Error &e) {
      failed = e.what();
    }
    cudaGraph_t graph = nullptr;
    cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (failed.empty() && end != cudaSuccess)
      failed = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(end);
    cudaError_t inst = cudaSuccess;
    if (failed.empty()) {
      inst = cudaGraphInstantiate(&entry->exec, graph, 0);
      if (inst != cudaSuccess) {
        entry->exec = nullptr;
        failed =
            std::string("cudaGraphInstantiate: ") + cudaGetErrorString(inst);
      }
    }
    if (graph)
      cudaGraphDestroy(graph);
    if (!failed.empty()) {
      // Nothing captured ran: clear the error and run the work uncaptured
      // (which throws again if the work itself is wrong).
      (void)cudaGetLastError();
      turnOff("capture failed: " + failed);
      enqueue();
      return;
    }
  }
  TCC_CUDA_CHECK(cudaGraphLaunch(entry->exec, stream));
  ++replays_;
}
