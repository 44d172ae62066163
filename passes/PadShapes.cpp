//===- PadShapes.cpp - Tile-aligned padding of GEMM dimensions ------------===//
//
// Pads the M, N and K dimensions of every tcc.matmul to a multiple that the
// target's GEMM wants (tensor cores take fp16/bf16 tiles of 8; large
// dimensions such as a vocabulary pay for 64) and slices the result back.
//
// Stages, per tcc.matmul of every function (after autodiff and the
// optimizer, so the pass sees the forward, the backward and the updates):
//   1. M, K (lhs) and K, N (rhs) are read with the transpose flags; batch
//      dimensions are never padded. Each is rounded up to its multiple:
//      `vocab-multiple` for dimensions of at least `vocab-threshold`
//      elements, `multiple` for the others (0 leaves a dimension alone).
//      A batched lhs times a 2-D rhs is one GEMM over all of lhs's rows, so
//      its M is those rows (not padded when they are aligned).
//   2. Each misaligned operand is padded with zeros at the end of its last
//      two dimensions by `tcc.slice_grad` with zero starts and unit steps,
//      which is exactly a zero pad (see TccOpsShape.td).
//   3. The matmul runs on the padded operands; when M or N grew, a
//      `tcc.slice` at the origin takes the original result back.
//
// Why it is numerically invisible: zero K columns add exact zeros to each
// dot product, and padded M rows or N columns only produce result entries
// that the slice drops. (A BLAS may still sum in another order when K
// changes, so results agree to rounding, not bit for bit; docs/ARCHITECTURE.md
// has the measured difference.)
//
// Invariants: the function's signature and every value outside the rewritten
// matmuls keep their types. A padded matmul's result is zero outside the
// original window (its padded rows and columns come from zero rows of lhs and
// zero columns of rhs), so when a later matmul pads the slice of such a result
// back to that shape, the padded result itself is used instead of a slice
// followed by a pad. Pads of one
// value to one shape are made once per function (a weight read by the
// forward and the backward is padded once per step).
//
// Not handled: padding the parameters' storage itself (which would save the
// per-step pad copy of each weight); padding other ops (convolutions,
// gathers) beyond the GEMMs.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "tcc-pad-shapes"

namespace mlir::tcc {
#define GEN_PASS_DEF_PADSHAPESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

PadShapesPreset mlir::tcc::padShapesPreset(StringRef target,
                                           StringRef precision) {
  // CUDA: tensor cores take fp16/bf16 operands in tiles of 8 elements (16
  // bytes); vocabulary-sized dimensions also fill whole 64-wide thread-block
  // tiles. TF32 (fp32) tiles are 4 elements.
  if (target == "cuda")
    return precision == "fp32" ? PadShapesPreset{4, 64, 8192}
                               : PadShapesPreset{8, 64, 8192};
  // CPU (OpenBLAS sgemm): handles ragged edges in its micro-kernels; the
  // extra work and the pad/slice copies never paid in the measurements of
  // docs/ARCHITECTURE.md ("Tile-aligned padding"), so padding is off.
  return PadShapesPreset{0, 0, 8192};
}

static int64_t roundUp(int64_t d, int64_t multiple) {
  if (multiple <= 1 || d <= 0)
    return d;
  return (d + multiple - 1) / multiple * multiple;
}

namespace {
struct PadShapesPass final
    : public tcc::impl::PadShapesPassBase<PadShapesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (multiple < 0 || vocabMultiple < 0 || vocabThreshold < 0) {
      getOperation().emitError()
          << "tcc-pad-shapes: multiple (" << int64_t(multiple)
          << "), vocab-multiple (" << int64_t(vocabMultiple)
          << ") and vocab-threshold (" << int64_t(vocabThreshold)
          << ") must be >= 0";
      return signalPassFailure();
    }
    if (multiple <= 1 && vocabMultiple <= 1)
      return;
    getOperation().walk([&](func::FuncOp fn) { padFunction(fn); });
  }

private:
  /// The padded size of a GEMM dimension of `d` elements.
  int64_t padded(int64_t d) const {
    if (vocabMultiple > 0 && d >= vocabThreshold)
      return roundUp(d, vocabMultiple);
    return roundUp(d, multiple);
  }

  void padFunction(func::FuncOp fn);
  Value padTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

  /// Per function: pads already made, by (value, padded shape).
  std::map<std::pair<void *, SmallVector<int64_t>>, Value> pads;
  /// Per function: the slice results this pass made, mapped to the padded
  /// matmul result they were sliced from (zero outside the slice's window).
  DenseMap<Value, Value> slicedFrom;
};
} // namespace

/// `v` padded with zeros at the end of each dimension to `shape` (which is
/// never smaller than v's).
Value PadShapesPass::padTo(OpBuilder &b, Location loc, Value v,
                           ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  auto key = std::make_pair(v.getAsOpaquePointer(),
                            SmallVector<int64_t>(shape.begin(), shape.end()));
  if (auto it = pads.find(key); it != pads.end())
    return it->second;

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(v);
  Value result;
  SmallVector<int64_t> zeros(shape.size(), 0), ones(shape.size(), 1);
  // A slice of a zero-padded matmul result: the padded result already holds
  // the zeros, so use it instead of slicing and padding again. (Its padded
  // shape is the one wanted: each consumer pads a dimension by the same rule.)
  if (Value src = slicedFrom.lookup(v))
    if (cast<RankedTensorType>(src.getType()).getShape() == shape)
      result = src;
  if (!result)
    result = SliceGradOp::create(b, loc, v, shape, zeros, ones);
  pads[key] = result;
  return result;
}

void PadShapesPass::padFunction(func::FuncOp fn) {
  pads.clear();
  slicedFrom.clear();
  SmallVector<MatmulOp> matmuls;
  fn.walk([&](MatmulOp m) { matmuls.push_back(m); });
  OpBuilder b(fn.getContext());
  for (MatmulOp mm : matmuls) {
    auto lt = cast<RankedTensorType>(mm.getLhs().getType());
    auto rt = cast<RankedTensorType>(mm.getRhs().getType());
    auto ot = cast<RankedTensorType>(mm.getType());
    int64_t lr = lt.getRank(), rr = rt.getRank(), orank = ot.getRank();
    bool ta = mm.getTransposeLhs(), tb = mm.getTransposeRhs();
    int64_t m = ot.getDimSize(orank - 2), n = ot.getDimSize(orank - 1);
    int64_t k = lt.getDimSize(ta ? lr - 2 : lr - 1);
    int64_t mp = padded(m), np = padded(n), kp = padded(k);
    // A batched lhs times a shared 2-D rhs runs as one GEMM whose M is all
    // of lhs's rows (both backends fold the batch into M): when that M is
    // aligned, padding each batch's rows would only add work.
    if (rr == 2 && !ta && lr > 2 && mp != m) {
      int64_t rows = lt.getNumElements() / k;
      if (padded(rows) == rows)
        mp = m;
    }
    if (mp == m && np == n && kp == k)
      continue;
    LLVM_DEBUG(llvm::dbgs() << "padding " << m << "x" << n << "x" << k << " to "
                            << mp << "x" << np << "x" << kp << "\n");

    // lhs is [.., M, K] or, transposed, [.., K, M]; rhs [.., K, N] or
    // [.., N, K].
    SmallVector<int64_t> ls(lt.getShape()), rs(rt.getShape());
    ls[lr - 2] = ta ? kp : mp;
    ls[lr - 1] = ta ? mp : kp;
    rs[rr - 2] = tb ? np : kp;
    rs[rr - 1] = tb ? kp : np;
    Location loc = mm.getLoc();
    Value lhs = padTo(b, loc, mm.getLhs(), ls);
    Value rhs = padTo(b, loc, mm.getRhs(), rs);

    b.setInsertionPoint(mm);
    Value prod = MatmulOp::create(b, loc, lhs, rhs, ta, tb);
    Value result = prod;
    if (mp != m || np != n) {
      SmallVector<int64_t> zeros(orank, 0), ones(orank, 1);
      result = SliceOp::create(b, loc, prod, zeros, ot.getShape(), ones);
      slicedFrom[result] = prod;
    }
    mm.replaceAllUsesWith(result);
    mm.erase();
  }
}
