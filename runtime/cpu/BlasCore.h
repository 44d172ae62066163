//===- BlasCore.h - OpenBLAS kernels for CPUs it does not recognise -------===//
//
// OpenBLAS 0.3.21 (Debian bookworm) picks its kernels by CPU model at load
// and falls back to its generic SSE3 ("Prescott") kernels for a model it
// does not know, such as Sapphire Rapids. Those are slower than the AVX2
// ones and were less accurate on the ResNet example's gradients
// (benchmarks/results/design-measurements.md). The core is
// read once, when the library loads, so the tools re-execute themselves
// with it set.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_BLASCORE_H
#define TCC_RUNTIME_CPU_BLASCORE_H

namespace tcc::rt {

/// When OpenBLAS runs its generic kernels on a CPU with AVX2 and FMA and
/// OPENBLAS_CORETYPE is unset, sets it to Haswell and re-executes the
/// program with `argv` (returns only when it does not: nothing to change,
/// or the exec failed, which leaves the generic kernels). Call first in
/// main, before any thread starts.
void useRecognisedBlasCore(char **argv);

/// Whether OpenBLAS's kernels are the generic fallback named `core` on a
/// CPU that runs the AVX2 ones (the decision above, for tests).
bool blasCoreNeedsHaswell(const char *core, bool avx2AndFma);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CPU_BLASCORE_H
