//===- OnnxFold.h - Import-time tensor arithmetic --------------*- C++ -*-===//
//
// Not a public header: the helpers the data-movement and logic builders
// (OnnxOpsData.cpp, OnnxOpsLogic.cpp) use to fold ops on constants, and the
// reading of scalar inputs that tcc needs as constants (Clip's bounds,
// Dropout's ratio). Constants are DenseElementsAttr of f32, i1 or integer
// elements of the ONNX type's width and signedness (i8..i64, ui8..ui64).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXFOLD_H
#define TCC_FRONTENDS_ONNX_ONNXFOLD_H

#include "frontends/onnx/OnnxGraph.h"

namespace mlir::tcc::fold {

/// Results larger than this are computed at run time rather than stored in
/// the artifact (a mask broadcast to [B,H,T,T], say).
constexpr int64_t kMaxFoldElements = int64_t(1) << 22;

int64_t numElements(ArrayRef<int64_t> shape);
/// For each element of `out` (row-major), the flat index of the element of
/// `in` that NumPy broadcasting reads there.
SmallVector<int64_t> broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out);
/// Integer elements widened to int64 (bools as 0/1, unsigned types
/// zero-extended; a ui64 above INT64_MAX reads negative, which the
/// importer's declared-type check keeps away from ops it would change).
SmallVector<int64_t> intValues(DenseElementsAttr c);
SmallVector<double> floatValues(DenseElementsAttr c);
/// A constant of `type` (f32, i1, i32 or i64 elements) from int64 values;
/// narrower integers wrap, bools are `v != 0`.
DenseElementsAttr fromInts(RankedTensorType type, ArrayRef<int64_t> v);
DenseElementsAttr fromFloats(RankedTensorType type, ArrayRef<double> v);
/// The elements of `c` at the flat indices `map`, as a tensor of `shape`.
DenseElementsAttr take(DenseElementsAttr c, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> map);
/// The elements of several constants of one element type, end to end (1-D).
DenseElementsAttr joinFlat(ArrayRef<DenseElementsAttr> parts);
/// Whether every input is a constant and a result of `shape` is small
/// enough to store.
bool foldable(ArrayRef<DenseElementsAttr> inputs, ArrayRef<int64_t> shape);

/// The shape all of `types` broadcast to, or an error at the node naming
/// them.
FailureOr<SmallVector<int64_t>> broadcastAll(NodeImporter &node,
                                             ArrayRef<RankedTensorType> types);
/// The types of inputs [0, n), or an error at the node.
FailureOr<SmallVector<RankedTensorType>> inputTypes(NodeImporter &node,
                                                    unsigned n);

/// The one value of a constant whose elements are all equal (any numeric
/// element type), or nullopt.
std::optional<double> splatNumber(DenseElementsAttr c);
/// Input `i` as a constant scalar (float or integer/bool), or `dflt` when
/// omitted; `what` names it in errors: one that is not a constant is
/// unsupported, or, when it is a trainable initializer, an error that says
/// to --freeze it.
FailureOr<double> constantScalar(NodeImporter &node, unsigned i,
                                 StringRef what, double dflt);

} // namespace mlir::tcc::fold

#endif // TCC_FRONTENDS_ONNX_ONNXFOLD_H
