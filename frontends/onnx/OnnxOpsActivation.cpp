//===- OnnxOpsActivation.cpp - Builders: math functions, norms, dropout ---===//
//
// Element-wise functions map one to one. Pow with a constant exponent (what
// exporters write for x**2, x.pow(0.5)) becomes tcc.pow_scalar. GELU arrives
// from torch.onnx.export as a subgraph of these ops (opset <= 18) and from
// opset 20 as the Gelu op. LayerNormalization becomes tcc.layer_norm;
// training-mode Dropout becomes tcc.dropout, which reads the `rng.step`
// state argument this file adds to @forward (see docs/ARCHITECTURE.md).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"
#include "frontends/onnx/OnnxGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Builds `OpTy(input 0, args...)` and binds it to output 0.
template <typename OpTy, typename... Args>
static LogicalResult importUnary(NodeImporter &node, Args &&...args) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.create<OpTy>(*x, std::forward<Args>(args)...);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

LogicalResult mlir::tcc::importExp(NodeImporter &node) {
  return importUnary<ExpOp>(node);
}
/// `fn` of a float32 constant, in float32: buckets computed from constants
/// (T5's relative positions go Log -> Div -> Cast to int64) must be known
/// at import, since integer tensors do not exist at run time.
static bool foldFloatUnary(NodeImporter &node, float (*fn)(float)) {
  DenseElementsAttr c = node.constantInput(0);
  if (!c || !c.getElementType().isF32() ||
      !foldable({c}, c.getType().getShape()))
    return false;
  SmallVector<double> v = floatValues(c);
  for (double &x : v)
    x = fn((float)x);
  node.setConstantOutput(0, fromFloats(cast<RankedTensorType>(c.getType()), v));
  return true;
}

LogicalResult mlir::tcc::importLog(NodeImporter &node) {
  if (foldFloatUnary(node, [](float x) { return std::log(x); }))
    return success();
  return importUnary<LogOp>(node);
}
LogicalResult mlir::tcc::importSqrt(NodeImporter &node) {
  if (foldFloatUnary(node, [](float x) { return std::sqrt(x); }))
    return success();
  return importUnary<SqrtOp>(node);
}
LogicalResult mlir::tcc::importTanh(NodeImporter &node) {
  return importUnary<TanhOp>(node);
}
LogicalResult mlir::tcc::importSigmoid(NodeImporter &node) {
  return importUnary<SigmoidOp>(node);
}
LogicalResult mlir::tcc::importErf(NodeImporter &node) {
  return importUnary<ErfOp>(node);
}
// Integer Neg appears in shape arithmetic (e.g. the expanded form of
// LayerNormalization): folded when the input is an integer constant.
LogicalResult mlir::tcc::importNeg(NodeImporter &node) {
  DenseElementsAttr c = node.constantInput(0);
  if (c && isa<IntegerType>(c.getElementType()) &&
      !c.getElementType().isInteger(1)) {
    node.setConstantOutput(
        0, c.mapValues(c.getElementType(), [](const APInt &v) { return -v; }));
    return success();
  }
  return importUnary<NegOp>(node);
}

// 1 / x, as pow_scalar(x, -1) computes it.
LogicalResult mlir::tcc::importReciprocal(NodeImporter &node) {
  return importUnary<PowScalarOp>(node, node.builder().getF64FloatAttr(-1.0));
}

// Gelu-20: approximate is "none" or "tanh".
LogicalResult mlir::tcc::importGelu(NodeImporter &node) {
  std::string approximate = "none";
  if (const onnx::AttributeProto *a = node.attr("approximate")) {
    if (a->type() != onnx::AttributeProto::STRING)
      return node.emitError() << "attribute 'approximate' should be a string";
    approximate = a->s();
  }
  if (approximate != "none" && approximate != "tanh")
    return node.emitError() << "attribute 'approximate' is '" << approximate
                            << "'; expected 'none' or 'tanh'";
  return importUnary<GeluOp>(node, StringRef(approximate));
}

//===----------------------------------------------------------------------===//
// Pow
//===----------------------------------------------------------------------===//


// Pow-12 and later allow an exponent of another numeric type (integers).
// Constants fold (OnnxOpsArith.cpp), whatever their types. At run time the
// base is a float: a constant exponent that does not widen the result is
// the fast path, any other is converted to float32. Before opset 7 the
// exponent broadcast by the `broadcast` and `axis` attributes.
LogicalResult mlir::tcc::importPow(NodeImporter &node) {
  FailureOr<bool> folded = foldConstantPow(node);
  if (failed(folded) || *folded)
    return failure(failed(folded));
  FailureOr<Value> x = node.input(0);
  FailureOr<RankedTensorType> eType = node.inputType(1);
  if (failed(x) || failed(eType))
    return failure();
  std::optional<double> e = splatNumber(node.constantInput(1));
  if (e && (node.opset() >= 7 || eType->getNumElements() == 1)) {
    auto shape = broadcastShapes(typeOf(*x).getShape(), eType->getShape());
    if (succeeded(shape) && ArrayRef<int64_t>(*shape) == typeOf(*x).getShape())
      return importUnary<PowScalarOp>(node, node.builder().getF64FloatAttr(*e));
  }
  FailureOr<Value> exponent = node.anyInput(1);
  if (failed(exponent))
    return failure();
  if (!typeOf(*exponent).getElementType().isF32()) {
    if (typeOf(*exponent).getElementType().isInteger(1))
      return node.emitError() << "the exponent is a bool tensor";
    auto f32 = RankedTensorType::get(typeOf(*exponent).getShape(),
                                     node.builder().getF32Type());
    exponent =
        CastOp::create(node.builder(), node.loc(), f32, *exponent).getResult();
  }
  if (node.opset() < 7) {
    exponent = legacyBroadcastRhs(node, *x, *exponent);
    if (failed(exponent))
      return failure();
  }
  FailureOr<Value> y = node.create<PowOp>(*x, *exponent);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormalization
//===----------------------------------------------------------------------===//

// Opset 17: normalizes over [axis, rank); Scale and the optional B broadcast
// to the normalized shape (they are broadcast explicitly, so the op sees that
// shape and the gradient rule of broadcast_to sums back); optional outputs
// Mean and InvStdDev. stash_type 1 (float) is the only precision tcc computes
// statistics in.
LogicalResult mlir::tcc::importLayerNormalization(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  FailureOr<int64_t> axisAttr = node.intAttr("axis", -1);
  FailureOr<float> epsilon = node.floatAttr("epsilon", 1e-5f);
  FailureOr<int64_t> stash = node.intAttr("stash_type", 1);
  if (failed(x) || failed(axisAttr) || failed(epsilon) || failed(stash))
    return failure();
  if (*stash != 1)
    return node.emitUnsupported("stash_type " + std::to_string(*stash))
           << "attribute 'stash_type' = " << *stash
           << " is not supported; statistics are computed in float (1)";
  if (!(*epsilon >= 0.0f))
    return node.emitError()
           << "attribute 'epsilon' = " << *epsilon << " must not be negative";
  RankedTensorType xType = typeOf(*x);
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *axisAttr, xType.getRank());
  if (failed(axis))
    return failure();
  auto normType = RankedTensorType::get(xType.getShape().drop_front(*axis),
                                        xType.getElementType());

  auto toNormalized = [&](Value v, StringRef what) -> FailureOr<Value> {
    if (v.getType() == normType)
      return v;
    auto shape = broadcastShapes(typeOf(v).getShape(), normType.getShape());
    if (failed(shape) || ArrayRef<int64_t>(*shape) != normType.getShape())
      return node.emitError()
             << what << " of shape " << shapeStr(typeOf(v).getShape())
             << " does not broadcast to the normalized shape "
             << shapeStr(normType.getShape()) << " (input "
             << shapeStr(xType.getShape()) << " from axis " << *axis << ")";
    return BroadcastToOp::create(node.builder(), node.loc(), normType, v)
        .getResult();
  };
  FailureOr<Value> scale = node.input(1);
  if (failed(scale))
    return failure();
  scale = toNormalized(*scale, "Scale");
  if (failed(scale))
    return failure();
  FailureOr<Value> bias;
  if (node.hasInput(2)) {
    bias = node.input(2);
    if (succeeded(bias))
      bias = toNormalized(*bias, "B");
  } else {
    auto zero = DenseElementsAttr::get(normType, 0.0f);
    bias = ConstantOp::create(node.builder(), node.loc(), zero).getResult();
  }
  if (failed(bias))
    return failure();

  auto op = LayerNormOp::create(node.builder(), node.loc(), *x, *scale, *bias,
                                node.builder().getI64IntegerAttr(*axis),
                                node.builder().getF64FloatAttr(*epsilon));
  for (unsigned i = 0; i < 3; ++i)
    node.setOutput(i, op->getResult(i));
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

/// FNV-1a of `s`: a per-node seed that depends only on the node.
int64_t mlir::tcc::stableHash(StringRef s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return static_cast<int64_t>(h);
}

/// The `rng.step` state argument of @forward, added on first use: the step
/// counter every tcc.dropout and tcc.random reads (tcc-build-loss advances it
/// per step).
FailureOr<Value> mlir::tcc::rngStep(NodeImporter &node) {
  static constexpr StringLiteral kName = "rng.step";
  auto func =
      dyn_cast<func::FuncOp>(node.builder().getInsertionBlock()->getParentOp());
  if (!func)
    return node.emitError() << "dropout outside of @forward";
  MLIRContext *ctx = node.context();
  auto type = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, "tcc.name");
    if (!name || name.getValue() != kName)
      continue;
    auto kind = func.getArgAttrOfType<StringAttr>(i, "tcc.kind");
    if (!kind || kind.getValue() != "state" ||
        func.getArgument(i).getType() != type)
      return node.emitError()
             << "the model's " << (kind ? kind.getValue() : "") << " '" << kName
             << "' clashes with the random-number state of dropout, a "
                "tensor<i64> of kind state by that name";
    return Value(func.getArgument(i));
  }
  NamedAttrList attrs;
  attrs.set("tcc.kind", StringAttr::get(ctx, "state"));
  attrs.set("tcc.name", StringAttr::get(ctx, kName));
  unsigned index = func.getNumArguments();
  Location loc = NameLoc::get(StringAttr::get(ctx, kName), node.loc());
  if (failed(func.insertArgument(index, type, attrs.getDictionary(ctx), loc)))
    return node.emitError() << "cannot add the '" << kName << "' argument";
  return Value(func.getArgument(index));
}

/// Output 1 (the mask) of an inactive dropout: all true.
static void setAllTrueMask(NodeImporter &node, RankedTensorType xType) {
  auto i1 = IntegerType::get(node.context(), 1);
  node.setConstantOutput(
      1, DenseElementsAttr::get(RankedTensorType::get(xType.getShape(), i1),
                                true));
}

// Opsets 7 to 11: inference only (output = input).
LogicalResult mlir::tcc::importDropoutInference(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type) || failed(node.forwardInput(0, 0)))
    return failure();
  setAllTrueMask(node, *type);
  return success();
}

// Opset 12+: ratio (default 0.5) and training_mode (default false) are
// inputs and must be constants. Inference mode or ratio 0 is the identity
// (as in PyTorch), with an all-true mask.
LogicalResult mlir::tcc::importDropout(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  FailureOr<double> training =
      constantScalar(node, 2, "the training_mode", 0.0);
  FailureOr<int64_t> seedAttr = node.intAttr("seed", 0);
  if (failed(x) || failed(training) || failed(seedAttr))
    return failure();
  auto identity = [&] {
    node.setOutput(0, *x);
    setAllTrueMask(node, typeOf(*x));
    return success();
  };
  // In inference mode the ratio is unused and may be a runtime value; a
  // constant one is still checked.
  if (*training == 0.0 && node.hasInput(1) && !node.constantInput(1))
    return identity();
  FailureOr<double> ratio = constantScalar(node, 1, "the ratio", 0.5);
  if (failed(ratio))
    return failure();
  if (!(*ratio >= 0.0 && *ratio <= 1.0))
    return node.emitError()
           << "the ratio is " << *ratio << "; it must be in [0, 1]";
  if (*training == 0.0 || *ratio == 0.0)
    return identity();
  FailureOr<Value> step = rngStep(node);
  if (failed(step))
    return failure();
  // Without a seed attribute each node gets its own stream from the name of
  // its output, which is unique in the graph and stable across exports.
  int64_t seed =
      node.attr("seed") ? *seedAttr : stableHash(node.proto().output(0));
  auto op = DropoutOp::create(node.builder(), node.loc(), *x, *step,
                              node.builder().getF64FloatAttr(*ratio),
                              node.builder().getI64IntegerAttr(seed));
  node.setOutput(0, op.getResult());
  // The optional mask output is bool: mask != 0. Exporters name it though
  // nothing reads it; the cast is then dead and canonicalization drops it.
  if (node.proto().output_size() > 1 && !node.proto().output(1).empty()) {
    auto maskType = RankedTensorType::get(typeOf(*x).getShape(),
                                          IntegerType::get(node.context(), 1));
    node.setOutput(
        1, CastOp::create(node.builder(), node.loc(), maskType, op.getMask())
               .getResult());
  }
  return success();
}
