//===- TccPatternsMath.cpp - Canonicalizations of the math ops ------------===//
//
// * pow by a constant:   tcc.pow %x, (splat c)  ->  tcc.pow_scalar %x {c}
// * GELU subgraphs:      the element-wise chains torch.onnx.export writes for
//   nn.GELU()                          x * 0.5 * (1 + erf(x / sqrt(2)))
//   nn.GELU(approximate="tanh")        0.5 * x * (1 + tanh(sqrt(2/pi) *
//                                                   (x + 0.044715 * x^3)))
//   become one tcc.gelu. The patterns are rooted at the outermost tcc.mul and
//   accept any association and operand order of the products and sums, x/c
//   as well as x * (1/c), and x^3 as x*x*x, pow_scalar or pow. Constants
//   match to float precision. Intermediate values used elsewhere stay (the
//   rewrite is correct either way; only the saving is smaller).
//
//===----------------------------------------------------------------------===//
#include "dialects/tcc/TccOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::tcc;

/// Whether `v` is a splat constant equal to `expected` to float precision.
static bool isConstant(Value v, double expected) {
  std::optional<double> c = splatFloat(v);
  return c && std::fabs(*c - expected) <= 1e-6 * std::fabs(expected);
}

/// The other operand of a commutative binary op whose one operand satisfies
/// `pred`, or null.
template <typename OpT, typename Pred>
static Value otherOperand(Value v, Pred pred) {
  auto op = v ? v.getDefiningOp<OpT>() : OpT();
  if (!op)
    return {};
  if (pred(op.getLhs()))
    return op.getRhs();
  if (pred(op.getRhs()))
    return op.getLhs();
  return {};
}

/// The three factors of a product of three values, (a*b)*c or a*(b*c).
static SmallVector<SmallVector<Value, 3>> productsOfThree(MulOp root) {
  SmallVector<SmallVector<Value, 3>> out;
  for (auto [inner, outer] : {std::pair{root.getLhs(), root.getRhs()},
                              std::pair{root.getRhs(), root.getLhs()}})
    if (auto m = inner.getDefiningOp<MulOp>())
      out.push_back({m.getLhs(), m.getRhs(), outer});
  return out;
}

/// Whether `v` is x * x * x (any association), pow_scalar(x, 3) or
/// pow(x, 3).
static bool isCube(Value v, Value x) {
  if (auto p = v.getDefiningOp<PowScalarOp>())
    return p.getInput() == x && p.getExponent().convertToDouble() == 3.0;
  if (auto p = v.getDefiningOp<PowOp>())
    return p.getLhs() == x && isConstant(p.getRhs(), 3.0);
  auto m = v.getDefiningOp<MulOp>();
  if (!m)
    return false;
  auto isSquare = [&](Value s) {
    auto sq = s.getDefiningOp<MulOp>();
    return sq && sq.getLhs() == x && sq.getRhs() == x;
  };
  return (m.getLhs() == x && isSquare(m.getRhs())) ||
         (m.getRhs() == x && isSquare(m.getLhs()));
}

/// If `v` is 1 + erf(x / sqrt(2)) (or x * (1/sqrt(2))) returns x and sets
/// `approximate` to "none"; if it is 1 + tanh(sqrt(2/pi) * (x + 0.044715 *
/// x^3)) returns x and sets "tanh". Null otherwise.
static Value matchOnePlus(Value v, StringRef &approximate) {
  Value f = otherOperand<AddOp>(v, [](Value c) { return isConstant(c, 1.0); });
  if (!f)
    return {};
  if (auto erf = f.getDefiningOp<ErfOp>()) {
    Value s = erf.getInput();
    if (auto div = s.getDefiningOp<DivOp>();
        div && isConstant(div.getRhs(), M_SQRT2)) {
      approximate = "none";
      return div.getLhs();
    }
    Value x = otherOperand<MulOp>(
        s, [](Value c) { return isConstant(c, M_SQRT1_2); });
    if (x)
      approximate = "none";
    return x;
  }
  if (auto tanh = f.getDefiningOp<TanhOp>()) {
    const double k = std::sqrt(2.0 / M_PI);
    Value inner = otherOperand<MulOp>(
        tanh.getInput(), [&](Value c) { return isConstant(c, k); });
    auto sum = inner ? inner.getDefiningOp<AddOp>() : AddOp();
    if (!sum)
      return {};
    for (auto [x, rest] : {std::pair{sum.getLhs(), sum.getRhs()},
                           std::pair{sum.getRhs(), sum.getLhs()}}) {
      Value cube = otherOperand<MulOp>(
          rest, [](Value c) { return isConstant(c, 0.044715); });
      if (cube && isCube(cube, x)) {
        approximate = "tanh";
        return x;
      }
    }
  }
  return {};
}

namespace {
/// x * 0.5 * (1 + f(x)) in any association -> tcc.gelu x.
struct FuseGelu final : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    for (SmallVector<Value, 3> &factors : productsOfThree(root)) {
      // Which factor is 0.5, which is (1 + f(x)), and is the third x?
      for (int half = 0; half < 3; ++half) {
        if (!isConstant(factors[half], 0.5))
          continue;
        for (int k = 1; k <= 2; ++k) {
          Value onePlus = factors[(half + k) % 3];
          Value x = factors[(half + 3 - k) % 3];
          StringRef approximate;
          if (matchOnePlus(onePlus, approximate) != x ||
              x.getType() != root.getType())
            continue;
          rewriter.replaceOpWithNewOp<GeluOp>(root, x, approximate);
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(root, "not a GELU subgraph");
  }
};

/// pow(x, splat c) -> pow_scalar(x, c) when the constant does not widen the
/// result.
struct PowByConstant final : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PowOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<double> c = splatFloat(op.getRhs());
    if (!c || op.getLhs().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "exponent is not a constant");
    rewriter.replaceOpWithNewOp<PowScalarOp>(op, op.getLhs(),
                                             rewriter.getF64FloatAttr(*c));
    return success();
  }
};
} // namespace

void GeluOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *ctx) {
  patterns.add<FuseGelu>(ctx);
}

void PowOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *ctx) {
  patterns.add<PowByConstant>(ctx);
}
