//===- CudaSessionInternal.h - CudaSession's state --------------*- C++ -*-===//
//
// Shared by CudaSessionLoad.cpp (validation, device memory, the cubin) and
// CudaSession.cpp (running programs); not part of the runtime's interface.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDASESSIONINTERNAL_H
#define TCC_RUNTIME_CUDA_CUDASESSIONINTERNAL_H

#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/CudaGraphs.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/CudaNccl.h"
#include "runtime/cuda/CudaSession.h"
#include "runtime/cuda/CudnnConv.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

/// Device memory is handed out in multiples of this (cudaMalloc's own
/// alignment; cuBLASLt plans assume at most this).
constexpr int64_t kDeviceAlign = 256;
inline int64_t alignUp(int64_t bytes) {
  return (bytes + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign;
}

/// Whether a cubin built for `arch` ("sm_90a", "sm_90", "sm_100f") runs on
/// a GPU of compute capability major.minor: "a" code only on exactly that
/// capability, "f" and plain code on the same major and a minor at least
/// theirs. Otherwise false, with a user-facing reason (and the recompile
/// hint) in `why`.
bool archRunsOn(const std::string &arch, int major, int minor,
                std::string *why);

/// Runs of `adamw_update` instrs with one launch (CudaKernelsOptim.cu).
struct AdamGroup {
  std::vector<size_t> members;  // instr indexes, consecutive
  AdamEntry *entries = nullptr; // device tables
  AdamBlock *blocks = nullptr;
  int64_t numBlocks = 0;
  std::vector<AdamEntry> uploaded; // what `entries` holds now
};

struct ProgramState {
  Program program;
  std::vector<const CudaKernelDef *> defs;
  /// Profile names: the kernel, "fused:<ops>", or the multi-tensor AdamW.
  std::vector<std::string> labels;
  /// labels with the problem shape (profileShape) for a profile by shape.
  std::vector<std::string> shapeLabels;
  /// Per instr: bytes and FLOPs for the profile (a group's first member
  /// carries the whole group's).
  std::vector<KernelCost> costs;
  /// Views built once; data pointers refreshed before each launch.
  std::vector<CudaArgs> args;
  std::vector<int> errSlot; // per instr: index of its err words, or -1
  std::vector<int32_t> temps;
  std::vector<std::vector<int32_t>> allocBefore, freeAfter;
  /// Per instr: the AdamW group it starts (>= 0), -1, or -2 for a later
  /// member of a group (launched with its first).
  std::vector<int> group;
  std::vector<AdamGroup> groups;
  std::vector<cudaEvent_t> events; // profiling: start/stop per instr
  std::unique_ptr<GraphCache> graphs; // Compiled, SessionOptions::graphs
  /// Per instr: its cuDNN convolution (descriptors, algorithm), or null.
  std::vector<std::unique_ptr<CudnnConv>> convs;
};

/// An instr whose kernel can report a data error.
struct ErrSlot {
  const ProgramState *program;
  size_t instr;
  CudaErrKind kind;
};

struct CudaSession::Impl {
  ExecMode mode = ExecMode::Compiled;
  SessionOptions opts;
  std::vector<TensorInfo> tensors;
  std::vector<std::unique_ptr<ProgramState>> programs;
  std::vector<void *> buffers; // current device buffer of each tensor
  /// Host memory pinned by registerHost, unpinned at the end.
  std::vector<void *> registeredHost;
  std::vector<DeviceKernel> deviceKernels;
  int64_t scratchBytes = 0; // the most any instr asked for

  // Device state.
  int smCount = 1;
  cudaStream_t stream = nullptr;
  char *block = nullptr; // persistent tensors (+ the arena when Compiled)
  /// Compiled: one arena inside the block, sized for the largest program
  /// and shared by all (CudaSession::Impl::useArena), and whose temps it
  /// holds now.
  char *arena = nullptr;
  const ProgramState *arenaOwner = nullptr;
  int64_t blockBytes = 0;
  cudaMemPool_t pool = nullptr; // Eager temporaries
  long long *errWords = nullptr;
  std::vector<ErrSlot> slots;
  void *scratch = nullptr;
  cudaLibrary_t library = nullptr;
  std::vector<FusedHandle> fused;
  std::unique_ptr<CudaGemm> gemm;
  /// cuDNN, made only when a program has a convolution.
  std::unique_ptr<CudnnHandle> cudnn;
  /// NCCL's stream and events, made only when a program reduces gradients
  /// and the run has several ranks (CudaComm.cpp).
  std::unique_ptr<CudaBuckets> buckets;
  std::vector<void *> smallAllocs; // AdamW tables
  /// anyNonFinite: one device counter per scanned tensor, and its copy.
  void *nonFiniteDevice = nullptr;
  std::vector<unsigned long long> nonFiniteCounts;

  // Accounting (MemoryStats).
  int64_t persistentBytes = 0, arenaBytes = 0;
  int64_t fixedBytes = 0; // every cudaMalloc but the eager temporaries
  int64_t liveTempBytes = 0, peakTempBytes = 0;
  int64_t liveAsyncBytes = 0, measuredPeak = 0;

  bool profiling = false, profileByShape = false;
  std::map<std::string, Session::KernelTime> profile;

  ~Impl();
  /// Everything the constructor does (CudaSessionLoad.cpp).
  void load(const Artifact &a);
  void validate(const Artifact &a);
  void allocate(const Artifact &a);
  void loadDeviceCode(const Artifact &a);
  void buildAdamGroups(ProgramState &ps);
  /// The convolutions' cuDNN plans; their workspace joins scratchBytes.
  void setUpConvolutions();
  /// The gradient buckets' NCCL state, handed to the all_reduce instrs.
  void setUpBuckets();

  // Running (CudaSession.cpp).
  ProgramState &state(const std::string &name);
  void useArena(ProgramState &ps);
  void launch(ProgramState &ps, size_t i);
  void allocTemp(int32_t id);
  void freeTemp(int32_t id);
  void notePeak();
  std::string errorMessage(const ErrSlot &slot, const long long *w) const;
};

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDASESSIONINTERNAL_H
