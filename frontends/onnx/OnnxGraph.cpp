//===- OnnxGraph.cpp - Value map and per-node helpers ---------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include "mlir/IR/Location.h"

using namespace mlir;
using namespace mlir::tcc;

//===----------------------------------------------------------------------===//
// GraphState
//===----------------------------------------------------------------------===//

GraphState::GraphState(MLIRContext *ctx, StringRef sourceName)
    : ctx(ctx), b(ctx), source(sourceName.str()),
      // ONNX keeps no source positions, so every location points at the file;
      // the NameLoc around it says which node or tensor is meant.
      file(FileLineColLoc::get(ctx, sourceName, 0, 0)) {}

Location GraphState::nameLoc(StringRef name) const {
  return NameLoc::get(StringAttr::get(ctx, name), file);
}

OnnxValue *GraphState::lookup(StringRef name) {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

void GraphState::define(StringRef name, OnnxValue value) {
  values[name] = value;
}

Value GraphState::materialize(OnnxValue &value) {
  if (!value.value) {
    // The first use dominates every later one: nodes are imported in
    // topological order into one block.
    Location loc = value.loc ? Location(value.loc) : file;
    DenseElementsAttr c = value.constant;
    Type et = c.getElementType();
    // Narrow integers run as i64 (the runtime's one integer type); the
    // entry keeps the typed constant for further folding.
    if (isNarrowInt(et)) {
      bool zext = et.isUnsignedInteger();
      c = c.mapValues(IntegerType::get(ctx, 64), [&](const APInt &x) {
        return zext ? x.zext(64) : x.sext(64);
      });
      value.declared = et;
    }
    value.value = ConstantOp::create(b, loc, c);
  }
  return value.value;
}

InFlightDiagnostic GraphState::emitUnsupported(Location loc,
                                               StringRef feature) {
  if (!importStatus.unsupported) {
    importStatus.unsupported = true;
    importStatus.feature = feature.str();
  }
  return mlir::emitError(loc);
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

NodeImporter::NodeImporter(GraphState &graph, const onnx::NodeProto &node,
                           StringRef displayName, int64_t opset)
    : graph(graph), node(node), displayName(displayName.str()), version(opset),
      location(graph.nameLoc(displayName)) {}

std::string NodeImporter::describe() const {
  return "node '" + displayName + "' (op_type '" + node.op_type() + "')";
}

InFlightDiagnostic NodeImporter::emitError() {
  return mlir::emitError(location) << describe() << ": ";
}

InFlightDiagnostic NodeImporter::emitUnsupported(StringRef what) {
  std::string feature = opType().str() + " (" + what.str() + ")";
  return graph.emitUnsupported(location, feature) << describe() << ": ";
}

bool NodeImporter::hasInput(unsigned i) const {
  return i < (unsigned)node.input_size() && !node.input(i).empty();
}

FailureOr<OnnxValue *> NodeImporter::lookupInput(unsigned i,
                                                 bool allowSequence) {
  if (!hasInput(i))
    return emitError() << "missing input " << i;
  OnnxValue *v = graph.lookup(node.input(i));
  if (!v)
    return emitError() << "input '" << node.input(i)
                       << "' is not defined by any earlier node, graph input "
                          "or initializer";
  if (v->sequence && !allowSequence)
    return emitError() << "input '" << node.input(i)
                       << "' is a sequence; this input takes a tensor";
  return v;
}

FailureOr<ArrayRef<OnnxValue>> NodeImporter::sequenceInput(unsigned i) {
  FailureOr<OnnxValue *> v = lookupInput(i, /*allowSequence=*/true);
  if (failed(v))
    return failure();
  if (!(*v)->sequence)
    return emitError() << "input '" << node.input(i)
                       << "' is a tensor; this input takes a sequence";
  return ArrayRef<OnnxValue>(*(*v)->sequence);
}

FailureOr<OnnxValue> NodeImporter::tensorEntry(unsigned i) {
  FailureOr<OnnxValue *> v = lookupInput(i);
  if (failed(v))
    return failure();
  return **v;
}

FailureOr<RankedTensorType> NodeImporter::inputType(unsigned i) {
  FailureOr<OnnxValue *> v = lookupInput(i);
  if (failed(v))
    return failure();
  // A constant's own type, even once materialized (narrow ints as i64).
  Type type = (*v)->constant ? (*v)->constant.getType() : (*v)->value.getType();
  return cast<RankedTensorType>(type);
}

FailureOr<Type> NodeImporter::declaredType(unsigned i) {
  FailureOr<OnnxValue *> v = lookupInput(i);
  if (failed(v))
    return failure();
  return declaredElementType(**v);
}

FailureOr<Value> NodeImporter::input(unsigned i) {
  FailureOr<RankedTensorType> type = inputType(i);
  if (failed(type))
    return failure();
  if (!type->getElementType().isF32()) {
    std::string elementType;
    llvm::raw_string_ostream os(elementType);
    os << type->getElementType() << " input";
    return emitUnsupported(elementType)
           << "input '" << node.input(i) << "' has type " << *type
           << "; only float32 tensors flow through the graph";
  }
  return graph.materialize(*graph.lookup(node.input(i)));
}

FailureOr<Value> NodeImporter::anyInput(unsigned i) {
  FailureOr<OnnxValue *> v = lookupInput(i);
  if (failed(v))
    return failure();
  DenseElementsAttr c = (*v)->constant;
  if (c && isNarrowInt(c.getElementType()) &&
      !narrowUseExact(opType(), i, c.getElementType())) {
    std::string t;
    llvm::raw_string_ostream os(t);
    os << c.getElementType();
    return emitUnsupported("run-time " + t + " input")
           << "input '" << node.input(i) << "' (" << t
           << ") would be computed as int64 here, which is not exact for " << t;
  }
  return graph.materialize(**v);
}

FailureOr<SmallVector<Value>> NodeImporter::inputs(unsigned n) {
  SmallVector<Value> out;
  for (unsigned i = 0; i < n; ++i) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    out.push_back(*v);
  }
  return out;
}

DenseElementsAttr NodeImporter::constantInput(unsigned i) {
  if (!hasInput(i))
    return {};
  OnnxValue *v = graph.lookup(node.input(i));
  return v ? v->constant : DenseElementsAttr();
}

FailureOr<SmallVector<int64_t>> NodeImporter::constantInts(unsigned i,
                                                           StringRef what) {
  FailureOr<OnnxValue *> v = lookupInput(i);
  if (failed(v))
    return failure();
  DenseElementsAttr c = (*v)->constant;
  // Valid ONNX, but tcc compiles for static shapes and constant axes.
  if (!c)
    return emitUnsupported("non-constant input " + std::to_string(i))
           << what << " (input '" << node.input(i)
           << "') is not a constant; tcc needs it known at compile time";
  if (!c.getElementType().isInteger())
    return emitError() << what << " (input '" << node.input(i) << "') has type "
                       << c.getType() << ", expected an integer tensor";
  SmallVector<int64_t> out;
  for (const APInt &x : c.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

const onnx::AttributeProto *NodeImporter::attr(StringRef name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

FailureOr<int64_t> NodeImporter::intAttr(StringRef name, int64_t dflt) {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return dflt;
  if (a->type() != onnx::AttributeProto::INT)
    return emitError() << "attribute '" << name << "' should be an int";
  return a->i();
}

FailureOr<float> NodeImporter::floatAttr(StringRef name, float dflt) {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return dflt;
  if (a->type() != onnx::AttributeProto::FLOAT)
    return emitError() << "attribute '" << name << "' should be a float";
  return a->f();
}

FailureOr<std::optional<SmallVector<int64_t>>>
NodeImporter::intsAttr(StringRef name) {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::optional<SmallVector<int64_t>>();
  if (a->type() != onnx::AttributeProto::INTS)
    return emitError() << "attribute '" << name << "' should be a list of ints";
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(a->ints().begin(), a->ints().end()));
}

FailureOr<int64_t> NodeImporter::normalizeAxis(StringRef what, int64_t axis,
                                               int64_t rank, int64_t extra) {
  int64_t hi = rank + extra;
  if (axis < -rank || axis >= hi)
    return emitError() << what << " = " << axis
                       << " is out of range for a rank-" << rank
                       << " input (expected [" << -rank << ", " << hi - 1
                       << "])";
  return axis < 0 ? axis + rank : axis;
}

void NodeImporter::setOutput(unsigned i, Value value, Type declared) {
  if (i < (unsigned)node.output_size() && !node.output(i).empty())
    graph.define(node.output(i), OnnxValue{value, {}, {}, declared});
}

void NodeImporter::setConstantOutput(unsigned i, DenseElementsAttr value) {
  if (i < (unsigned)node.output_size() && !node.output(i).empty())
    graph.define(node.output(i), OnnxValue{{}, value, location});
}

void NodeImporter::setSequenceOutput(unsigned i,
                                     std::vector<OnnxValue> elements) {
  if (i < (unsigned)node.output_size() && !node.output(i).empty()) {
    OnnxValue v;
    v.sequence =
        std::make_shared<const std::vector<OnnxValue>>(std::move(elements));
    graph.define(node.output(i), v);
  }
}

void NodeImporter::setEntryOutput(unsigned i, const OnnxValue &value) {
  if (i < (unsigned)node.output_size() && !node.output(i).empty())
    graph.define(node.output(i), value);
}

// Identity passes sequences through as well.
LogicalResult NodeImporter::forwardInput(unsigned i, unsigned input) {
  FailureOr<OnnxValue *> v = lookupInput(input, /*allowSequence=*/true);
  if (failed(v))
    return failure();
  if (i < (unsigned)node.output_size() && !node.output(i).empty())
    graph.define(node.output(i), **v);
  return success();
}

LogicalResult NodeImporter::inferTypes(InferFn infer,
                                       SmallVectorImpl<Type> &types) {
  // The tcc ops explain shape errors themselves; catch that text and report
  // it as this node's error, so the user learns which ONNX node is wrong.
  std::string message;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler capture(context(), [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      if (!message.empty())
        message += "; ";
      message += diag.str();
      return success();
    });
    result = infer(location, types);
  }
  if (failed(result))
    return emitError() << (message.empty() ? "cannot infer the result type"
                                           : message);
  return success();
}

FailureOr<Value> NodeImporter::reshape(Value value, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  auto result = RankedTensorType::get(shape, type.getElementType());
  if (result.getNumElements() != type.getNumElements())
    return emitError() << "cannot reshape " << shapeStr(type.getShape()) << " ("
                       << type.getNumElements() << " elements) to "
                       << shapeStr(shape) << " (" << result.getNumElements()
                       << " elements)";
  return ReshapeOp::create(builder(), location, result, value).getResult();
}

Value NodeImporter::scalar(float value) {
  auto type = RankedTensorType::get({}, builder().getF32Type());
  return ConstantOp::create(builder(), location,
                            DenseElementsAttr::get(type, value));
}
