//===- KernelCost.cpp - Bytes and FLOPs of one kernel call ----------------===//
#include "runtime/core/KernelCost.h"

#include "runtime/core/AttentionPlan.h"
#include "runtime/core/abi/GemmEpilogue.h"

#include <algorithm>
#include <cstdio>

namespace tcc::rt {

/// Query-key pairs attention computes: all of them, or with `causal` those
/// with key j <= query i (the kernels' top-left alignment).
static double keptPairs(int64_t tq, int64_t tk, bool causal) {
  if (!causal)
    return double(tq) * double(tk);
  int64_t full = std::min(tq, tk); // rows i < min keep i + 1 keys
  return double(full) * double(full + 1) / 2 + double(tq - full) * double(tk);
}

/// A GEMM's contracted length K (0 when the instr is malformed).
static int64_t gemmK(const Instr &in, const std::vector<TensorInfo> &t) {
  if (in.inputs.size() < 2 || in.outputs.empty() || in.iattrs.empty())
    return 0;
  const std::vector<int64_t> &a = t[in.inputs[0]].shape;
  if (a.size() < 2)
    return 0;
  return in.iattrs[0] ? a[a.size() - 2] : a.back();
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
  bool weightGrad = in.kernel == "conv2d_grad_weight";
  const TensorInfo &y = t[in.kernel == "conv2d" ? in.outputs[0] : in.inputs[0]];
  const TensorInfo &w = t[weightGrad ? in.outputs[0] : in.inputs[1]];
  if (w.shape.empty() || w.shape[0] <= 0)
    return 0;
  return 2.0 * double(y.numElements()) *
         (double(w.numElements()) / double(w.shape[0]));
}

static double attentionFlops(const Instr &in, const std::vector<TensorInfo> &t,
                             bool backward) {
  if (in.inputs.size() < 3 || in.iattrs.empty())
    return 0;
  AttentionDims d = attentionDims(t[in.inputs[0]].shape, t[in.inputs[1]].shape,
                                  t[in.inputs[2]].shape, in);
  double pairs = double(d.batch) * keptPairs(d.tq, d.tk, in.iattrs[0] != 0);
  // Forward: S = Q K^T (d), O = P V (dv). Backward: S again, dP = dO V^T,
  // dV = P^T dO, dQ = dS K, dK = dS^T Q.
  double perPair = backward ? 3.0 * d.d + 2.0 * d.dv : double(d.d + d.dv);
  return 2.0 * pairs * perPair;
}

/// Whether `in` is a copy or slice whose output the plan put on its input.
static bool isView(const Instr &in, const std::vector<TensorInfo> &t) {
  if ((in.kernel != "copy" && in.kernel != "slice") || in.inputs.empty() ||
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
  if (in.kernel == "matmul" || in.kernel == "matmul_epilogue")
    c.flops = gemmFlops(in, tensors);
  else if (in.kernel == "conv2d" || in.kernel == "conv2d_grad_input" ||
           in.kernel == "conv2d_grad_weight")
    c.flops = convFlops(in, tensors);
  else if (in.kernel == "attention" || in.kernel == "attention_grad")
    c.flops = attentionFlops(in, tensors, in.kernel == "attention_grad");
  return c;
}

std::string profileLabel(const Instr &in, const std::string &fusedName) {
  if (in.kernel == "fused")
    return "fused:" + fusedName;
  if (in.kernel == "matmul_epilogue" && in.iattrs.size() > 2)
    if (const GemmEpilogueInfo *e = gemmEpilogueByCode(in.iattrs[2]))
      return in.kernel + ":" + e->name;
  return in.kernel;
}

std::string profileShape(const Instr &in, const std::vector<TensorInfo> &t) {
  std::string s;
  if (in.kernel == "matmul" || in.kernel == "matmul_epilogue") {
    int64_t k = gemmK(in, t);
    if (k == 0)
      return s;
    s = "[";
    for (int64_t n : t[in.outputs[0]].shape)
      s += (s.size() > 1 ? "x" : "") + std::to_string(n);
    return s + "] k" + std::to_string(k);
  }
  if ((in.kernel == "attention" || in.kernel == "attention_grad") &&
      in.inputs.size() >= 3 && !in.iattrs.empty()) {
    AttentionDims d =
        attentionDims(t[in.inputs[0]].shape, t[in.inputs[1]].shape,
                      t[in.inputs[2]].shape, in);
    s = "b" + std::to_string(d.batch) + " t" + std::to_string(d.tq) + "x" +
        std::to_string(d.tk) + " d" + std::to_string(d.d);
    if (d.dv != d.d)
      s += " dv" + std::to_string(d.dv);
    if (in.iattrs[0] != 0)
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
