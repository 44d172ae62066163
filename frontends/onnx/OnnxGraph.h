//===- OnnxGraph.h - Importer internals shared by the op builders -*- C++
//-*-===//
//
// Not a public header: the importer (OnnxImporter.cpp), the op table
// (OnnxOpTable.cpp) and the op builders (OnnxOps*.cpp) share these.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTENDS_ONNX_ONNXGRAPH_H
#define TCC_FRONTENDS_ONNX_ONNXGRAPH_H

#include "dialects/tcc/TccOps.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tcc {

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// What a name in the ONNX graph stands for while importing: a tensor
/// computed in the IR (`value`), one known at import time (`constant`: frozen
/// and integer initializers, Constant nodes, shape arithmetic the importer
/// folds), or both once a constant has been materialized as tcc.constant.
/// Keeping constants symbolic lets shape subgraphs (Shape -> Gather -> Concat
/// -> Reshape) fold at import without ever reaching the IR.
struct OnnxValue {
  Value value;
  DenseElementsAttr constant;
  /// Where the constant came from; a materialized tcc.constant gets it.
  LocationAttr loc;
  /// For a run-time `value` whose ONNX element type is not the IR's: the
  /// narrow integer type an i64 holds (ui8, i32, ...) or the float type an
  /// f32 stands for (f16, bf16, f64). Null when they agree.
  Type declared = {};
  /// Set instead of value and constant for an ONNX sequence: its tensors.
  /// Sequences exist only at import time (SplitToSequence -> SequenceAt,
  /// as PyTorch's dynamo exporter writes torch.split), so each element is
  /// an ordinary tensor value of the IR.
  std::shared_ptr<const std::vector<OnnxValue>> sequence;
};

/// Whether ONNX integer type `t` runs as i64 although it is narrower or
/// unsigned (i8, i16, i32, ui8, ui16, ui32, ui64).
bool isNarrowInt(Type t);
/// The element type ONNX gives `v`: a constant's own, else `declared`, else
/// the IR value's.
Type declaredElementType(const OnnxValue &v);

/// The graph being imported: the name -> value map and the insertion point.
class GraphState {
public:
  GraphState(MLIRContext *ctx, llvm::StringRef sourceName);

  MLIRContext *context() const { return ctx; }
  OpBuilder &builder() { return b; }
  /// FileLineColLoc of the source file; nodes wrap it in a NameLoc.
  Location fileLoc() const { return file; }
  Location nameLoc(llvm::StringRef name) const;
  llvm::StringRef sourceName() const { return source; }

  /// The entry for `name`, or null when nothing defines it (yet).
  OnnxValue *lookup(llvm::StringRef name);
  void define(llvm::StringRef name, OnnxValue value);
  /// The IR value of an entry, emitting tcc.constant (once) for a constant.
  Value materialize(OnnxValue &value);

  /// An error for something the importer does not implement, as opposed to
  /// an invalid model: records `feature` (see OnnxImportStatus; the first one
  /// wins) so that callers can count the model as unsupported.
  InFlightDiagnostic emitUnsupported(Location loc, llvm::StringRef feature);
  const OnnxImportStatus &status() const { return importStatus; }

  //===--- Running state --------------------------------------------------===//
  /// Initializers that ops read and update every step but that are not
  /// trained (BatchNormalization's running statistics) become arguments of
  /// kind "state"; the importer marks them before importing nodes.
  void markState(llvm::StringRef name) { stateNames.insert(name); }
  bool isState(llvm::StringRef name) const { return stateNames.contains(name); }
  /// Records `value` as the value of state `name` after the step, returned
  /// by @forward as an "update" result. False when it already has one.
  bool setStateUpdate(llvm::StringRef name, Value value) {
    for (const auto &u : updates)
      if (u.first == name)
        return false;
    updates.emplace_back(name.str(), value);
    return true;
  }
  llvm::ArrayRef<std::pair<std::string, Value>> stateUpdates() const {
    return updates;
  }
  /// The model's producer_name ("pytorch" for torch.onnx.export), for ops
  /// whose training semantics differ between ONNX and that framework.
  llvm::StringRef producer() const { return producerName; }
  void setProducer(llvm::StringRef name) { producerName = name.str(); }
  /// OnnxImportOptions::batchNormTrain.
  bool batchNormTrain() const { return forceBatchNormTrain; }
  void setBatchNormTrain(bool on) { forceBatchNormTrain = on; }
  /// True the first time `what` is asked about: model-wide warnings are
  /// said once, not once per node.
  bool firstWarning(llvm::StringRef what) { return warned.insert(what).second; }

private:
  MLIRContext *ctx;
  OpBuilder b;
  std::string source;
  Location file;
  llvm::StringMap<OnnxValue> values;
  OnnxImportStatus importStatus;
  llvm::StringSet<> stateNames, warned;
  std::vector<std::pair<std::string, Value>> updates;
  std::string producerName;
  bool forceBatchNormTrain = false;
};

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

/// One node under import: typed access to its inputs and attributes, result
/// binding, and errors that name the node.
class NodeImporter {
public:
  NodeImporter(GraphState &graph, const onnx::NodeProto &node,
               llvm::StringRef displayName, int64_t opset);

  const onnx::NodeProto &proto() const { return node; }
  llvm::StringRef name() const { return displayName; }
  llvm::StringRef opType() const { return node.op_type(); }
  int64_t opset() const { return version; }
  Location loc() const { return location; }
  OpBuilder &builder() { return graph.builder(); }
  MLIRContext *context() const { return graph.context(); }

  /// "node 'n' (op_type 'T')": how errors and notes name this node.
  std::string describe() const;
  /// An error at the node, its text starting with describe() and ": ".
  InFlightDiagnostic emitError();
  /// Like emitError(), for a variant of the op the importer does not
  /// implement (an attribute value, an input element type...) rather than an
  /// invalid node; `what` names it ("attribute auto_pad=SAME_LOWER") and the
  /// import status records "<op_type> (<what>)".
  InFlightDiagnostic emitUnsupported(llvm::StringRef what);

  //===--- Inputs ---------------------------------------------------------===//
  /// Declared inputs, including omitted optional ones (empty names).
  unsigned numInputs() const { return node.input_size(); }
  /// Whether input `i` is declared and not omitted.
  bool hasInput(unsigned i) const;
  /// Input `i` as a float32 tensor in the IR; constants are materialized.
  FailureOr<Value> input(unsigned i);
  /// Input `i` in the IR whatever its element type (f32, i64, i1); integer
  /// constants are materialized as i64, the one integer type at run time.
  FailureOr<Value> anyInput(unsigned i);
  /// The type of input `i`, whatever its element type.
  FailureOr<RankedTensorType> inputType(unsigned i);
  /// Checks that inputs [0, n) are present and returns them as input(i).
  FailureOr<SmallVector<Value>> inputs(unsigned n);
  /// The element type ONNX gives input `i` (see declaredElementType).
  FailureOr<Type> declaredType(unsigned i);
  /// The value of input `i` when known at import time, else null.
  DenseElementsAttr constantInput(unsigned i);
  /// Input `i`, which must be a sequence: its elements.
  FailureOr<ArrayRef<OnnxValue>> sequenceInput(unsigned i);
  /// Input `i`, which must be a tensor, as a whole entry (value and/or
  /// constant), for ops that move tensors into sequences.
  FailureOr<OnnxValue> tensorEntry(unsigned i);
  /// Input `i`, which must be an integer constant, as int64 values; `what`
  /// says what it is used for in the error when it is not constant.
  FailureOr<SmallVector<int64_t>> constantInts(unsigned i,
                                               llvm::StringRef what);

  //===--- Attributes -----------------------------------------------------===//
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  FailureOr<int64_t> intAttr(llvm::StringRef name, int64_t dflt);
  FailureOr<float> floatAttr(llvm::StringRef name, float dflt);
  /// An INTS attribute, or std::nullopt when absent.
  FailureOr<std::optional<SmallVector<int64_t>>> intsAttr(llvm::StringRef name);
  /// Normalizes `axis` from [-rank, rank + extra) to [0, rank + extra);
  /// `what` names it in the error ("attribute 'axis'").
  FailureOr<int64_t> normalizeAxis(llvm::StringRef what, int64_t axis,
                                   int64_t rank, int64_t extra = 0);

  //===--- Results --------------------------------------------------------===//
  void setOutput(unsigned i, Value value, Type declared = {});
  void setConstantOutput(unsigned i, DenseElementsAttr value);
  void setSequenceOutput(unsigned i, std::vector<OnnxValue> elements);
  /// Binds output `i` to a whole entry (a tensor taken out of a sequence).
  void setEntryOutput(unsigned i, const OnnxValue &value);
  /// Binds output `i` to whatever input `input` is (value and/or constant).
  LogicalResult forwardInput(unsigned i, unsigned input);

  //===--- IR construction ------------------------------------------------===//
  /// Creates a shape-inferring tcc op from its ODS builder arguments (without
  /// result types). An inference failure (say, shapes that do not broadcast)
  /// is reported at this node, prefixed with describe(), instead of the
  /// fatal error the ODS builders raise.
  template <typename OpTy, typename... Args>
  FailureOr<Value> create(Args &&...args) {
    FailureOr<Operation *> op = createOp<OpTy>(std::forward<Args>(args)...);
    if (failed(op))
      return failure();
    return (*op)->getResult(0);
  }
  /// create() for ops with several results.
  template <typename OpTy, typename... Args>
  FailureOr<Operation *> createOp(Args &&...args) {
    OperationState state(location, OpTy::getOperationName());
    OpTy::build(builder(), state, TypeRange(), std::forward<Args>(args)...);
    SmallVector<Type, 1> types;
    auto infer = [&](Location loc, SmallVectorImpl<Type> &out) {
      return OpTy::inferReturnTypes(context(), loc, state.operands,
                                    state.attributes.getDictionary(context()),
                                    state.getRawProperties(), state.regions,
                                    out);
    };
    if (failed(inferTypes(infer, types)))
      return failure();
    state.addTypes(types);
    return builder().create(state);
  }

  /// tcc.reshape of `value` to `shape` (a no-op when the shape is the same).
  FailureOr<Value> reshape(Value value, ArrayRef<int64_t> shape);
  /// A rank-0 float32 tcc.constant.
  Value scalar(float value);
  /// The graph this node belongs to (running state, producer).
  GraphState &graphState() { return graph; }

private:
  using InferFn =
      llvm::function_ref<LogicalResult(Location, SmallVectorImpl<Type> &)>;
  LogicalResult inferTypes(InferFn infer, SmallVectorImpl<Type> &types);
  /// The entry of input `i`; a sequence is an error unless `allowSequence`.
  FailureOr<OnnxValue *> lookupInput(unsigned i, bool allowSequence = false);

  GraphState &graph;
  const onnx::NodeProto &node;
  std::string displayName;
  int64_t version;
  Location location;
};

//===----------------------------------------------------------------------===//
// Op table
//===----------------------------------------------------------------------===//

using OnnxOpBuilder = LogicalResult (*)(NodeImporter &node);
/// The inputs of a node that it updates as running state (see
/// GraphState::markState), given the node and the opset.
using OnnxStateInputs = SmallVector<unsigned> (*)(
    const onnx::NodeProto &node, int64_t opset, const OnnxImportOptions &opts);

/// One row of the op table: op_type in the default domain, the opset range
/// whose semantics the builder implements, the builder, and for ops that
/// update running state, which inputs hold it.
struct OnnxOpEntry {
  const char *opType;
  int64_t minOpset;
  int64_t maxOpset;
  OnnxOpBuilder build;
  OnnxStateInputs stateInputs = nullptr;
};

/// The newest default-domain opset the table was checked against; a model
/// importing a newer one is refused before any node is looked at. The rows
/// spell their ranges out rather than use this constant, so that raising it
/// extends no row whose op has not been checked at the new opset.
constexpr int64_t kNewestOnnxOpset = 28;

llvm::ArrayRef<OnnxOpEntry> onnxOpTable();
/// The entry for a default-domain op at `opset`, or null.
const OnnxOpEntry *findOnnxOp(llvm::StringRef opType, int64_t opset);

// Builders (OnnxOpsMath.cpp).
LogicalResult importMatMul(NodeImporter &node);
LogicalResult importGemm(NodeImporter &node);
LogicalResult importAdd(NodeImporter &node);
LogicalResult importSub(NodeImporter &node);
LogicalResult importMul(NodeImporter &node);
LogicalResult importDiv(NodeImporter &node);
LogicalResult importRelu(NodeImporter &node);
/// The reduced axes of a Reduce* node (sorted, unique, non-negative) and
/// its keepdims, from the `axes` attribute before opset `axesInputSince` and
/// the optional constant input 1 from then on. No axes with
/// noop_with_empty_axes leaves `axes` empty: nothing is reduced (ONNX's
/// reference still applies the element-wise part, as in ReduceSumSquare's
/// x * x).
struct ReduceAxes {
  SmallVector<int64_t> axes;
  bool keepdims;
};
FailureOr<ReduceAxes> reduceAxes(NodeImporter &node, int64_t rank,
                                 int64_t axesInputSince);
LogicalResult importReduceSum(NodeImporter &node);
LogicalResult importReduceMean(NodeImporter &node);
LogicalResult importSoftmax(NodeImporter &node);
LogicalResult importLogSoftmax(NodeImporter &node);
// Builders (OnnxOpsSequence.cpp): sequences of tensors, at import time.
LogicalResult importSplitToSequence(NodeImporter &node);
LogicalResult importSequenceAt(NodeImporter &node);
LogicalResult importSequenceConstruct(NodeImporter &node);
LogicalResult importSequenceEmpty(NodeImporter &node);
LogicalResult importSequenceLength(NodeImporter &node);
LogicalResult importSequenceInsert(NodeImporter &node);
LogicalResult importSequenceErase(NodeImporter &node);
LogicalResult importConcatFromSequence(NodeImporter &node);
/// The window [starts, starts + sizes * steps) of input 0 (of shape `in`):
/// a folded constant when input 0 is one, else a tcc.slice.
FailureOr<OnnxValue> sliceWindow(NodeImporter &node, ArrayRef<int64_t> in,
                                 ArrayRef<int64_t> starts,
                                 ArrayRef<int64_t> sizes,
                                 ArrayRef<int64_t> steps);
// Builders (OnnxOpsEinsum.cpp).
LogicalResult importEinsum(NodeImporter &node);
// Builders (OnnxOpsShape.cpp).
LogicalResult importReshape(NodeImporter &node);
LogicalResult importFlatten(NodeImporter &node);
LogicalResult importTranspose(NodeImporter &node);
LogicalResult importIdentity(NodeImporter &node);
LogicalResult importConstant(NodeImporter &node);
// Builders (OnnxOpsData.cpp): gather, slicing, joins, selection, casts, and
// the shape arithmetic they fold at import.
LogicalResult importGather(NodeImporter &node);
LogicalResult importShape(NodeImporter &node);
LogicalResult importSize(NodeImporter &node);
LogicalResult importUnsqueeze(NodeImporter &node);
LogicalResult importSqueeze(NodeImporter &node);
LogicalResult importConcat(NodeImporter &node);
LogicalResult importSplit(NodeImporter &node);
LogicalResult importSlice(NodeImporter &node);
LogicalResult importExpand(NodeImporter &node);
LogicalResult importWhere(NodeImporter &node);
LogicalResult importCast(NodeImporter &node);
LogicalResult importCastLike(NodeImporter &node);
LogicalResult importConstantOfShape(NodeImporter &node);
LogicalResult importRange(NodeImporter &node);
/// Folds Add/Sub/Mul/Div of two integer constants (shape arithmetic such as
/// `C // H`) or two float32 ones (T5's position buckets): returns true when
/// it bound the output, false when the operands are not both constants of
/// one kind (the caller builds the op).
FailureOr<bool> foldConstantArithmetic(NodeImporter &node);

// Builders (OnnxOpsArith.cpp): variadic sums, and integer arithmetic that
// only folds.
LogicalResult importSum(NodeImporter &node);
LogicalResult importMean(NodeImporter &node);
LogicalResult importMod(NodeImporter &node);
LogicalResult importBitShift(NodeImporter &node);
// Builders (OnnxOpsQuantize.cpp).
LogicalResult importQuantizeLinear(NodeImporter &node);
LogicalResult importDequantizeLinear(NodeImporter &node);
/// Folds Pow of two constants (any numeric types: an integer base keeps its
/// type and wraps); false when they are not both constants.
FailureOr<bool> foldConstantPow(NodeImporter &node);
/// Before opset 7 (Add, Pow, ...): B aligned to A by the `broadcast` and
/// `axis` attributes, reshaped so that NumPy broadcasting agrees
/// (OnnxOpsMath.cpp).
FailureOr<Value> legacyBroadcastRhs(NodeImporter &node, Value a, Value b);

// Builders (OnnxOpsCompare.cpp): comparisons, logic, Min/Max, Trilu,
// ArgMax/ArgMin; ReduceMax/ReduceMin are in OnnxOpsMath.cpp.
LogicalResult importEqual(NodeImporter &node);
LogicalResult importLess(NodeImporter &node);
LogicalResult importLessOrEqual(NodeImporter &node);
LogicalResult importGreater(NodeImporter &node);
LogicalResult importGreaterOrEqual(NodeImporter &node);
LogicalResult importAnd(NodeImporter &node);
LogicalResult importOr(NodeImporter &node);
LogicalResult importXor(NodeImporter &node);
LogicalResult importNot(NodeImporter &node);
LogicalResult importMax(NodeImporter &node);
LogicalResult importMin(NodeImporter &node);
LogicalResult importTrilu(NodeImporter &node);
LogicalResult importArgMax(NodeImporter &node);
LogicalResult importArgMin(NodeImporter &node);
LogicalResult importReduceMax(NodeImporter &node);
LogicalResult importReduceMin(NodeImporter &node);
LogicalResult importIsNaN(NodeImporter &node);
LogicalResult importIsInf(NodeImporter &node);

// Builders (OnnxOpsReduce.cpp): reductions built on reduce_sum, CumSum,
// Hardmax; ReduceProd is in OnnxOpsMath.cpp with the other one-op Reduce*.
LogicalResult importReduceL1(NodeImporter &node);
LogicalResult importReduceL2(NodeImporter &node);
LogicalResult importReduceSumSquare(NodeImporter &node);
LogicalResult importReduceLogSum(NodeImporter &node);
LogicalResult importReduceLogSumExp(NodeImporter &node);
LogicalResult importReduceProd(NodeImporter &node);
LogicalResult importCumSum(NodeImporter &node);
LogicalResult importHardmax(NodeImporter &node);

// Builders (OnnxOpsIndex.cpp): gathers and scatters by data, TopK.
LogicalResult importGatherElements(NodeImporter &node);
LogicalResult importScatterElements(NodeImporter &node);
LogicalResult importGatherND(NodeImporter &node);
LogicalResult importScatterND(NodeImporter &node);
LogicalResult importTopK(NodeImporter &node);
// Builders (OnnxOpsRearrange.cpp): decompositions into older ops.
LogicalResult importTile(NodeImporter &node);
LogicalResult importDepthToSpace(NodeImporter &node);
LogicalResult importSpaceToDepth(NodeImporter &node);
LogicalResult importOneHot(NodeImporter &node);
LogicalResult importEyeLike(NodeImporter &node);
LogicalResult importCompress(NodeImporter &node);

// Builders (OnnxOpsActivation.cpp): element-wise math, LayerNormalization,
// Dropout.
LogicalResult importExp(NodeImporter &node);
LogicalResult importLog(NodeImporter &node);
LogicalResult importSqrt(NodeImporter &node);
LogicalResult importTanh(NodeImporter &node);
LogicalResult importSigmoid(NodeImporter &node);
LogicalResult importErf(NodeImporter &node);
LogicalResult importNeg(NodeImporter &node);
LogicalResult importReciprocal(NodeImporter &node);
LogicalResult importGelu(NodeImporter &node);
LogicalResult importPow(NodeImporter &node);
LogicalResult importLayerNormalization(NodeImporter &node);
LogicalResult importDropoutInference(NodeImporter &node);
LogicalResult importDropout(NodeImporter &node);
/// The `rng.step` state argument of @forward (added on first use) and the
/// FNV-1a hash seeding a node without a seed attribute (OnnxOpsActivation.cpp).
FailureOr<Value> rngStep(NodeImporter &node);
int64_t stableHash(llvm::StringRef s);
// Random numbers (OnnxOpsRandom.cpp): tcc.random.
LogicalResult importRandomNormal(NodeImporter &node);
LogicalResult importRandomUniform(NodeImporter &node);
LogicalResult importRandomNormalLike(NodeImporter &node);
LogicalResult importRandomUniformLike(NodeImporter &node);
LogicalResult importBernoulli(NodeImporter &node);
// Builders (OnnxOpsUnaryFn.cpp): the functions of tcc.unary_fn.
LogicalResult importUnaryFn(NodeImporter &node);
LogicalResult importClip(NodeImporter &node);

// Declared types (OnnxDeclaredTypes.cpp): narrow integers run as i64, so
// an op may see them at run time only where i64 gives ONNX's answer.
/// Refuses (as unsupported) a node that would compute with a run-time
/// narrow integer, or with a UINT64 constant above INT64_MAX, where int64
/// arithmetic is not exact for the declared type.
LogicalResult checkDeclaredInputs(GraphState &graph,
                                  const onnx::NodeProto &node,
                                  llvm::StringRef name);
/// Whether input `index` of `opType` may be a run-time i64 standing for
/// narrow type `t` (the same rule, for constants a builder materializes).
bool narrowUseExact(llvm::StringRef opType, unsigned index, Type t);
/// Says once per model that DOUBLE tensors are computed in float32.
void warnFloat64(GraphState &graph, Location loc);
/// After an op that moves or selects values, its run-time outputs hold the
/// declared type of its data input.
void propagateDeclared(GraphState &graph, const onnx::NodeProto &node);

// Builders (OnnxOpsConv.cpp): convolution, pooling, batch normalization.
LogicalResult importConv(NodeImporter &node);
LogicalResult importMaxPool(NodeImporter &node);
LogicalResult importAveragePool(NodeImporter &node);
LogicalResult importGlobalAveragePool(NodeImporter &node);
LogicalResult importBatchNormalization(NodeImporter &node);
/// The running mean and variance inputs (3, 4) of a BatchNormalization.
SmallVector<unsigned> batchNormalizationState(const onnx::NodeProto &node,
                                              int64_t opset,
                                              const OnnxImportOptions &opts);

// 3-D windows on [N, C, D, H, W] built from the 2-D ops (OnnxOpsConv3d.cpp).
// Attributes are ONNX's: 3 strides/dilations/kernel sizes, 6 pads (begins,
// then ends); ConvTranspose takes its per-axis crops `begin` and `end`.
FailureOr<Value> conv3dAs2d(NodeImporter &node, Value x, Value w, Value bias,
                            ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                            ArrayRef<int64_t> dilations, int64_t groups);
FailureOr<Value> convTranspose3dAs2d(NodeImporter &node, Value x, Value w,
                                     ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> dilations,
                                     ArrayRef<int64_t> begin,
                                     ArrayRef<int64_t> end, int64_t groups);
FailureOr<Value> maxPool3dAs2d(NodeImporter &node, Value x,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations, bool ceil);
FailureOr<Value> avgPool3dAs2d(NodeImporter &node, Value x,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads, bool ceil,
                               bool includePad);

// Builders (OnnxOpsLoss.cpp): losses a graph computes itself.
LogicalResult importNegativeLogLikelihoodLoss(NodeImporter &node);
LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &node);

// Builders (OnnxOpsPad.cpp, OnnxOpsNorm.cpp, OnnxOpsResize.cpp,
// OnnxOpsConvTranspose.cpp): padding, normalizations, resampling, transposed
// convolution, all decomposed into existing tcc ops.
LogicalResult importPad(NodeImporter &node);
LogicalResult importPRelu(NodeImporter &node);
LogicalResult importInstanceNormalization(NodeImporter &node);
LogicalResult importGroupNormalization(NodeImporter &node);
LogicalResult importRMSNormalization(NodeImporter &node);
LogicalResult importMeanVarianceNormalization(NodeImporter &node);
LogicalResult importLRN(NodeImporter &node);
LogicalResult importGlobalMaxPool(NodeImporter &node);
LogicalResult importConvTranspose(NodeImporter &node);
LogicalResult importResize(NodeImporter &node);
LogicalResult importUpsample(NodeImporter &node);
/// `x` padded along `axis` by `before` and `after` copies of the rank-0
/// `fill` (negative counts crop): a slice, broadcasts and a concat.
FailureOr<Value> padAxisConstant(NodeImporter &node, Value x, int64_t axis,
                                 int64_t before, int64_t after, Value fill);

// Builders (OnnxOpsRecurrent.cpp): RNN, GRU, LSTM, unrolled over the
// sequence into matmuls and element-wise ops.
LogicalResult importRNN(NodeImporter &node);
LogicalResult importGRU(NodeImporter &node);
LogicalResult importLSTM(NodeImporter &node);

//===----------------------------------------------------------------------===//
// Tensors (OnnxTensor.cpp)
//===----------------------------------------------------------------------===//

/// "[2,3]", as the tcc ops print shapes in their errors.
std::string shapeStr(ArrayRef<int64_t> shape);
/// The ONNX name of an element type ("FLOAT", "INT64", ...).
std::string onnxTypeName(int32_t dataType);
/// The ONNX element types the importer reads, for error messages.
constexpr const char *kSupportedOnnxTypes =
    "FLOAT, DOUBLE, FLOAT16, BFLOAT16, BOOL, INT8, INT16, INT32, INT64, "
    "UINT8, UINT16, UINT32, UINT64";
/// The MLIR element type of an ONNX tensor data type the importer handles:
/// f32 for every float type (DOUBLE computed in float32), the integer types
/// at their width (unsigned ones as ui8..ui64), i1 for BOOL; else null.
Type onnxElementType(MLIRContext *ctx, int32_t dataType);
/// The data of an initializer or tensor attribute; errors name the tensor
/// (`what`, e.g. "initializer 'w'") at `loc`.
FailureOr<DenseElementsAttr> convertTensor(const onnx::TensorProto &tensor,
                                           llvm::StringRef what, Location loc);
/// The type of a TensorProto (dims and element type), or failure (reported).
FailureOr<RankedTensorType> tensorType(const onnx::TensorProto &tensor,
                                       llvm::StringRef what, Location loc);

} // namespace mlir::tcc

#endif // TCC_FRONTENDS_ONNX_ONNXGRAPH_H
