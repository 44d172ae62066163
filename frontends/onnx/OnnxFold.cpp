//===- OnnxFold.cpp - Import-time tensor arithmetic -----------------------===//
#include "frontends/onnx/OnnxFold.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tcc;

int64_t fold::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SmallVector<int64_t> fold::broadcastMap(ArrayRef<int64_t> in,
                                        ArrayRef<int64_t> out) {
  SmallVector<int64_t> inStrides(in.size(), 1), idx(out.size(), 0), map;
  for (int64_t i = (int64_t)in.size() - 2; i >= 0; --i)
    inStrides[i] = inStrides[i + 1] * in[i + 1];
  size_t shift = out.size() - in.size();
  int64_t n = numElements(out);
  map.reserve(n);
  for (int64_t e = 0; e < n; ++e) {
    int64_t flat = 0;
    for (size_t d = 0; d < in.size(); ++d)
      flat += (in[d] == 1 ? 0 : idx[d + shift]) * inStrides[d];
    map.push_back(flat);
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d])
        break;
      idx[d] = 0;
    }
  }
  return map;
}

SmallVector<int64_t> fold::intValues(DenseElementsAttr c) {
  // Bools and unsigned types zero-extend (ui64 keeps its 64 bits).
  bool zext =
      c.getElementType().isInteger(1) || c.getElementType().isUnsignedInteger();
  SmallVector<int64_t> out;
  for (const APInt &x : c.getValues<APInt>())
    out.push_back(zext ? (int64_t)x.getZExtValue() : x.getSExtValue());
  return out;
}

SmallVector<double> fold::floatValues(DenseElementsAttr c) {
  SmallVector<double> out;
  for (const APFloat &x : c.getValues<APFloat>())
    out.push_back(x.convertToDouble());
  return out;
}

DenseElementsAttr fold::fromInts(RankedTensorType type, ArrayRef<int64_t> v) {
  Type et = type.getElementType();
  if (et.isF32()) {
    SmallVector<float> f(v.begin(), v.end());
    return DenseElementsAttr::get(type, ArrayRef<float>(f));
  }
  unsigned bits = et.getIntOrFloatBitWidth();
  SmallVector<APInt> a;
  for (int64_t x : v)
    a.push_back(bits == 1 ? APInt(1, x != 0 ? 1 : 0)
                          : APInt(bits, (uint64_t)x, /*isSigned=*/true,
                                  /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, a);
}

DenseElementsAttr fold::fromFloats(RankedTensorType type, ArrayRef<double> v) {
  SmallVector<float> f(v.begin(), v.end());
  return DenseElementsAttr::get(type, ArrayRef<float>(f));
}

DenseElementsAttr fold::take(DenseElementsAttr c, ArrayRef<int64_t> shape,
                             ArrayRef<int64_t> map) {
  auto type = RankedTensorType::get(shape, c.getElementType());
  if (c.isSplat())
    return c.resizeSplat(type);
  if (c.getElementType().isF32()) {
    SmallVector<float> src(c.getValues<float>()), out;
    out.reserve(map.size());
    for (int64_t m : map)
      out.push_back(src[m]);
    return DenseElementsAttr::get(type, ArrayRef<float>(out));
  }
  SmallVector<APInt> src(c.getValues<APInt>()), out;
  out.reserve(map.size());
  for (int64_t m : map)
    out.push_back(src[m]);
  return DenseElementsAttr::get(type, out);
}

DenseElementsAttr fold::joinFlat(ArrayRef<DenseElementsAttr> parts) {
  Type et = parts.front().getElementType();
  int64_t n = 0;
  for (DenseElementsAttr c : parts)
    n += c.getNumElements();
  auto type = RankedTensorType::get({n}, et);
  if (et.isF32()) {
    SmallVector<float> all;
    for (DenseElementsAttr c : parts)
      llvm::append_range(all, c.getValues<float>());
    return DenseElementsAttr::get(type, ArrayRef<float>(all));
  }
  SmallVector<APInt> all;
  for (DenseElementsAttr c : parts)
    llvm::append_range(all, c.getValues<APInt>());
  return DenseElementsAttr::get(type, all);
}

bool fold::foldable(ArrayRef<DenseElementsAttr> inputs,
                    ArrayRef<int64_t> shape) {
  return llvm::all_of(inputs, [](DenseElementsAttr c) { return bool(c); }) &&
         numElements(shape) <= kMaxFoldElements;
}

/// The shape all of `types` broadcast to, or an error at the node.
FailureOr<SmallVector<int64_t>>
fold::broadcastAll(NodeImporter &node, ArrayRef<RankedTensorType> types) {
  SmallVector<int64_t> shape;
  for (RankedTensorType t : types) {
    FailureOr<SmallVector<int64_t>> b = broadcastShapes(shape, t.getShape());
    if (failed(b)) {
      InFlightDiagnostic diag = node.emitError() << "input shapes";
      for (RankedTensorType u : types)
        diag << " " << shapeStr(u.getShape());
      return diag << " do not broadcast";
    }
    shape = *b;
  }
  return shape;
}

FailureOr<SmallVector<RankedTensorType>> fold::inputTypes(NodeImporter &node,
                                                          unsigned n) {
  SmallVector<RankedTensorType> types;
  for (unsigned i = 0; i < n; ++i) {
    FailureOr<RankedTensorType> t = node.inputType(i);
    if (failed(t))
      return failure();
    types.push_back(*t);
  }
  return types;
}

/// The one value of a constant whose elements are all equal (any numeric
/// element type), or nullopt.
std::optional<double> fold::splatNumber(DenseElementsAttr c) {
  if (!c || c.getNumElements() == 0)
    return std::nullopt;
  Type e = c.getElementType();
  SmallVector<double> values;
  if (isa<FloatType>(e)) {
    for (const APFloat &v : c.getValues<APFloat>())
      values.push_back(v.convertToDouble());
  } else if (e.isInteger(1)) {
    return std::nullopt;
  } else if (isa<IntegerType>(e)) {
    for (const APInt &v : c.getValues<APInt>())
      values.push_back(e.isUnsignedInteger() ? double(v.getZExtValue())
                                             : double(v.getSExtValue()));
  } else {
    return std::nullopt;
  }
  if (llvm::any_of(values, [&](double v) { return v != values[0]; }))
    return std::nullopt;
  return values[0];
}

/// Input `i` as a constant scalar (float or integer/bool), or `dflt` when
/// omitted; `what` names it in errors.
FailureOr<double> fold::constantScalar(NodeImporter &node, unsigned i,
                                       StringRef what, double dflt) {
  if (!node.hasInput(i))
    return dflt;
  FailureOr<RankedTensorType> type = node.inputType(i);
  if (failed(type))
    return failure();
  DenseElementsAttr c = node.constantInput(i);
  if (!c) {
    // Float initializers are trained unless frozen; say so, the value is
    // right there in the model.
    FailureOr<Value> v = type->getElementType().isF32()
                             ? node.input(i)
                             : FailureOr<Value>(failure());
    auto arg = succeeded(v) ? dyn_cast<BlockArgument>(*v) : BlockArgument();
    auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
    auto kind =
        func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tcc.kind")
             : StringAttr();
    if (kind && kind.getValue() == "param")
      return node.emitError()
             << what << " (input '" << node.proto().input(i)
             << "') is a trainable parameter, not a constant; pass --freeze "
             << node.proto().input(i);
    // Valid ONNX, but tcc fixes these at compile time.
    return node.emitUnsupported(("runtime " + what).str())
           << what << " (input '" << node.proto().input(i)
           << "') is not a constant; tcc needs it known at compile time";
  }
  if (c.getNumElements() != 1)
    return node.emitError()
           << what << " (input '" << node.proto().input(i) << "') has "
           << c.getNumElements() << " elements, expected a scalar";
  if (c.getElementType().isInteger(1))
    return double(*c.getValues<bool>().begin());
  std::optional<double> v = splatNumber(c);
  if (!v)
    return node.emitError()
           << what << " (input '" << node.proto().input(i) << "') has type "
           << c.getType() << ", expected a number";
  return *v;
}
