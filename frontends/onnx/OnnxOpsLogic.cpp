//===- OnnxOpsLogic.cpp - Builders: selection, comparison, casts ----------===//
//
// Where, Cast, CastLike, ConstantOfShape, Range, and Add/Sub/Mul/Div on
// integer constants (comparisons and logic: OnnxOpsCompare.cpp). As in
// OnnxOpsData.cpp, everything computable at import is folded: attention
// masks are usually built from constant buffers, shape arithmetic always
// is. What is left runs as tcc.where and tcc.cast; bools are i1 in the IR.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"
#include "runtime/core/prelude/Half.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

/// Float to int64 as the cast kernel does it: truncation toward zero, NaN to
/// 0, saturation beyond the range (where ONNX leaves the result undefined).
static int64_t truncateToI64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v < -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

//===----------------------------------------------------------------------===//
// Where
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importWhere(NodeImporter &node) {
  FailureOr<SmallVector<RankedTensorType>> types = inputTypes(node, 3);
  if (failed(types))
    return failure();
  RankedTensorType cond = (*types)[0], x = (*types)[1], y = (*types)[2];
  if (!cond.getElementType().isInteger(1))
    return node.emitError()
           << "the condition has type " << cond << ", expected a bool tensor";
  FailureOr<SmallVector<int64_t>> shape = broadcastAll(node, *types);
  if (failed(shape))
    return failure();
  DenseElementsAttr c = node.constantInput(0), a = node.constantInput(1),
                    b = node.constantInput(2);
  if (foldable({c, a, b}, *shape)) {
    if (a.getElementType() != b.getElementType())
      return node.emitError()
             << "the branches have different types, " << x << " and " << y;
    SmallVector<int64_t> cv = intValues(c);
    SmallVector<int64_t> cm = broadcastMap(cond.getShape(), *shape),
                         am = broadcastMap(x.getShape(), *shape),
                         bm = broadcastMap(y.getShape(), *shape), map;
    // Pick from the two branches laid end to end.
    for (size_t e = 0; e < cm.size(); ++e)
      map.push_back(cv[cm[e]] ? am[e] : a.getNumElements() + bm[e]);
    node.setConstantOutput(0, take(joinFlat({a, b}), *shape, map));
    return success();
  }
  // A constant condition that is all true or all false picks one branch.
  if (c && c.isSplat()) {
    unsigned branch = c.getSplatValue<bool>() ? 1 : 2;
    RankedTensorType t = (*types)[branch];
    if (t.getShape() == ArrayRef<int64_t>(*shape))
      return node.forwardInput(0, branch);
    FailureOr<Value> v = node.anyInput(branch);
    if (failed(v))
      return failure();
    auto outType = RankedTensorType::get(*shape, t.getElementType());
    node.setOutput(
        0, BroadcastToOp::create(node.builder(), node.loc(), outType, *v)
               .getResult());
    return success();
  }
  FailureOr<Value> cv = node.anyInput(0), av = node.anyInput(1),
                   bv = node.anyInput(2);
  if (failed(cv) || failed(av) || failed(bv))
    return failure();
  FailureOr<Value> r = node.create<WhereOp>(*cv, *av, *bv);
  if (failed(r))
    return failure();
  node.setOutput(0, *r);
  return success();
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// f32 rounded to nearest-even in the 16-bit float type `half` (f16 or
/// bf16) and widened back: what a Cast to FLOAT16 or BFLOAT16 yields.
static float roundToHalf(float x, Type half) {
  return half.isF16() ? ::tcc::rt::f16ToF32(::tcc::rt::f32ToF16(x))
                      : ::tcc::rt::bf16ToF32(::tcc::rt::f32ToBf16(x));
}

/// Converts a constant to element type `to`: f32 (standing for `declared`:
/// f16 and bf16 round, f64 is f32), i1, or an integer type, which wraps.
static DenseElementsAttr castConstant(DenseElementsAttr c, Type to,
                                      Type declared) {
  auto type = RankedTensorType::get(c.getType().getShape(), to);
  Type from = c.getElementType();
  bool half = declared && (declared.isF16() || declared.isBF16());
  if (isa<FloatType>(from)) {
    SmallVector<double> v = floatValues(c);
    if (to.isF32()) {
      if (!half)
        return c;
      for (double &x : v)
        x = roundToHalf((float)x, declared);
      return fromFloats(type, v);
    }
    SmallVector<int64_t> ints;
    for (double x : v)
      ints.push_back(to.isInteger(1) ? x != 0.0 : truncateToI64(x));
    return fromInts(type, ints);
  }
  SmallVector<int64_t> v = intValues(c);
  if (to.isF32()) {
    SmallVector<double> f;
    for (int64_t x : v) {
      // Through f32 first, as the cast kernel converts (a UINT64 constant
      // above INT64_MAX never gets here: OnnxDeclaredTypes.cpp).
      float y = (float)x;
      f.push_back(half ? roundToHalf(y, declared) : y);
    }
    return fromFloats(type, f);
  }
  return fromInts(type, v); // narrowing wraps; to bool is x != 0
}

/// The smallest and largest value of integer type `t` (as int64; ui64's
/// largest reads as INT64_MAX, all of it an i64 can order).
static std::pair<int64_t, int64_t> intRange(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  if (t.isInteger(1))
    return {0, 1};
  if (t.isUnsignedInteger())
    return {0, w >= 64 ? std::numeric_limits<int64_t>::max()
                       : (int64_t)((uint64_t(1) << w) - 1)};
  if (w >= 64)
    return {std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max()};
  return {-(int64_t(1) << (w - 1)), (int64_t(1) << (w - 1)) - 1};
}

/// Input 0 converted to ONNX element type `to` (its MLIR form: f32 for
/// every float type, `declared` saying which; integers of their width; i1).
static LogicalResult castInputTo(NodeImporter &node, Type target, Type declared,
                                 StringRef targetName) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<Type> source = node.declaredType(0);
  if (failed(type) || failed(source))
    return failure();
  if (declared && declared.isF64())
    warnFloat64(node.graphState(), node.loc());
  if (DenseElementsAttr c = node.constantInput(0)) {
    node.setConstantOutput(0, castConstant(c, target, declared));
    return success();
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  auto shapeOf = [&](Type et) {
    return RankedTensorType::get(type->getShape(), et);
  };
  OpBuilder &b = node.builder();
  Type et = type->getElementType(); // the IR's: f32, i64 or i1
  Value v = *x;
  if (target.isF32()) {
    if (!et.isF32())
      v = CastOp::create(b, node.loc(), shapeOf(target), v);
    // A 16-bit float rounds to nearest-even; f32 keeps its values in it.
    if (declared && (declared.isF16() || declared.isBF16()) &&
        !(*source == declared)) {
      Value h = CastOp::create(b, node.loc(), shapeOf(declared), v);
      v = CastOp::create(b, node.loc(), shapeOf(target), h);
    }
    node.setOutput(0, v, declared);
    return success();
  }
  if (target.isInteger(1) || target.isInteger(64)) {
    if (et != target)
      v = CastOp::create(b, node.loc(), shapeOf(target), v);
    node.setOutput(0, v);
    return success();
  }
  // A narrow integer: exact when every value of the source type fits, or
  // from a float, which truncates toward zero like any float-to-integer
  // cast (a float beyond the target's range has no defined result: C and
  // NumPy leave it undefined too).
  auto [lo, hi] = intRange(target);
  bool fits = isa<FloatType>(*source);
  if (isa<IntegerType>(*source)) {
    auto [slo, shi] = intRange(*source);
    fits = slo >= lo && shi <= hi && !source->isUnsignedInteger(64);
  }
  if (!fits && *source != target)
    return node.emitUnsupported("to " + targetName.str() + " at run time")
           << "cannot cast a value computed at run time to " << targetName
           << " (run-time integers are int64; the cast would have to wrap)";
  if (!et.isInteger(64)) // a float or a bool
    v = CastOp::create(b, node.loc(),
                       shapeOf(IntegerType::get(node.context(), 64)), v);
  node.setOutput(0, v, target);
  return success();
}

// `to` names the target type. Every float type computes as f32 (FLOAT16 and
// BFLOAT16 round to nearest-even on the way: the values a 16-bit tensor
// holds), every integer type as i64 (constants wrap to the target width; at
// run time a narrowing cast is refused). `saturate` (opset 19) and
// `round_mode` (24) only change casts to float8 types, which are refused
// here by name, so either value casts the same.
LogicalResult mlir::tcc::importCast(NodeImporter &node) {
  const onnx::AttributeProto *toAttr = node.attr("to");
  if (!toAttr || toAttr->type() != onnx::AttributeProto::INT)
    return node.emitError() << "requires the int attribute 'to'";
  int64_t to = toAttr->i();
  Type target = onnxElementType(node.context(), to);
  if (!target)
    return node.emitUnsupported("to " + onnxTypeName(to))
           << "cannot cast to " << onnxTypeName(to)
           << " (supported: " << kSupportedOnnxTypes << ")";
  Type declared;
  MLIRContext *ctx = node.context();
  if (to == onnx::TensorProto::FLOAT16)
    declared = Float16Type::get(ctx);
  else if (to == onnx::TensorProto::BFLOAT16)
    declared = BFloat16Type::get(ctx);
  else if (to == onnx::TensorProto::DOUBLE)
    declared = Float64Type::get(ctx);
  return castInputTo(node, target, declared, onnxTypeName(to));
}

// A Cast to the element type of input 1, whose values are not read. Its
// `saturate` attribute (from 19) only concerns float8 targets, which tcc
// does not have.
LogicalResult mlir::tcc::importCastLike(NodeImporter &node) {
  FailureOr<Type> like = node.declaredType(1);
  if (failed(like))
    return failure();
  Type target = *like, declared;
  if (isa<FloatType>(target)) {
    declared = target.isF32() ? Type() : target;
    target = Float32Type::get(node.context());
  }
  std::string name;
  llvm::raw_string_ostream os(name);
  os << *like;
  return castInputTo(node, target, declared, name);
}

//===----------------------------------------------------------------------===//
// ConstantOfShape, Range
//===----------------------------------------------------------------------===//

LogicalResult mlir::tcc::importConstantOfShape(NodeImporter &node) {
  FailureOr<SmallVector<int64_t>> shape = node.constantInts(0, "the shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return node.emitError()
           << "shape " << shapeStr(*shape) << " has a negative dimension";
  // The default value is a float32 zero.
  DenseElementsAttr value = DenseElementsAttr::get(
      RankedTensorType::get({1}, Float32Type::get(node.context())), 0.0f);
  if (const onnx::AttributeProto *a = node.attr("value")) {
    if (a->type() != onnx::AttributeProto::TENSOR)
      return node.emitError() << "attribute 'value' should be a tensor";
    if (!onnxElementType(node.context(), a->t().data_type()))
      return node.emitUnsupported("dtype " + onnxTypeName(a->t().data_type()))
             << "attribute 'value' has element type "
             << onnxTypeName(a->t().data_type())
             << " (supported: FLOAT, INT32, INT64, BOOL)";
    FailureOr<DenseElementsAttr> v = convertTensor(
        a->t(), node.describe() + ": attribute 'value'", node.loc());
    if (failed(v))
      return failure();
    if (v->getNumElements() != 1)
      return node.emitError() << "attribute 'value' has " << v->getNumElements()
                              << " elements, expected 1";
    value = *v;
  }
  auto type = RankedTensorType::get(*shape, value.getElementType());
  node.setConstantOutput(
      0, DenseElementsAttr::get(type, value.getValues<Attribute>()[0]));
  return success();
}

// All three inputs are scalars known at import; the output has
// max(ceil((limit - start) / delta), 0) elements.
LogicalResult mlir::tcc::importRange(NodeImporter &node) {
  const char *names[] = {"start", "limit", "delta"};
  SmallVector<DenseElementsAttr> in;
  for (unsigned i = 0; i < 3; ++i) {
    FailureOr<RankedTensorType> t = node.inputType(i);
    if (failed(t))
      return failure();
    DenseElementsAttr c = node.constantInput(i);
    // Valid ONNX (a run-time length), but tcc shapes are static.
    if (!c)
      return node.emitUnsupported("non-constant input " + std::to_string(i))
             << names[i] << " (input '" << node.proto().input(i)
             << "') is not a constant; tcc needs it known at compile time";
    if (c.getNumElements() != 1)
      return node.emitError() << names[i] << " must be a scalar, has shape "
                              << shapeStr(c.getType().getShape());
    if (!in.empty() && c.getElementType() != in[0].getElementType())
      return node.emitError() << "start, limit and delta have different "
                                 "element types";
    in.push_back(c);
  }
  Type et = in[0].getElementType();
  if (et.isF32()) {
    double start = floatValues(in[0])[0], limit = floatValues(in[1])[0],
           delta = floatValues(in[2])[0];
    double count = delta == 0 ? NAN : std::ceil((limit - start) / delta);
    if (!std::isfinite(count) || count > kMaxFoldElements)
      return node.emitError() << "cannot make a range from " << start << " to "
                              << limit << " in steps of " << delta;
    SmallVector<double> v;
    for (int64_t i = 0; i < (int64_t)count; ++i)
      v.push_back(start + i * delta);
    auto type = RankedTensorType::get({(int64_t)v.size()}, et);
    node.setConstantOutput(0, fromFloats(type, v));
    return success();
  }
  int64_t start = intValues(in[0])[0], limit = intValues(in[1])[0],
          delta = intValues(in[2])[0];
  // In double, so that no choice of bounds overflows the count.
  double count =
      delta == 0 ? -1
                 : std::ceil(((double)limit - (double)start) / (double)delta);
  if (delta == 0 || count > kMaxFoldElements)
    return node.emitError() << "cannot make a range from " << start << " to "
                            << limit << " in steps of " << delta;
  SmallVector<int64_t> v;
  for (int64_t i = 0; i < (int64_t)count; ++i)
    v.push_back(start + i * delta);
  auto type = RankedTensorType::get({(int64_t)v.size()}, et);
  node.setConstantOutput(0, fromInts(type, v));
  return success();
}

//===----------------------------------------------------------------------===//
// Integer arithmetic on constants
//===----------------------------------------------------------------------===//

/// Add/Sub/Mul/Div of two float32 constants, each in float32 as the kernels
/// compute them (one IEEE operation: the same bits).
static FailureOr<bool> foldFloatArithmetic(NodeImporter &node,
                                           DenseElementsAttr a,
                                           DenseElementsAttr b) {
  if (node.opset() < 7 && node.attr("axis"))
    return false;
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(a.getType().getShape(), b.getType().getShape());
  if (failed(shape) || !foldable({a, b}, *shape))
    return false; // the op reports the shapes; large results run
  SmallVector<int64_t> am = broadcastMap(a.getType().getShape(), *shape),
                       bm = broadcastMap(b.getType().getShape(), *shape);
  SmallVector<double> av = floatValues(a), bv = floatValues(b), out;
  StringRef op = node.opType();
  for (size_t e = 0; e < am.size(); ++e) {
    float x = (float)av[am[e]], y = (float)bv[bm[e]];
    out.push_back(op == "Add"   ? x + y
                  : op == "Sub" ? x - y
                  : op == "Mul" ? x * y
                                : x / y);
  }
  node.setConstantOutput(
      0, fromFloats(RankedTensorType::get(*shape, a.getElementType()), out));
  return true;
}

FailureOr<bool> mlir::tcc::foldConstantArithmetic(NodeImporter &node) {
  DenseElementsAttr a = node.constantInput(0), b = node.constantInput(1);
  if (a && b && a.getElementType().isF32() && b.getElementType().isF32())
    return foldFloatArithmetic(node, a, b);
  if (!a || !b || !a.getElementType().isInteger() ||
      !b.getElementType().isInteger())
    return false;
  // Before opset 7 an `axis` attribute aligned the operands differently
  // from NumPy; such shape arithmetic does not occur in practice.
  if (node.opset() < 7 && node.attr("axis"))
    return false;
  if (a.getElementType() != b.getElementType())
    return node.emitError() << "operands have different element types, "
                            << a.getType() << " and " << b.getType();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(a.getType().getShape(), b.getType().getShape());
  if (failed(shape))
    return node.emitError()
           << "shapes " << shapeStr(a.getType().getShape()) << " and "
           << shapeStr(b.getType().getShape()) << " do not broadcast";
  SmallVector<int64_t> am = broadcastMap(a.getType().getShape(), *shape),
                       bm = broadcastMap(b.getType().getShape(), *shape);
  SmallVector<int64_t> av = intValues(a), bv = intValues(b), out;
  StringRef op = node.opType();
  for (size_t e = 0; e < am.size(); ++e) {
    // Wrapping arithmetic, as int64 tensors in ONNX runtimes behave.
    uint64_t x = av[am[e]], y = bv[bm[e]];
    if (op == "Add")
      out.push_back((int64_t)(x + y));
    else if (op == "Sub")
      out.push_back((int64_t)(x - y));
    else if (op == "Mul")
      out.push_back((int64_t)(x * y));
    else if (bv[bm[e]] == 0)
      return node.emitError() << "integer division by zero";
    else if (av[am[e]] == std::numeric_limits<int64_t>::min() &&
             bv[bm[e]] == -1)
      out.push_back(av[am[e]]); // the one quotient that overflows: wrap
    else
      out.push_back(av[am[e]] / bv[bm[e]]);
  }
  node.setConstantOutput(
      0, fromInts(RankedTensorType::get(*shape, a.getElementType()), out));
  return true;
}
