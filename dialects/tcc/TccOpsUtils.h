//===- TccOpsUtils.h - Helpers shared by the op definition files -*- C++ -*-===//
//
// Only for dialects/tcc/*.cpp: shape formatting for diagnostics and the
// adaptor used by inferReturnTypes.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_DIALECTS_TCC_TCCOPSUTILS_H
#define TCC_DIALECTS_TCC_TCCOPSUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/STLExtras.h"

#include <string>

namespace mlir::tcc::detail {

/// "[2,3]" for diagnostics.
inline std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "," : "") + std::to_string(d);
  return s + "]";
}

inline RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The adaptor of an op under construction. Parsers that infer result types
/// (`tcc.softmax %x {axis = 1 : i64} : tensor<...>`) call inferReturnTypes
/// before the op's properties exist: `props` is null and the inherent
/// attributes are still in `attrs`, so they are converted here.
template <typename OpT>
typename OpT::Adaptor adaptorFor(ValueRange operands, DictionaryAttr attrs,
                                 OpaqueProperties props, RegionRange regions) {
  if (props)
    return typename OpT::Adaptor(operands, attrs, props, regions);
  typename OpT::Properties converted;
  if (attrs)
    (void)OpT::setPropertiesFromAttr(converted, attrs,
                                     [] { return InFlightDiagnostic(); });
  return typename OpT::Adaptor(operands, attrs, converted, regions);
}

/// Result type of an element-wise op with NumPy broadcasting of its first two
/// operands, which must share an element type; the result's element type is
/// theirs unless `resultElement` is given. Diagnostics start with "tcc.NAME:".
LogicalResult inferBroadcast(StringRef name, std::optional<Location> loc,
                             ValueRange operands,
                             SmallVectorImpl<Type> &results,
                             Type resultElement = {});

/// Result type of a reduction of `in` over `axes` (sorted, unique, in
/// range: checked here), keeping them as 1 with `keepdims`.
LogicalResult inferReduce(StringRef name, std::optional<Location> loc,
                          RankedTensorType in, ArrayRef<int64_t> axes,
                          bool keepdims, SmallVectorImpl<Type> &results);

} // namespace mlir::tcc::detail

/// The inferReturnTypes of an element-wise op with NumPy broadcasting of
/// two operands of one element type (tcc.add ... tcc.maximum).
#define TCC_BINARY_INFER(OP, NAME)                                             \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &results) {                                        \
    return detail::inferBroadcast(NAME, loc, operands, results);               \
  }

/// The inferReturnTypes of a reduction op with `axes` and `keepdims`
/// properties (tcc.reduce_sum, reduce_mean, reduce_max, reduce_min).
#define TCC_REDUCE_INFER(OP, NAME)                                             \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attrs, OpaqueProperties props, RegionRange regions,       \
      SmallVectorImpl<Type> &results) {                                        \
    auto adaptor = detail::adaptorFor<OP>(operands, attrs, props, regions);    \
    if (!adaptor.getProperties().axes)                                         \
      return emitOptionalError(loc,                                            \
                               "tcc." NAME ": requires attribute 'axes'");     \
    BoolAttr keepdims = adaptor.getProperties().keepdims;                      \
    return detail::inferReduce(NAME, loc,                                      \
                               detail::rankedType(adaptor.getInput()),         \
                               adaptor.getAxes(),                              \
                               keepdims && keepdims.getValue(), results);      \
  }

#endif // TCC_DIALECTS_TCC_TCCOPSUTILS_H
