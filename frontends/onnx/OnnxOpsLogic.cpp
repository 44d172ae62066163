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

/// Converts a constant to element type `to` (f32, i1, i32, i64).
static DenseElementsAttr castConstant(DenseElementsAttr c, Type to) {
  auto type = RankedTensorType::get(c.getType().getShape(), to);
  Type from = c.getElementType();
  if (isa<FloatType>(from)) { // f32, or a DOUBLE Constant's f64
    SmallVector<double> v = floatValues(c);
    if (to.isF32())
      return from.isF32() ? c : fromFloats(type, v);
    SmallVector<int64_t> ints;
    for (double x : v)
      ints.push_back(to.isInteger(1) ? x != 0.0 : truncateToI64(x));
    return fromInts(type, ints);
  }
  SmallVector<int64_t> v = intValues(c);
  if (to.isF32())
    return fromFloats(type, SmallVector<double>(v.begin(), v.end()));
  return fromInts(type, v); // narrowing wraps; to bool is x != 0
}

/// Input 0 converted to `target` (f32, i1, i32 or i64).
static LogicalResult castInputTo(NodeImporter &node, Type target) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  if (failed(type))
    return failure();
  if (DenseElementsAttr c = node.constantInput(0)) {
    node.setConstantOutput(0, castConstant(c, target));
    return success();
  }
  if (type->getElementType() == target)
    return node.forwardInput(0, 0);
  if (target.isInteger(32))
    return node.emitUnsupported("to INT32 at run time")
           << "cannot cast a value computed at run time to INT32 (run-time "
              "integers are INT64)";
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  auto outType = RankedTensorType::get(type->getShape(), target);
  node.setOutput(
      0, CastOp::create(node.builder(), node.loc(), outType, *x).getResult());
  return success();
}

// `to` names the target type. Constants convert to any of FLOAT, INT32,
// INT64 and BOOL; at run time INT32 does not exist (integers are int64).
// `saturate` (opset 19) and `round_mode` (24) only change casts to float8
// types, which are refused here by name, so either value casts the same.
LogicalResult mlir::tcc::importCast(NodeImporter &node) {
  const onnx::AttributeProto *toAttr = node.attr("to");
  if (!toAttr || toAttr->type() != onnx::AttributeProto::INT)
    return node.emitError() << "requires the int attribute 'to'";
  int64_t to = toAttr->i();
  Type target = onnxElementType(node.context(), to);
  if (!target)
    return node.emitUnsupported("to " + onnxTypeName(to))
           << "cannot cast to " << onnxTypeName(to)
           << " (supported: FLOAT, INT32, INT64, BOOL)";
  return castInputTo(node, target);
}

// A Cast to the element type of input 1, whose values are not read. Its
// `saturate` attribute (from 19) only concerns float8 targets, which tcc
// does not have.
LogicalResult mlir::tcc::importCastLike(NodeImporter &node) {
  FailureOr<RankedTensorType> like = node.inputType(1);
  if (failed(like))
    return failure();
  return castInputTo(node, like->getElementType());
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
