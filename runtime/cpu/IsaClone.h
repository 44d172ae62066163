//===- IsaClone.h - Hot loops compiled again for AVX-512 --------*- C++ -*-===//
//
// The runtime is built for baseline x86-64, so that it loads on any x86-64
// CPU; its hand-written loops then run on 4-wide SSE. A hot loop is written
// once as an always-inline body and wrapped twice: plainly and with
// TCC_AVX512_TARGET, and avx512Cpu() picks the wrapper at run time (tests
// compare the two with setAvx512Loops). Without
// multiply-add contraction (the file's -ffp-contract=off, or no products
// that could fuse), both wrappers do the same IEEE operations per element
// and give the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_ISACLONE_H
#define TCC_RUNTIME_CPU_ISACLONE_H

#if defined(__x86_64__) && defined(__GNUC__)
#define TCC_AVX512_TARGET                                                      \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#else
#define TCC_AVX512_TARGET
#endif
#define TCC_CLONE_BODY inline __attribute__((always_inline))

namespace tcc::rt::kernels {

/// Whether this CPU runs TCC_AVX512_TARGET code (AVX-512 F, BW, DQ, VL) and
/// the AVX-512 loops are not turned off (setAvx512Loops).
bool avx512Cpu();

/// Tests: false runs every hot loop's baseline wrapper, as on a CPU without
/// AVX-512; true gives detection back. No kernel may be running.
void setAvx512Loops(bool on);

} // namespace tcc::rt::kernels

#endif // TCC_RUNTIME_CPU_ISACLONE_H
