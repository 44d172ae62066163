//===- OnnxOpsRandom.cpp - Builders: random numbers -----------------------===//
//
// RandomNormal, RandomUniform and their Like forms become tcc.random, whose
// values come from tcc.dropout's counter-based generator keyed by (seed,
// `rng.step`, element index): reproducible, redrawn each training step, the
// same when recomputed. Bernoulli(p) is `tcc.random uniform < p`, cast to
// the output type. The values do not depend on the Like input (only its
// shape and type), so no gradient flows into them; mean + scale * z of a
// reparameterization is ordinary arithmetic around the op.
//
// The `seed` attribute (a float in ONNX) seeds the op by its bit pattern;
// without it the node's first output name does (stableHash, as dropout), so
// runs of one model reproduce.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::tcc;

namespace {
enum class Dist { Normal, Uniform };
} // namespace

/// The seed of a random node: its `seed` attribute's bits, else a hash of
/// its first output's name (unique in the graph, stable across exports).
static FailureOr<int64_t> nodeSeed(NodeImporter &node) {
  if (!node.attr("seed"))
    return stableHash(node.proto().output(0));
  FailureOr<float> seed = node.floatAttr("seed", 0.0f);
  if (failed(seed))
    return failure();
  return static_cast<int64_t>(llvm::bit_cast<uint32_t>(*seed));
}

/// The declared type (for setOutput) of float ONNX type `dtype`: null for
/// FLOAT (tcc's own), f16/bf16/f64 as other ops keep them; failure (reported)
/// for any other type.
static FailureOr<Type> declaredFloat(NodeImporter &node, int64_t dtype) {
  MLIRContext *ctx = node.context();
  switch (dtype) {
  case onnx::TensorProto::FLOAT:
    return Type();
  case onnx::TensorProto::FLOAT16:
    return Type(Float16Type::get(ctx));
  case onnx::TensorProto::BFLOAT16:
    return Type(BFloat16Type::get(ctx));
  case onnx::TensorProto::DOUBLE:
    return Type(Float64Type::get(ctx));
  default:
    return node.emitUnsupported("dtype " + onnxTypeName(dtype))
           << "random values of type " << onnxTypeName(dtype)
           << " (supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16)";
  }
}

/// The declared type of a float tensor type as ONNX gave it: null for f32.
static FailureOr<Type> declaredLike(NodeImporter &node, Type like) {
  if (!isa<FloatType>(like)) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << like;
    return node.emitUnsupported("input type " + s)
           << "without a dtype attribute the output takes the input's type, "
           << s << ", which is not a float type";
  }
  return like.isF32() ? Type() : like;
}

/// Binds output 0 to f32 `v` declared as `declared`: a 16-bit type rounds
/// the values to it (as Cast does: the values such a tensor holds), DOUBLE
/// warns that it computes in float32.
static void setFloatOutput(NodeImporter &node, Value v, Type declared) {
  if (declared && (declared.isF16() || declared.isBF16())) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    OpBuilder &b = node.builder();
    Value h = CastOp::create(b, node.loc(),
                             RankedTensorType::get(shape, declared), v);
    v = CastOp::create(b, node.loc(),
                       RankedTensorType::get(shape, b.getF32Type()), h);
  }
  if (declared && declared.isF64())
    warnFloat64(node.graphState(), node.loc());
  node.setOutput(0, v, declared);
}

/// tcc.random of `shape` (f32): normal(a, b) or uniform [a, b).
static FailureOr<Value> drawRandom(NodeImporter &node, ArrayRef<int64_t> shape,
                                   Dist dist, double a, double b) {
  FailureOr<int64_t> seed = nodeSeed(node);
  if (failed(seed))
    return failure();
  if (!std::isfinite(a) || !std::isfinite(b))
    return node.emitError() << "the distribution's parameters must be finite";
  if (dist == Dist::Uniform && !(a <= b))
    return node.emitError() << "low " << a << " is above high " << b;
  FailureOr<Value> step = rngStep(node);
  if (failed(step))
    return failure();
  OpBuilder &bld = node.builder();
  auto type = RankedTensorType::get(shape, bld.getF32Type());
  return RandomOp::create(bld, node.loc(), type, *step,
                          dist == Dist::Normal ? bld.getUnitAttr() : UnitAttr(),
                          bld.getF64FloatAttr(a), bld.getF64FloatAttr(b),
                          bld.getI64IntegerAttr(*seed))
      .getResult();
}

/// The distribution's two parameters: mean and scale, or low and high.
static FailureOr<std::pair<double, double>> params(NodeImporter &node,
                                                   Dist dist) {
  bool normal = dist == Dist::Normal;
  FailureOr<float> a = node.floatAttr(normal ? "mean" : "low", 0.0f);
  FailureOr<float> b = node.floatAttr(normal ? "scale" : "high", 1.0f);
  if (failed(a) || failed(b))
    return failure();
  return std::make_pair(double(*a), double(*b));
}

// RandomNormal, RandomUniform: the `shape` attribute (required) and `dtype`
// (default FLOAT).
static LogicalResult importRandom(NodeImporter &node, Dist dist) {
  FailureOr<std::optional<SmallVector<int64_t>>> shape = node.intsAttr("shape");
  FailureOr<int64_t> dtype = node.intAttr("dtype", onnx::TensorProto::FLOAT);
  FailureOr<std::pair<double, double>> p = params(node, dist);
  if (failed(shape) || failed(dtype) || failed(p))
    return failure();
  if (!*shape)
    return node.emitError() << "requires the ints attribute 'shape'";
  if (llvm::any_of(**shape, [](int64_t d) { return d < 0; }))
    return node.emitError() << "the shape has a negative dimension";
  FailureOr<Type> declared = declaredFloat(node, *dtype);
  if (failed(declared))
    return failure();
  FailureOr<Value> v = drawRandom(node, **shape, dist, p->first, p->second);
  if (failed(v))
    return failure();
  setFloatOutput(node, *v, *declared);
  return success();
}

// RandomNormalLike, RandomUniformLike: input 0's shape; `dtype`, else input
// 0's type. Input 0's values are not read.
static LogicalResult importRandomLike(NodeImporter &node, Dist dist) {
  FailureOr<RankedTensorType> like = node.inputType(0);
  FailureOr<std::pair<double, double>> p = params(node, dist);
  if (failed(like) || failed(p))
    return failure();
  FailureOr<Type> declared;
  if (node.attr("dtype")) {
    FailureOr<int64_t> dtype = node.intAttr("dtype", 0);
    if (failed(dtype))
      return failure();
    declared = declaredFloat(node, *dtype);
  } else {
    FailureOr<Type> t = node.declaredType(0);
    if (failed(t))
      return failure();
    declared = declaredLike(node, *t);
  }
  if (failed(declared))
    return failure();
  if (!like->hasStaticShape())
    return node.emitUnsupported("dynamic shape")
           << "the input's shape must be static";
  FailureOr<Value> v =
      drawRandom(node, like->getShape(), dist, p->first, p->second);
  if (failed(v))
    return failure();
  setFloatOutput(node, *v, *declared);
  return success();
}

LogicalResult mlir::tcc::importRandomNormal(NodeImporter &node) {
  return importRandom(node, Dist::Normal);
}
LogicalResult mlir::tcc::importRandomUniform(NodeImporter &node) {
  return importRandom(node, Dist::Uniform);
}
LogicalResult mlir::tcc::importRandomNormalLike(NodeImporter &node) {
  return importRandomLike(node, Dist::Normal);
}
LogicalResult mlir::tcc::importRandomUniformLike(NodeImporter &node) {
  return importRandomLike(node, Dist::Uniform);
}

// Bernoulli (15): 1 where u < p, u uniform in [0, 1) on a 2^-24 grid, so
// P(1) is p rounded up to that grid. The output type is `dtype`, else the
// input's: a float type, BOOL, or an integer type (as Cast: int64 at run
// time, declared at its width; 0 and 1 fit every one).
LogicalResult mlir::tcc::importBernoulli(NodeImporter &node) {
  FailureOr<Value> p = node.input(0);
  FailureOr<Type> inType = node.declaredType(0);
  if (failed(p) || failed(inType))
    return failure();
  auto pType = cast<RankedTensorType>(p->getType());
  MLIRContext *ctx = node.context();
  // The output's integer type (i1 for BOOL), else null: a float type.
  Type intType;
  FailureOr<Type> declared = Type();
  if (node.attr("dtype")) {
    FailureOr<int64_t> dtype = node.intAttr("dtype", 0);
    if (failed(dtype))
      return failure();
    Type t = onnxElementType(ctx, *dtype);
    if (isa_and_nonnull<IntegerType>(t))
      intType = t;
    else
      declared = declaredFloat(node, *dtype);
  } else {
    declared = declaredLike(node, *inType);
  }
  if (failed(declared))
    return failure();
  FailureOr<Value> u = drawRandom(node, pType.getShape(), Dist::Uniform, 0, 1);
  if (failed(u))
    return failure();
  FailureOr<Value> m = node.create<CompareOp>("lt", *u, *p);
  if (failed(m))
    return failure();
  OpBuilder &b = node.builder();
  if (intType && intType.isInteger(1)) {
    node.setOutput(0, *m);
    return success();
  }
  Type to = intType ? Type(b.getI64Type()) : Type(b.getF32Type());
  Value v = CastOp::create(b, node.loc(),
                           RankedTensorType::get(pType.getShape(), to), *m);
  if (intType) {
    node.setOutput(0, v, intType == b.getI64Type() ? Type() : intType);
    return success();
  }
  setFloatOutput(node, v, *declared);
  return success();
}
