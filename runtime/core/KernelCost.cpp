//===- KernelCost.cpp - Bytes and FLOPs of one kernel call ----------------===//
#include "runtime/core/KernelCost.h"

#include "runtime/core/AttentionPlan.h"
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/core/abi/KernelAbi.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace tcc::rt {

// Costs and labels are asked of instrs that may not have been checked yet
// (tryAttrsOf): a malformed one costs what can be read of it.
using K = abi::KernelId;

/// Query-key pairs attention computes: all of them, or with `causal` those
/// with key j <= query i (the kernels' top-left alignment).
static double keptPairs(int64_t tq, int64_t tk, bool causal) {
  if (!causal)
    return double(tq) * double(tk);
  int64_t full = std::min(tq, tk); // rows i < min keep i + 1 keys
  return double(full) * double(full + 1) / 2 + double(tq - full) * double(tk);
}

/// Whether a matmul or matmul_epilogue transposes A; none for other kernels
/// and malformed attributes.
static std::optional<bool> gemmTransA(const Instr &in) {
  if (abi::is(in, K::Matmul))
    if (auto m = abi::tryAttrsOf<abi::MatmulAttrs>(in))
      return m->transA;
  if (abi::is(in, K::MatmulEpilogue))
    if (auto m = abi::tryAttrsOf<abi::MatmulEpilogueAttrs>(in))
      return m->transA;
  return std::nullopt;
}

/// A GEMM's contracted length K (0 when the instr is malformed).
static int64_t gemmK(const Instr &in, const std::vector<TensorInfo> &t) {
  std::optional<bool> transA = gemmTransA(in);
  if (in.inputs.size() < 2 || in.outputs.empty() || !transA)
    return 0;
  const std::vector<int64_t> &a = t[in.inputs[0]].shape;
  if (a.size() < 2)
    return 0;
  return *transA ? a[a.size() - 2] : a.back();
}

static double gemmFlops(const Instr &in, const std::vector<TensorInfo> &t) {
  int64_t k = gemmK(in, t);
  if (k == 0)
    return 0;
  // The first output has the product's shape [..., M, N] in every form
  // (the batch folded or not, a bias gradient as the second output).
  return 2.0 * double(t[in.outputs[0]].numElements()) * double(k);
}

/// 2 multiply-adds' worth per output element and weight of its window:
/// 2 * |y| * (C / groups) * kH * kW, the same for the forward and both
/// gradients (y, or dy, is [N, O, ...]; w [O, C / groups, kH, kW]).
static double convFlops(const Instr &in, const std::vector<TensorInfo> &t) {
  if (in.inputs.size() < 2 || in.outputs.empty())
    return 0;
  bool weightGrad = abi::is(in, K::Conv2dGradWeight);
  const TensorInfo &y =
      t[abi::is(in, K::Conv2d) ? in.outputs[0] : in.inputs[0]];
  const TensorInfo &w = t[weightGrad ? in.outputs[0] : in.inputs[1]];
  if (w.shape.empty() || w.shape[0] <= 0)
    return 0;
  return 2.0 * double(y.numElements()) *
         (double(w.numElements()) / double(w.shape[0]));
}

static double attentionFlops(const Instr &in, const std::vector<TensorInfo> &t,
                             bool backward) {
  std::optional<abi::AttentionAttrs> at =
      abi::tryAttrsOf<abi::AttentionAttrs>(in);
  if (in.inputs.size() < 3 || !at)
    return 0;
  AttentionDims d = attentionDims(t[in.inputs[0]].shape, t[in.inputs[1]].shape,
                                  t[in.inputs[2]].shape, *at);
  double pairs = double(d.batch) * keptPairs(d.tq, d.tk, at->causal);
  // Forward: S = Q K^T (d), O = P V (dv). Backward: S again, dP = dO V^T,
  // dV = P^T dO, dQ = dS K, dK = dS^T Q.
  double perPair = backward ? 3.0 * d.d + 2.0 * d.dv : double(d.d + d.dv);
  return 2.0 * pairs * perPair;
}

/// Whether `in` is a copy or slice whose output the plan put on its input.
static bool isView(const Instr &in, const std::vector<TensorInfo> &t) {
  if ((!abi::is(in, K::Copy) && !abi::is(in, K::Slice)) || in.inputs.empty() ||
      in.outputs.empty())
    return false;
  const TensorInfo &x = t[in.inputs[0]], &y = t[in.outputs[0]];
  return x.kind == TensorKind::Temp && y.kind == TensorKind::Temp &&
         x.program == y.program && x.arenaOffset >= 0 &&
         x.arenaOffset == y.arenaOffset;
}

KernelCost kernelCost(const Instr &in, const std::vector<TensorInfo> &tensors,
                      bool compiled) {
  KernelCost c;
  if (compiled && isView(in, tensors))
    return c;
  std::vector<int32_t> read = in.inputs;
  std::sort(read.begin(), read.end());
  read.erase(std::unique(read.begin(), read.end()), read.end());
  for (int32_t id : read)
    c.bytes += tensors[id].byteSize();
  for (int32_t id : in.outputs)
    c.bytes += tensors[id].byteSize();
  if (abi::is(in, K::Matmul) || abi::is(in, K::MatmulEpilogue))
    c.flops = gemmFlops(in, tensors);
  else if (abi::is(in, K::Conv2d) || abi::is(in, K::Conv2dGradInput) ||
           abi::is(in, K::Conv2dGradWeight))
    c.flops = convFlops(in, tensors);
  else if (abi::is(in, K::Attention) || abi::is(in, K::AttentionGrad))
    c.flops = attentionFlops(in, tensors, abi::is(in, K::AttentionGrad));
  else if (abi::is(in, K::LinearCrossEntropy) ||
           abi::is(in, K::LinearCrossEntropyGrad)) {
    // The head's product, 2 N D V, once forward; the gradient recomputes
    // it and then forms dhidden and dweight: three products. (Hidden is
    // the second operand of the gradient, the first of the forward.)
    bool grad = abi::is(in, K::LinearCrossEntropyGrad);
    const TensorInfo &h = tensors[in.inputs[grad ? 1 : 0]];
    const TensorInfo &w = tensors[in.inputs[grad ? 2 : 1]];
    if (!h.shape.empty() && w.shape.size() == 2)
      c.flops = (grad ? 6.0 : 2.0) * double(h.numElements()) *
                double(w.numElements()) / double(h.shape.back());
  }
  return c;
}

std::string profileLabel(const Instr &in, const std::string &fusedName) {
  if (abi::is(in, K::Fused))
    return in.kernel + ":" + fusedName;
  if (abi::is(in, K::MatmulEpilogue))
    if (auto m = abi::tryAttrsOf<abi::MatmulEpilogueAttrs>(in))
      if (const GemmEpilogueInfo *e = gemmEpilogueByCode(m->epilogue))
        return in.kernel + ":" + e->name;
  return in.kernel;
}

std::string profileShape(const Instr &in, const std::vector<TensorInfo> &t) {
  std::string s;
  if (abi::is(in, K::Matmul) || abi::is(in, K::MatmulEpilogue)) {
    int64_t k = gemmK(in, t);
    if (k == 0)
      return s;
    s = "[";
    for (int64_t n : t[in.outputs[0]].shape)
      s += (s.size() > 1 ? "x" : "") + std::to_string(n);
    return s + "] k" + std::to_string(k);
  }
  std::optional<abi::AttentionAttrs> at;
  if (abi::is(in, K::Attention) || abi::is(in, K::AttentionGrad))
    at = abi::tryAttrsOf<abi::AttentionAttrs>(in);
  if (at && in.inputs.size() >= 3) {
    AttentionDims d =
        attentionDims(t[in.inputs[0]].shape, t[in.inputs[1]].shape,
                      t[in.inputs[2]].shape, *at);
    s = "b" + std::to_string(d.batch) + " t" + std::to_string(d.tq) + "x" +
        std::to_string(d.tk) + " d" + std::to_string(d.d);
    if (d.dv != d.d)
      s += " dv" + std::to_string(d.dv);
    if (at->causal)
      s += " causal";
  }
  return s;
}

std::string profileKey(const std::string &label, const std::string &shape) {
  return shape.empty() ? label : label + " " + shape;
}

std::string formatProfile(const std::vector<KernelTime> &profile, int64_t steps,
                          const std::string &indent) {
  double total = 0, flops = 0;
  int64_t calls = 0, bytes = 0;
  size_t width = 28;
  for (const KernelTime &k : profile) {
    total += k.seconds;
    calls += k.calls;
    bytes += k.bytes;
    flops += k.flops;
    width = std::max(width, std::min<size_t>(k.kernel.size(), 60));
  }
  double n = double(std::max<int64_t>(steps, 1));
  std::string out;
  char line[512];
  auto row = [&](const std::string &name, double c, double s, int64_t b,
                 double f) {
    char gbs[32] = "", tfs[32] = "";
    if (b > 0 && s > 0)
      std::snprintf(gbs, sizeof gbs, "%.1f", double(b) / s / 1e9);
    if (f > 0 && s > 0)
      std::snprintf(tfs, sizeof tfs, "%.2f", f / s / 1e12);
    std::string shown = name.size() > 60 ? name.substr(0, 57) + "..." : name;
    std::snprintf(line, sizeof line, "%s%-*s %10.1f %10.3f %6.1f%% %9s %9s\n",
                  indent.c_str(), static_cast<int>(width), shown.c_str(), c / n,
                  s * 1e3 / n, total > 0 ? 100 * s / total : 0.0, gbs, tfs);
    out += line;
  };
  std::snprintf(line, sizeof line, "%s%-*s %10s %10s %7s %9s %9s\n",
                indent.c_str(), static_cast<int>(width), "kernel", "calls/step",
                "ms/step", "share", "GB/s", "TFLOP/s");
  out += line;
  for (const KernelTime &k : profile)
    row(k.kernel, double(k.calls), k.seconds, k.bytes, k.flops);
  row("(all kernels)", double(calls), total, bytes, flops);
  return out;
}

} // namespace tcc::rt
