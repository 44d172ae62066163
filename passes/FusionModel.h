//===- FusionModel.h - What tcc-fuse may group, and how it is iterated ----===//
//
// Shared by the tcc-fuse pass (which decides) and the CPU code generator
// (which relies on the decisions). A fused region runs over a domain of
// `rows` x `cols`: cols is the last dimension of its largest value. Every
// value computed inside a region is either
//   * full:  rows*cols elements, last dimension cols (row r at r*cols), or
//   * row:   rows elements (one per row, at r) - row statistics, losses'
//            per-position values, [..., 1] shaped results.
// Whole-region results leave the region and are read by nothing inside:
// a scalar (a loss, the sum of per-row partials) or columns (cols values,
// sums over all rows: a layer norm's scale and bias gradients, which then
// read dy and x in the same pass as the norm's input gradient, or a bias
// gradient summed where its dy is computed).
// Region inputs may be read through any broadcast (a View): per row, an
// offset computed from the row index, then stride 1 or 0 along the columns.
// A tcc.slice with zero starts, positive steps and a unit last-axis step is
// such a view of its operand (an element-wise op over its result's domain),
// so a region reads e.g. a vocabulary-padded logits tensor directly instead
// of a sliced copy; the view is not native, so only a region input may be
// read through it (a slice of a value computed inside stays out).
// A tcc.slice_grad that zero-pads only the last axis (zero starts, unit
// steps, 0 < pad <= cols) runs over its operand's domain and produces a
// padded value: row r at r*(cols+pad), zeros in columns [cols, cols+pad).
// Nothing inside a region may read it; the region stores it as an output
// with the wider row stride and fills the pad columns itself.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_FUSIONMODEL_H
#define TCC_PASSES_FUSIONMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::tcc::fusion {

struct Domain {
  int64_t rows = 1, cols = 1;
  int64_t numel() const { return rows * cols; }
  bool operator==(const Domain &o) const {
    return rows == o.rows && cols == o.cols;
  }
};

/// How an op reads one operand: the row index r is split over `rowShape`
/// (row-major) and offset = sum(index[k] * rowStrides[k]); along the columns
/// the stride is `colStride` (0 or 1).
struct View {
  SmallVector<int64_t> rowShape, rowStrides;
  int64_t colStride = 0;
  /// Offset is r * cols (full) / r (row) / 0, or needs the general formula.
  bool isFullNative(int64_t cols) const;
  bool isRowNative() const;
  bool isConstant() const; // the same offset for every row
  /// The s with offset = r * s, if there is one (0 for a constant view);
  /// e.g. s = cols + pad for a slice that drops a last-axis pad.
  std::optional<int64_t> rowScale() const;
};

enum class OpKind {
  None,        // not fusible
  Elementwise, // incl. broadcast_to, where, reshape (a no-op on rows),
               // slice (a view) and a last-axis zero pad (slice_grad)
  Row,         // softmax family, last-axis reductions, layer_norm, losses
};

/// The widest rows whose column sums (tcc.layer_norm_param_grad) a region
/// computes: a CUDA rows kernel's lanes keep their columns' values in
/// per-lane arrays up to this width (KernelGraph::kMaxLaneSlots * 32).
constexpr int64_t kMaxColSumCols = 2048;

/// Whether tcc-fuse expands `op` (a layer_norm_grad over the last axis of
/// an f32 input of rank >= 2) into fusible ops and a layer_norm_param_grad.
bool expandsLayerNormGrad(Operation *op);

/// Whether `op`'s results are column sums (Layout::Column) when it is in a
/// region: tcc.layer_norm_param_grad, or a reduce_sum over every axis but
/// the last (a bias gradient) of rows at most kMaxColSumCols wide, not of
/// a loss's gradient. Such an op only joins a region that computes (or
/// reads) what it sums.
bool isColumnSum(Operation *op);

/// Whether `op` may be part of a fused region, and as what.
OpKind classify(Operation *op);

/// The domain `op` iterates over on its own.
Domain ownDomain(Operation *op);

/// How `op` reads operand `i` when its region has domain `d`, or failure
/// when it cannot run over `d` at all.
FailureOr<View> operandView(Operation *op, unsigned i, Domain d);

/// Whether result `i` of `op` is full or row under `d` (failure: neither).
enum class Layout {
  Full,
  Row,
  Scalar, // one value for the whole region
  Column, // one value per column: a sum over all rows; output only
  Padded, // full with `padOf` zero columns after each row; output only
};
FailureOr<Layout> resultLayout(Operation *op, unsigned i, Domain d);

/// Pure data movement in a region (reshape, broadcast_to, slice and a pad):
/// no arithmetic of its own, so it neither names a region nor makes one
/// worth a generated kernel.
bool isDataMovement(Operation *op);

/// The zero columns a last-axis pad (tcc.slice_grad) adds to each row; 0
/// for any other op, or a slice_grad that is not such a pad.
int64_t padOf(Operation *op);

/// Checks that `ops` (in block order) can form one region over `d`: each op
/// runs over d, and every operand produced inside the set is read in the
/// layout it was produced in. Whole-region scalars (a loss) and padded
/// values must not be read inside. `why` gets the reason on failure.
bool regionIsLegal(ArrayRef<Operation *> ops, Domain d, std::string *why);

/// The domain of a set: the largest own domain (by elements, then columns).
Domain regionDomain(ArrayRef<Operation *> ops);

} // namespace mlir::tcc::fusion

#endif // TCC_PASSES_FUSIONMODEL_H
