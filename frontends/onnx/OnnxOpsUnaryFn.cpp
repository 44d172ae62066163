//===- OnnxOpsUnaryFn.cpp - Builders: the unary function family -----------===//
//
// Abs, Sign, Floor, Ceil, Round, Sin, Cos, HardSwish, HardSigmoid,
// LeakyRelu, Elu, Selu, Softplus, Mish, Tan, Asin, Acos, Atan, Sinh, Cosh,
// Asinh, Acosh, Atanh, Softsign, Shrink, Celu, ThresholdedRelu and Clip
// all become `tcc.unary_fn`
// with the function's name and up to two float parameters (alpha, beta;
// runtime/core/prelude/UnaryFn.h lists them). Clip's bounds are attributes
// before opset 11 and optional inputs from 11, which must then be constants
// (tcc bakes them into the kernel); an absent bound is infinite.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"
#include "runtime/core/prelude/UnaryFn.h"

#include <limits>

using namespace mlir;
using namespace mlir::tcc;

namespace {
/// How an ONNX op maps to a function of the family: its parameters' ONNX
/// attribute names and defaults (null: the parameter is unused, 0).
struct UnaryFnSpec {
  const char *opType;
  const char *fn;
  const char *alphaName = nullptr;
  float alphaDefault = 0;
  const char *betaName = nullptr;
  float betaDefault = 0;
};
} // namespace

static const UnaryFnSpec kSpecs[] = {
    {"Abs", "abs"},
    {"Sign", "sign"},
    {"Floor", "floor"},
    {"Ceil", "ceil"},
    {"Round", "round"},
    {"Sin", "sin"},
    {"Cos", "cos"},
    {"HardSwish", "hard_swish"},
    {"HardSigmoid", "hard_sigmoid", "alpha", 0.2f, "beta", 0.5f},
    {"LeakyRelu", "leaky_relu", "alpha", 0.01f},
    {"Elu", "elu", "alpha", 1.0f},
    {"Selu", "selu", "alpha", 1.67326319217681884765625f, "gamma",
     1.05070102214813232421875f},
    {"Softplus", "softplus"},
    {"Mish", "mish"},
    {"Tan", "tan"},
    {"Asin", "asin"},
    {"Acos", "acos"},
    {"Atan", "atan"},
    {"Sinh", "sinh"},
    {"Cosh", "cosh"},
    {"Asinh", "asinh"},
    {"Acosh", "acosh"},
    {"Atanh", "atanh"},
    {"Softsign", "softsign"},
    {"Shrink", "shrink", "lambd", 0.5f, "bias", 0.0f},
    {"Celu", "celu", "alpha", 1.0f},
    {"ThresholdedRelu", "thresholded_relu", "alpha", 1.0f},
};

/// Builds `tcc.unary_fn fn(input 0)` and binds it to output 0.
static LogicalResult buildUnaryFn(NodeImporter &node, StringRef fn,
                                  double alpha, double beta) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  OpBuilder &b = node.builder();
  FailureOr<Value> y =
      node.create<UnaryFnOp>(*x, b.getStringAttr(fn), b.getF64FloatAttr(alpha),
                             b.getF64FloatAttr(beta));
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

/// Abs and Sign of an integer constant (T5's relative position buckets,
/// computed from aranges) fold at import, as Neg does; Floor, Ceil and
/// Round of one are the identity. The run-time kernels are float only.
static LogicalResult foldIntegerConstant(NodeImporter &node) {
  DenseElementsAttr c = node.constantInput(0);
  if (!c || !isa<IntegerType>(c.getElementType()) ||
      c.getElementType().isInteger(1))
    return failure();
  StringRef op = node.opType();
  if (op != "Abs" && op != "Sign" && op != "Floor" && op != "Ceil" &&
      op != "Round")
    return failure();
  node.setConstantOutput(
      0, c.mapValues(c.getElementType(), [&](const APInt &v) {
        if (op == "Abs")
          return v.abs();
        if (op == "Sign")
          return APInt(v.getBitWidth(), v.isNegative() ? -1 : !v.isZero(),
                       /*isSigned=*/true);
        return v;
      }));
  return success();
}

LogicalResult mlir::tcc::importUnaryFn(NodeImporter &node) {
  for (const UnaryFnSpec &s : kSpecs) {
    if (node.opType() != s.opType)
      continue;
    float alpha = 0, beta = 0;
    if (s.alphaName) {
      FailureOr<float> a = node.floatAttr(s.alphaName, s.alphaDefault);
      if (failed(a))
        return failure();
      alpha = *a;
    }
    if (s.betaName) {
      FailureOr<float> a = node.floatAttr(s.betaName, s.betaDefault);
      if (failed(a))
        return failure();
      beta = *a;
    }
    if (succeeded(foldIntegerConstant(node)))
      return success();
    return buildUnaryFn(node, s.fn, alpha, beta);
  }
  return node.emitError() << "not an op of the unary function family";
}

// Clip-6 has `min` and `max` attributes (default the float range); from 11
// they are optional inputs (default no bound).
/// Clip of an integer constant (opset 12 on) with constant bounds folds in
/// the constant's type; an absent bound does not clip.
static FailureOr<bool> foldIntegerClip(NodeImporter &node) {
  DenseElementsAttr c = node.constantInput(0);
  if (!c || !isa<IntegerType>(c.getElementType()) ||
      c.getElementType().isInteger(1))
    return false;
  int64_t lo = std::numeric_limits<int64_t>::min(),
          hi = std::numeric_limits<int64_t>::max();
  for (unsigned k : {1u, 2u}) {
    if (!node.hasInput(k))
      continue;
    DenseElementsAttr b = node.constantInput(k);
    if (!b)
      return false; // refused as an integer Clip that runs
    if (b.getNumElements() != 1 || b.getElementType() != c.getElementType())
      return node.emitError()
             << (k == 1 ? "min" : "max") << " has type " << b.getType()
             << "; expected a scalar of " << c.getElementType();
    (k == 1 ? lo : hi) = fold::intValues(b)[0];
  }
  SmallVector<int64_t> v = fold::intValues(c);
  for (int64_t &x : v)
    x = std::min(hi, std::max(lo, x));
  node.setConstantOutput(
      0, fold::fromInts(cast<RankedTensorType>(c.getType()), v));
  return true;
}

LogicalResult mlir::tcc::importClip(NodeImporter &node) {
  if (node.opset() >= 12) {
    FailureOr<bool> folded = foldIntegerClip(node);
    if (failed(folded) || *folded)
      return failure(failed(folded));
  }
  // The input first: an integer Clip is unsupported, not malformed.
  if (failed(node.input(0)))
    return failure();
  double inf = std::numeric_limits<double>::infinity();
  double lo = -inf, hi = inf;
  if (node.opset() < 11) {
    float big = std::numeric_limits<float>::max();
    FailureOr<float> a = node.floatAttr("min", -big);
    FailureOr<float> b = node.floatAttr("max", big);
    if (failed(a) || failed(b))
      return failure();
    lo = *a;
    hi = *b;
  } else {
    FailureOr<double> a = fold::constantScalar(node, 1, "min", -inf);
    if (failed(a))
      return failure();
    FailureOr<double> b = fold::constantScalar(node, 2, "max", inf);
    if (failed(b))
      return failure();
    lo = *a;
    hi = *b;
  }
  return buildUnaryFn(node, "clip", lo, hi);
}
