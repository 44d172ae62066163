//===- OnnxOpsArith.cpp - Builders: Sum, Mean, Mod, BitShift, Pow folds ---===//
//
// Variadic Sum and Mean are chains of tcc.add (Mean then divides by the
// count, as NumPy's mean does). Mod, BitShift and Pow of integers fold
// when their operands are constants, computed in the operands' own type
// (wrapping at its width, as ONNX does). Mod runs on tcc.mod otherwise;
// BitShift and integer Pow are refused by name. An integer never runs
// through Pow at run time, since a float pow of integers need not truncate
// to the exact power.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fold;

/// The constants of inputs [0, n), their broadcast shape and the maps into
/// it, when all are constants of one element type and the result is small
/// enough to store; else nullopt (or failure, reported).
namespace {
struct Folded {
  SmallVector<DenseElementsAttr> cs;
  SmallVector<SmallVector<int64_t>> maps;
  SmallVector<int64_t> shape;
  Type element;
};
} // namespace

static FailureOr<std::optional<Folded>> constantOperands(NodeImporter &node,
                                                         unsigned n) {
  FailureOr<SmallVector<RankedTensorType>> types = inputTypes(node, n);
  if (failed(types))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = broadcastAll(node, *types);
  if (failed(shape))
    return failure();
  Folded f;
  for (unsigned i = 0; i < n; ++i)
    f.cs.push_back(node.constantInput(i));
  if (!foldable(f.cs, *shape))
    return std::optional<Folded>();
  f.shape = *shape;
  f.element = f.cs[0].getElementType();
  for (unsigned i = 0; i < n; ++i)
    f.maps.push_back(broadcastMap((*types)[i].getShape(), *shape));
  return std::optional<Folded>(std::move(f));
}

static float asF32(double x) { return static_cast<float>(x); }

//===----------------------------------------------------------------------===//
// Sum, Mean
//===----------------------------------------------------------------------===//

// Variadic from opset 6 (equal shapes; broadcasting from 8, a superset);
// 13 only added types. Mean is defined for floats only.
static LogicalResult importVariadicSum(NodeImporter &node, bool mean) {
  unsigned n = node.numInputs();
  if (n == 0)
    return node.emitError() << "needs at least one input";
  FailureOr<std::optional<Folded>> folded = constantOperands(node, n);
  if (failed(folded))
    return failure();
  if (*folded) {
    Folded &f = **folded;
    for (DenseElementsAttr c : f.cs)
      if (c.getElementType() != f.element)
        return node.emitError() << "inputs have different element types, "
                                << f.cs[0].getType() << " and " << c.getType();
    auto type = RankedTensorType::get(f.shape, f.element);
    int64_t count = numElements(f.shape);
    if (f.element.isF32()) {
      // Left to right in float32, as the chain of kernels adds.
      SmallVector<double> acc(count, 0.0);
      for (unsigned i = 0; i < n; ++i) {
        SmallVector<double> v = floatValues(f.cs[i]);
        for (int64_t e = 0; e < count; ++e)
          acc[e] = i == 0 ? v[f.maps[i][e]] : asF32(acc[e] + v[f.maps[i][e]]);
      }
      if (mean)
        for (double &x : acc)
          x = asF32(x / asF32((double)n));
      node.setConstantOutput(0, fromFloats(type, acc));
      return success();
    }
    if (mean || f.element.isInteger(1))
      return node.emitError()
             << "inputs have type " << f.cs[0].getType() << "; "
             << node.opType() << " takes numeric (Mean: float) tensors";
    // Wrapping, in the inputs' width (fromInts truncates).
    SmallVector<int64_t> acc(count, 0);
    for (unsigned i = 0; i < n; ++i) {
      SmallVector<int64_t> v = intValues(f.cs[i]);
      for (int64_t e = 0; e < count; ++e)
        acc[e] = (int64_t)((uint64_t)acc[e] + (uint64_t)v[f.maps[i][e]]);
    }
    node.setConstantOutput(0, fromInts(type, acc));
    return success();
  }
  FailureOr<Value> acc = node.input(0);
  if (failed(acc))
    return failure();
  for (unsigned i = 1; i < n; ++i) {
    FailureOr<Value> v = node.input(i);
    if (failed(v))
      return failure();
    acc = node.create<AddOp>(*acc, *v);
    if (failed(acc))
      return failure();
  }
  if (mean && n > 1) {
    acc = node.create<DivOp>(*acc, node.scalar((float)n));
    if (failed(acc))
      return failure();
  }
  node.setOutput(0, *acc);
  return success();
}

LogicalResult mlir::tcc::importSum(NodeImporter &node) {
  return importVariadicSum(node, false);
}
LogicalResult mlir::tcc::importMean(NodeImporter &node) {
  return importVariadicSum(node, true);
}

//===----------------------------------------------------------------------===//
// Mod
//===----------------------------------------------------------------------===//

/// tcc.mod of two run-time (or one run-time and one constant) operands:
/// floats in float32 like the other element-wise ops, integers as i64 (a
/// remainder stays in its operands' range, so the narrow types that
/// OnnxDeclaredTypes.cpp lets through are exact).
static LogicalResult importRunTimeMod(NodeImporter &node, bool fmod) {
  FailureOr<RankedTensorType> type = node.inputType(0);
  FailureOr<RankedTensorType> type1 = node.inputType(1);
  if (failed(type) || failed(type1))
    return failure();
  Type et = type->getElementType();
  if (isa<FloatType>(et) != isa<FloatType>(type1->getElementType()))
    return node.emitError() << "operands have different element types, "
                            << *type << " and " << *type1;
  if (et.isInteger(1))
    return node.emitError() << "Mod takes numeric tensors, not bools";
  bool isFloat = isa<FloatType>(et);
  if (isFloat && !fmod)
    return node.emitError() << "a float Mod needs fmod = 1";
  FailureOr<Value> a = isFloat ? node.input(0) : node.anyInput(0);
  FailureOr<Value> b = isFloat ? node.input(1) : node.anyInput(1);
  if (failed(a) || failed(b))
    return failure();
  FailureOr<Value> y =
      node.create<ModOp>(*a, *b, node.builder().getBoolAttr(fmod));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

// Opset 10 (13 added types). fmod = 0: the integer remainder with the sign
// of the divisor (Python's %); fmod = 1: C's fmod, with the dividend's sign,
// the only form for floats (the spec requires it). Constants fold; other
// operands run on tcc.mod.
LogicalResult mlir::tcc::importMod(NodeImporter &node) {
  FailureOr<int64_t> fmod = node.intAttr("fmod", 0);
  if (failed(fmod))
    return failure();
  if (*fmod != 0 && *fmod != 1)
    return node.emitError() << "attribute 'fmod' must be 0 or 1, got " << *fmod;
  FailureOr<std::optional<Folded>> folded = constantOperands(node, 2);
  if (failed(folded))
    return failure();
  if (!*folded)
    return importRunTimeMod(node, *fmod == 1);
  Folded &f = **folded;
  if (f.cs[1].getElementType() != f.element)
    return node.emitError()
           << "operands have different element types, " << f.cs[0].getType()
           << " and " << f.cs[1].getType();
  auto type = RankedTensorType::get(f.shape, f.element);
  int64_t count = numElements(f.shape);
  if (isa<FloatType>(f.element)) {
    if (*fmod != 1)
      return node.emitError() << "a float Mod needs fmod = 1";
    SmallVector<double> a = floatValues(f.cs[0]), b = floatValues(f.cs[1]), out;
    for (int64_t e = 0; e < count; ++e)
      out.push_back(std::fmod(asF32(a[f.maps[0][e]]), asF32(b[f.maps[1][e]])));
    node.setConstantOutput(0, fromFloats(type, out));
    return success();
  }
  if (f.element.isInteger(1))
    return node.emitError() << "Mod takes numeric tensors, not bools";
  SmallVector<int64_t> a = intValues(f.cs[0]), b = intValues(f.cs[1]), out;
  bool isUnsigned = f.element.isUnsignedInteger();
  for (int64_t e = 0; e < count; ++e) {
    int64_t x = a[f.maps[0][e]], y = b[f.maps[1][e]];
    if (y == 0)
      return node.emitError() << "integer modulo by zero";
    if (isUnsigned) { // all 64 bits of a UINT64 are the value
      out.push_back((int64_t)((uint64_t)x % (uint64_t)y));
      continue;
    }
    int64_t r = y == -1 ? 0 : x % y; // INT64_MIN % -1 overflows in C
    if (*fmod == 0 && r != 0 && (r < 0) != (y < 0))
      r += y;
    out.push_back(r);
  }
  node.setConstantOutput(0, fromInts(type, out));
  return success();
}

//===----------------------------------------------------------------------===//
// BitShift
//===----------------------------------------------------------------------===//

// Opset 11: unsigned integers only; shifting by the width or more gives 0
// (NumPy's answer; C leaves it undefined).
LogicalResult mlir::tcc::importBitShift(NodeImporter &node) {
  const onnx::AttributeProto *dir = node.attr("direction");
  if (!dir || dir->type() != onnx::AttributeProto::STRING ||
      (dir->s() != "LEFT" && dir->s() != "RIGHT"))
    return node.emitError()
           << "requires the string attribute 'direction' (LEFT or RIGHT)";
  bool left = dir->s() == "LEFT";
  FailureOr<std::optional<Folded>> folded = constantOperands(node, 2);
  if (failed(folded))
    return failure();
  if (!*folded)
    return node.emitUnsupported("run-time operands")
           << "BitShift folds when both operands are known at import; tcc "
              "has no shift kernel to run it";
  Folded &f = **folded;
  if (!f.element.isUnsignedInteger() || f.cs[1].getElementType() != f.element)
    return node.emitError()
           << "operands have types " << f.cs[0].getType() << " and "
           << f.cs[1].getType() << "; BitShift takes one unsigned integer type";
  unsigned width = f.element.getIntOrFloatBitWidth();
  SmallVector<int64_t> a = intValues(f.cs[0]), b = intValues(f.cs[1]), out;
  for (int64_t e = 0; e < numElements(f.shape); ++e) {
    uint64_t x = a[f.maps[0][e]], y = b[f.maps[1][e]];
    out.push_back(y >= width ? 0 : (int64_t)(left ? x << y : x >> y));
  }
  node.setConstantOutput(
      0, fromInts(RankedTensorType::get(f.shape, f.element), out));
  return success();
}

//===----------------------------------------------------------------------===//
// Pow of constants
//===----------------------------------------------------------------------===//

/// Float to int64 as a cast truncates; NaN and out-of-range values have no
/// defined integer (ONNX leaves them undefined): nullopt.
static std::optional<int64_t> truncated(double v) {
  if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18))
    return std::nullopt;
  return static_cast<int64_t>(v);
}

FailureOr<bool> mlir::tcc::foldConstantPow(NodeImporter &node) {
  DenseElementsAttr base = node.constantInput(0), exp = node.constantInput(1);
  if (!base || !exp)
    return false;
  FailureOr<std::optional<Folded>> folded = constantOperands(node, 2);
  if (failed(folded) || !*folded)
    return failed(folded) ? FailureOr<bool>(failure()) : false;
  Folded &f = **folded;
  Type bt = base.getElementType(), et = exp.getElementType();
  if (bt.isInteger(1) || et.isInteger(1))
    return node.emitError() << "Pow takes numeric tensors, not bools";
  auto type = RankedTensorType::get(f.shape, bt);
  int64_t count = numElements(f.shape);
  bool intExp = isa<IntegerType>(et);
  SmallVector<int64_t> ei = intExp ? intValues(exp) : SmallVector<int64_t>();
  SmallVector<double> ef = intExp ? SmallVector<double>() : floatValues(exp);
  auto expAt = [&](int64_t e) {
    return intExp ? (double)ei[f.maps[1][e]] : ef[f.maps[1][e]];
  };
  if (isa<FloatType>(bt)) {
    // In double, rounded once to float32: NumPy's float32 ** int64.
    SmallVector<double> b = floatValues(base), out;
    for (int64_t e = 0; e < count; ++e)
      out.push_back(asF32(std::pow(b[f.maps[0][e]], expAt(e))));
    node.setConstantOutput(0, fromFloats(type, out));
    return true;
  }
  SmallVector<int64_t> b = intValues(base), out;
  for (int64_t e = 0; e < count; ++e) {
    int64_t x = b[f.maps[0][e]];
    if (!intExp) {
      // An integer base keeps its type: the power in double, truncated.
      std::optional<int64_t> r = truncated(std::pow((double)x, expAt(e)));
      if (!r)
        return node.emitUnsupported("non-finite integer power")
               << x << " ** " << expAt(e)
               << " has no integer value (ONNX leaves it undefined)";
      out.push_back(*r);
      continue;
    }
    int64_t y = ei[f.maps[1][e]];
    if (y < 0)
      return node.emitUnsupported("negative integer exponent")
             << "integer " << x << " ** " << y
             << " (a negative exponent) has no integer result";
    // Square and multiply, wrapping in 64 bits; fromInts then wraps to
    // the base's width (a power's low bits depend only on the low bits).
    uint64_t r = 1, sq = (uint64_t)x;
    for (uint64_t k = (uint64_t)y; k; k >>= 1) {
      if (k & 1)
        r *= sq;
      sq *= sq;
    }
    out.push_back((int64_t)r);
  }
  node.setConstantOutput(0, fromInts(type, out));
  return true;
}
