//===- CudaGraphs.h - Launches replayed as a CUDA graph ---------*- C++ -*-===//
//
// A compiled step is a few hundred kernel launches whose arguments never
// change: the arena plan fixes every temporary's address, weights and
// state live in one block, and kernels read step counters from device
// memory. Only bound inputs move (the feeder rotates its device slots). So
// the launches of one run can be captured into a CUDA graph and replayed
// with one cudaGraphLaunch: the CPU cost per step drops from one launch per
// kernel to one, which is what limits small models (the MLP's step is
// ~30 kernels of a few microseconds each).
//
// One graph per set of buffer addresses (the key): a new key first runs
// normally (cuBLASLt plans and the AdamW tables are made then, outside any
// capture), the second run with that key is captured and instantiated, and
// later ones replay. Capture is thread-local, so other threads' CUDA calls
// are unaffected. Anything the capture refuses (an API that cannot be
// captured) turns graphs off for the session with the reason kept, and the
// run goes ahead uncaptured: graphs are an optimization, never a failure.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDAGRAPHS_H
#define TCC_RUNTIME_CUDA_CUDAGRAPHS_H

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

class GraphCache {
public:
  /// More keys than this (inputs bound to ever new buffers) turn graphs off.
  static constexpr size_t kMaxKeys = 16;

  explicit GraphCache(bool enabled) : enabled_(enabled) {}
  ~GraphCache();
  GraphCache(const GraphCache &) = delete;
  GraphCache &operator=(const GraphCache &) = delete;

  /// Enqueues the work of `enqueue` (every launch of one program run, on
  /// `stream`) directly, or captured into / replayed from the graph of
  /// `key`. Throws Error when the work itself fails.
  void run(const std::vector<void *> &key, cudaStream_t stream,
           const std::function<void()> &enqueue);

  bool enabled() const { return enabled_; }
  /// Why graphs were turned off ("" while on or when never asked for).
  const std::string &whyOff() const { return whyOff_; }
  /// Graph launches so far and instantiated graphs.
  long long replays() const { return replays_; }
  size_t graphs() const;

private:
  struct Entry {
    std::vector<void *> key;
    cudaGraphExec_t exec = nullptr;
  };
  void turnOff(const std::string &why);
  void clear();

  bool enabled_;
  std::string whyOff_;
  long long replays_ = 0;
  std::vector<Entry> entries_;
};

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDAGRAPHS_H
