//===- FusedLibrary.h - Generated kernels loaded from the artifact --------===//
//
// `tcc compile` generates C++ for every tcc.fused region
// (compiler/codegen/FusedCodegen.cpp), compiles it with the host C++
// compiler into a shared object and stores its bytes in the artifact
// ("host_library" in the manifest). The runtime writes them to a private
// temporary file, dlopens it and unlinks the file at once.
//
// Trust: the artifact's manifest and tensors are untrusted input and are
// validated; the shared object is native code and is trusted by
// construction - it runs with the process's rights, exactly as the tcc
// binary does, so only run artifacts you compiled or otherwise trust. What
// the runtime does check is that the library speaks this ABI, that every
// instr's kernel index exists and that its operands have the dtypes and
// element counts the generated code was compiled for, so a consistent
// artifact can never make a kernel read or write out of bounds.
//
// ABI (version kFusedAbi), all symbols extern "C":
//   const int64_t tcc_fused_abi, tcc_fused_count;
//   const tcc_fused_fn  tcc_fused_fns[count];
//   const tcc_fused_fin tcc_fused_fins[count];      (null: no finalizer)
//   const int64_t tcc_fused_meta_offsets[count + 1], tcc_fused_meta[];
//   const char *const tcc_fused_names[count];       (the regions' ops)
// Kernel k's meta, from tcc_fused_meta[offsets[k]]: rows, cols, inputs,
// outputs, scratch floats per thread, partials per row, work per element
// (a rough cost: cheap ops 1, transcendental ones 4), in-place pairs P,
// column sums C and their slice rows S (C > 0: the partials also hold C x
// cols doubles per slice of S rows, after the per-row ones; see
// KernelGraph::sliceRows),
// then (dtype code, element count) per input and per output (dtype codes:
// 0 f32, 1 i64, 2 bf16, 3 f16; a 16-bit operand is an array of uint16_t
// words), then P (output, input) pairs whose pointers may be equal: the
// code reads each element of that input before it writes the element at
// the same address of that output.
// fn(buffers, r0, r1, scratch, partials, err) computes rows [r0, r1): each
// row is independent of the others, so rows may be split across threads
// and the result does not depend on how (with column sums, at multiples
// of S: a slice's sums are one thread's, in row order). It returns 0, or
// 1 after filling err[0..2] = {position, label, classes} for a label out
// of range. The partials start as zeros.
// fin(buffers, partials), when present, runs once after all rows: it sums
// the per-row partials in row order (whole-region results: losses) and
// each column sum's slices in slice order.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_FUSEDLIBRARY_H
#define TCC_RUNTIME_CPU_FUSEDLIBRARY_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

constexpr int64_t kFusedAbi = 3;
/// Meta fields before the per-operand pairs.
constexpr int64_t kFusedMetaHeader = 10;

using FusedFn = int (*)(void *const *buffers, int64_t rowBegin, int64_t rowEnd,
                        float *scratch, double *partials, int64_t *err);
using FusedFin = void (*)(void *const *buffers, const double *partials);

/// The ISA the compiler targets on this machine ("x86-64-v3" with AVX2 and
/// FMA, else "generic"), and whether the running CPU can run code built for
/// `isa`.
std::string hostIsa();
bool cpuSupportsIsa(const std::string &isa);

/// Checks a `fused` instr's operands against generated kernel `k`'s
/// signature, (dtype, element count) per input and output, as the code was
/// compiled, and that every (output, input) pair the instr lists in place
/// is one the code allows (`inPlace`): the host library's and the GPU
/// code's kernels are checked alike. Throws Error naming the first operand
/// or pair that differs.
void checkFusedOperands(
    const Instr &instr, const std::vector<TensorInfo> &tensors, int64_t k,
    const std::vector<std::pair<DType, int64_t>> &inputs,
    const std::vector<std::pair<DType, int64_t>> &outputs,
    const std::vector<std::pair<int64_t, int64_t>> &inPlace);

class FusedLibrary {
public:
  struct Kernel {
    FusedFn fn = nullptr;
    FusedFin fin = nullptr;
    int64_t rows = 0, cols = 0, scratchFloats = 0, partialsPerRow = 0;
    int64_t workPerElement = 1;
    int64_t colSums = 0, sliceRows = 0; // column sums (see the ABI above)
    /// Doubles of partials: per-row ones, then the column sums' slices.
    int64_t partialCount() const {
      return rows * partialsPerRow +
             columnSumSlices(rows, sliceRows) * colSums * cols;
    }
    std::string name; // the region's ops, for profiles
    std::vector<std::pair<DType, int64_t>> inputs, outputs;
    std::vector<std::pair<int64_t, int64_t>> inPlace; // (output, input)
  };

  /// Loads the shared object `bytes` built for `isa`. Throws Error when the
  /// CPU lacks the ISA, the object does not load or does not speak the ABI.
  FusedLibrary(const uint8_t *bytes, size_t size, const std::string &isa);
  ~FusedLibrary();
  FusedLibrary(const FusedLibrary &) = delete;
  FusedLibrary &operator=(const FusedLibrary &) = delete;

  size_t size() const { return kernels_.size(); }
  const Kernel &kernel(size_t i) const { return kernels_[i]; }

  /// Checks a `fused` instr against the kernel it names (index range,
  /// operand counts, dtypes, element counts). Throws Error.
  void check(const Instr &instr, const std::vector<TensorInfo> &tensors) const;

private:
  void *handle_ = nullptr;
  std::vector<Kernel> kernels_;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_CPU_FUSEDLIBRARY_H
