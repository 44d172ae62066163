//===- CnnPath.h - oneDNN or the loops for the CNN kernels ------*- C++ -*-===//
//
// Convolutions run on oneDNN where it takes the case and on the runtime's
// own im2col loops (KernelsConv.cpp) otherwise. oneDNN's kernels live in a
// module of their own, libtcc_cpu_onednn.so (OneDnn*.cpp), which the runtime
// loads from beside itself the first time a convolution runs. The reason is
// OpenMP: Debian's oneDNN runs on libgomp, whose threads spin for milliseconds
// after each parallel region unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set
// before libgomp loads, and spinning threads starve the runtime's own pool
// and OpenBLAS on the same cores (a ResNet step ran 2-10x slower). Loading
// the module late lets the runtime set a short spin first, about the pool's
// (GOMP_SPINCOUNT=3000; passive waiting, which it set before, paid a team
// wake-up on every oneDNN call), unless the user set either variable.
//
// Batch norm and pooling stay on the runtime's loops: oneDNN 2.6 has only a
// plain C++ batch norm for NCHW, 2-5x slower than KernelsBatchNorm.cpp, and
// its max-pool workspace is not the flat indices the ABI's max_pool2d
// returns (benchmarks/results/onednn_cpu_2026-11-28.md).
//
// TCC_CPU_CONV=im2col runs the loops everywhere (and never loads oneDNN):
// the reference, for A/B benchmarks and for tests that compare the paths.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_CNNPATH_H
#define TCC_RUNTIME_CPU_CNNPATH_H

#include "runtime/cpu/Kernels.h"

namespace tcc::rt::cpu {

enum class CnnPath { OneDnn, Reference };
/// TCC_CPU_CONV: 'onednn' (the default) or 'im2col'.
CnnPath cnnPath();
/// Overrides TCC_CPU_CONV (tests compare both paths in one process). No
/// kernel may be running.
void setCnnPath(CnnPath path);

/// The module's kernels. Each returns false where oneDNN does not take the
/// case (the caller then runs its loops).
struct OneDnnKernels {
  bool (*conv2d)(const KernelArgs &);
  bool (*conv2dGradInput)(const KernelArgs &);
  bool (*conv2dGradWeight)(const KernelArgs &);
  /// One single-threaded sgemm on the calling thread (ParallelGemm.h).
  bool (*sgemm)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb,
                float beta, float *c, int64_t ldc);
};
/// The loaded module's kernels, or null on the reference path. Throws if
/// the module cannot be loaded.
const OneDnnKernels *oneDnnKernels();
/// The same, or null where the module cannot be loaded (a build without
/// OpenMP has none): for callers with a fallback as good, the GEMMs.
const OneDnnKernels *oneDnnKernelsIfLoadable();

/// How many kernel calls oneDNN has run in this process (tests check that
/// the cases they compare did take the oneDNN path); the module counts.
long oneDnnCalls();
void noteOneDnnCall();

} // namespace tcc::rt::cpu

/// The module's one entry point.
extern "C" const tcc::rt::cpu::OneDnnKernels *tcc_cpu_onednn_kernels();

#endif // TCC_RUNTIME_CPU_CNNPATH_H
