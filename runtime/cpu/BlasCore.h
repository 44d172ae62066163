//===- BlasCore.h - OpenBLAS kernels for CPUs it does not recognise -------===//
//
// OpenBLAS 0.3.21 (Debian bookworm) picks its kernels by CPU model at load
// and falls back to its generic SSE3 ("Prescott") kernels for a model it
// does not know, such as Sapphire Rapids. Those are several times slower
// than the AVX-512 or AVX2 ones and were less accurate on the ResNet
// example's gradients (benchmarks/results/design-measurements.md). The core
// is read once, when the library loads, so the tools re-execute themselves
// with it set.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_BLASCORE_H
#define TCC_RUNTIME_CPU_BLASCORE_H

namespace tcc::rt {

/// When OpenBLAS runs its generic kernels on a CPU with AVX-512 (or AVX2
/// and FMA) and OPENBLAS_CORETYPE is unset, sets it to SkylakeX (or
/// Haswell) and re-executes the program with `argv` (returns only when it
/// does not: nothing to change, or the exec failed, which leaves the
/// generic kernels). Call first in main, before any thread starts.
void useRecognisedBlasCore(char **argv);

/// The core to ask OpenBLAS for when it reports `core` on a CPU with the
/// given instruction sets: the widest one it has kernels for, or null to
/// leave its choice (the decision above, for tests).
const char *recognisedBlasCore(const char *core, bool avx512, bool avx2AndFma);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CPU_BLASCORE_H
