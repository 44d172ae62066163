//===- FusionModel.cpp - What tcc-fuse may group, and how -----------------===//
#include "passes/FusionModel.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fusion;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static int64_t numelOf(ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// f32, bf16 or f16: the float types generated code loads, computes (in f32)
/// and stores.
static bool isGeneratedFloat(Type t) {
  return t.isF32() || t.isBF16() || t.isF16();
}

static bool isFloatValue(Value v) {
  return isGeneratedFloat(cast<RankedTensorType>(v.getType()).getElementType());
}

/// Whether every float operand and result of `op` is f32 (row ops: their
/// reductions read f32 rows; 16-bit values reach them through fused casts).
static bool allFloatsF32(Operation *op) {
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    Type e = cast<RankedTensorType>(v.getType()).getElementType();
    if (isa<FloatType>(e) && !e.isF32())
      return false;
  }
  return true;
}

/// Row-major strides of `shape` right-aligned in `rank` dims, 0 where a
/// dimension is 1 or missing (NumPy broadcasting).
static SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                             size_t rank) {
  SmallVector<int64_t> st(rank, 0);
  int64_t s = 1;
  size_t shift = rank - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    st[i + shift] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return st;
}

/// Whether the offsets of `v` are `scale * r` (size-1 dims do not matter).
static bool isContiguousTimes(const View &v, int64_t scale) {
  int64_t s = scale;
  for (size_t k = v.rowShape.size(); k-- > 0;) {
    if (v.rowShape[k] != 1 && v.rowStrides[k] != s)
      return false;
    s *= v.rowShape[k];
  }
  return true;
}

bool View::isFullNative(int64_t cols) const {
  return isContiguousTimes(*this, cols) && (cols == 1 || colStride == 1);
}
bool View::isRowNative() const {
  return isContiguousTimes(*this, 1) && colStride == 0;
}
bool View::isConstant() const {
  for (size_t k = 0; k < rowShape.size(); ++k)
    if (rowShape[k] != 1 && rowStrides[k] != 0)
      return false;
  return true;
}
std::optional<int64_t> View::rowScale() const {
  if (isConstant())
    return 0;
  // The innermost dimension that moves sets the scale; the others must
  // continue it.
  for (size_t k = rowShape.size(); k-- > 0;)
    if (rowShape[k] != 1) {
      int64_t s = rowStrides[k];
      if (s > 0 && isContiguousTimes(*this, s))
        return s;
      break;
    }
  return std::nullopt;
}

/// The last-axis attribute check shared by the softmax family.
static bool lastAxis(int64_t axis, Value v) {
  int64_t rank = (int64_t)shapeOf(v).size();
  return rank >= 1 && (axis == rank - 1 || axis == -1);
}

/// A slice that is a view (View) of its operand: zero starts, positive
/// steps, a unit step along the last axis (so the columns stay contiguous).
static bool isViewSlice(SliceOp s) {
  int64_t rank = (int64_t)shapeOf(s.getInput()).size();
  if (rank < 1 || (int64_t)s.getStarts().size() != rank ||
      (int64_t)s.getSteps().size() != rank || s.getSteps().back() != 1)
    return false;
  return llvm::all_of(s.getStarts(), [](int64_t v) { return v == 0; }) &&
         llvm::all_of(s.getSteps(), [](int64_t v) { return v > 0; });
}

/// Whether `v` is a loss's gradient, through casts, slices, pads and
/// reshapes.
static bool isLossGradientValue(Value v) {
  for (Operation *op = v.getDefiningOp(); op;
       op = op->getOperand(0).getDefiningOp()) {
    if (isa<SoftmaxCrossEntropyGradOp>(op))
      return true;
    if (!isa<CastOp, SliceOp, SliceGradOp, ReshapeOp>(op))
      return false;
  }
  return false;
}

bool fusion::expandsLayerNormGrad(Operation *op) {
  auto ln = dyn_cast<LayerNormGradOp>(op);
  if (!ln)
    return false;
  auto xt = cast<RankedTensorType>(ln.getInput().getType());
  return xt.getRank() >= 2 && ln.getAxis() == xt.getRank() - 1 &&
         xt.getElementType().isF32();
}

bool fusion::isColumnSum(Operation *op) {
  if (isa<LayerNormParamGradOp>(op))
    return true;
  auto r = dyn_cast<ReduceSumOp>(op);
  if (!r || !r.sumsAllButLastAxis())
    return false;
  // A loss's gradient shares the loss's region, which takes no column sums;
  // where it does not (a rematerialized step may split them), its sum stays
  // the library's too, so that both plans sum it alike.
  ArrayRef<int64_t> s = shapeOf(r.getInput());
  return s.size() >= 2 && s.back() <= kMaxColSumCols &&
         !isLossGradientValue(r.getInput());
}

bool fusion::isDataMovement(Operation *op) {
  return isa<ReshapeOp, BroadcastToOp, SliceOp, SliceGradOp>(op);
}

int64_t fusion::padOf(Operation *op) {
  auto p = dyn_cast<SliceGradOp>(op);
  if (!p || !p.padsLastAxisOnly())
    return 0;
  ArrayRef<int64_t> gs = shapeOf(p.getGrad()), rs = shapeOf(p.getResult());
  // pad <= cols: the element-wise CUDA mapping has the thread of column j
  // also zero column cols + j. Rows of one column stay kernels (their
  // values are row scalars, not vectors, in generated code).
  int64_t cols = gs.back(), pad = rs.back() - cols;
  return cols >= 2 && pad > 0 && pad <= cols ? pad : 0;
}

OpKind fusion::classify(Operation *op) {
  // Every tensor must be non-empty and every float one f32, bf16 or f16.
  // Generated code computes in f32 and rounds each bf16/f16 result where the
  // unfused kernel would store it (with libm's functions for such results),
  // so a region's 16-bit values are bit for bit the library kernels'.
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getNumElements() == 0)
      return OpKind::None;
    if (isa<FloatType>(t.getElementType()) &&
        !isGeneratedFloat(t.getElementType()))
      return OpKind::None;
  }
  auto row = [&](bool ok) {
    return ok && allFloatsF32(op) ? OpKind::Row : OpKind::None;
  };
  return llvm::TypeSwitch<Operation *, OpKind>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, NegOp, ReluOp, ReluGradOp, ExpOp,
            LogOp, SqrtOp, TanhOp, SigmoidOp, ErfOp, SqrtGradOp, TanhGradOp,
            SigmoidGradOp, ErfGradOp, PowScalarOp, PowScalarGradOp, GeluOp,
            GeluGradOp, UnaryFnOp, UnaryFnGradOp>(
          [](auto) { return OpKind::Elementwise; })
      .Case<BroadcastToOp, ReshapeOp>([](auto o) {
        return isFloatValue(o.getInput()) ? OpKind::Elementwise : OpKind::None;
      })
      .Case<WhereOp>([](WhereOp w) {
        return isFloatValue(w.getResult()) ? OpKind::Elementwise : OpKind::None;
      })
      // Integer maximum/minimum/mod stay kernels.
      .Case<MaximumOp, MinimumOp, ModOp>([](auto m) {
        return isFloatValue(m.getResult()) ? OpKind::Elementwise : OpKind::None;
      })
      .Case<SliceOp>([](SliceOp s) {
        return isFloatValue(s.getInput()) && isViewSlice(s)
                   ? OpKind::Elementwise
                   : OpKind::None;
      })
      .Case<SliceGradOp>([](SliceGradOp p) {
        return isFloatValue(p.getGrad()) && padOf(p) > 0 ? OpKind::Elementwise
                                                         : OpKind::None;
      })
      // Conversions between the float types (integer casts stay kernels).
      .Case<CastOp>([](CastOp c) {
        return isFloatValue(c.getInput()) && isFloatValue(c.getResult())
                   ? OpKind::Elementwise
                   : OpKind::None;
      })
      .Case<SoftmaxOp, LogSoftmaxOp>(
          [&](auto s) { return row(lastAxis(s.getAxis(), s.getInput())); })
      .Case<SoftmaxGradOp, LogSoftmaxGradOp>(
          [&](auto s) { return row(lastAxis(s.getAxis(), s.getGrad())); })
      .Case<ReduceSumOp, ReduceMeanOp>([&](auto r) {
        int64_t rank = (int64_t)shapeOf(r.getInput()).size();
        return row((rank >= 1 && r.getAxes().size() == 1 &&
                    r.getAxes()[0] == rank - 1) ||
                   isColumnSum(r));
      })
      .Case<LayerNormOp>([&](LayerNormOp l) {
        return row(lastAxis(l.getAxis(), l.getInput()));
      })
      .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(
          [&](auto) { return row(true); })
      // Column sums over the rows of dy and x as the model stores them
      // (16-bit in a bf16 model), mean and rstd f32, f32 results; rows no
      // wider than a CUDA warp's per-lane arrays keep (kMaxColSumCols).
      .Case<LayerNormParamGradOp>([&](LayerNormParamGradOp l) {
        auto f32 = [](Value v) {
          return cast<RankedTensorType>(v.getType()).getElementType().isF32();
        };
        ArrayRef<int64_t> s = shapeOf(l.getInput());
        bool ok = s.size() >= 2 && lastAxis(l.getAxis(), l.getInput()) &&
                  s.back() <= kMaxColSumCols && shapeOf(l.getGrad()) == s &&
                  f32(l.getMean()) && f32(l.getRstd()) &&
                  f32(l.getScaleGrad()) && f32(l.getBiasGrad());
        return ok ? OpKind::Row : OpKind::None;
      })
      .Default([](Operation *) { return OpKind::None; });
}

/// The operand a row op normalizes or reduces (its full-layout input).
static Value rowInput(Operation *op) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<SoftmaxGradOp, LogSoftmaxGradOp>([](auto s) { return s.getGrad(); })
      .Case<SoftmaxCrossEntropyOp>([](auto s) { return s.getLogits(); })
      .Case<SoftmaxCrossEntropyGradOp>([](auto s) { return s.getLogits(); })
      .Default([](Operation *o) { return o->getOperand(0); });
}

static Domain domainOfShape(ArrayRef<int64_t> s) {
  if (s.empty())
    return {1, 1};
  return {numelOf(s) / s.back(), s.back()};
}

Domain fusion::ownDomain(Operation *op) {
  if (classify(op) == OpKind::Row)
    return domainOfShape(shapeOf(rowInput(op)));
  if (padOf(op)) // the unpadded rows; the pad is written with them
    return domainOfShape(shapeOf(op->getOperand(0)));
  return domainOfShape(shapeOf(op->getResult(0)));
}

/// Full-layout view of a tensor shaped `s` (rows*cols elements, last dim
/// cols).
static View nativeFull(ArrayRef<int64_t> s, Domain d) {
  View v;
  v.rowShape = {d.rows};
  v.rowStrides = {d.cols};
  v.colStride = d.cols > 1 ? 1 : 0;
  (void)s;
  return v;
}

static View nativeRow(Domain d) {
  View v;
  v.rowShape = {d.rows};
  v.rowStrides = {1};
  return v;
}

static bool fullShaped(ArrayRef<int64_t> s, Domain d) {
  return numelOf(s) == d.numel() &&
         (d.cols == 1 || (!s.empty() && s.back() == d.cols));
}

FailureOr<Layout> fusion::resultLayout(Operation *op, unsigned i, Domain d) {
  ArrayRef<int64_t> s = shapeOf(op->getResult(i));
  if (classify(op) == OpKind::Row) {
    if (!(ownDomain(op) == d))
      return failure();
    if (isa<SoftmaxCrossEntropyOp>(op))
      return Layout::Scalar;
    if (isColumnSum(op))
      return Layout::Column;
    if (isa<ReduceSumOp, ReduceMeanOp>(op) || (isa<LayerNormOp>(op) && i > 0))
      return Layout::Row;
    return Layout::Full;
  }
  if (padOf(op)) {
    ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
    if (d.cols > 1 && fullShaped(in, d))
      return Layout::Padded;
    return failure();
  }
  if (fullShaped(s, d))
    return Layout::Full;
  if (numelOf(s) == d.rows)
    return Layout::Row;
  return failure();
}

FailureOr<View> fusion::operandView(Operation *op, unsigned i, Domain d) {
  Value operand = op->getOperand(i);
  ArrayRef<int64_t> os = shapeOf(operand);
  if (isa<ReshapeOp>(op)) {
    // A reshape keeps the element order: it is a no-op when its operand and
    // result have the same layout.
    auto res = resultLayout(op, 0, d);
    if (failed(res))
      return failure();
    if (*res == Layout::Full && fullShaped(os, d))
      return nativeFull(os, d);
    if (*res == Layout::Row && numelOf(os) == d.rows)
      return nativeRow(d);
    return failure();
  }
  if (classify(op) == OpKind::Row) {
    if (!(ownDomain(op) == d))
      return failure();
    ArrayRef<int64_t> full = shapeOf(rowInput(op));
    // Labels: one per row. The loss gradient's scalar: the same everywhere.
    if (isa<SoftmaxCrossEntropyOp>(op) && i == 1)
      return nativeRow(d);
    if (isa<SoftmaxCrossEntropyGradOp>(op) && i == 2)
      return nativeRow(d);
    if (isa<SoftmaxCrossEntropyGradOp>(op) && i == 0)
      return View{{}, {}, 0};
    if (isa<LayerNormParamGradOp>(op) && i >= 2) // mean, rstd: per row
      return numelOf(os) == d.rows ? FailureOr<View>(nativeRow(d))
                                   : FailureOr<View>(failure());
    if (isa<LayerNormOp>(op) && i > 0) { // scale, bias: broadcast over rows
      if (numelOf(os) != d.cols)
        return failure();
      View v;
      v.rowShape = {d.rows};
      v.rowStrides = {0};
      v.colStride = d.cols > 1 ? 1 : 0;
      return v;
    }
    if (!fullShaped(os, d) || os != full)
      return failure();
    return nativeFull(os, d);
  }
  if (padOf(op)) { // the unpadded value, over the region's domain
    if (failed(resultLayout(op, 0, d)))
      return failure();
    return nativeFull(os, d);
  }
  // Element-wise: NumPy broadcasting against the result's shape; a slice
  // reads its operand's row-major positions times its steps.
  auto res = resultLayout(op, 0, d);
  if (failed(res))
    return failure();
  ArrayRef<int64_t> rs = shapeOf(op->getResult(0));
  SmallVector<int64_t> st;
  if (auto slice = dyn_cast<SliceOp>(op)) {
    if (!isViewSlice(slice) || os.size() != rs.size())
      return failure();
    st.assign(os.size(), 0);
    int64_t stride = 1;
    for (size_t k = os.size(); k-- > 0;) {
      st[k] = stride * slice.getSteps()[k];
      stride *= os[k];
    }
  } else {
    if (os.size() > rs.size())
      return failure();
    st = broadcastStrides(os, rs.size());
  }
  View v;
  if (*res == Layout::Full && !rs.empty() && d.cols > 1) {
    v.rowShape.assign(rs.begin(), rs.end() - 1);
    v.rowStrides.assign(st.begin(), st.end() - 1);
    v.colStride = st.back() ? 1 : 0;
  } else { // one element per row
    v.rowShape.assign(rs.begin(), rs.end());
    v.rowStrides.assign(st.begin(), st.end());
    v.colStride = 0;
  }
  return v;
}

Domain fusion::regionDomain(ArrayRef<Operation *> ops) {
  Domain best{0, 0};
  for (Operation *op : ops) {
    Domain d = ownDomain(op);
    if (d.numel() > best.numel() ||
        (d.numel() == best.numel() && d.cols > best.cols))
      best = d;
  }
  return best;
}

bool fusion::regionIsLegal(ArrayRef<Operation *> ops, Domain d,
                           std::string *why) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  auto fail = [&](Operation *op, const Twine &msg) {
    if (why)
      *why = (op->getName().getStringRef() + ": " + msg).str();
    return false;
  };
  // A loss's partials and column sums each need their own finishing pass.
  bool scalar = false, column = false;
  for (Operation *op : ops) {
    scalar |= isa<SoftmaxCrossEntropyOp>(op);
    column |= isColumnSum(op);
  }
  if (scalar && column)
    return fail(ops.front(), "a loss and column sums in one region");
  for (Operation *op : ops) {
    if (classify(op) == OpKind::None)
      return fail(op, "not fusible");
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      if (failed(resultLayout(op, r, d)))
        return fail(op, "result does not fit the domain");
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto view = operandView(op, i, d);
      if (failed(view))
        return fail(op, "operand does not fit the domain");
      auto def = op->getOperand(i).getDefiningOp();
      if (!def || !members.contains(def))
        continue;
      unsigned idx = cast<OpResult>(op->getOperand(i)).getResultNumber();
      Layout produced = *resultLayout(def, idx, d);
      if (produced == Layout::Scalar || produced == Layout::Column)
        return fail(op, "reads a whole-region result");
      if (produced == Layout::Padded)
        return fail(op, "reads a padded value (it may only leave the region)");
      if (produced == Layout::Full && !view->isFullNative(d.cols))
        return fail(op, "reads a full value through a broadcast");
      if (produced == Layout::Row && !view->isRowNative())
        return fail(op, "reads a row value through a broadcast");
    }
  }
  return true;
}
