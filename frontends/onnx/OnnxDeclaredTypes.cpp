//===- OnnxDeclaredTypes.cpp - Narrow integers computed as int64 ----------===//
//
// ONNX's INT8 ... UINT64 tensors run as i64, the runtime's one integer type.
// Constants keep their type (folding wraps as ONNX does); a run-time value
// carries it in OnnxValue::declared. An i64 gives ONNX's answer only where
// the result cannot leave the declared type's range: moving and selecting
// values, comparing them, converting them. Everywhere else (Add of two
// UINT8 tensors wraps at 256, BitShift at the width) a run-time narrow
// integer is refused by name, never computed wrong. UINT64 is stricter: an
// i64 holds its bits, so ordering, extrema and division would misread values
// above INT64_MAX; for constants that only matters when one is there.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

using namespace mlir;
using namespace mlir::tcc;

bool mlir::tcc::isNarrowInt(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && it.getWidth() > 1 && (it.getWidth() < 64 || it.isUnsigned());
}

Type mlir::tcc::declaredElementType(const OnnxValue &v) {
  if (v.constant)
    return v.constant.getElementType();
  if (v.declared)
    return v.declared;
  return cast<ShapedType>(v.value.getType()).getElementType();
}

namespace {
/// How an op treats a narrow integer input.
enum class Use {
  Refused,
  /// Moves or selects values: the output holds the same type.
  Moves,
  /// Reads the values: exact on i64 while they are in range (comparisons,
  /// extrema, indices, Cast which converts explicitly).
  Reads,
};
} // namespace

/// The data input whose declared type a value-moving op's output has.
static unsigned movedInput(StringRef op) { return op == "Where" ? 1 : 0; }

static Use useOf(StringRef op, unsigned index, bool isU64) {
  static const char *const kMoves[] = {
      "Identity",  "Reshape", "Flatten", "Squeeze", "Unsqueeze",
      "Transpose", "Concat",  "Slice",   "Split",   "Expand",
      "Gather",    "Tile",    "Where",   "Trilu",   "ReduceMax",
      "ReduceMin", "Max",     "Min",     "MaxPool"};
  // Ops that read an input as an index, a shape or a condition, or convert
  // it explicitly.
  static const char *const kReads[] = {
      "Equal",           "Less",   "LessOrEqual", "Greater",
      "GreaterOrEqual",  "Shape",  "Size",        "Cast",
      "CastLike",        "ArgMax", "ArgMin",      "QuantizeLinear",
      "DequantizeLinear"};
  // Extrema, ordering and division misread a UINT64 above INT64_MAX.
  static const char *const kOrders[] = {
      "ReduceMax",      "ReduceMin", "Max",         "Min",
      "MaxPool",        "Less",      "LessOrEqual", "Greater",
      "GreaterOrEqual", "ArgMax",    "ArgMin",      "Mod"};
  if (isU64 && llvm::is_contained(kOrders, op))
    return Use::Refused;
  // A remainder lies between 0 and the divisor: the output holds a value
  // of the operands' type, as a moved one does.
  if (op == "Mod")
    return Use::Moves;
  if (llvm::is_contained(kMoves, op))
    // Gather's indices and Where's condition are read, not moved.
    return (op == "Gather" && index == 1) || (op == "Where" && index == 0)
               ? Use::Reads
               : Use::Moves;
  if (llvm::is_contained(kReads, op))
    return Use::Reads;
  // A recurrent layer's sequence_lens are lengths (its builder refuses
  // them unless they are constants equal to the sequence length).
  if ((op == "RNN" || op == "GRU" || op == "LSTM") && index == 4)
    return Use::Reads;
  // Float Pow with an integer exponent is exact; an integer base is not.
  if (op == "Pow" && index == 1)
    return Use::Reads;
  return Use::Refused;
}

bool mlir::tcc::narrowUseExact(StringRef opType, unsigned index, Type t) {
  return useOf(opType, index, t.isUnsignedInteger(64)) != Use::Refused;
}

/// Whether a UINT64 constant has an element above INT64_MAX.
static bool hasHighU64(DenseElementsAttr c) {
  if (!c.getElementType().isUnsignedInteger(64))
    return false;
  for (const APInt &x : c.getValues<APInt>())
    if (x.isNegative())
      return true;
  return false;
}

/// Ops whose folding is modular arithmetic or moves bits, so a UINT64
/// constant above INT64_MAX folds right in its 64 bits.
static bool foldsModulo(StringRef op) {
  static const char *const kOps[] = {
      "Add",     "Sub",     "Mul",       "Neg",       "Identity", "Reshape",
      "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat",   "Slice",
      "Split",   "Expand",  "Gather",    "Tile",      "Where",    "Equal",
      "Shape",   "Size",    "CastLike",  "Sum",       "BitShift", "Mod"};
  return llvm::is_contained(kOps, op);
}

LogicalResult mlir::tcc::checkDeclaredInputs(GraphState &graph,
                                             const onnx::NodeProto &node,
                                             StringRef name) {
  StringRef op = node.op_type();
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty())
      continue;
    OnnxValue *v = graph.lookup(node.input(i));
    if (!v || v->sequence)
      continue; // the builder reports it; a sequence's tensors were checked
    Type t = declaredElementType(*v);
    std::string typeName;
    llvm::raw_string_ostream os(typeName);
    os << t;
    if (v->constant) {
      if (hasHighU64(v->constant) && !foldsModulo(op))
        return graph.emitUnsupported(graph.nameLoc(name),
                                     op.str() + " (ui64 above INT64_MAX)")
               << "node '" << name << "' (op_type '" << op << "'): input '"
               << node.input(i)
               << "' is a UINT64 holding a value above INT64_MAX, which tcc "
                  "computes as int64";
      continue;
    }
    if (!isNarrowInt(t) ||
        useOf(op, i, t.isUnsignedInteger(64)) != Use::Refused)
      continue;
    return graph.emitUnsupported(graph.nameLoc(name), op.str() + " (run-time " +
                                                          typeName + " input)")
           << "node '" << name << "' (op_type '" << op << "'): input '"
           << node.input(i) << "' is a " << typeName
           << " computed at run time as int64, where " << op
           << " would not give the " << typeName
           << " result (only moves, comparisons and casts of such values "
              "run; constants fold exactly)";
  }
  return success();
}

void mlir::tcc::propagateDeclared(GraphState &graph,
                                  const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  unsigned src = movedInput(op);
  if ((int)src >= node.input_size() || node.input(src).empty())
    return;
  OnnxValue *in = graph.lookup(node.input(src));
  if (!in || in->sequence || useOf(op, src, false) != Use::Moves)
    return;
  Type t = declaredElementType(*in);
  if (!isNarrowInt(t) && !(in->declared && isa<FloatType>(in->declared)))
    return;
  for (const std::string &out : node.output()) {
    OnnxValue *o = out.empty() ? nullptr : graph.lookup(out);
    if (!o || o->constant || o->declared || !o->value)
      continue;
    Type et = cast<ShapedType>(o->value.getType()).getElementType();
    // Only an output that holds the input's values in the same IR type.
    if ((isNarrowInt(t) && et.isInteger(64)) ||
        (isa<FloatType>(t) && et.isF32()))
      o->declared = t;
  }
}

void mlir::tcc::warnFloat64(GraphState &graph, Location loc) {
  if (graph.firstWarning("float64"))
    mlir::emitWarning(loc)
        << "the model has DOUBLE (float64) tensors; tcc computes them in "
           "float32 (as JAX does without x64) and converts at the inputs and "
           "outputs";
}
