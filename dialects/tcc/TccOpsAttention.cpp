//===- TccOpsAttention.cpp - Fused attention: shapes and verifiers --------===//
//
// The ops of TccOpsAttention.td. Both ops check the same operand contract
// (the one the runtime kernels check again at load, runtime/cpu/
// KernelsAttention.cpp): query/key/value of one float type and equal batch
// dimensions, an f32 mask that broadcasts to the scores, an f32 lse.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

namespace {
/// The result types every check leads to: the forward's output and lse.
struct AttentionTypes {
  RankedTensorType out, lse;
};
} // namespace

/// The batch-entry dimensions of an operand of rank >= 3: all but the last
/// two when packed ([B..., T, D]); B... and H when sequence-major
/// ([B..., T, H, D]).
static SmallVector<int64_t> entryDims(ArrayRef<int64_t> s, bool seqMajor) {
  SmallVector<int64_t> dims(s.drop_back(seqMajor ? 3 : 2));
  if (seqMajor)
    dims.push_back(s[s.size() - 2]);
  return dims;
}

/// The row (sequence) count of an operand of rank >= 3.
static int64_t rowCount(ArrayRef<int64_t> s, bool seqMajor) {
  return s[s.size() - (seqMajor ? 3 : 2)];
}

/// Checks query, key, value and the optional mask of the op named `op`
/// ("attention" or "attention_grad") in the layout `seqMajor` and returns
/// the forward's result types.
static FailureOr<AttentionTypes>
checkOperands(StringRef op, std::optional<Location> loc, Value q, Value k,
              Value v, Value mask, bool seqMajor, bool fusedQkv) {
  auto qt = rankedType(q), kt = rankedType(k), vt = rankedType(v);
  auto fail = [&](auto &&...parts) -> FailureOr<AttentionTypes> {
    (void)emitOptionalError(loc, "tcc.", op, ": ", parts...);
    return failure();
  };
  // fused_qkv: the three slices of the projection, checked as if apart.
  SmallVector<int64_t> qs(qt.getShape()), ks(kt.getShape()), vs(vt.getShape());
  if (fusedQkv) {
    if (!seqMajor)
      return fail("fused_qkv operands need the sequence-major layout "
                  "(seq_major)");
    if (q != k || q != v)
      return fail("fused_qkv: query, key and value must be one value, the "
                  "projection [batch..., rows, 3 * heads, features]");
    if (qs.size() < 3 || qs[qs.size() - 2] % 3 != 0)
      return fail("fused_qkv: the projection ", shapeStr(qs),
                  " needs rank >= 3 and a head dimension (-2) that is a "
                  "multiple of 3 (query, key and value heads)");
    for (auto *s : {&qs, &ks, &vs})
      (*s)[s->size() - 2] /= 3;
  }
  const char *layout = seqMajor ? "[batch..., rows, heads, features]"
                                : "[batch..., rows, features]";
  if (qs.size() < 3 || ks.size() != qs.size() || vs.size() != qs.size())
    return fail("query, key and value need one rank >= 3 (", layout, "), got ",
                shapeStr(qs), ", ", shapeStr(ks), " and ", shapeStr(vs));
  Type e = qt.getElementType();
  if (kt.getElementType() != e || vt.getElementType() != e ||
      !(e.isF32() || e.isBF16() || e.isF16()))
    return fail("query, key and value must share one element type (f32, "
                "bf16 or f16), got ",
                e, ", ", kt.getElementType(), " and ", vt.getElementType());
  size_t r = qs.size();
  SmallVector<int64_t> batch = entryDims(qs, seqMajor);
  if (entryDims(ks, seqMajor) != batch || entryDims(vs, seqMajor) != batch)
    return fail("query ", shapeStr(qs), ", key ", shapeStr(ks), " and value ",
                shapeStr(vs), " must have equal batch dimensions (",
                seqMajor ? "all but the last three, and the heads"
                         : "all but the last two",
                ")");
  int64_t tq = rowCount(qs, seqMajor), d = qs[r - 1],
          tk = rowCount(ks, seqMajor);
  if (ks[r - 1] != d)
    return fail("query ", shapeStr(qs), " and key ", shapeStr(ks),
                " differ in the feature size (last dimension): ", d, " vs ",
                ks[r - 1]);
  if (rowCount(vs, seqMajor) != tk)
    return fail("key ", shapeStr(ks), " and value ", shapeStr(vs),
                " differ in the key length (dimension ", seqMajor ? -3 : -2,
                "): ", tk, " vs ", rowCount(vs, seqMajor));
  if (mask) {
    auto mt = rankedType(mask);
    ArrayRef<int64_t> ms = mt.getShape();
    size_t want = batch.size() + 2;
    if (!mt.getElementType().isF32())
      return fail("the mask must be f32, got ", mt.getElementType());
    if (ms.size() != 2 && ms.size() != want)
      return fail("the mask ", shapeStr(ms), " must have rank 2 or ", want,
                  " (the batch entries' dimensions ", shapeStr(batch),
                  " and two more)");
    ArrayRef<int64_t> mb = ms.drop_back(2);
    if (!llvm::all_of(mb, [](int64_t x) { return x == 1; }) &&
        mb != ArrayRef<int64_t>(batch))
      return fail("the mask ", shapeStr(ms),
                  " must have batch dimensions all 1 or equal to the query's ",
                  shapeStr(batch));
    int64_t mq = ms[ms.size() - 2], mk = ms.back();
    if ((mq != 1 && mq != tq) || (mk != 1 && mk != tk))
      return fail("the mask ", shapeStr(ms),
                  " does not broadcast to the scores [..., ", tq, ", ", tk,
                  "]: each of its last two dimensions must be 1 or full");
  }
  SmallVector<int64_t> outShape(qs), lseShape(batch);
  outShape.back() = vs[r - 1];
  lseShape.push_back(tq);
  return AttentionTypes{
      RankedTensorType::get(outShape, e),
      RankedTensorType::get(lseShape, Float32Type::get(q.getContext()))};
}

/// `fused_qkv` as a builder may leave it: unset (null) is the default,
/// false.
static bool isFusedQkv(BoolAttr attr) { return attr && attr.getValue(); }

static LogicalResult verifyScale(Operation *op, double scale) {
  if (!std::isfinite(scale))
    return op->emitOpError("scale must be finite, got ") << scale;
  return success();
}

LogicalResult
AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              ValueRange operands, DictionaryAttr attrs,
                              OpaqueProperties props, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<AttentionOp>(operands, attrs, props, regions);
  auto types = checkOperands("attention", loc, adaptor.getQuery(),
                             adaptor.getKey(), adaptor.getValue(),
                             adaptor.getMask(), adaptor.getSeqMajor(),
                             isFusedQkv(adaptor.getFusedQkvAttr()));
  if (failed(types))
    return failure();
  results.push_back(types->out);
  results.push_back(types->lse);
  return success();
}

LogicalResult AttentionOp::verify() {
  return verifyScale(*this, getScale().convertToDouble());
}

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  ValueRange operands, DictionaryAttr attrs,
                                  OpaqueProperties props, RegionRange regions,
                                  SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<AttentionGradOp>(operands, attrs, props, regions);
  auto types = checkOperands("attention_grad", loc, adaptor.getQuery(),
                             adaptor.getKey(), adaptor.getValue(),
                             adaptor.getMask(), adaptor.getSeqMajor(),
                             isFusedQkv(adaptor.getFusedQkvAttr()));
  if (failed(types))
    return failure();
  for (auto [v, name, want] :
       {std::tuple{adaptor.getOut(), "out", types->out},
        std::tuple{adaptor.getGrad(), "grad", types->out},
        std::tuple{adaptor.getLse(), "lse", types->lse}})
    if (v.getType() != want)
      return emitOptionalError(loc, "tcc.attention_grad: ", name, " is ",
                               v.getType(), ", expected ", want,
                               " (from query, key and value)");
  // fused_qkv: one gradient, the projection's (and its column sums).
  auto sums = adaptor.getColumnSumsAttr();
  bool columnSums = sums && sums.getValue();
  if (isFusedQkv(adaptor.getFusedQkvAttr())) {
    auto qt = cast<RankedTensorType>(adaptor.getQuery().getType());
    results.push_back(qt);
    if (columnSums) {
      ArrayRef<int64_t> s = qt.getShape();
      results.push_back(RankedTensorType::get(
          {s[s.size() - 2] * s.back()}, Float32Type::get(qt.getContext())));
    }
    return success();
  }
  if (columnSums)
    return emitOptionalError(loc, "tcc.attention_grad: column_sums needs "
                                  "fused_qkv (the sums are the projection "
                                  "gradient's)");
  for (Value v : {adaptor.getQuery(), adaptor.getKey(), adaptor.getValue()})
    results.push_back(v.getType());
  return success();
}

LogicalResult AttentionGradOp::verify() {
  return verifyScale(*this, getScale().convertToDouble());
}
