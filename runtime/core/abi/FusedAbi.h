//===- FusedAbi.h - The ABI of the artifact's generated kernels -*- C++ -*-===//
//
// `tcc compile` generates code for every tcc.fused region
// (compiler/codegen/FusedCodegen.cpp): C++ compiled into a shared object for
// the CPU (the "host_library" of the manifest; runtime/cpu/FusedLibrary.h
// loads it), CUDA C compiled to a cubin for the GPU (Artifact.h's
// DeviceCode). A `fused` instr names one kernel of that code by index. This
// header is the contract the compiler writes and the backends read: the
// host library's symbols and meta table, and the check of an instr's
// operands against a kernel's signature that both backends run.
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
#ifndef TCC_RUNTIME_CORE_ABI_FUSEDABI_H
#define TCC_RUNTIME_CORE_ABI_FUSEDABI_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tcc::rt {

constexpr int64_t kFusedAbi = 3;
/// Meta fields before the per-operand pairs.
constexpr int64_t kFusedMetaHeader = 10;

using FusedFn = int (*)(void *const *buffers, int64_t rowBegin, int64_t rowEnd,
                        float *scratch, double *partials, int64_t *err);
using FusedFin = void (*)(void *const *buffers, const double *partials);

/// The ISAs of generated host code, narrowest first: "generic" (no -march:
/// baseline x86-64, or another architecture), "x86-64-v3" (AVX2, FMA) and
/// "x86-64-v4" (AVX-512 F/BW/CD/DQ/VL). detectedIsa() is the widest this
/// CPU runs; hostIsa() is that, lowered by TCC_HOST_ISA when it names a
/// narrower one (throws Error when it names none): what the compiler
/// targets by default and what the loader checks an artifact against.
/// cpuSupportsIsa(isa): code built for `isa` runs here (hostIsa() is at
/// least `isa`); "x86-64" is accepted as "generic".
std::string detectedIsa();
std::string hostIsa();
bool knownIsa(const std::string &isa);
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

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ABI_FUSEDABI_H
