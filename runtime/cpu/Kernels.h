//===- Kernels.h - The CPU backend's kernels ------------------------------===//
//
// How the CPU runs the kernel ABI of runtime/core/abi/Kernels.h (operand
// conventions, checkInstr, in-place rules): one function per kernel of
// KernelList.def, looked up by the name an Instr carries, and the adapter
// that gives every kernel bf16/f16 operands (KernelsHalf.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_KERNELS_H
#define TCC_RUNTIME_CPU_KERNELS_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/Kernels.h"

#include <string>
#include <vector>

namespace tcc::rt {

class FusedLibrary;

struct KernelArgs {
  const Instr &instr;
  std::vector<TensorView> in, out;
  /// The artifact's generated kernels, for the `fused` kernel (set by
  /// Session; null elsewhere).
  const FusedLibrary *fused = nullptr;
  /// The session's data-parallel rank (SessionOptions::rank): dropout's
  /// element indices start at rank * its element count.
  int64_t rank = 0;
};

using KernelFn = void (*)(const KernelArgs &);

/// The CPU kernel of the kernel named `name`, or null (an unknown name).
const KernelFn *findKernel(const std::string &name);

/// The function that runs `instr` (checked by checkInstr): its kernel, or,
/// when an operand is bf16 or f16, that kernel behind an adapter that widens
/// the 16-bit operands to f32 and rounds the 16-bit results
/// (KernelsHalf.cpp); `cast` between float types converts directly.
KernelFn kernelFor(const Instr &instr, const std::vector<TensorInfo> &tensors);

/// Builds views for `instr` from tensor infos and buffers (indexed by id) and
/// runs the kernel (as data-parallel rank `rank`, KernelArgs::rank);
/// convenient for tests and one-off calls.
void runKernel(const Instr &instr, const std::vector<TensorInfo> &tensors,
               const std::vector<void *> &buffers, int64_t rank = 0);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CPU_KERNELS_H
