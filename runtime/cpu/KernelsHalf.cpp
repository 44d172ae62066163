//===- KernelsHalf.cpp - bf16/f16 operands for every kernel ---------------===//
//
// Mixed precision stores activations and their gradients as bf16 or f16
// (tcc-mixed-precision) but computes in f32, as GPUs do: a GEMM accumulates
// in f32, an element-wise op evaluates its formula in f32 and rounds the
// result once. On the CPU the cheapest way to give every kernel that
// behaviour is to convert at its boundary: the 16-bit operands of a call are
// widened into per-thread f32 scratch, the registered f32 kernel runs on the
// scratch, and the 16-bit outputs are rounded back (Half.h). A GEMM thus
// becomes "convert the blocks to f32, sgemm, round", which is what the brief
// of the CPU backend asks for (Debian's OpenBLAS 0.3.21 does not export
// cblas_sbgemm). The generated fused kernels (FusedLibrary) load and store
// 16-bit values directly; this adapter is the unfused (eager) path and their
// reference.
//
// The result of every kernel is therefore exactly the f32 kernel's result on
// the widened operands, rounded once to nearest-even: the numerics are
// those of a native 16-bit kernel with f32 compute, and the unit tests
// (KernelsHalfTest.cpp) compare against the f32 kernels bit for bit.
//
// `cast` between two float types is a conversion and runs natively here.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/KernelCheck.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tcc::rt {

using abi::KernelId;

namespace kernels {

/// `cast` between float types: one pass, rounding to nearest-even.
static void runFloatCast(const KernelArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  if (X.dtype == Y.dtype) {
    if (X.data != Y.data)
      std::memmove(Y.data, X.data, X.numel * dtypeSize(X.dtype));
    return;
  }
  if (X.dtype == DType::F32) {
    narrowFromF32(X.f32(), Y.dtype, Y.data, X.numel);
    return;
  }
  if (Y.dtype == DType::F32) {
    widenToF32(X.data, X.dtype, Y.f32(), X.numel);
    return;
  }
  // bf16 <-> f16 through f32 (exact widening, one rounding), in blocks so
  // that an in-place call reads each element before it is overwritten.
  constexpr int64_t kBlock = 1024;
  float tmp[kBlock];
  for (int64_t i = 0; i < X.numel; i += kBlock) {
    int64_t n = std::min(kBlock, X.numel - i);
    widenToF32(static_cast<const uint16_t *>(X.data) + i, X.dtype, tmp, n);
    narrowFromF32(tmp, Y.dtype, static_cast<uint16_t *>(Y.data) + i, n);
  }
}

/// Runs the registered f32 kernel on widened copies of the 16-bit operands.
static void runViaF32(const KernelArgs &a) {
  // Per thread, one buffer per operand slot; they only grow.
  thread_local std::vector<std::vector<float>> scratch;
  size_t nIn = a.in.size();
  if (scratch.size() < nIn + a.out.size())
    scratch.resize(nIn + a.out.size());
  KernelArgs f32{a.instr, a.in, a.out};
  f32.rank = a.rank;
  for (size_t i = 0; i < nIn; ++i) {
    const TensorView &v = a.in[i];
    if (!isHalfDType(v.dtype))
      continue;
    std::vector<float> &buf = scratch[i];
    if (buf.size() < static_cast<size_t>(v.numel))
      buf.resize(v.numel);
    widenToF32(v.data, v.dtype, buf.data(), v.numel);
    f32.in[i].data = buf.data();
    f32.in[i].dtype = DType::F32;
  }
  for (size_t o = 0; o < a.out.size(); ++o) {
    const TensorView &v = a.out[o];
    if (!isHalfDType(v.dtype))
      continue;
    f32.out[o].dtype = DType::F32;
    // In place: the output is the widened input it aliases.
    bool aliased = false;
    for (size_t i = 0; i < nIn && !aliased; ++i)
      if (a.in[i].data == v.data && isHalfDType(a.in[i].dtype)) {
        f32.out[o].data = f32.in[i].data;
        aliased = true;
      }
    if (aliased)
      continue;
    std::vector<float> &buf = scratch[nIn + o];
    if (buf.size() < static_cast<size_t>(v.numel))
      buf.resize(v.numel);
    f32.out[o].data = buf.data();
  }
  (*findKernel(a.instr.kernel))(f32);
  for (size_t o = 0; o < a.out.size(); ++o)
    if (isHalfDType(a.out[o].dtype))
      narrowFromF32(f32.out[o].f32(), a.out[o].dtype, a.out[o].data,
                    a.out[o].numel);
}

} // namespace kernels

KernelFn kernelFor(const Instr &instr, const std::vector<TensorInfo> &tensors) {
  const KernelFn *fn = findKernel(instr.kernel);
  if (!fn)
    throw Error("unknown kernel '" + instr.kernel + "'");
  // The output is the input's first bytes, whatever the dtype: a copy of
  // them, or nothing where the plan made the output a view.
  if (instr.inputs.size() == 1 && instr.outputs.size() == 1 &&
      isPrefixSlice(instr, tensors.at(instr.inputs[0]).shape,
                    tensors.at(instr.outputs[0]).shape))
    return *findKernel(abi::name(KernelId::Copy));
  bool half = false;
  for (const auto *ids : {&instr.inputs, &instr.outputs})
    for (int32_t id : *ids)
      half = half || isHalfDType(tensors.at(id).dtype);
  if (!half || abi::handlesHalf(instr))
    return *fn;
  if (instr.inputs.size() == 1 && instr.outputs.size() == 1 &&
      abi::isFloatCast(instr, tensors.at(instr.inputs[0]).dtype,
                       tensors.at(instr.outputs[0]).dtype))
    return kernels::runFloatCast;
  return kernels::runViaF32;
}

} // namespace tcc::rt
