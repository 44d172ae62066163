//===- TccOpsGemm.cpp - tcc.matmul_epilogue's verifier --------------------===//
//
// The epilogues and their operand roles come from the one table the
// runtime's kernels use (runtime/core/abi/GemmEpilogue.h, header-only), so the
// verifier accepts exactly what the kernels run.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"
#include "runtime/core/abi/GemmEpilogue.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

LogicalResult MatmulEpilogueOp::verify() {
  std::string name = getEpilogue().str();
  const ::tcc::rt::GemmEpilogueInfo *e =
      ::tcc::rt::gemmEpilogueByName(name.c_str());
  if (!e) {
    auto diag = emitOpError("unknown epilogue \"") << name << "\"; expected ";
    for (const auto &k : ::tcc::rt::kGemmEpilogues)
      diag << (&k == ::tcc::rt::kGemmEpilogues ? "" : ", ") << k.name;
    return diag;
  }
  auto lhs = rankedType(getLhs()), rhs = rankedType(getRhs());
  auto result = rankedType(getResult());
  // `in` is the operands' type, `elem` the result's: the same, or f32 from
  // 16-bit operands for the plain GEMMs of the bias-gradient forms.
  Type in = lhs.getElementType(), elem = result.getElementType();
  if (!in.isF32() && !in.isBF16() && !in.isF16())
    return emitOpError("element type must be f32, bf16 or f16, got ") << in;
  if (rhs.getElementType() != in)
    return emitOpError("lhs and rhs must share an element type, got ")
           << in << " and " << rhs.getElementType();
  bool bgradForm = e->bgrad == ::tcc::rt::GemmBiasGrad::Lhs ||
                   e->bgrad == ::tcc::rt::GemmBiasGrad::Rhs;
  if (elem != in && !(bgradForm && !in.isF32() && elem.isF32()))
    return emitOpError("the result's element type must be the operands' ")
           << in
           << (in.isF32() ? ""
                          : " (or f32 with the bgrad_lhs and bgrad_rhs "
                            "epilogues)")
           << ", got " << elem;
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  if (rs.size() != 2)
    return emitOpError("rhs must be 2-D, got ") << shapeStr(rs);
  int64_t k2 = tb ? rs[1] : rs[0], n = tb ? rs[0] : rs[1];
  int64_t m, k1;
  SmallVector<int64_t> want;
  if (e->rowsFlatten()) {
    if (ta)
      return emitOpError("the ")
             << name << " epilogue takes lhs without transpose_lhs";
    if (ls.size() < 2)
      return emitOpError("lhs must have rank >= 2, got ") << shapeStr(ls);
    k1 = ls.back();
    m = 1;
    for (int64_t d : ls.drop_back())
      m *= d;
    want.assign(ls.begin(), ls.end() - 1);
  } else {
    if (ls.size() != 2)
      return emitOpError("the ")
             << name << " epilogue needs a 2-D lhs, got " << shapeStr(ls);
    if (e->bgrad == ::tcc::rt::GemmBiasGrad::Lhs && !ta)
      return emitOpError("bgrad_lhs sums the transposed lhs: it needs "
                         "transpose_lhs");
    if (e->bgrad == ::tcc::rt::GemmBiasGrad::Rhs && tb)
      return emitOpError("bgrad_rhs sums the non-transposed rhs: it cannot "
                         "have transpose_rhs");
    m = ta ? ls[1] : ls[0];
    k1 = ta ? ls[0] : ls[1];
    want.push_back(m);
  }
  want.push_back(n);
  if (k1 != k2)
    return emitOpError("contraction sizes differ: lhs ")
           << shapeStr(ls) << " and rhs " << shapeStr(rs) << " give " << k1
           << " vs " << k2;
  if (result.getShape() != ArrayRef<int64_t>(want))
    return emitOpError("result shape ")
           << shapeStr(result.getShape()) << " should be " << shapeStr(want);

  bool wantsPreact = e->act == ::tcc::rt::GemmAct::DgeluTanh;
  if (bool(getBias()) != e->bias)
    return emitOpError("the ")
           << name << " epilogue " << (e->bias ? "needs" : "takes no")
           << " bias operand";
  if (bool(getPreact()) != wantsPreact)
    return emitOpError("the ")
           << name << " epilogue " << (wantsPreact ? "needs" : "takes no")
           << " preact operand";
  if (bool(getAux()) != e->hasAux())
    return emitOpError("the ") << name << " epilogue has "
                               << (e->hasAux() ? "two results" : "one result");
  if (Value b = getBias())
    if (rankedType(b) != RankedTensorType::get({n}, elem))
      return emitOpError("bias must be ")
             << RankedTensorType::get({n}, elem) << ", got " << b.getType();
  if (Value p = getPreact())
    if (p.getType() != result)
      return emitOpError("preact must have the result's type ")
             << result << ", got " << p.getType();
  if (Value aux = getAux()) {
    auto t = rankedType(aux);
    if (e->preactOut) {
      if (t != result)
        return emitOpError("the pre-activation result must have the "
                           "result's type ")
               << result << ", got " << t;
    } else {
      int64_t len = e->bgrad == ::tcc::rt::GemmBiasGrad::Lhs ? m : n;
      if (t.getShape() != ArrayRef<int64_t>{len} ||
          (t.getElementType() != in && !t.getElementType().isF32()))
        return emitOpError("the bias gradient must be ")
               << RankedTensorType::get({len}, in) << " or "
               << RankedTensorType::get({len}, Float32Type::get(getContext()))
               << ", got " << t;
    }
  }
  return success();
}
