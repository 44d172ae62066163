//===- HostDType.h - Element types a host reads and writes -----*- C++ -*-===//
//
// The runtime computes in its DTypes (f32, i64, bf16, f16). A model may
// declare other element types for its inputs and outputs: ONNX DOUBLE
// (computed in f32, as JAX does without x64), FLOAT16 and BFLOAT16 inputs
// (widened to f32 exactly), and narrow integers (computed as i64). The
// artifact records that declared type on the boundary tensors only
// (TensorInfo::hostDType), so whoever feeds or reads them converts here and
// nothing else in the runtime knows about these types.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_HOSTDTYPE_H
#define TCC_RUNTIME_CORE_HOSTDTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace tcc::rt {

enum class DType : uint8_t;

/// Native: the tensor's own DType. Bool stays Native (i64 0/1).
enum class HostDType : uint8_t {
  Native,
  F64,
  F16,
  BF16,
  I8,
  I16,
  I32,
  U8,
  U16,
  U32,
  U64
};
/// "native", "f64", "f16", "bf16", "i8", "i16", "i32", "u8", "u16", "u32",
/// "u64".
const char *hostDTypeName(HostDType t);
HostDType parseHostDType(const std::string &s); // throws Error on unknown
/// Bytes per element; 0 for Native.
size_t hostDTypeSize(HostDType t);
bool isFloatHostDType(HostDType t);
/// Whether a tensor of runtime type `d` may be declared as `h`: float host
/// types over f32, integer ones over i64.
bool hostDTypeFits(HostDType h, DType d);

/// `n` elements of host type `h` at `src` into the runtime buffer `dst` of
/// type `d` (f32 or i64): widening, exact (f64 rounds to nearest f32).
void hostToRuntime(HostDType h, const void *src, DType d, void *dst, int64_t n);
/// The reverse: f32 to f16/bf16 rounds to nearest-even, to f64 is exact;
/// i64 to a narrower integer keeps the low bits (the values are in range
/// when the graph followed its declared type).
void runtimeToHost(DType d, const void *src, HostDType h, void *dst, int64_t n);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_HOSTDTYPE_H
