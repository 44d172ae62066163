//===- KernelCost.h - Bytes and FLOPs of one kernel call ------------------===//
//
// What a profile divides its times by. A call's bytes are the least memory
// traffic it can have: each distinct input read once, each output written
// once (an in-place update counts its read and its write). A copy or slice
// that the static plan placed on its own input (a view: the kernel finds
// the pointers equal and does nothing) moves nothing. FLOPs are counted
// for GEMMs (2 M N K per product), convolutions and their gradients (2 per
// output element and window weight) and attention (its products; a causal
// one only for the key positions it keeps); other kernels count 0, their
// arithmetic being small next to their traffic. So a profile shows each
// kernel's achieved GB/s, and the GEMMs' and attention's TFLOP/s, to set
// against the device's peaks.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_KERNELCOST_H
#define TCC_RUNTIME_CORE_KERNELCOST_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

struct KernelCost {
  int64_t bytes = 0;
  double flops = 0;
  KernelCost &operator+=(const KernelCost &o) {
    bytes += o.bytes;
    flops += o.flops;
    return *this;
  }
};

/// The cost of `in` over `tensors`. `compiled`: temps sit at their planned
/// arena offsets (views are free); eager gives every result its own buffer.
KernelCost kernelCost(const Instr &in, const std::vector<TensorInfo> &tensors,
                      bool compiled);

/// Accumulated time and cost of one kernel name (a Session's profile).
struct KernelTime {
  std::string kernel;
  int64_t calls = 0;
  double seconds = 0;
  int64_t bytes = 0;
  double flops = 0;
};

/// The name a profile lists an instr under: its kernel; a fused kernel as
/// "fused:" + `fusedName`; a GEMM with an epilogue as "matmul_epilogue:" +
/// the epilogue (bias, bias_gelu_tanh_aux, bgrad_lhs, ...), since they run
/// at different rates and only some of them are cuBLASLt's.
std::string profileLabel(const Instr &in, const std::string &fusedName);

/// The problem a profile by shape adds to a GEMM's or attention's label,
/// "" for other kernels: a GEMM's product shape and contracted length,
/// "[32x1024x2304] k768" (the form that shows which of a model's GEMMs run
/// below the others' rate); attention's entries, query and key lengths and
/// head dim, "b384 t1024x1024 d64 causal".
std::string profileShape(const Instr &in, const std::vector<TensorInfo> &t);

/// `label`, and after a space `shape` when it has one: the name a profile
/// by shape lists a call under.
std::string profileKey(const std::string &label, const std::string &shape);

/// The profile as a table, one row per kernel, per step: calls, ms, share
/// of the summed kernel time, GB/s and TFLOP/s (blank where the kernel
/// moves no bytes or counts no FLOPs), then a total row.
std::string formatProfile(const std::vector<KernelTime> &profile, int64_t steps,
                          const std::string &indent = "  ");

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_KERNELCOST_H
