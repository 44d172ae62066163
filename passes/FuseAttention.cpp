//===- FuseAttention.cpp - matmul(softmax(q k^T), v) -> tcc.attention -----===//
//
// tcc-fuse-attention finds scaled dot-product attention in a function
// before it is differentiated and replaces it with tcc.attention, whose
// gradient (tcc.attention_grad) recomputes the probabilities from the
// saved row log-sum-exp. The unfused graph saves the probabilities P
// [..., Tq, Tk] for the backward (plus the scores, for softmax's backward
// input); the fused one saves O(Tq) per row.
//
// Matched (each step optional unless said):
//
//   q' = q [* c | / c]...          k' = k [* c | / c]...
//   s  = matmul(q', k')            (required; k' as [.., Tk, D] with
//                                   transpose_rhs, else [.., D, Tk])
//   s  = s [* c | / c]...
//   s  = s + mask                  (either operand order)
//   p  = softmax(s, last axis)     (required)
//   o  = matmul(p, v)              (required; the root)
//
// where every c is a splat float constant that does not widen its operand;
// the c's multiply into `scale`. A k' of [.., D, Tk] is transposed back:
// when it is itself tcc.transpose(x, perm) (torch.onnx.export writes
// nn.MultiheadAttention's K as Transpose(x, [1, 2, 0]) of [T, B*H, D]), the
// two transposes compose into one (here [1, 0, 2]). A transposed v
// (transpose_rhs on the root) gets a transpose too.
//
// Not fused (the graph is left as it is):
//   * p, s or an intermediate score value with another user (P would still
//     be computed and saved);
//   * a transposed lhs on either matmul, operands of rank < 3, batch
//     dimensions that differ between q, k and v (broadcasting), element
//     types that differ;
//   * a mask that depends on a `param` argument: tcc.attention has no mask
//     gradient (freeze such a buffer, e.g. `--freeze mask`), or that is not
//     f32;
//   * a scale factor applied after the mask is added (it would scale the
//     mask).
//
// Masks: a constant mask (a tcc.constant behind reshapes and broadcasts)
// that is all zero is dropped; one equal to the causal pattern (0 where
// j <= i, -inf where j > i, Tq == Tk) becomes `causal = true` and no mask
// operand, so the kernel skips the masked half instead of reading a mask.
// Other masks are passed as the op wants them: rank 2 when their batch
// dimensions are all 1, else of the query's rank, broadcast to the query's
// batch dimensions when they only partly match.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Debug.h"

#include <cmath>
#include <numeric>
#include <string>

#define DEBUG_TYPE "tcc-fuse-attention"

namespace mlir::tcc {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// If `v` is `x * c`, `c * x` or `x / c` with a finite, non-zero splat
/// constant c that does not widen x, returns x and multiplies `scale` by c
/// (or 1/c). Null otherwise.
static Value peelFactor(Value v, double &scale) {
  Operation *def = v.getDefiningOp();
  if (auto mul = dyn_cast_or_null<MulOp>(def)) {
    for (auto [x, c] : {std::pair{mul.getLhs(), mul.getRhs()},
                        std::pair{mul.getRhs(), mul.getLhs()}}) {
      std::optional<double> f = splatFloat(c);
      if (f && std::isfinite(*f) && *f != 0 && x.getType() == v.getType()) {
        scale *= *f;
        return x;
      }
    }
  } else if (auto div = dyn_cast_or_null<DivOp>(def)) {
    std::optional<double> f = splatFloat(div.getRhs());
    if (f && std::isfinite(*f) && *f != 0 &&
        div.getLhs().getType() == v.getType()) {
      scale /= *f;
      return div.getLhs();
    }
  }
  return {};
}

/// Peels every constant factor off `v` (see peelFactor). With `oneUse`,
/// only factors whose result has no other user.
static Value peelFactors(Value v, double &scale, bool oneUse,
                         SmallVectorImpl<Operation *> *peeled = nullptr) {
  while (true) {
    if (oneUse && !v.hasOneUse())
      return v;
    double s = scale;
    Value x = peelFactor(v, s);
    if (!x)
      return v;
    if (peeled)
      peeled->push_back(v.getDefiningOp());
    scale = s;
    v = x;
  }
}

/// `perm` with its last two entries swapped.
static SmallVector<int64_t> swapLastTwo(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> p(perm);
  std::swap(p[p.size() - 1], p[p.size() - 2]);
  return p;
}

/// The name of a function argument of kind `param` that `v` is computed
/// from ("" when there is none; "?" for an unnamed one).
static std::string paramOf(Value v, func::FuncOp fn) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto a = dyn_cast<BlockArgument>(x)) {
      if (a.getOwner()->getParentOp() == fn.getOperation()) {
        auto kind =
            fn.getArgAttrOfType<StringAttr>(a.getArgNumber(), "tcc.kind");
        if (kind && kind.getValue() == "param") {
          auto name =
              fn.getArgAttrOfType<StringAttr>(a.getArgNumber(), "tcc.name");
          return name ? name.getValue().str() : "?";
        }
      }
      continue;
    }
    x.getDefiningOp()->walk(
        [&](Operation *op) { llvm::append_range(work, op->getOperands()); });
  }
  return "";
}

namespace {
/// What the mask operand of the add is, when it is a constant.
enum class ConstMask { NotConstant, Zero, Causal, Other };
} // namespace

/// Classifies `mask` (added to scores [..., tq, tk]) when it is a
/// tcc.constant behind reshapes, broadcasts and multiplications by 1.
/// Causal needs element (i, j) of every batch entry at flat index
/// i * tk + j of the constant, so each broadcast on the way may only add
/// leading dimensions to a [tq, tk] value.
static ConstMask classifyMask(Value mask, int64_t tq, int64_t tk) {
  Value v = mask;
  bool orderKept = true; // the constant's flat order is [tq, tk] row-major
  while (true) {
    if (auto r = v.getDefiningOp<ReshapeOp>()) {
      v = r.getInput();
      continue;
    }
    if (auto b = v.getDefiningOp<BroadcastToOp>()) {
      ArrayRef<int64_t> in = typeOf(b.getInput()).getShape();
      while (!in.empty() && in.front() == 1)
        in = in.drop_front();
      orderKept &= in == ArrayRef<int64_t>{tq, tk};
      v = b.getInput();
      continue;
    }
    double one = 1.0;
    if (Value x = peelFactor(v, one); x && one == 1.0) {
      v = x;
      continue;
    }
    break;
  }
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) ||
      !isa<FloatType>(attr.getElementType()))
    return ConstMask::NotConstant;
  auto values = attr.getValues<APFloat>();
  if (llvm::all_of(values, [](const APFloat &x) { return x.isZero(); }))
    return ConstMask::Zero;
  ArrayRef<int64_t> ms = typeOf(mask).getShape();
  if (tq != tk || !orderKept || attr.getNumElements() != tq * tk ||
      ms.size() < 2 || ms[ms.size() - 2] != tq || ms.back() != tk)
    return ConstMask::Other;
  int64_t idx = 0;
  for (const APFloat &x : values) {
    int64_t i = idx / tk, j = idx % tk;
    ++idx;
    bool ok = j <= i ? x.isZero() : (x.isInfinity() && x.isNegative());
    if (!ok)
      return ConstMask::Other;
  }
  return ConstMask::Causal;
}

namespace {
/// One match, before anything is built.
struct Match {
  MatmulOp root, qk;
  SoftmaxOp softmax;
  Value q, k, v, mask;
  bool kIsTransposed = false; // k is [..., D, Tk]
  bool vIsTransposed = false; // v is [..., Dv, Tk]
  bool causal = false;
  double scale = 1.0;
};

struct FuseAttentionPass final
    : tcc::impl::FuseAttentionPassBase<FuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    // Program order: a fusion erases only ops before its root, so the
    // roots still to visit stay valid.
    SmallVector<MatmulOp> roots;
    fn.walk([&](MatmulOp mm) { roots.push_back(mm); });
    for (MatmulOp root : roots) {
      std::optional<Match> m = match(fn, root);
      if (!m)
        continue;
      rewrite(*m);
      ++numFused;
    }
  }

  std::optional<Match> match(func::FuncOp fn, MatmulOp root);
  void rewrite(Match &m);
};
} // namespace

std::optional<Match> FuseAttentionPass::match(func::FuncOp fn, MatmulOp root) {
  Match m;
  m.root = root;
  m.softmax = root.getLhs().getDefiningOp<SoftmaxOp>();
  if (!m.softmax || root.getTransposeLhs() || !root.getLhs().hasOneUse())
    return std::nullopt;
  RankedTensorType pType = typeOf(m.softmax.getResult());
  int64_t rank = pType.getRank();
  if (rank < 3 || m.softmax.getAxis() != rank - 1)
    return std::nullopt;
  ArrayRef<int64_t> batch = pType.getShape().drop_back(2);
  int64_t tq = pType.getShape()[rank - 2], tk = pType.getShape()[rank - 1];

  // Scores: scale factors, then (going up) the mask add, factors, q k^T.
  Value s = m.softmax.getInput();
  if (!s.hasOneUse())
    return std::nullopt;
  double outer = 1.0;
  s = peelFactors(s, outer, /*oneUse=*/true);
  if (auto add = s.getDefiningOp<AddOp>(); add && s.hasOneUse()) {
    for (auto [x, mask] : {std::pair{add.getLhs(), add.getRhs()},
                           std::pair{add.getRhs(), add.getLhs()}}) {
      double inner = 1.0;
      Value y = x.getType() == s.getType() && x.hasOneUse()
                    ? peelFactors(x, inner, /*oneUse=*/true)
                    : Value();
      if (y && y.getDefiningOp<MatmulOp>() && y.hasOneUse()) {
        m.mask = mask;
        m.scale = inner;
        s = y;
        break;
      }
    }
    if (!m.mask || outer != 1.0)
      return std::nullopt;
  } else {
    m.scale = outer;
  }
  m.qk = s.getDefiningOp<MatmulOp>();
  if (!m.qk || !s.hasOneUse() || m.qk.getTransposeLhs() || s.getType() != pType)
    return std::nullopt;

  m.q = peelFactors(m.qk.getLhs(), m.scale, /*oneUse=*/false);
  m.k = peelFactors(m.qk.getRhs(), m.scale, /*oneUse=*/false);
  m.kIsTransposed = !m.qk.getTransposeRhs();
  m.v = root.getRhs();
  m.vIsTransposed = root.getTransposeRhs();
  if (!std::isfinite(m.scale))
    return std::nullopt;

  // Shapes: no broadcasting between q, k and v; one element type.
  auto qt = typeOf(m.q), kt = typeOf(m.k), vt = typeOf(m.v);
  Type e = qt.getElementType();
  if (qt.getRank() != rank || kt.getRank() != rank || vt.getRank() != rank ||
      kt.getElementType() != e || vt.getElementType() != e ||
      pType.getElementType() != e || !(e.isF32() || e.isBF16() || e.isF16()))
    return std::nullopt;
  for (auto t : {qt, kt, vt})
    if (t.getShape().drop_back(2) != batch)
      return std::nullopt;
  int64_t kRows = kt.getShape()[rank - (m.kIsTransposed ? 1 : 2)];
  int64_t vRows = vt.getShape()[rank - (m.vIsTransposed ? 1 : 2)];
  if (qt.getShape()[rank - 2] != tq || kRows != tk || vRows != tk)
    return std::nullopt;

  if (m.mask) {
    if (!typeOf(m.mask).getElementType().isF32())
      return std::nullopt;
    // A trainable mask would need a gradient, which the fused op does not
    // give. Exported masks are buffers that are trainable only because
    // they are initializers: say how to fuse, since this costs the
    // probabilities' memory.
    std::string param = paramOf(m.mask, fn);
    if (!param.empty()) {
      // At the op's location only: the op itself means nothing to a user.
      emitWarning(root.getLoc())
          << "attention left unfused: its mask depends on "
             "the trainable parameter '"
          << param << "' (freeze it with --freeze " << param << " to fuse)";
      return std::nullopt;
    }
    switch (classifyMask(m.mask, tq, tk)) {
    case ConstMask::Zero:
      m.mask = {};
      break;
    case ConstMask::Causal:
      m.mask = {};
      m.causal = true;
      break;
    case ConstMask::NotConstant:
    case ConstMask::Other:
      break;
    }
  }
  return m;
}

/// Erases `ops` and then whatever they fed that became dead.
static void eraseDead(SmallVector<Operation *> work) {
  llvm::DenseSet<Operation *> erased;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!op || erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
    erased.insert(op);
    op->erase();
  }
}

/// x's input when x = reshape(y) only splits y's leading axis ([N, T, D]
/// viewed as [B, H, T, D]), else null.
static Value mergedHeads(Value x) {
  auto rs = x.getDefiningOp<ReshapeOp>();
  if (!rs)
    return {};
  ArrayRef<int64_t> in = typeOf(rs.getInput()).getShape(),
                    out = typeOf(x).getShape();
  return in.size() == 3 && out.size() > 3 && in.take_back(2) == out.take_back(2)
             ? rs.getInput()
             : Value();
}

void FuseAttentionPass::rewrite(Match &m) {
  OpBuilder b(m.root);
  Location loc = m.root.getLoc();
  Value q = m.q, k = m.k, v = m.v, mask = m.mask;
  int64_t rank = typeOf(q).getRank();

  // PyTorch 2.x's F.multi_head_attention_forward views its [B*H, T, D]
  // heads as [B, H, T, D] for scaled_dot_product_attention. The rank-3
  // values hold the same batch entries in the same order, so the op attends
  // on them (when the mask has no batch dimensions), and the head
  // transposes fold as they do in PyTorch 1.13's export.
  auto ones = [](ArrayRef<int64_t> d) {
    return llvm::all_of(d, [](int64_t x) { return x == 1; });
  };
  if (rank > 3 &&
      (!mask || ones(typeOf(mask).getShape().drop_back(
                    std::min<size_t>(2, typeOf(mask).getRank()))))) {
    Value q3 = mergedHeads(q), k3 = mergedHeads(k), v3 = mergedHeads(v);
    if (q3 && k3 && v3) {
      q = q3, k = k3, v = v3;
      rank = 3;
      if (mask) {
        ArrayRef<int64_t> ms = typeOf(mask).getShape();
        SmallVector<int64_t> rows(2, 1);
        for (size_t i = 0; i < std::min<size_t>(2, ms.size()); ++i)
          rows[1 - i] = ms[ms.size() - 1 - i];
        if (ArrayRef<int64_t>(rows) != ms)
          mask = ReshapeOp::create(
              b, loc,
              RankedTensorType::get(rows, typeOf(mask).getElementType()), mask);
      }
    }
  }
  SmallVector<int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);

  // K as [..., Tk, D]: undo the transpose that made k^T, or add one.
  if (m.kIsTransposed) {
    if (auto t = k.getDefiningOp<TransposeOp>()) {
      SmallVector<int64_t> perm = swapLastTwo(t.getPerm());
      k = TransposeOp::isIdentityPerm(perm)
              ? t.getInput()
              : TransposeOp::create(b, loc, t.getInput(), perm).getResult();
    } else {
      k = TransposeOp::create(b, loc, k, swapLastTwo(identity));
    }
  }
  if (m.vIsTransposed)
    v = TransposeOp::create(b, loc, v, swapLastTwo(identity));

  // The mask in a shape the op takes (see TccOpsAttention.td).
  if (mask) {
    ArrayRef<int64_t> ms = typeOf(mask).getShape();
    ArrayRef<int64_t> qs = typeOf(q).getShape();
    SmallVector<int64_t> full(rank - ms.size(), 1);
    llvm::append_range(full, ms);
    ArrayRef<int64_t> mb = ArrayRef<int64_t>(full).drop_back(2);
    ArrayRef<int64_t> qb = qs.drop_back(2);
    Type f32 = typeOf(mask).getElementType();
    SmallVector<int64_t> want(ms);
    if (ms.size() != 2 && (ms.size() != (size_t)rank || !ones(mb))) {
      if (ones(mb))
        want.assign(full.end() - 2, full.end());
      else
        want = full;
    }
    if (ArrayRef<int64_t>(want) != ms)
      mask = ReshapeOp::create(b, loc, RankedTensorType::get(want, f32), mask);
    if (want.size() == (size_t)rank && !ones(mb) && mb != qb) {
      SmallVector<int64_t> bcast(qb);
      bcast.append(full.end() - 2, full.end());
      mask = BroadcastToOp::create(b, loc, RankedTensorType::get(bcast, f32),
                                   mask);
    }
  }

  // Sequence-major: when q, k and v are all [..., T, H, D] values with
  // dims -3 and -2 swapped (the head split torch.onnx.export writes), the
  // op reads them as they are and its result goes back through one
  // transpose, which the canonicalizer composes with the graph's own
  // transpose back to the tokens' layout.
  SmallVector<int64_t> headSwap(identity);
  std::swap(headSwap[rank - 3], headSwap[rank - 2]);
  auto unswapped = [&](Value x) -> Value {
    auto t = x.getDefiningOp<TransposeOp>();
    return t && t.getPerm() == ArrayRef<int64_t>(headSwap) ? t.getInput()
                                                           : Value();
  };
  Value qs = unswapped(q), ks = unswapped(k), vs = unswapped(v);
  bool seqMajor = qs && ks && vs;
  auto attn =
      AttentionOp::create(b, loc, seqMajor ? qs : q, seqMajor ? ks : k,
                          seqMajor ? vs : v, mask, b.getF64FloatAttr(m.scale),
                          b.getBoolAttr(m.causal), b.getBoolAttr(seqMajor));
  LLVM_DEBUG(llvm::dbgs() << "fused " << attn << "\n");
  Value out = attn.getResult();
  if (seqMajor)
    out = TransposeOp::create(b, loc, out, headSwap);
  if (out.getType() != m.root.getType())
    out = ReshapeOp::create(b, loc, m.root.getType(), out);
  m.root.getResult().replaceAllUsesWith(out);
  SmallVector<Operation *> dead{m.root};
  for (Value x : {m.q, m.k, m.v, q, k, v})
    dead.push_back(x.getDefiningOp());
  eraseDead(dead);
}
