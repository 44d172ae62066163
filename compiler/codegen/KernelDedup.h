//===- KernelDedup.h - Generated kernels that repeat, compiled once -*- C++
//-*-===//
//
// A transformer's layers give the same fused regions once per layer: the
// generated code of kernel k differs from kernel j's only in its number
// (`tcc_fused_K`). Both code generators keep the first and point the others
// at it (the host library's function tables, the CUDA launch table's
// symbols), so the C++ compiler and NVRTC see each distinct kernel once.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_KERNELDEDUP_H
#define TCC_COMPILER_CODEGEN_KERNELDEDUP_H

#include <cstdint>
#include <string>
#include <unordered_map>

namespace tcc {

class KernelDedup {
public:
  /// The number of an earlier kernel whose code equals `code` (kernel
  /// `index`'s) with its own number in place of `index`, or -1 when there
  /// is none: then `code` is remembered as kernel `index`'s.
  int64_t find(const std::string &code, int64_t index);
  /// Kernels seen and distinct kernels among them.
  int64_t seen() const { return seen_; }
  int64_t distinct() const { return (int64_t)first_.size(); }

private:
  std::unordered_map<std::string, int64_t> first_; // normalized -> index
  int64_t seen_ = 0;
};

/// `code` with every `tcc_fused_INDEX` not followed by a digit (the
/// kernel's symbols, `_fin` included) and a leading `// kernel INDEX `
/// comment written without the number.
std::string withoutKernelNumber(const std::string &code, int64_t index);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_KERNELDEDUP_H
