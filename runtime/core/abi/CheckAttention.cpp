//===- CheckAttention.cpp - attention and attention_grad ------------------===//
//
// q, k, v, the mask and the outputs as Kernels.h describes them, and the
// sizes both backends' GEMMs take (32-bit). The flags and the scale's count
// are checkAttrs's (AttentionAttrs); the layouts are AttentionPlan.h's.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/KernelCheck.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace tcc::rt::abi {

namespace {
/// Operand positions of one of the two kernels.
struct AttnOperands {
  const KernelSig *s;
  bool grad;
  size_t nIn; // inputs without the mask
  /// q's, k's and v's shapes (fused_qkv: each third's, [B..., T, H, D]).
  std::vector<int64_t> shape[3];
  bool fusedQkv = false;
  const TensorInfo &q() const { return *s->in[0]; }
  const TensorInfo *mask() const {
    return s->in.size() > nIn ? s->in[nIn] : nullptr;
  }
};
} // namespace

static std::vector<int64_t> withTail(std::vector<int64_t> batch,
                                     std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

/// The batch-entry dims of an operand of rank >= 3: all but the last two
/// when packed ([B..., T, D]), B... and H when sequence-major ([B..., T, H,
/// D]); and its row (sequence) count.
static std::vector<int64_t> entryDims(const std::vector<int64_t> &shape,
                                      bool seqMajor) {
  std::vector<int64_t> dims(shape.begin(), shape.end() - (seqMajor ? 3 : 2));
  if (seqMajor)
    dims.push_back(shape[shape.size() - 2]);
  return dims;
}

static int64_t rowCount(const std::vector<int64_t> &shape, bool seqMajor) {
  return shape[shape.size() - (seqMajor ? 3 : 2)];
}

static void expectDType(const KernelSig &s, bool isInput, size_t i, DType t,
                        const char *why) {
  const TensorInfo *info = isInput ? s.in[i] : s.out[i];
  if (info->dtype != t)
    throw Error(operandName(s, isInput, i) + " is " + dtypeName(info->dtype) +
                ", expected " + dtypeName(t) + " (" + why + ")");
}

/// Everything both kernels share: attributes, q/k/v and the mask; sets
/// ops.shape. Returns the layout (seq_major).
static bool checkAttentionCommon(AttnOperands &ops) {
  const KernelSig &s = *ops.s;
  const char *names =
      ops.grad ? "q, k, v, out, lse, dout[, mask]" : "q, k, v[, mask]";
  if (s.in.size() != ops.nIn && s.in.size() != ops.nIn + 1)
    throw Error("expects " + std::to_string(ops.nIn) + " or " +
                std::to_string(ops.nIn + 1) + " inputs (" + names + "), got " +
                std::to_string(s.in.size()));
  // Counts and flags: checkAttrs (AttentionAttrs).
  AttentionAttrs at = attrsOf<AttentionAttrs>(s.instr);
  if (!std::isfinite(at.scale))
    throw Error("the scale attribute must be finite, got " +
                std::to_string(at.scale));
  bool seqMajor = at.seqMajor;
  bool fusedQkv = at.fusedQkv;
  ops.fusedQkv = fusedQkv;
  for (int i = 0; i < 3; ++i)
    ops.shape[i] = s.in[i]->shape;
  if (fusedQkv) {
    // One tensor [B..., T, 3H, D] read as its three thirds.
    if (!seqMajor)
      throw Error("fused_qkv: q, k and v need the sequence-major layout "
                  "(iattrs [causal, 1, 1])");
    if (s.instr.inputs[1] != s.instr.inputs[0] ||
        s.instr.inputs[2] != s.instr.inputs[0])
      throw Error("fused_qkv: " + operandName(s, true, 0) + ", " +
                  operandName(s, true, 1) + " and " + operandName(s, true, 2) +
                  " must be one tensor (the QKV projection)");
    std::vector<int64_t> &qs = ops.shape[0];
    if (qs.size() < 3 || qs[qs.size() - 2] % 3 != 0)
      throw Error("fused_qkv: " + operandName(s, true, 0) + " has shape " +
                  formatShape(qs) +
                  "; expected [batch..., rows, 3 * heads, features]");
    qs[qs.size() - 2] /= 3;
    ops.shape[1] = ops.shape[2] = qs;
  }
  // fused_qkv: one gradient, the projection's (and maybe its column sums).
  size_t nOut = ops.grad ? (fusedQkv ? 1 : 3) : 2;
  if (ops.grad && fusedQkv && s.out.size() == 2)
    nOut = 2;
  expectArity(s, s.in.size(), nOut);

  const TensorInfo &q = ops.q();
  if (!isFloatDType(q.dtype))
    throw Error(operandName(s, true, 0) + " is " + dtypeName(q.dtype) +
                "; attention takes f32, bf16 or f16");
  const std::vector<int64_t> &qs = ops.shape[0];
  size_t rank = qs.size();
  if (rank < 3)
    throw Error(operandName(s, true, 0) + " has shape " + formatShape(qs) +
                "; attention needs rank >= 3");
  auto batch = entryDims(qs, seqMajor);
  for (size_t i = 1; i < 3; ++i) {
    expectDType(s, true, i, q.dtype, "q, k and v share one type");
    if (ops.shape[i].size() != rank ||
        entryDims(ops.shape[i], seqMajor) != batch)
      throw Error(operandName(s, true, i) + " has shape " +
                  formatShape(s.in[i]->shape) + "; expected q's rank and " +
                  (seqMajor ? "sequence-major " : "") + "batch dims " +
                  formatShape(batch));
  }
  const auto &k = ops.shape[1], &v = ops.shape[2];
  if (k[rank - 1] != qs[rank - 1])
    throw Error("q " + formatShape(qs) + " and k " + formatShape(k) +
                " differ in their last (head) dim");
  int64_t tq = rowCount(qs, seqMajor), tk = rowCount(k, seqMajor);
  if (rowCount(v, seqMajor) != tk)
    throw Error("k " + formatShape(k) + " and v " + formatShape(v) +
                " differ in their key count (dim " + (seqMajor ? "-3" : "-2") +
                ")");
  // OpenBLAS takes 32-bit sizes (leading dims included).
  int64_t heads = seqMajor ? qs[rank - 2] : 1, lanes = fusedQkv ? 3 : 1;
  for (int64_t d :
       {tq, tk, lanes * heads * k[rank - 1], lanes * heads * v[rank - 1]})
    if (d > INT_MAX)
      throw Error("attention dimension " + std::to_string(d) +
                  " is too large for BLAS");

  const TensorInfo *m = ops.mask();
  if (!m)
    return seqMajor;
  size_t mi = ops.nIn;
  expectDType(s, true, mi, DType::F32, "the mask is always f32");
  size_t mr = m->shape.size();
  bool ok = mr == 2 || mr == batch.size() + 2;
  if (ok && mr != 2) {
    std::vector<int64_t> mb(m->shape.begin(), m->shape.end() - 2);
    bool ones =
        std::all_of(mb.begin(), mb.end(), [](int64_t d) { return d == 1; });
    ok = ones || mb == batch;
  }
  ok = ok && (m->shape[mr - 2] == 1 || m->shape[mr - 2] == tq) &&
       (m->shape[mr - 1] == 1 || m->shape[mr - 1] == tk);
  if (!ok)
    throw Error("mask " + operandName(s, true, mi) + " has shape " +
                formatShape(m->shape) + ", which does not broadcast to " +
                formatShape(withTail(batch, {tq, tk})) +
                " (rank 2 or the batch dims' + 2; batch dims all 1 or the "
                "entries'; each of the last two 1 or full)");
  return seqMajor;
}

/// out's shape: q's with v's last dim; lse [entries..., Tq].
static std::vector<int64_t> outShape(const AttnOperands &ops) {
  std::vector<int64_t> out = ops.shape[0];
  out.back() = ops.shape[2].back();
  return out;
}

static std::vector<int64_t> lseShape(const AttnOperands &ops, bool seqMajor) {
  return withTail(entryDims(ops.shape[0], seqMajor),
                  {rowCount(ops.shape[0], seqMajor)});
}

void check_attention(const KernelSig &s) {
  AttnOperands ops{&s, false, 3, {}, false};
  bool seqMajor = checkAttentionCommon(ops);
  expectDType(s, false, 0, ops.q().dtype, "out has q's type");
  expectShape(s, false, 0, outShape(ops));
  expectDType(s, false, 1, DType::F32, "lse is always f32");
  expectShape(s, false, 1, lseShape(ops, seqMajor));
}

void check_attention_grad(const KernelSig &s) {
  AttnOperands ops{&s, true, 6, {}, false};
  bool seqMajor = checkAttentionCommon(ops);
  DType t = ops.q().dtype;
  expectDType(s, true, 3, t, "out has q's type");
  expectShape(s, true, 3, outShape(ops));
  expectDType(s, true, 4, DType::F32, "lse is always f32");
  expectShape(s, true, 4, lseShape(ops, seqMajor));
  expectDType(s, true, 5, t, "dout has q's type");
  expectShape(s, true, 5, outShape(ops));
  size_t grads = ops.fusedQkv ? 1 : 3;
  for (size_t o = 0; o < grads; ++o) {
    expectDType(s, false, o, t, "gradients have q's type");
    expectShape(s, false, o, ops.fusedQkv ? s.in[0]->shape : ops.shape[o]);
  }
  // The column sums (AttentionColumnSums.h): f32 [3 H D].
  if (s.out.size() > grads) {
    const std::vector<int64_t> &g = s.in[0]->shape;
    expectDType(s, false, grads, DType::F32, "column sums are always f32");
    expectShape(s, false, grads, {g[g.size() - 2] * g.back()});
  }
}

} // namespace tcc::rt::abi
