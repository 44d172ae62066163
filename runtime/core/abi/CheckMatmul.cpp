//===- CheckMatmul.cpp - matmul and matmul_epilogue -----------------------===//
//
// The transpose flags are checked by checkAttrs (MatmulAttrs,
// MatmulEpilogueAttrs); these checks add the shapes, the epilogue's
// operands and BLAS's 32-bit sizes (both backends' GEMMs take them).
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/core/abi/KernelCheck.h"

#include <climits>

namespace tcc::rt::abi {

static std::vector<int64_t> batchShape(const std::vector<int64_t> &shape) {
  return {shape.begin(), shape.end() - 2};
}

void check_matmul(const KernelSig &s) {
  expectArity(s, 2, 1);
  expectAllF32(s);
  for (size_t i = 0; i < 3; ++i) {
    const TensorInfo &t = i < 2 ? *s.in[i] : *s.out[0];
    if (t.shape.size() < 2)
      throw Error(operandName(s, i < 2, i < 2 ? i : 0) + " has shape " +
                  formatShape(t.shape) + "; matmul needs rank >= 2");
  }
  const auto &a = s.in[0]->shape, &b = s.in[1]->shape, &c = s.out[0]->shape;
  MatmulAttrs at = attrs<KernelId::Matmul>(s.instr);
  bool ta = at.transA, tb = at.transB;
  size_t ra = a.size(), rb = b.size(), rc = c.size();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], ka = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (ka != kb || m != c[rc - 2] || n != c[rc - 1])
    throw Error("shapes " + formatShape(a) + (ta ? "^T" : "") + " x " +
                formatShape(b) + (tb ? "^T" : "") + " -> " + formatShape(c) +
                " do not agree");
  for (size_t i = 0; i < 2; ++i)
    if (!broadcasts(batchShape(s.in[i]->shape), batchShape(c)))
      throw Error(operandName(s, true, i) + " has batch dims " +
                  formatShape(batchShape(s.in[i]->shape)) +
                  " that do not broadcast to the output's " +
                  formatShape(batchShape(c)));
  // OpenBLAS takes 32-bit sizes.
  for (int64_t d : {m, n, ka})
    if (d > INT_MAX)
      throw Error("matrix dimension " + std::to_string(d) +
                  " is too large for BLAS");
}

void checkGemmDTypes(const KernelSig &s) {
  // Arity is the f32 check's; only what is there is read. The attributes
  // are checked (checkAttrs runs first).
  if (s.in.size() < 2 || s.out.empty())
    return;
  DType ab = s.in[0]->dtype, d = s.out[0]->dtype;
  if (s.in[1]->dtype != ab)
    throw Error("the GEMM's operands must share one element type; " +
                operandName(s, true, 0) + " is " + dtypeName(ab) + ", " +
                operandName(s, true, 1) + " " + dtypeName(s.in[1]->dtype));
  const GemmEpilogueInfo *e = nullptr;
  if (is(s.instr, KernelId::MatmulEpilogue))
    e = gemmEpilogueByCode(attrs<KernelId::MatmulEpilogue>(s.instr).epilogue);
  // A plain GEMM: the product is the result (matmul, bias gradients).
  bool isMatmul = is(s.instr, KernelId::Matmul);
  bool plain = isMatmul || (e && !e->rowsFlatten());
  if ((isMatmul || e) ? !gemmWritesDType(ab, d, e) : d != ab)
    throw Error(operandName(s, false, 0) + " is " + dtypeName(d) + "; a " +
                dtypeName(ab) + " GEMM" +
                (e ? std::string(" with the ") + e->name + " epilogue" : "") +
                " writes " + dtypeName(ab) +
                (plain && isHalfDType(ab) ? " or f32" : ""));
  if (!e)
    return;
  for (size_t i = 2; i < s.in.size(); ++i)
    if (s.in[i]->dtype != ab)
      throw Error(operandName(s, true, i) + " is " + dtypeName(s.in[i]->dtype) +
                  "; the " + e->name +
                  " epilogue reads it in the operands' type " + dtypeName(ab));
  if (s.out.size() > 1) {
    DType aux = s.out[1]->dtype;
    bool ok = e->preactOut ? aux == d : aux == ab || aux == DType::F32;
    if (!ok)
      throw Error(operandName(s, false, 1) + " is " + dtypeName(aux) + "; " +
                  (e->preactOut ? "the pre-activation has the output's type " +
                                      std::string(dtypeName(d))
                                : "a bias gradient has the operands' type " +
                                      std::string(dtypeName(ab)) + " or f32"));
  }
}

void check_matmul_epilogue(const KernelSig &s) {
  MatmulEpilogueAttrs at = attrs<KernelId::MatmulEpilogue>(s.instr);
  const GemmEpilogueInfo *ep = gemmEpilogueByCode(at.epilogue);
  if (!ep)
    throw Error("unknown GEMM epilogue code " + std::to_string(at.epilogue));
  const GemmEpilogueInfo &e = *ep;
  bool extraIn = e.bias || e.act == GemmAct::DgeluTanh;
  expectArity(s, extraIn ? 3 : 2, e.hasAux() ? 2 : 1);
  expectAllF32(s);
  bool ta = at.transA, tb = at.transB;
  const auto &a = s.in[0]->shape, &b = s.in[1]->shape, &d = s.out[0]->shape;
  if (b.size() != 2)
    throw Error(operandName(s, true, 1) + " has shape " + formatShape(b) +
                "; the " + e.name + " epilogue needs a 2-D right operand");
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  int64_t m, ka;
  if (e.rowsFlatten()) {
    if (ta)
      throw Error(std::string("the ") + e.name +
                  " epilogue needs a non-transposed left operand");
    if (a.size() < 2)
      throw Error(operandName(s, true, 0) + " has shape " + formatShape(a) +
                  "; matmul_epilogue needs rank >= 2");
    ka = a.back();
    m = 1;
    for (size_t i = 0; i + 1 < a.size(); ++i)
      m *= a[i];
    std::vector<int64_t> want(a.begin(), a.end() - 1);
    want.push_back(n);
    if (ka != kb || d != want)
      throw Error("shapes " + formatShape(a) + " x " + formatShape(b) +
                  (tb ? "^T" : "") + " -> " + formatShape(d) + " do not agree");
  } else {
    if (a.size() != 2)
      throw Error(operandName(s, true, 0) + " has shape " + formatShape(a) +
                  "; the " + e.name + " epilogue needs 2-D operands");
    if (e.bgrad == GemmBiasGrad::Lhs && !ta)
      throw Error("the bgrad_lhs epilogue sums the transposed left operand; "
                  "transpose_lhs is 0");
    if (e.bgrad == GemmBiasGrad::Rhs && tb)
      throw Error("the bgrad_rhs epilogue sums the non-transposed right "
                  "operand; transpose_rhs is 1");
    m = ta ? a[1] : a[0];
    ka = ta ? a[0] : a[1];
    if (ka != kb || d != std::vector<int64_t>{m, n})
      throw Error("shapes " + formatShape(a) + (ta ? "^T" : "") + " x " +
                  formatShape(b) + (tb ? "^T" : "") + " -> " + formatShape(d) +
                  " do not agree");
  }
  for (int64_t dim : {m, n, ka})
    if (dim > INT_MAX)
      throw Error("matrix dimension " + std::to_string(dim) +
                  " is too large for BLAS");
  if (e.bias)
    expectShape(s, true, 2, {n});
  if (e.act == GemmAct::DgeluTanh)
    expectShape(s, true, 2, d);
  if (e.preactOut)
    expectShape(s, false, 1, d);
  if (e.bgrad == GemmBiasGrad::Lhs)
    expectShape(s, false, 1, {m});
  else if (e.bgrad != GemmBiasGrad::None)
    expectShape(s, false, 1, {n});
}

} // namespace tcc::rt::abi
