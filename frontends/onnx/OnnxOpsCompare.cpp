//===- OnnxOpsCompare.cpp - Builders: comparisons, logic, extrema, Trilu --===//
//
// Equal, Less, LessOrEqual, Greater, GreaterOrEqual (one tcc.compare with a
// predicate), And, Or, Xor, Not (one tcc.logic; Not is xor with true),
// Min, Max (chains of tcc.minimum/maximum), Trilu (a select with a constant
// mask), ArgMax, ArgMin, and IsNaN, IsInf (comparisons of x with itself and
// with the infinities). As in OnnxOpsLogic.cpp every op folds when its
// inputs are known at import: masks and shape arithmetic are usually built
// from constants.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

/// Whether two element types compare with one another: int32 and int64
/// alike (int32 constants widen to i64), floats with floats, bools with
/// bools.
static bool sameKind(Type a, Type b) {
  return a.isF32() == b.isF32() && a.isInteger(1) == b.isInteger(1);
}

//===----------------------------------------------------------------------===//
// Comparisons
//===----------------------------------------------------------------------===//

template <class T> static bool holds(StringRef pred, T a, T b) {
  if (pred == "eq")
    return a == b;
  if (pred == "lt")
    return a < b;
  if (pred == "le")
    return a <= b;
  if (pred == "gt")
    return a > b;
  return a >= b;
}

static LogicalResult importComparison(NodeImporter &node, StringRef pred) {
  FailureOr<SmallVector<RankedTensorType>> types = inputTypes(node, 2);
  if (failed(types))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = broadcastAll(node, *types);
  if (failed(shape))
    return failure();
  Type ea = (*types)[0].getElementType(), eb = (*types)[1].getElementType();
  if (!sameKind(ea, eb))
    return node.emitError()
           << "cannot compare " << (*types)[0] << " with " << (*types)[1];
  DenseElementsAttr a = node.constantInput(0), b = node.constantInput(1);
  auto boolType =
      RankedTensorType::get(*shape, IntegerType::get(node.context(), 1));
  if (foldable({a, b}, *shape)) {
    SmallVector<int64_t> am = broadcastMap((*types)[0].getShape(), *shape),
                         bm = broadcastMap((*types)[1].getShape(), *shape), out;
    if (ea.isF32()) {
      SmallVector<double> av = floatValues(a), bv = floatValues(b);
      for (size_t e = 0; e < am.size(); ++e)
        out.push_back(holds(pred, av[am[e]], bv[bm[e]]));
    } else {
      SmallVector<int64_t> av = intValues(a), bv = intValues(b);
      for (size_t e = 0; e < am.size(); ++e)
        out.push_back(holds(pred, av[am[e]], bv[bm[e]]));
    }
    node.setConstantOutput(0, fromInts(boolType, out));
    return success();
  }
  FailureOr<Value> av = node.anyInput(0), bv = node.anyInput(1);
  if (failed(av) || failed(bv))
    return failure();
  FailureOr<Value> r = node.create<CompareOp>(pred, *av, *bv);
  if (failed(r))
    return failure();
  node.setOutput(0, *r);
  return success();
}

LogicalResult mlir::tcc::importEqual(NodeImporter &node) {
  return importComparison(node, "eq");
}
LogicalResult mlir::tcc::importLess(NodeImporter &node) {
  return importComparison(node, "lt");
}
LogicalResult mlir::tcc::importLessOrEqual(NodeImporter &node) {
  return importComparison(node, "le");
}
LogicalResult mlir::tcc::importGreater(NodeImporter &node) {
  return importComparison(node, "gt");
}
LogicalResult mlir::tcc::importGreaterOrEqual(NodeImporter &node) {
  return importComparison(node, "ge");
}

//===----------------------------------------------------------------------===//
// And, Or, Xor, Not
//===----------------------------------------------------------------------===//

static bool apply(StringRef kind, bool a, bool b) {
  if (kind == "and")
    return a && b;
  if (kind == "or")
    return a || b;
  return a != b;
}

/// `kind` of inputs 0 and 1, or of input 0 and a constant true (Not).
static LogicalResult importLogic(NodeImporter &node, StringRef kind,
                                 bool unary) {
  FailureOr<SmallVector<RankedTensorType>> types =
      inputTypes(node, unary ? 1 : 2);
  if (failed(types))
    return failure();
  for (RankedTensorType t : *types)
    if (!t.getElementType().isInteger(1))
      return node.emitError()
             << "input has type " << t << ", expected a bool tensor";
  auto scalarBool =
      RankedTensorType::get({}, IntegerType::get(node.context(), 1));
  DenseElementsAttr a = node.constantInput(0);
  DenseElementsAttr b =
      unary ? DenseElementsAttr::get(scalarBool, true) : node.constantInput(1);
  SmallVector<RankedTensorType> both = {(*types)[0],
                                        unary ? scalarBool : (*types)[1]};
  FailureOr<SmallVector<int64_t>> shape = broadcastAll(node, both);
  if (failed(shape))
    return failure();
  auto boolType = RankedTensorType::get(*shape, scalarBool.getElementType());
  if (foldable({a, b}, *shape)) {
    SmallVector<int64_t> am = broadcastMap(both[0].getShape(), *shape),
                         bm = broadcastMap(both[1].getShape(), *shape), out;
    SmallVector<int64_t> av = intValues(a), bv = intValues(b);
    for (size_t e = 0; e < am.size(); ++e)
      out.push_back(apply(kind, av[am[e]] != 0, bv[bm[e]] != 0));
    node.setConstantOutput(0, fromInts(boolType, out));
    return success();
  }
  FailureOr<Value> av = node.anyInput(0);
  if (failed(av))
    return failure();
  Value bv;
  if (unary) {
    bv = ConstantOp::create(node.builder(), node.loc(), b);
  } else {
    FailureOr<Value> v = node.anyInput(1);
    if (failed(v))
      return failure();
    bv = *v;
  }
  FailureOr<Value> r = node.create<LogicOp>(kind, *av, bv);
  if (failed(r))
    return failure();
  node.setOutput(0, *r);
  return success();
}

LogicalResult mlir::tcc::importAnd(NodeImporter &node) {
  return importLogic(node, "and", false);
}
LogicalResult mlir::tcc::importOr(NodeImporter &node) {
  return importLogic(node, "or", false);
}
LogicalResult mlir::tcc::importXor(NodeImporter &node) {
  return importLogic(node, "xor", false);
}
LogicalResult mlir::tcc::importNot(NodeImporter &node) {
  return importLogic(node, "xor", true);
}

//===----------------------------------------------------------------------===//
// Min, Max
//===----------------------------------------------------------------------===//

/// NaN wins, as in the kernels (runtime/cpu/KernelsLogic.cpp).
template <class T> static T pick(bool isMax, T a, T b) {
  return ((isMax ? a > b : a < b) || a != a) ? a : b;
}

// Variadic: a chain of binary ops from the left, so a tie among three
// inputs splits the gradient 1/4, 1/4, 1/2 (PyTorch has only the binary
// torch.maximum/minimum, which torch.onnx exports as two-input Max/Min).
static LogicalResult importExtremum(NodeImporter &node, bool isMax) {
  unsigned n = node.numInputs();
  if (n == 0)
    return node.emitError() << "needs at least one input";
  FailureOr<SmallVector<RankedTensorType>> types = inputTypes(node, n);
  if (failed(types))
    return failure();
  Type e0 = (*types)[0].getElementType();
  for (RankedTensorType t : *types)
    if (!sameKind(t.getElementType(), e0) || t.getElementType().isInteger(1))
      return node.emitError() << "inputs have element types " << (*types)[0]
                              << " and " << t << "; expected one numeric type";
  FailureOr<SmallVector<int64_t>> shape = broadcastAll(node, *types);
  if (failed(shape))
    return failure();
  SmallVector<DenseElementsAttr> cs;
  for (unsigned i = 0; i < n; ++i)
    cs.push_back(node.constantInput(i));
  if (foldable(cs, *shape)) {
    auto type = RankedTensorType::get(*shape, e0);
    SmallVector<int64_t> m0 = broadcastMap((*types)[0].getShape(), *shape);
    if (e0.isF32()) {
      SmallVector<double> acc, v0 = floatValues(cs[0]);
      for (int64_t k : m0)
        acc.push_back(v0[k]);
      for (unsigned i = 1; i < n; ++i) {
        SmallVector<double> v = floatValues(cs[i]);
        SmallVector<int64_t> m = broadcastMap((*types)[i].getShape(), *shape);
        for (size_t e = 0; e < m.size(); ++e)
          acc[e] = pick(isMax, acc[e], v[m[e]]);
      }
      node.setConstantOutput(0, fromFloats(type, acc));
    } else {
      SmallVector<int64_t> acc, v0 = intValues(cs[0]);
      for (int64_t k : m0)
        acc.push_back(v0[k]);
      for (unsigned i = 1; i < n; ++i) {
        SmallVector<int64_t> v = intValues(cs[i]);
        SmallVector<int64_t> m = broadcastMap((*types)[i].getShape(), *shape);
        for (size_t e = 0; e < m.size(); ++e)
          acc[e] = pick(isMax, acc[e], v[m[e]]);
      }
      node.setConstantOutput(0, fromInts(type, acc));
    }
    return success();
  }
  if (n == 1)
    return node.forwardInput(0, 0);
  FailureOr<Value> acc = node.anyInput(0);
  if (failed(acc))
    return failure();
  for (unsigned i = 1; i < n; ++i) {
    FailureOr<Value> v = node.anyInput(i);
    if (failed(v))
      return failure();
    acc = isMax ? node.create<MaximumOp>(*acc, *v)
                : node.create<MinimumOp>(*acc, *v);
    if (failed(acc))
      return failure();
  }
  node.setOutput(0, *acc);
  return success();
}

LogicalResult mlir::tcc::importMax(NodeImporter &node) {
  return importExtremum(node, true);
}
LogicalResult mlir::tcc::importMin(NodeImporter &node) {
  return importExtremum(node, false);
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

// Keeps the elements on and above (upper) or below (lower) the k-th
// diagonal of the last two dimensions and zeroes the rest. On a run-time
// input it is tcc.where with a constant mask of those two dimensions, whose
// gradient is the same selection of dy.
LogicalResult mlir::tcc::importTrilu(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> upper = node.intAttr("upper", 1);
  if (failed(type) || failed(upper))
    return failure();
  if (type->getRank() < 2)
    return node.emitError() << "input has shape " << shapeStr(type->getShape())
                            << "; Trilu needs rank 2 or more";
  int64_t k = 0;
  if (node.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> kv = node.constantInts(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return node.emitError()
             << "k must be a scalar, has " << kv->size() << " elements";
    k = (*kv)[0];
  }
  ArrayRef<int64_t> shape = type->getShape();
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  auto keeps = [&](int64_t i, int64_t j) {
    return *upper ? j - i >= k : j - i <= k;
  };
  Type et = type->getElementType();
  if (DenseElementsAttr c = node.constantInput(0)) {
    auto outType = RankedTensorType::get(shape, et);
    int64_t n = type->getNumElements();
    if (et.isF32()) {
      SmallVector<double> v = floatValues(c);
      for (int64_t e = 0; e < n; ++e)
        if (!keeps((e / cols) % rows, e % cols))
          v[e] = 0;
      node.setConstantOutput(0, fromFloats(outType, v));
    } else {
      SmallVector<int64_t> v = intValues(c);
      for (int64_t e = 0; e < n; ++e)
        if (!keeps((e / cols) % rows, e % cols))
          v[e] = 0;
      node.setConstantOutput(0, fromInts(outType, v));
    }
    return success();
  }
  SmallVector<int64_t> mask;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(keeps(i, j));
  auto boolType =
      RankedTensorType::get({rows, cols}, IntegerType::get(node.context(), 1));
  OpBuilder &b = node.builder();
  Value m = ConstantOp::create(b, node.loc(), fromInts(boolType, mask));
  auto zeroType = RankedTensorType::get(
      {}, et.isInteger() && !et.isInteger(1) ? b.getI64Type() : et);
  DenseElementsAttr zero =
      et.isF32() ? fromFloats(zeroType, {0.0}) : fromInts(zeroType, {0});
  Value z = ConstantOp::create(b, node.loc(), zero);
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = node.create<WhereOp>(m, *x, z);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

// `select_last_index` came at 12 (absent: 0, the first index of a tie).
static LogicalResult importArgExtremum(NodeImporter &node, bool isMax) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<int64_t> axisAttr = node.intAttr("axis", 0);
  FailureOr<int64_t> keepdims = node.intAttr("keepdims", 1);
  FailureOr<int64_t> last = node.intAttr("select_last_index", 0);
  if (failed(type) || failed(axisAttr) || failed(keepdims) || failed(last))
    return failure();
  Type et = type->getElementType();
  if (et.isInteger(1))
    return node.emitError()
           << "input has type " << *type << ", expected a numeric tensor";
  FailureOr<int64_t> axis =
      node.normalizeAxis("attribute 'axis'", *axisAttr, type->getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> shape = type->getShape();
  if (shape[*axis] == 0)
    return node.emitError() << "input has shape " << shapeStr(shape)
                            << ", empty along axis " << *axis;
  SmallVector<int64_t> outShape(shape);
  outShape.erase(outShape.begin() + *axis);
  SmallVector<int64_t> kept(shape);
  kept[*axis] = 1;
  auto i64 = IntegerType::get(node.context(), 64);
  if (DenseElementsAttr c = node.constantInput(0)) {
    int64_t n = shape[*axis], inner = 1, outer = 1;
    for (int64_t d = *axis + 1; d < (int64_t)shape.size(); ++d)
      inner *= shape[d];
    for (int64_t d = 0; d < *axis; ++d)
      outer *= shape[d];
    SmallVector<double> v = et.isF32() ? floatValues(c) : SmallVector<double>();
    SmallVector<int64_t> iv =
        et.isF32() ? SmallVector<int64_t>() : intValues(c);
    auto at = [&](int64_t f) { return et.isF32() ? v[f] : (double)iv[f]; };
    SmallVector<int64_t> out;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j) {
          double x = at((o * n + j) * inner + i),
                 y = at((o * n + best) * inner + i);
          bool take = std::isnan(y) ? (*last && std::isnan(x))
                      : std::isnan(x)
                          ? true
                          : ((isMax ? x > y : x < y) || (*last && x == y));
          if (take)
            best = j;
        }
        out.push_back(best);
      }
    node.setConstantOutput(
        0,
        fromInts(RankedTensorType::get(*keepdims ? kept : outShape, i64), out));
    return success();
  }
  FailureOr<Value> x = node.anyInput(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y =
      isMax ? node.create<ArgMaxOp>(*x, uint64_t(*axis), *last != 0)
            : node.create<ArgMinOp>(*x, uint64_t(*axis), *last != 0);
  if (failed(y))
    return failure();
  if (*keepdims)
    y = node.reshape(*y, kept);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

LogicalResult mlir::tcc::importArgMax(NodeImporter &node) {
  return importArgExtremum(node, true);
}
LogicalResult mlir::tcc::importArgMin(NodeImporter &node) {
  return importArgExtremum(node, false);
}

//===----------------------------------------------------------------------===//
// IsNaN, IsInf
//===----------------------------------------------------------------------===//

// NaN is the one value not equal to itself: not (x == x).
LogicalResult mlir::tcc::importIsNaN(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  FailureOr<Value> same = node.create<CompareOp>("eq", *x, *x);
  if (failed(same))
    return failure();
  auto scalarBool =
      RankedTensorType::get({}, IntegerType::get(node.context(), 1));
  Value t = ConstantOp::create(node.builder(), node.loc(),
                               DenseElementsAttr::get(scalarBool, true));
  FailureOr<Value> y = node.create<LogicOp>("xor", *same, t);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

// x == +inf and/or x == -inf, as detect_positive and detect_negative ask
// (both by default); neither gives false everywhere.
LogicalResult mlir::tcc::importIsInf(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  FailureOr<int64_t> neg = node.intAttr("detect_negative", 1);
  FailureOr<int64_t> pos = node.intAttr("detect_positive", 1);
  if (failed(x) || failed(neg) || failed(pos))
    return failure();
  auto boolType =
      RankedTensorType::get(cast<RankedTensorType>(x->getType()).getShape(),
                            IntegerType::get(node.context(), 1));
  if (!*neg && !*pos) {
    node.setConstantOutput(0, DenseElementsAttr::get(boolType, false));
    return success();
  }
  float inf = std::numeric_limits<float>::infinity();
  FailureOr<Value> y = failure();
  if (*pos)
    y = node.create<CompareOp>("eq", *x, node.scalar(inf));
  if (*neg) {
    FailureOr<Value> n = node.create<CompareOp>("eq", *x, node.scalar(-inf));
    if (failed(n))
      return failure();
    y = *pos ? (failed(y) ? y : node.create<LogicOp>("or", *y, *n)) : n;
  }
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}
