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
#include "runtime/core/prelude/Half.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tcc::rt {

void widenToF32(const void *src, DType t, float *dst, int64_t n) {
  const uint16_t *h = static_cast<const uint16_t *>(src);
  if (t == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToF32(h[i]);
  } else if (t == DType::F16) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f16ToF32(h[i]);
  } else {
    const float *f = static_cast<const float *>(src);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f[i];
  }
}

void narrowFromF32(const float *src, DType t, void *dst, int64_t n) {
  uint16_t *h = static_cast<uint16_t *>(dst);
  if (t == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      h[i] = f32ToBf16(src[i]);
  } else if (t == DType::F16) {
    for (int64_t i = 0; i < n; ++i)
      h[i] = f32ToF16(src[i]);
  } else {
    float *f = static_cast<float *>(dst);
    for (int64_t i = 0; i < n; ++i)
      f[i] = src[i];
  }
}

namespace kernels {

static bool anyHalf(const KernelSig &s) {
  for (const auto *ops : {&s.in, &s.out})
    for (const TensorInfo *t : *ops)
      if (isHalfDType(t->dtype))
        return true;
  return false;
}

/// Whether the call is a conversion between two float types.
static bool isFloatCast(const std::string &kernel, DType in, DType out) {
  return kernel == "cast" && isFloatDType(in) && isFloatDType(out);
}

/// Kernels that load and store 16-bit words themselves: the generated ones
/// (`fused`), attention, which rounds its intermediate P and dS, AdamW,
/// whose only 16-bit operand is the copy of the new parameter it rounds,
/// and `copy` (a reshape), which moves bytes between two tensors of one
/// type: through the f32 adapter it would widen and round back every
/// element, also of a view, and quiet signaling NaNs on the way.
static bool handlesHalf(const std::string &kernel) {
  return kernel == "fused" || kernel == "attention" ||
         kernel == "attention_grad" || kernel == "adamw_update" ||
         kernel == "copy";
}

bool needsHalfAdapter(const KernelSig &s) {
  return anyHalf(s) && !handlesHalf(s.instr.kernel);
}

void checkAsF32(const KernelSig &s, CheckFn check) {
  if (s.in.size() == 1 && s.out.size() == 1 &&
      isFloatCast(s.instr.kernel, s.in[0]->dtype, s.out[0]->dtype)) {
    expectIAttrs(s, 1);
    if (s.instr.iattrs[0] != 0)
      throw Error("the to_bool attribute is " +
                  std::to_string(s.instr.iattrs[0]) + ", expected 0 for a " +
                  dtypeName(s.in[0]->dtype) + " -> " +
                  dtypeName(s.out[0]->dtype) + " conversion");
    expectNumel(s, false, 0, s.in[0]->numElements());
    return;
  }
  // GEMMs take one operand type and write it or (16-bit in) f32: a mix
  // the widening below would hide.
  if (s.instr.kernel == "matmul" || s.instr.kernel == "matmul_epilogue")
    checkGemmDTypes(s);
  // The f32 check sees each 16-bit operand as the f32 tensor the kernel
  // will be given; an operand that must be an integer is still refused.
  std::vector<TensorInfo> widened;
  widened.reserve(s.in.size() + s.out.size());
  KernelSig f32{s.instr, {}, {}};
  auto widen = [&](const std::vector<const TensorInfo *> &from,
                   std::vector<const TensorInfo *> &to) {
    for (const TensorInfo *t : from) {
      if (!isHalfDType(t->dtype)) {
        to.push_back(t);
        continue;
      }
      widened.push_back(*t);
      widened.back().dtype = DType::F32;
      to.push_back(&widened.back());
    }
  };
  widen(s.in, f32.in);
  widen(s.out, f32.out);
  try {
    check(f32);
  } catch (const Error &e) {
    throw Error(std::string(e.what()) +
                " (bf16/f16 operands are checked as the f32 tensors the "
                "kernel computes on)");
  }
}

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
    return *findKernel("copy");
  bool half = false;
  for (const auto *ids : {&instr.inputs, &instr.outputs})
    for (int32_t id : *ids)
      half = half || isHalfDType(tensors.at(id).dtype);
  if (!half || kernels::handlesHalf(instr.kernel))
    return *fn;
  if (instr.inputs.size() == 1 && instr.outputs.size() == 1 &&
      kernels::isFloatCast(instr.kernel, tensors.at(instr.inputs[0]).dtype,
                           tensors.at(instr.outputs[0]).dtype))
    return kernels::runFloatCast;
  return kernels::runViaF32;
}

} // namespace tcc::rt
