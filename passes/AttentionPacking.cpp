//===- AttentionPacking.cpp - Which attention ops tcc-pack-attention packs ===//
//
// See AttentionPacking.h.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionPacking.h"

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// Where a head-split operand comes from: third `part` of `projection`.
struct Third {
  Value projection;
  int64_t part = -1;
};
} // namespace

/// `v` ([B..., T, H, D]) as reshape(slice(X)) where the slice keeps every
/// axis of X ([B..., T, 3 * H * D]) whole except the last, of which it takes
/// the columns [part * H * D, (part + 1) * H * D) with unit step.
static std::optional<Third> thirdOf(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto slice = reshape.getInput().getDefiningOp<SliceOp>();
  if (!slice)
    return std::nullopt;
  ArrayRef<int64_t> vs = typeOf(v).getShape();
  ArrayRef<int64_t> xs = typeOf(slice.getInput()).getShape();
  ArrayRef<int64_t> ss = typeOf(slice.getResult()).getShape();
  size_t r = xs.size();
  if (vs.size() != r + 1 || r < 2)
    return std::nullopt;
  int64_t e = vs[r - 1] * vs[r];
  if (xs.back() != 3 * e || ss.back() != e)
    return std::nullopt;
  for (size_t i = 0; i + 1 < r; ++i)
    if (xs[i] != vs[i] || ss[i] != xs[i] || slice.getStarts()[i] != 0 ||
        slice.getSteps()[i] != 1)
      return std::nullopt;
  int64_t start = slice.getStarts()[r - 1];
  if (slice.getSteps()[r - 1] != 1 || start % e != 0)
    return std::nullopt;
  return Third{slice.getInput(), start / e};
}

Value packing::projectionOf(Value q, Value k, Value v) {
  auto tq = thirdOf(q), tk = thirdOf(k), tv = thirdOf(v);
  if (!tq || !tk || !tv || tq->part != 0 || tk->part != 1 || tv->part != 2 ||
      tk->projection != tq->projection || tv->projection != tq->projection)
    return {};
  return tq->projection;
}

ConcatOp packing::mergedGradients(AttentionGradOp g,
                                  RankedTensorType projType) {
  ConcatOp concat;
  SmallVector<Value> grads(g.getGrads());
  for (auto [i, dx] : llvm::enumerate(grads)) {
    auto r = dyn_cast_or_null<ReshapeOp>(dx.hasOneUse() ? *dx.getUsers().begin()
                                                        : nullptr);
    if (!r || !r->hasOneUse())
      return {};
    auto c = dyn_cast<ConcatOp>(*r->getUsers().begin());
    if (!c || (concat && c != concat) || c.getInputs().size() != 3 ||
        c.getInputs()[i] != r.getResult())
      return {};
    concat = c;
  }
  if (!concat || concat.getType() != projType ||
      static_cast<int64_t>(concat.getAxis()) != projType.getRank() - 1)
    return {};
  return concat;
}

ReduceSumOp packing::columnSumOf(Value grad) {
  auto gt = typeOf(grad);
  if (gt.getRank() < 2)
    return {};
  int64_t cols = gt.getShape().back();
  SmallVector<Value> views{grad};
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *u : views[i].getUsers()) {
      if (auto r = dyn_cast<ReduceSumOp>(u)) {
        auto rt = typeOf(r.getResult());
        if (r.sumsAllButLastAxis() && rt.getElementType().isF32() &&
            rt.getRank() == 1 && rt.getShape()[0] == cols)
          return r;
        continue;
      }
      Value next;
      if (auto re = dyn_cast<ReshapeOp>(u)) {
        auto rt = typeOf(re.getResult());
        if (rt.getRank() >= 1 && rt.getShape().back() == cols)
          next = re.getResult();
      } else if (auto c = dyn_cast<CastOp>(u); c && c.isExactWidening()) {
        next = c.getResult();
      }
      if (next && !llvm::is_contained(views, next))
        views.push_back(next);
    }
  return {};
}

bool packing::sumsPackedGradient(ReduceSumOp r) {
  // The merged gradient the sum reads, through the same views.
  Value v = CastOp::beforeExactWidening(r.getInput());
  while (auto re = v.getDefiningOp<ReshapeOp>())
    v = CastOp::beforeExactWidening(re.getInput());
  auto concat = v.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 3)
    return false;
  auto re = concat.getInputs()[0].getDefiningOp<ReshapeOp>();
  auto g = re ? re.getInput().getDefiningOp<AttentionGradOp>() : nullptr;
  if (!g || !g.getSeqMajor() || g.getFusedQkv())
    return false;
  Value x = projectionOf(g.getQuery(), g.getKey(), g.getValue());
  return x && mergedGradients(g, typeOf(x)) == concat &&
         columnSumOf(concat.getResult()) == r;
}
