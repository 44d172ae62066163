//===- TccOps.cpp - tcc op shape inference, verifiers, folders ------------===//
//
// Result types are inferred from operands wherever they are determined, so a
// wrong shape is reported where the op is built (frontend, autodiff) instead
// of somewhere downstream.
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"
#include "dialects/tcc/TccOpsUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::tcc;
using mlir::tcc::detail::adaptorFor;
using mlir::tcc::detail::rankedType;
using mlir::tcc::detail::shapeStr;

FailureOr<SmallVector<int64_t>> mlir::tcc::broadcastShapes(ArrayRef<int64_t> a,
                                                           ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    out[i] = da == 1 ? db : da;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Constant, reshape, broadcast_to, transpose
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ReshapeOp::verify() {
  auto in = rankedType(getInput()), out = rankedType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << shapeStr(in.getShape()) << " (" << in.getNumElements()
           << " elements) to " << shapeStr(out.getShape()) << " ("
           << out.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) -> reshape(x)
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto c = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return c.reshape(cast<ShapedType>(getType()));
  return {};
}

LogicalResult BroadcastToOp::verify() {
  auto in = rankedType(getInput()), out = rankedType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes");
  auto b = broadcastShapes(in.getShape(), out.getShape());
  if (in.getRank() > out.getRank() || failed(b) ||
      ArrayRef<int64_t>(*b) != out.getShape())
    return emitOpError("cannot broadcast ")
           << shapeStr(in.getShape()) << " to " << shapeStr(out.getShape());
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto c = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput()))
    return SplatElementsAttr::get(cast<ShapedType>(getType()),
                                  c.getSplatValue<Attribute>());
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,
    SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<TransposeOp>(operands, attrs, props, regions);
  if (!adaptor.getProperties().perm)
    return emitOptionalError(loc, "tcc.transpose: requires attribute 'perm'");
  auto in = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != in.getRank())
    return emitOptionalError(loc, "tcc.transpose: perm has ", perm.size(),
                             " entries for a rank-", in.getRank(), " input");
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOptionalError(loc, "tcc.transpose: perm is not a permutation");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  results.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

bool TransposeOp::isIdentityPerm(ArrayRef<int64_t> perm) {
  return llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()));
}

SmallVector<int64_t> TransposeOp::composePerms(ArrayRef<int64_t> first,
                                               ArrayRef<int64_t> then) {
  SmallVector<int64_t> perm;
  for (int64_t i : then)
    perm.push_back(first[i]);
  return perm;
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (isIdentityPerm(getPerm()))
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ValueRange operands,
                                         DictionaryAttr attrs,
                                         OpaqueProperties props,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &results) {
  auto adaptor = adaptorFor<MatmulOp>(operands, attrs, props, regions);
  auto lhs = rankedType(adaptor.getLhs()), rhs = rankedType(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "tcc.matmul: element types differ (",
                             lhs.getElementType(), " vs ", rhs.getElementType(),
                             ")");
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "tcc.matmul: operands need rank >= 2, got ",
                             lhs.getRank(), " and ", rhs.getRank());
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t lr = ls.size(), rr = rs.size();
  // Read the flags directly: the default-valued getters need a non-null
  // attribute dictionary.
  auto flag = [](BoolAttr a) { return a && a.getValue(); };
  bool ta = flag(adaptor.getProperties().transpose_lhs);
  bool tb = flag(adaptor.getProperties().transpose_rhs);
  int64_t m = ta ? ls[lr - 1] : ls[lr - 2], k1 = ta ? ls[lr - 2] : ls[lr - 1];
  int64_t k2 = tb ? rs[rr - 1] : rs[rr - 2], n = tb ? rs[rr - 2] : rs[rr - 1];
  if (k1 != k2)
    return emitOptionalError(loc, "tcc.matmul: contraction sizes differ: lhs ",
                             shapeStr(ls), " and rhs ", shapeStr(rs), " give ",
                             k1, " vs ", k2);
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "tcc.matmul: batch dimensions of ",
                             shapeStr(ls), " and ", shapeStr(rs),
                             " do not broadcast");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  results.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

// The inferred result has the operands' element type; 16-bit operands may
// instead write the f32 accumulator (weight gradients for the optimizer).
// Anything else (another shape, f16 from bf16, bf16 from f32) is refused by
// the verifier's "inferred type(s) ... are incompatible" check.
bool MatmulOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  if (inferred == actual)
    return true;
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto want = dyn_cast<RankedTensorType>(inferred[0]);
  auto got = dyn_cast<RankedTensorType>(actual[0]);
  if (!want || !got || want.getShape() != got.getShape())
    return false;
  Type w = want.getElementType();
  return (w.isBF16() || w.isF16()) && got.getElementType().isF32();
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::detail::inferBroadcast(
    StringRef name, std::optional<Location> loc, ValueRange operands,
    SmallVectorImpl<Type> &results, Type resultElement) {
  auto a = rankedType(operands[0]), b = rankedType(operands[1]);
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, "tcc.", name, ": element types differ (",
                             a.getElementType(), " vs ", b.getElementType(),
                             ")");
  auto shape = broadcastShapes(a.getShape(), b.getShape());
  if (failed(shape))
    return emitOptionalError(loc, "tcc.", name, ": shapes ",
                             shapeStr(a.getShape()), " and ",
                             shapeStr(b.getShape()), " do not broadcast");
  results.push_back(RankedTensorType::get(
      *shape, resultElement ? resultElement : a.getElementType()));
  return success();
}

TCC_BINARY_INFER(AddOp, "add")
TCC_BINARY_INFER(SubOp, "sub")
TCC_BINARY_INFER(MulOp, "mul")
TCC_BINARY_INFER(DivOp, "div")

/// Whether `a` is a splat float constant exactly 1.0.
static bool isSplatOne(Attribute a) {
  auto dense = dyn_cast_or_null<DenseFPElementsAttr>(a);
  return dense && dense.isSplat() &&
         dense.getSplatValue<APFloat>().isExactlyValue(1.0);
}

// x * 1 and x / 1 are exactly x in IEEE arithmetic (NaN, infinities and
// signed zeros included), so these folds change no bit. The type check
// keeps a broadcasting 1 (which widens x) from folding. torch.onnx.export
// writes them for baddbmm's alpha and beta in nn.MultiheadAttention.
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatOne(adaptor.getLhs()) && getRhs().getType() == getType())
    return getRhs();
  return {};
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()) && getLhs().getType() == getType())
    return getLhs();
  return {};
}

/// Ops whose single result has the type of their first operand.
#define TCC_SAME_AS_FIRST_INFER(OP)                                            \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location>, ValueRange operands,             \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &results) {                                        \
    results.push_back(operands[0].getType());                                  \
    return success();                                                          \
  }
TCC_SAME_AS_FIRST_INFER(NegOp)
TCC_SAME_AS_FIRST_INFER(ReluOp)
#undef TCC_SAME_AS_FIRST_INFER

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

LogicalResult
mlir::tcc::detail::inferReduce(StringRef name, std::optional<Location> loc,
                               RankedTensorType in, ArrayRef<int64_t> axes,
                               bool keepdims, SmallVectorImpl<Type> &results) {
  SmallVector<int64_t> shape;
  int64_t prev = -1;
  for (int64_t a : axes) {
    if (a <= prev || a >= in.getRank())
      return emitOptionalError(loc, "tcc.", name,
                               ": axes must be sorted, unique and in [0, ",
                               in.getRank(), ")");
    prev = a;
  }
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(in.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  results.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

TCC_REDUCE_INFER(ReduceSumOp, "reduce_sum")
TCC_REDUCE_INFER(ReduceMeanOp, "reduce_mean")

static LogicalResult inferAxisOp(StringRef name, std::optional<Location> loc,
                                 Value input, int64_t axis,
                                 SmallVectorImpl<Type> &results) {
  auto in = rankedType(input);
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "tcc.", name, ": axis ", axis,
                             " is out of range for rank ", in.getRank());
  results.push_back(in);
  return success();
}

#define TCC_AXIS_INFER(OP, NAME, INPUT)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,       \
      SmallVectorImpl<Type> &results) {                                        \
    auto adaptor = adaptorFor<OP>(operands, attrs, props, regions);            \
    if (!adaptor.getProperties().axis)                                         \
      return emitOptionalError(loc,                                            \
                               "tcc." NAME ": requires attribute 'axis'");     \
    return inferAxisOp(NAME, loc, adaptor.INPUT(),                             \
                       adaptor.getProperties().axis.getInt(), results);        \
  }
TCC_AXIS_INFER(SoftmaxOp, "softmax", getInput)
TCC_AXIS_INFER(LogSoftmaxOp, "log_softmax", getInput)
#undef TCC_AXIS_INFER

static LogicalResult verifyAxis(Operation *op, Value input, int64_t axis) {
  int64_t rank = rankedType(input).getRank();
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getOutput(), getAxis());
}

LogicalResult LogSoftmaxGradOp::verify() {
  return verifyAxis(*this, getOutput(), getAxis());
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

void AdamWUpdateOp::build(OpBuilder &b, OperationState &state, Value param,
                          Value grad, Value expAvg, Value expAvgSq, Value step,
                          Value lr, double beta1, double beta2, double eps,
                          double weightDecay, bool l2Decay, Type lowType,
                          Value invScale, Value finite) {
  Type t = param.getType();
  build(b, state, t, t, t, lowType, param, grad, expAvg, expAvgSq, step, lr,
        invScale, finite, b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
        b.getF64FloatAttr(eps), b.getF64FloatAttr(weightDecay),
        l2Decay ? b.getUnitAttr() : UnitAttr());
}

LogicalResult AdamWUpdateOp::verify() {
  if (bool(getInvScale()) != bool(getFinite()))
    return emitOpError("takes `unscale` and `if` together (fp16 loss "
                       "scaling's inverse scale and finiteness flag)");
  Value low = getNewParamLow();
  if (!low)
    return success();
  auto p = rankedType(getParam()), l = rankedType(low);
  if (!p.getElementType().isF32() ||
      !isa<BFloat16Type, Float16Type>(l.getElementType()) ||
      l.getShape() != p.getShape())
    return emitOpError("the 16-bit copy of the new parameter must be a bf16 "
                       "or f16 tensor of an f32 parameter's shape, got ")
           << l << " for " << p;
  return success();
}

void AdafactorUpdateOp::build(OpBuilder &b, OperationState &state, Value param,
                              Value grad, Value step, Value lr,
                              ValueRange moments, double beta2Decay,
                              double eps1, double eps2, double d,
                              double weightDecay) {
  build(b, state, param.getType(), moments.getTypes(), param, grad, step, lr,
        moments, b.getF64FloatAttr(beta2Decay), b.getF64FloatAttr(eps1),
        b.getF64FloatAttr(eps2), b.getF64FloatAttr(d),
        b.getF64FloatAttr(weightDecay));
}

/// The second moment's shapes: the row and column factors of the last two
/// dimensions for rank >= 2 (as torch.optim.Adafactor keeps them), else one
/// tensor like the parameter.
LogicalResult AdafactorUpdateOp::verify() {
  auto p = rankedType(getParam());
  if (rankedType(getGrad()) != p || getNewParam().getType() != p)
    return emitOpError("the gradient and the new parameter must have the "
                       "parameter's type ")
           << p;
  SmallVector<SmallVector<int64_t>> want;
  if (p.getRank() >= 2) {
    SmallVector<int64_t> row(p.getShape()), col(p.getShape());
    row.back() = 1;
    col[col.size() - 2] = 1;
    want = {row, col};
  } else {
    want = {SmallVector<int64_t>(p.getShape())};
  }
  if (getMoments().size() != want.size())
    return emitOpError("takes ")
           << want.size() << " second-moment tensor(s) for a parameter of rank "
           << p.getRank() << ", got " << getMoments().size();
  for (auto [i, m] : llvm::enumerate(getMoments())) {
    auto t = rankedType(m);
    if (t.getShape() != ArrayRef<int64_t>(want[i]) ||
        t.getElementType() != p.getElementType())
      return emitOpError("second-moment tensor #")
             << i << " must be " << shapeStr(want[i]) << " of "
             << p.getElementType() << ", got " << t;
    if (getNewMoments()[i].getType() != t)
      return emitOpError("new second-moment tensor #")
             << i << " must have the type of the old one, " << t;
  }
  if (getNewMoments().size() != want.size())
    return emitOpError("returns one new tensor per second-moment tensor");
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

static LogicalResult checkLabels(StringRef name, std::optional<Location> loc,
                                 RankedTensorType logits,
                                 RankedTensorType labels) {
  if (logits.getRank() < 1)
    return emitOptionalError(loc, "tcc.", name,
                             ": logits need a class axis (rank >= 1)");
  if (labels.getShape() != logits.getShape().drop_back())
    return emitOptionalError(loc, "tcc.", name, ": labels have shape ",
                             shapeStr(labels.getShape()), ", expected ",
                             shapeStr(logits.getShape().drop_back()),
                             " (the logits' shape without its class axis)");
  return success();
}

/// `v` as %g writes it (1.5, not 1.500000e+00).
static std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// label_smoothing is a weight between the label and the uniform target.
static LogicalResult checkSmoothing(Operation *op, double s) {
  if (!(s >= 0.0 && s <= 1.0))
    return op->emitOpError("label_smoothing must be in [0, 1], got ")
           << shortNumber(s);
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return checkSmoothing(*this, getLabelSmoothing().convertToDouble());
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return checkSmoothing(*this, getLabelSmoothing().convertToDouble());
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &results) {
  auto logits = rankedType(operands[0]);
  if (failed(checkLabels("softmax_cross_entropy", loc, logits,
                         rankedType(operands[1]))))
    return failure();
  results.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &results) {
  auto logits = rankedType(operands[1]);
  if (failed(checkLabels("softmax_cross_entropy_grad", loc, logits,
                         rankedType(operands[2]))))
    return failure();
  results.push_back(logits);
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          ValueRange operands, DictionaryAttr,
                                          OpaqueProperties, RegionRange,
                                          SmallVectorImpl<Type> &results) {
  auto pred = rankedType(operands[0]), target = rankedType(operands[1]);
  if (pred != target)
    return emitOptionalError(loc, "tcc.mse_loss: prediction ", pred,
                             " and target ", target, " differ");
  results.push_back(RankedTensorType::get({}, pred.getElementType()));
  return success();
}

LogicalResult MseLossGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &results) {
  auto pred = rankedType(operands[1]), target = rankedType(operands[2]);
  if (pred != target)
    return emitOptionalError(loc, "tcc.mse_loss_grad: prediction ", pred,
                             " and target ", target, " differ");
  results.push_back(pred);
  return success();
}

#define GET_OP_CLASSES
#include "dialects/tcc/TccOps.cpp.inc"

bool ReduceSumOp::sumsAllButLastAxis() {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  ArrayRef<int64_t> axes = getAxes();
  if (getKeepdims() || rank < 2 ||
      static_cast<int64_t>(axes.size()) != rank - 1)
    return false;
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != static_cast<int64_t>(i))
      return false;
  return true;
}

std::optional<double> mlir::tcc::splatFloat(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}
