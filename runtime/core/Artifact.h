//===- Artifact.h - The compiled training step, as the runtime sees it ----===//
//
// The artifact is the only thing the compiler and the runtime share. It holds a
// tensor table, one or more programs (flat schedules of kernel calls over tensor
// ids) with a static memory plan each, and the bytes of initial weights and
// constants. This header has no MLIR, LLVM or ONNX dependency.
//
// File layout (all integers little-endian):
//   [0,8)    magic "TCCARTF\0"
//   [8,12)   u32 format version (kArtifactVersion)
//   [12,16)  u32 reserved (0)
//   [16,24)  u64 manifest length M
//   [24,32)  u64 blob length B
//   [32,36)  u32 CRC-32 (zlib) of manifest bytes followed by blob bytes
//   [36,64)  zero padding
//   [64,64+M)           manifest: JSON (nlohmann-json), see Artifact.cpp
//   padding to a multiple of 64
//   [blobStart, +B)     blob: tensor data, each entry 64-byte aligned
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ARTIFACT_H
#define TCC_RUNTIME_CORE_ARTIFACT_H

#include "runtime/core/HostDType.h"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tcc::rt {

/// 2: optimizer updates read the learning rate from an operand (the
/// `optimizer.lr` state) and cross-entropy kernels carry ignore_index and
/// label_smoothing; a version 1 artifact's instrs no longer check, so it is
/// refused up front with "recompile the model".
constexpr uint32_t kArtifactVersion = 2;
/// Blob entries, the blob itself and runtime buffers are aligned to this.
constexpr int64_t kArtifactAlign = 64;

/// Every runtime failure a user can meet is a tcc::rt::Error; tools print
/// what() and exit non-zero.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// BF16 and F16 (IEEE half) are 16-bit floats, stored as raw words
/// (runtime/core/prelude/Half.h); kernels compute on them in f32.
enum class DType : uint8_t { F32, I64, BF16, F16 };
const char *dtypeName(DType t);          // "f32", "i64", "bf16", "f16"
DType parseDType(const std::string &s);  // throws Error on unknown
size_t dtypeSize(DType t);
/// f32, bf16 or f16.
inline bool isFloatDType(DType t) { return t != DType::I64; }
/// bf16 or f16.
inline bool isHalfDType(DType t) { return t == DType::BF16 || t == DType::F16; }
/// "[2,3]" ("[]" for a scalar), for error messages.
std::string formatShape(const std::vector<int64_t> &shape);

enum class TensorKind : uint8_t {
  Param,    // trainable parameter: persistent, initialized from the blob
  State,    // optimizer/other state: persistent, initialized from the blob
  Input,    // data fed per step (e.g. "x", "labels")
  Constant, // read-only data from the blob
  Temp,     // intermediate of one program: lives in that program's arena
};
const char *tensorKindName(TensorKind k);  // "param","state","input","constant","temp"
TensorKind parseTensorKind(const std::string &s);

/// How a Param or State tensor gets its initial value. Blob: the bytes at
/// TensorInfo::dataOffset. The others (`tcc compile --weights seeded`) are
/// drawn at load by runtime/core/Initializer.h from a counter-based
/// generator, so an artifact of a large model travels without its weights
/// and every load gives the same values: Constant fills `a`; Normal draws
/// mean `a`, standard deviation `b`; Uniform draws from [a, b). Cast is a
/// 16-bit State whose initial value is f32 Param `source`'s, rounded to
/// nearest-even (tcc-shadow-weights' copies, which AdamW keeps equal to the
/// cast of the parameter). dataOffset is -1 for these.
struct InitSpec {
  enum class Kind : uint8_t { Blob, Constant, Normal, Uniform, Cast };
  Kind kind = Kind::Blob;
  double a = 0, b = 0;
  uint64_t seed = 0;
  std::string source = {}; // Cast: the parameter's name
};
/// "blob","constant","normal","uniform","cast"
const char *initKindName(InitSpec::Kind k);
InitSpec::Kind parseInitKind(const std::string &s); // throws Error

struct TensorInfo {
  std::string name;             // unique; params keep their ONNX initializer name
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // static; rank 0 = scalar
  TensorKind kind = TensorKind::Temp;
  /// Param/State/Constant: byte offset of the initial data in the blob.
  int64_t dataOffset = -1;
  /// Temp: byte offset in its program's arena (from the static plan).
  int64_t arenaOffset = -1;
  /// Temp: the program that owns it.
  std::string program;
  /// Param/State: where the initial value comes from (Blob by default).
  InitSpec init;
  /// Inputs and program outputs: the element type the model declares when
  /// it is not `dtype` (an ONNX DOUBLE computed in f32, an INT32 computed
  /// as i64); hosts convert with runtime/core/HostDType.h.
  HostDType hostDType = HostDType::Native;

  int64_t numElements() const;
  int64_t byteSize() const;
};

/// One kernel call. Kernel names are listed in runtime/core/abi/KernelList.def,
/// their attributes' typed views in KernelAttrs.h and their operand
/// conventions in runtime/core/abi/Kernels.h. Outputs may alias inputs
/// (in-place updates) only for kernels documented as element-wise.
struct Instr {
  std::string kernel;
  std::vector<int32_t> inputs;   // tensor ids
  std::vector<int32_t> outputs;  // tensor ids
  std::vector<int64_t> iattrs;
  std::vector<double> fattrs;
};

struct Program {
  std::string name;              // "train_step", "forward"
  std::vector<int32_t> inputs;   // Input tensors the caller must fill
  std::vector<int32_t> outputs;  // tensors the caller reads after a run
  std::vector<Instr> instrs;
  int64_t arenaBytes = 0;        // size of the static plan for this program's temps
};

/// The most dynamic shared memory a generated kernel may ask for per block
/// (an H100's or an A100's limit; the driver refuses more where a GPU has
/// less, and the runner then says which kernel).
constexpr int64_t kMaxKernelSmem = 227 * 1024;

/// One generated kernel for the GPU (compiler/codegen/CudaCodegen.h writes
/// them, runtime/cuda runs them). Kernel k serves the `fused` instrs with
/// i [k], like kernel k of the host library. CUDA ABI, all symbols
/// extern "C" __global__ in the cubin:
///   `symbol`(in0, .., inN-1, out0, .., outM-1, double *partials,
///            long long *err)
/// one pointer per operand in instr order (typed by its dtype: f32 float,
/// i64 long long, bf16/f16 unsigned short), `partials` rows x
/// partialsPerRow doubles of device scratch (or null when 0) and `err` 4
/// device words: a kernel that meets a label out of range sets err[3] from
/// 0 to 1 (atomicCAS, first one wins) and the winner then writes err[0..2]
/// = {row, label, classes}, so after the kernel the four words describe one
/// label. Launch: `block` threads per block and `smem` bytes of dynamic
/// shared memory; mapping "rows" runs one warp per row (grid = ceil(rows *
/// 32 / block)), "block_rows" one block per row (grid = rows; for rows too
/// wide for a warp, e.g. a vocabulary's logits; with `gridPerSm` > 0,
/// grid = min(rows, gridPerSm x the GPU's multiprocessors), each block
/// striding over the rows and copying its next row into shared memory
/// while it computes the current one), "elements" one thread per
/// element of the rows x cols domain (grid = ceil(rows * cols / block),
/// capped by the runtime, the kernel strides). `finSymbol`, when
/// not empty, has the same parameters and runs as one block of `block`
/// threads after the main kernel: it sums the partials (losses), each
/// thread a run of rows in order, then the threads' sums in order (with
/// any block size, one thread included, a correct sum).
/// With `colSums` > 0 (column sums, "rows" only; no per-row partials) the
/// rows come in slices of `sliceRows`: grid = the number of slices, each
/// block (any grid strides over them) sums its slice's rows into
/// `partials` (colSums x cols doubles a slice, written whole), and the fin
/// runs as ceil(colSums x cols / 32) blocks of kColFinThreads threads, 32
/// columns a block, adding the slices in order into the outputs.
/// Threads of a column-sum fin's blocks (DeviceKernel::colSums).
constexpr int64_t kColFinThreads = 256;

/// Hands a shared arena (at `arena`) from one program's temporaries
/// (`from`; null: none) to another's (`to`): from's lose their buffers, so
/// reading one afterwards is a "not live" error instead of another
/// program's bytes, and to's point at their planned arena offsets. The CPU
/// and CUDA sessions share one arena between their programs this way.
inline void handOverArena(std::vector<void *> &buffers,
                          const std::vector<int32_t> *from,
                          const std::vector<int32_t> &to, char *arena,
                          const std::vector<TensorInfo> &tensors) {
  if (from)
    for (int32_t id : *from)
      buffers[id] = nullptr;
  for (int32_t id : to)
    buffers[id] = arena + tensors[id].arenaOffset;
}

/// Rows a column-sum slice takes for `rows` rows: ceil(rows / 8) slices, at
/// most 512 (a block of the CUDA kernel each; their partials are then a few
/// MB), each ceil(rows / slices) rows but the last: at most 8 rows a slice
/// up to 4096 rows, then more (128 at 65536, GPT-2 small's batch 64).
/// Slices of about 8 rows give a CUDA block's 4 warps a row or two each;
/// larger slices left a small batch's sums to a few blocks, far below the
/// memory's speed (benchmarks/results/design-measurements.md). The
/// generated code and
/// the library kernels that sum columns (CPU: kernels::ColumnSums) slice
/// alike, so a sum is the same bits either way.
inline int64_t columnSumSliceRows(int64_t rows) {
  if (rows <= 0)
    return 0;
  int64_t slices = (rows + 7) / 8;
  slices = slices < 1 ? 1 : slices > 512 ? 512 : slices;
  return (rows + slices - 1) / slices;
}

/// The column sums' row slices of `rows` rows in slices of `sliceRows` (the
/// last may be shorter; 0 without column sums): the compiler's generated
/// code, the host library and the GPU launches count them alike.
inline int64_t columnSumSlices(int64_t rows, int64_t sliceRows) {
  return sliceRows ? (rows + sliceRows - 1) / sliceRows : 0;
}

struct DeviceKernel {
  std::string symbol, finSymbol;
  std::string name; // the region's ops, for profiles
  std::string mapping = "rows"; // "rows", "block_rows" or "elements"
  int64_t rows = 0, cols = 0, partialsPerRow = 0;
  int64_t block = 128;
  int64_t smem = 0; // dynamic shared memory bytes per block
  /// block_rows: 0 for a block per row, else blocks per multiprocessor of
  /// a grid that strides over the rows (see above).
  int64_t gridPerSm = 0;
  /// Column sums and their row slices (see above); 0 for none.
  int64_t colSums = 0, sliceRows = 0;
  int64_t slices() const { return columnSumSlices(rows, sliceRows); }
  /// Doubles of device scratch the kernel's partials take.
  int64_t partialCount() const {
    return rows * partialsPerRow + slices() * colSums * cols;
  }
  /// (dtype, element count) per input and output, as the code was built.
  std::vector<std::pair<DType, int64_t>> inputs, outputs;
  /// (output, input) pairs whose pointers may be equal (the region's
  /// `in_place`, as for the host library's kernels).
  std::vector<std::pair<int64_t, int64_t>> inPlace;
};

/// The GPU code of an artifact compiled with `tcc compile --target cuda`:
/// one cubin (NVRTC, at compile time) for `arch`, in the blob.
struct DeviceCode {
  std::string arch;       // "sm_90a"
  int64_t offset = -1;    // cubin bytes in the blob; -1: no device code
  int64_t size = 0;
  std::string compiler;   // e.g. "nvrtc 13.0", for tcc inspect
  std::vector<DeviceKernel> kernels;
  bool present() const { return offset >= 0; }
};

/// A read-only mapping of a file (readArtifact); unmapped with its last
/// Blob.
class MappedFile;

/// The artifact's blob: bytes it owns (an artifact built in memory, or
/// parsed from memory), or a view of the file it was read from, mapped
/// read-only. A mapped blob's pages are given back to the system once they
/// have been copied out (release), so a process holds a large model's
/// initial weights once, in its tensors, and not a second time in the
/// artifact; touching them again reads them again from the page cache.
class Blob {
public:
  Blob() = default;
  Blob(std::shared_ptr<const MappedFile> file, const uint8_t *data,
       size_t size);

  const uint8_t *data() const { return file_ ? view_ : owned_.data(); }
  size_t size() const { return file_ ? viewSize_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  const uint8_t *begin() const { return data(); }
  const uint8_t *end() const { return data() + size(); }
  bool mapped() const { return file_ != nullptr; }

  /// Grows the blob to `n` bytes (zero-filled); a mapped blob is copied
  /// into owned bytes first. For artifacts being built.
  void resize(size_t n);
  uint8_t *mutableData();
  /// Done reading [offset, offset + size) for now: a mapped blob gives its
  /// pages back; owned bytes stay.
  void release(int64_t offset, int64_t size) const;

  bool operator==(const Blob &o) const;
  bool operator!=(const Blob &o) const { return !(*this == o); }

private:
  std::vector<uint8_t> owned_;
  std::shared_ptr<const MappedFile> file_;
  const uint8_t *view_ = nullptr;
  size_t viewSize_ = 0;
};

struct Artifact {
  /// Free-form facts about how it was compiled (source model, batch, loss,
  /// optimizer, lr, ...). Shown by `tcc inspect`.
  std::map<std::string, std::string> meta;
  std::vector<TensorInfo> tensors;  // id = index
  std::vector<Program> programs;
  Blob blob;                        // initial data; offsets are 64-aligned
  /// Optional: the original ONNX model bytes, kept so training can export a
  /// trained model. Stored in the blob; -1 when absent.
  int64_t onnxOffset = -1;
  int64_t onnxSize = 0;
  /// Optional: the shared object of generated (fused) kernels, in the blob
  /// (runtime/cpu/FusedLibrary.h), and the ISA it was compiled for;
  /// offset -1 when absent.
  int64_t hostLibOffset = -1;
  int64_t hostLibSize = 0;
  std::string hostLibIsa;
  /// Optional: GPU code (--target cuda).
  DeviceCode device;

  const Program *findProgram(const std::string &name) const;  // null if none
  int32_t findTensor(const std::string &name) const;          // -1 if none
  /// Appends bytes to the blob at the next 64-byte aligned offset; returns it.
  int64_t addBlob(const void *data, size_t size);
};

/// Checks everything an in-memory artifact refers to: unique names, shapes
/// (non-negative, no overflow), blob ranges, arena ranges, tensor ids, program
/// ownership of temps and that no temp is read before it is written.
/// parseArtifact and Session call it; throws Error without a file prefix.
void validateArtifact(const Artifact &a);

/// Writes to `path + ".tmp"`, flushes, then renames: a crash never leaves a
/// half-written artifact at `path`. Throws Error.
void writeArtifact(const Artifact &a, const std::string &path);
/// Reads and validates (magic, version, sizes, checksum, manifest schema,
/// offsets in range). Throws Error naming the file and what is wrong. The
/// blob stays in the file, mapped (Blob); the checksum reads it once,
/// giving pages back as it goes.
Artifact readArtifact(const std::string &path);
/// The CRC-32 a file of `a` carries in its header (what writeArtifact
/// computes), without building the file's image.
uint32_t artifactChecksum(const Artifact &a);
/// Same, from memory (used by fuzzers and tests). `what` names the source.
Artifact parseArtifact(const uint8_t *data, size_t size, const std::string &what);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ARTIFACT_H
