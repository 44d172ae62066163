//===- OnnxInitializerRoles.h - Parameters, state, constants -*- C++ -*-===//
//
// Exporters store everything a module holds as initializers: weights, but
// also buffers and constants (causal masks, exponents, eps, shapes). Which of
// them train decides the model: training an exponent of 2.0 diverges. The
// roles come from the user's patterns (--freeze, --trainable) and, without
// them, from the graph: an initializer whose value reaches the outputs only
// through non-differentiable inputs (a shape, indices, an exponent, a
// condition, a comparison) is a constant, as is a rank-0 scalar, one
// holding infinities (an additive mask) and one the dynamo exporter's
// metadata calls a buffer.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXINITIALIZERROLES_H
#define TCC_FRONTENDS_ONNX_ONNXINITIALIZERROLES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
} // namespace onnx

namespace mlir::tcc {

struct OnnxInitializerRole {
  enum Kind { Param, State, Constant };
  std::string name;
  Kind kind = Param;
  /// Why, for `tcc compile --report`: "--freeze 'emb*'", "a rank-0
  /// scalar", "reaches only non-differentiable inputs (input 1 of Pow
  /// 'pow_3')", ...
  std::string why;
  std::vector<int64_t> shape;
  int32_t dataType = 0;
};

/// Whether input `index` of a default-domain node carries no gradient:
/// shapes, axes, indices, exponents, conditions, comparison and logic
/// operands, bounds of Clip, and every input of ops whose result is an
/// integer, a bool or piecewise constant. Unknown ops: differentiable.
bool isNonDifferentiableInput(const onnx::NodeProto &node, int index);

/// The role of every initializer of `g`, in initializer order. `state`
/// names the initializers an op updates (batch norm statistics). `freeze`
/// and `trainable` are glob patterns (llvm::GlobPattern: *, ?, [...]);
/// with `trainable` given, only the float initializers it matches train.
/// False with `error` set when a pattern is malformed or matches no
/// initializer.
bool assignInitializerRoles(const onnx::GraphProto &g,
                            const llvm::StringSet<> &state,
                            const std::vector<std::string> &freeze,
                            const std::vector<std::string> &trainable,
                            std::vector<OnnxInitializerRole> &roles,
                            std::string &error);

} // namespace mlir::tcc

#endif // TCC_FRONTENDS_ONNX_ONNXINITIALIZERROLES_H
