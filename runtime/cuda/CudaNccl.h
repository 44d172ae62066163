//===- CudaNccl.h - NCCL for the gradient buckets of a CUDA run -*- C++ -*-===//
//
// A data-parallel run on CUDA averages each gradient bucket on the GPUs
// with NCCL's all-reduce, not through the host communicator (Comm.h): the
// gradients never leave the device. NCCL is loaded with dlopen when a
// session's step has buckets and the run has several ranks (or TCC_NCCL=
// force asks for it with one), so a one-rank run neither links nor loads
// libnccl; with several ranks a missing library is an Error saying where
// it was looked for.
//
// One NCCL communicator per process, over the ranks of communicator():
// rank 0 makes the unique id, communicator().broadcast() hands it to the
// others, and each rank joins on its session's GPU (the current device).
// Each session has its own communication stream and two events per bucket
// (CudaBuckets), so the kernels `all_reduce` and `all_reduce_wait` are a
// fork from the compute stream and a join back to it: both capturable into
// the session's CUDA graphs (NCCL >= 2.9 captures its own launches).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDANCCL_H
#define TCC_RUNTIME_CUDA_CUDANCCL_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/Kernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

/// Whether this build of the CUDA backend has the NCCL path (nccl.h was
/// found in the toolkit at configure time).
bool ncclBuilt();

/// TCC_NCCL: "" or "auto" (NCCL when the run has several ranks), "force"
/// (NCCL even with one rank: what the GPU tests use to run the NCCL path on
/// one GPU). Error naming the variable for anything else.
enum class NcclUse { Auto, Force };
NcclUse ncclUseFromEnv();
/// Whether a session whose step reduces gradients goes through NCCL: the
/// run has several ranks, or TCC_NCCL=force.
bool ncclWanted();

/// Where libnccl is looked for, in order: TCC_NCCL_LIBRARY alone when set
/// (an explicit choice is not second-guessed), else "libnccl.so.2" on the
/// loader's path and then the toolkit's copy found at configure time.
std::vector<std::string> ncclCandidates();

/// Loads NCCL from the first of `candidates` that opens and has every
/// function used here, and checks its version (>= 2.10, for ncclAvg).
/// Error listing each candidate and why it failed. Returns the library's
/// version code (e.g. 22809 for 2.28.9). Nothing is kept when it fails.
int loadNcclFrom(const std::vector<std::string> &candidates);

/// "NCCL 2.28.9 (/usr/local/cuda/lib/libnccl.so.2)" once loaded by
/// the process communicator, "" before.
std::string ncclDescription();

/// A session's gradient buckets on NCCL: the communication stream and each
/// bucket's events. Made by the session only when ncclWanted() and its
/// programs reduce gradients; else the kernels do nothing (one rank). An
/// interface, so that the kernels (CudaComm.cpp, also built into the CPU
/// emulator of the kernels) need no NCCL or CUDA runtime to link.
class CudaBuckets {
public:
  virtual ~CudaBuckets() = default;
  /// all_reduce: the communication stream waits for what `compute` has
  /// enqueued so far, then averages `buffers` in place (one NCCL group),
  /// then marks the bucket done. Returns without waiting.
  virtual void start(int64_t bucket, const std::vector<TensorView> &buffers,
                     cudaStream_t compute) = 0;
  /// all_reduce_wait: `compute` waits (on the device) until the bucket is
  /// averaged.
  virtual void wait(int64_t bucket, cudaStream_t compute) = 0;
};

/// Joins the process's NCCL communicator (made by the first session that
/// needs it; every rank makes its sessions in the same order, so the
/// collective setup matches) and creates a stream and events on the
/// current device for the buckets `ids`. Throws Error (also in a build
/// without NCCL).
std::unique_ptr<CudaBuckets> makeNcclBuckets(const std::vector<int64_t> &ids);

/// Every program's all_reduce / all_reduce_wait pairs: each bucket started
/// once and waited for once, after its start, in the same program (what
/// the compiler emits; a CUDA graph could not be captured otherwise).
/// Returns the bucket ids; Error naming the program and instr otherwise.
std::vector<int64_t> checkBucketPairs(const std::vector<const Program *> &ps);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDANCCL_H
