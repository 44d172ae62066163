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
// The ABI the library speaks (symbols, meta table, function signatures)
// is the artifact format's: runtime/core/abi/FusedAbi.h.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_FUSEDLIBRARY_H
#define TCC_RUNTIME_CPU_FUSEDLIBRARY_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/FusedAbi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

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
