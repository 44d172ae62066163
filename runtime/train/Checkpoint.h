//===- Checkpoint.h - Saving and resuming a training run --------*- C++ -*-===//
//
// A checkpoint is everything a training run needs to continue exactly where
// it stopped: every persistent mutable tensor of the artifact (parameters and
// state: optimizer moments and step counters, RNG counters, running
// statistics), the global step, the data feeder's seed and position, the run
// options that must not change on resume, and the identity of the artifact.
// Resuming from it gives bit-for-bit the losses of an uninterrupted run on
// the CPU, because the feeder's epoch order is a pure function of seed and
// epoch and every kernel is deterministic.
//
// File layout (all integers little-endian), like the artifact's:
//   [0,8)    magic "TCCCKPT\0"
//   [8,12)   u32 format version (kCheckpointVersion)
//   [12,16)  u32 reserved (0)
//   [16,24)  u64 manifest length M
//   [24,32)  u64 data length D
//   [32,36)  u32 CRC-32 (zlib) of the whole file, these 4 bytes read as 0
//   [36,64)  zero padding
//   [64,64+M)         manifest: JSON (nlohmann-json), see Checkpoint.cpp
//   padding to a multiple of 64
//   [dataStart, +D)   tensor data, each tensor 64-byte aligned
//
// The checksum covers every byte, header and padding included, so any
// flipped or missing byte is detected. Versioning: a reader accepts only the
// versions it knows; a later version (e.g. one that adds the loss scale)
// bumps kCheckpointVersion and keeps reading the older ones with defaults.
//
// A checkpoint directory holds ckpt-NNNNNNNN.tcckpt files (NNNNNNNN = the
// step, at least 8 digits). Each is written to a ".tmp" file beside it,
// fsync'ed, renamed into place, and the directory is fsync'ed, so a crash
// leaves either the complete file or none. There is no "latest" pointer to
// keep in sync: resume scans the directory and takes the newest checkpoint
// whose checksum is valid, saying which newer files it skipped and why.
//
// This header has no MLIR, LLVM or ONNX dependency.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_CHECKPOINT_H
#define TCC_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcc::rt {

class Session;
struct HostArray;

constexpr uint32_t kCheckpointVersion = 1;

/// The data file that fed one model input. A resumed run must be fed the
/// same samples, wherever the file now lives: the content is compared, the
/// path is kept for messages.
struct DataIdentity {
  std::string name;  // the model input, e.g. "x"
  std::string path;  // as given on the command line
  std::string dtype; // element type in the file (fileDTypeName)
  std::vector<int64_t> shape;
  uint32_t crc32 = 0; // of the element bytes
};

/// The identity of `array` (loaded from `array.path`) feeding input `name`.
DataIdentity dataIdentity(const std::string &name, const HostArray &array);

/// Everything in a checkpoint besides the tensors.
struct CheckpointMeta {
  uint32_t artifactCrc = 0;   // artifactIdentity() of the artifact trained
  std::string artifactSource; // its meta "source" (the model), for messages
  int64_t step = 0;           // training steps completed
  float loss = 0;             // the loss of step `step` (informational)
  // The run's options that must match on resume.
  int64_t totalSteps = 0; // the run's length in steps
  int64_t epochs = -1;    // --epochs, or -1 when the run gave --steps
  int64_t batchSize = 0;
  int64_t batchesPerEpoch = 0;
  /// BLAS threads of the run: GEMM results (so the losses) may change in
  /// the last bits with the thread count, so a difference is reported.
  int64_t blasThreads = 0;
  /// Processes of the data-parallel run (mpirun -np N; 1 for one process,
  /// and in checkpoints written before data-parallel runs). batchSize and
  /// batchesPerEpoch are per rank and in global steps.
  int64_t ranks = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  std::vector<DataIdentity> data;
  /// LrSchedule::describe() of the run's schedule; empty in checkpoints
  /// written before schedules existed (then not compared).
  std::string lrSchedule;
};

/// A tensor to save: a view of session memory.
struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::Param;
  const void *data = nullptr;
  int64_t byteSize() const;
};

/// A tensor read from a checkpoint; its bytes are in Checkpoint::bytes.
struct CheckpointTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::Param;
  uint64_t offset = 0; // into Checkpoint::bytes
  uint64_t size = 0;
};

struct Checkpoint {
  std::string path; // where it was read from, for messages
  CheckpointMeta meta;
  std::vector<CheckpointTensor> tensors;
  std::vector<uint8_t> bytes; // the whole file image
  const uint8_t *data(const CheckpointTensor &t) const {
    return bytes.data() + t.offset;
  }
};

/// The tensor kinds a checkpoint holds: persistent and changed by training
/// (Param, State). Inputs are refilled every step, constants come from the
/// artifact and temporaries never outlive a program run.
bool isCheckpointed(TensorKind k);

/// "0x%08x", for messages.
std::string hex32(uint32_t v);

/// The artifact's identity: the CRC-32 tcc writes in its header (of the
/// manifest and blob as tcc serializes them).
uint32_t artifactIdentity(const Artifact &a);

/// Tensor `id`'s bytes in host memory (Session::hostData); Error for a
/// session that keeps it elsewhere (a GPU's: use the overloads below on a
/// host copy).
void *hostTensor(Session &s, int32_t id);
/// Views of every checkpointed tensor of `s`, in tensor-id order.
std::vector<TensorRef> persistentTensors(Session &s);
/// The same over any copy of the tensors (a host mirror of a GPU session):
/// `data(id)` holds tensor `id`'s bytes.
std::vector<TensorRef>
persistentTensors(const std::vector<TensorInfo> &tensors,
                  const std::function<const void *(int32_t)> &data);

/// The complete file image. Throws Error (e.g. a tensor whose size does not
/// match its shape).
std::vector<uint8_t> serializeCheckpoint(const CheckpointMeta &meta,
                                         const std::vector<TensorRef> &tensors);
/// Validates magic, version, sizes, the checksum, the manifest schema and
/// every tensor range. Throws Error naming `what` and the problem.
Checkpoint parseCheckpoint(std::vector<uint8_t> bytes, const std::string &what);
Checkpoint readCheckpoint(const std::string &path);
/// Writes `path` atomically: a temporary file beside it (path + ".tmp"),
/// fsync, rename, fsync of the directory. On failure the temporary file is
/// removed, any existing file at `path` is untouched, and Error names the
/// file and the system error.
void writeCheckpoint(const std::string &path, const CheckpointMeta &meta,
                     const std::vector<TensorRef> &tensors);

/// Copies the checkpoint's tensors into the session's persistent tensors,
/// matched by name. Throws Error, before changing anything, if a tensor is
/// missing on either side or its dtype or shape differs.
void restoreCheckpoint(Session &s, const Checkpoint &c);
/// The same into any copy of the tensors: `dest(id)` is tensor `id`'s
/// buffer (byteSize() bytes), or null for a tensor that is checked but not
/// copied (a sharded state, which each rank slices itself).
void restoreCheckpoint(const std::vector<TensorInfo> &tensors,
                       const std::function<void *(int32_t)> &dest,
                       const Checkpoint &c);

/// Throws Error, naming the checkpoint file, if a run described by `now`
/// (step ignored) cannot continue from `c`: another artifact, another
/// length (--steps/--epochs), batch size, seed, shuffling or data. Reports
/// through `warn` what allows resuming but not bit-identical results (a
/// different BLAS thread count).
void checkResumable(const Checkpoint &c, const CheckpointMeta &now,
                    const std::function<void(const std::string &)> &warn = {});

//===-- Checkpoint directories --------------------------------------------===//

/// "ckpt-00001200.tcckpt" for step 1200.
std::string checkpointFileName(int64_t step);

struct CheckpointFile {
  int64_t step;
  std::string path;
};
/// The ckpt-*.tcckpt files in `dir`, oldest step first (an absent directory
/// has none). Other files, temporaries included, are ignored.
std::vector<CheckpointFile> listCheckpoints(const std::string &dir);

/// mkdir -p `dir`. Throws Error if it cannot be created or is not a
/// directory.
void makeCheckpointDir(const std::string &dir);

/// Creates `dir` if needed, writes the checkpoint of `meta.step` into it
/// (writeCheckpoint), then deletes older checkpoints beyond the newest
/// `keep` and leftover temporaries of interrupted writes. Returns the path.
/// Throws Error if the checkpoint cannot be written; failing to delete an
/// old one is only reported through `warn`.
std::string
saveCheckpoint(const std::string &dir, const CheckpointMeta &meta,
               const std::vector<TensorRef> &tensors, int64_t keep,
               const std::function<void(const std::string &)> &warn);

/// `from` is a checkpoint file or a directory. For a directory, reads its
/// checkpoints newest first and returns the first valid one, reporting each
/// one skipped (corrupt, truncated) through `warn`. Throws Error if `from`
/// does not exist or holds no valid checkpoint.
Checkpoint
loadNewestCheckpoint(const std::string &from,
                     const std::function<void(const std::string &)> &warn);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_CHECKPOINT_H
