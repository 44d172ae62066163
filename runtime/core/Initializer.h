//===- Initializer.h - Seeded initial values of parameters ------*- C++ -*-===//
//
// Artifacts compiled with `tcc compile --weights seeded` carry, for each
// parameter and state tensor, an InitSpec (Artifact.h) instead of bytes.
// The runtime draws the values at load. The generator is counter-based:
// element i of a tensor is a pure function of (seed, i), so values do not
// depend on threads, chunking or the device, and the CPU and CUDA sessions
// start from bit-identical weights.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_INITIALIZER_H
#define TCC_RUNTIME_CORE_INITIALIZER_H

#include "runtime/core/Artifact.h"

namespace tcc::rt {

/// Writes the initial value of `t` (t.init.kind != Blob) into `dst`, which
/// holds t.byteSize() bytes, in t.dtype (16-bit floats rounded once from
/// f32). Throws Error for a Blob spec.
void fillInitial(const TensorInfo &t, void *dst);

/// Element i of the value `s` describes, in double before rounding:
/// fillInitial stores it rounded to the dtype (a uniform value that rounds
/// up to b one step below it). For tests, and for code that draws one
/// element alone. Throws Error for a Blob spec.
double initialValue(const InitSpec &s, int64_t i);

/// Writes the initial value of persistent tensor `id` of `a` into `dst`
/// (byteSize() bytes): its blob bytes, its generated values, or for a Cast
/// spec its source's initial value rounded to nearest-even to the 16-bit
/// dtype, as the `cast` kernels round. What sessions call at load.
void fillInitialValue(const Artifact &a, int32_t id, void *dst);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_INITIALIZER_H
