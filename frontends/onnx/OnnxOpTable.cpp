//===- OnnxOpTable.cpp - ONNX (op_type, opset) -> builder -----------------===//
//
// The one place that says what the frontend supports. A row covers the opset
// range whose semantics its builder implements; where a version changed the
// meaning (an attribute became an input, a new attribute whose non-default
// value changes the result) the builder handles every form in the row or
// refuses the one it cannot compute, naming the opset. The comment on each
// row lists the op's versions (ONNX's changelog, checked against the schemas
// of onnx 1.23 up to opset 28, the newest tcc accepts: kNewestOnnxOpset) and
// what each changed. "types" means a version only added element types
// (bfloat16, int4, float8, ...): a tensor of a type tcc does not support is
// an error at import that names the type, so such versions extend the row.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxImporter.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tcc;

static const OnnxOpEntry kOpTable[] = {
    // Math (OnnxOpsMath.cpp).
    // Add, Sub, Mul, Div: 1, 6 (dropped consumed_inputs; int types), 7
    // (NumPy broadcasting replaced the `broadcast`/`axis` attributes, both
    // handled), 13 and 14 types.
    {"Add", 1, 28, importAdd},
    {"Sub", 1, 28, importSub},
    {"Mul", 1, 28, importMul},
    {"Div", 1, 28, importDiv},
    // Relu: 6 (dropped consumed_inputs), 13 and 14 types.
    {"Relu", 6, 28, importRelu},
    // MatMul: 1, 9 and 13 types.
    {"MatMul", 1, 28, importMatMul},
    // Einsum: 12, unchanged since.
    {"Einsum", 12, 28, importEinsum},
    // Sequences (OnnxOpsSequence.cpp), all from 11, unchanged since.
    {"SplitToSequence", 11, 28, importSplitToSequence},
    {"SequenceAt", 11, 28, importSequenceAt},
    {"SequenceConstruct", 11, 28, importSequenceConstruct},
    {"SequenceEmpty", 11, 28, importSequenceEmpty},
    {"SequenceLength", 11, 28, importSequenceLength},
    {"SequenceInsert", 11, 28, importSequenceInsert},
    {"SequenceErase", 11, 28, importSequenceErase},
    {"ConcatFromSequence", 11, 28, importConcatFromSequence},
    // Gemm: 1, 6, 7 (unidirectional broadcasting of C instead of the
    // `broadcast` attribute, both handled), 9 types, 11 (C optional), 13
    // types.
    {"Gemm", 1, 28, importGemm},
    // ReduceSum: 1, 11 (negative axes), 13 (axes became optional input 1,
    // with noop_with_empty_axes). ReduceMean: the same, axes an input at 18.
    {"ReduceSum", 1, 28, importReduceSum},
    {"ReduceMean", 1, 28, importReduceMean},
    // Softmax, LogSoftmax: 1, 11 (negative axis), 13 (one axis, default -1,
    // instead of coercing to 2-D at axis 1: both handled).
    {"Softmax", 1, 28, importSoftmax},
    {"LogSoftmax", 1, 28, importLogSoftmax},

    // Math functions, normalization, dropout (OnnxOpsActivation.cpp).
    // Exp, Log, Sqrt, Tanh, Sigmoid, Neg, Reciprocal: 6 (dropped
    // consumed_inputs), 13 types. Erf: 9, 13 types.
    {"Exp", 6, 28, importExp},
    {"Log", 6, 28, importLog},
    {"Sqrt", 6, 28, importSqrt},
    {"Tanh", 6, 28, importTanh},
    {"Sigmoid", 6, 28, importSigmoid},
    {"Erf", 9, 28, importErf},
    {"Neg", 6, 28, importNeg},
    {"Reciprocal", 6, 28, importReciprocal},
    // Pow: 1 (`broadcast`/`axis` attributes, handled), 7 (NumPy
    // broadcasting), 12 (integer exponents), 13 and 15 types.
    {"Pow", 1, 28, importPow},
    // Gelu: 20 only. LayerNormalization: 17 only.
    {"Gelu", 20, 28, importGelu},
    {"LayerNormalization", 17, 28, importLayerNormalization},
    // Dropout: 7 (no is_test; inference-only, the identity), 10 types, 12
    // (ratio and training_mode became inputs: training), 13 and 22 types.
    {"Dropout", 7, 11, importDropoutInference},
    {"Dropout", 12, 28, importDropout},

    // The unary function family (OnnxOpsUnaryFn.cpp): tcc.unary_fn. Rows
    // start at the opset that dropped `consumed_inputs` (or introduced the
    // op); later versions only added types (bf16 at 13, 16 or 22), so the
    // meaning holds to 28. Clip's bounds became inputs at 11.
    {"Abs", 6, 28, importUnaryFn},
    {"Sign", 9, 28, importUnaryFn},
    {"Floor", 6, 28, importUnaryFn},
    {"Ceil", 6, 28, importUnaryFn},
    {"Round", 11, 28, importUnaryFn},
    {"Sin", 7, 28, importUnaryFn},
    {"Cos", 7, 28, importUnaryFn},
    {"HardSwish", 14, 28, importUnaryFn},
    {"HardSigmoid", 6, 28, importUnaryFn},
    {"LeakyRelu", 6, 28, importUnaryFn},
    {"Elu", 6, 28, importUnaryFn},
    {"Selu", 6, 28, importUnaryFn},
    {"Softplus", 1, 28, importUnaryFn},
    {"Mish", 18, 28, importUnaryFn},
    // Tan, Asin, Acos, Atan: 7, 22 types. Sinh, Cosh, Asinh, Acosh, Atanh:
    // 9, 22 types. Softsign: 1, 22 types. Shrink: 9. Celu: 12.
    // ThresholdedRelu: 10, 22 types.
    {"Tan", 7, 28, importUnaryFn},
    {"Asin", 7, 28, importUnaryFn},
    {"Acos", 7, 28, importUnaryFn},
    {"Atan", 7, 28, importUnaryFn},
    {"Sinh", 9, 28, importUnaryFn},
    {"Cosh", 9, 28, importUnaryFn},
    {"Asinh", 9, 28, importUnaryFn},
    {"Acosh", 9, 28, importUnaryFn},
    {"Atanh", 9, 28, importUnaryFn},
    {"Softsign", 1, 28, importUnaryFn},
    {"Shrink", 9, 28, importUnaryFn},
    {"Celu", 12, 28, importUnaryFn},
    {"ThresholdedRelu", 10, 28, importUnaryFn},
    {"Clip", 6, 28, importClip},

    // Shape and data movement (OnnxOpsShape.cpp).
    // Reshape: 5 (shape became an input), 13 types, 14 (allowzero: a 0 in
    // the shape is a zero, not a copy; both handled), 19, 21, 23, 24, 25
    // types.
    {"Reshape", 5, 28, importReshape},
    // Flatten: 1, 9 types, 11 (negative axis), 13, 21, 23, 24, 25 types.
    {"Flatten", 1, 28, importFlatten},
    // Transpose: 1, 13, 21, 23, 24, 25 types.
    {"Transpose", 1, 28, importTranspose},
    // Identity: 1, 13, 14 (sequences), 16 (optionals), 19, 21, 23, 24, 25
    // types; tcc has no sequence or optional values.
    {"Identity", 1, 28, importIdentity},
    // Constant: 1, 9 types, 11 (sparse_value: refused), 12 (value_float(s),
    // value_int(s), value_string(s)), 13, 19, 21, 23, 24, 25 types.
    {"Constant", 1, 28, importConstant},

    // Gathers, slices, joins (OnnxOpsData.cpp): fold on constants, run
    // otherwise.
    // Gather: 1, 11 (negative indices), 13 types.
    {"Gather", 1, 28, importGather},
    // Shape: 1, 13 types, 15 (start/end select a range of dimensions), 19,
    // 21, 23, 24, 25 types. Size: 1, 13, 19, 21, 23, 24, 25 types.
    {"Shape", 1, 28, importShape},
    {"Size", 1, 28, importSize},
    // Unsqueeze, Squeeze: 1, 11 (negative axes), 13 (axes became input 1;
    // optional for Squeeze), 21, 23, 24, 25 types.
    {"Unsqueeze", 1, 28, importUnsqueeze},
    {"Squeeze", 1, 28, importSqueeze},
    // Concat: 4 (axis required), 11 (negative axis), 13 types.
    {"Concat", 4, 28, importConcat},
    // Split: 2 (sizes an attribute), 11 (negative axis), 13 (sizes became
    // input 1), 18 (num_outputs; one of the two required).
    {"Split", 2, 28, importSplit},
    // Slice: 1, 10 (starts/ends/axes became inputs, steps added), 11
    // (negative axes), 13 types.
    {"Slice", 1, 28, importSlice},
    // Expand: 8, 13 types.
    {"Expand", 8, 28, importExpand},

    // Selection, comparison, casts (OnnxOpsLogic.cpp).
    // Where: 9, 16 types. Equal: 7 (NumPy broadcasting), 11, 13, 19 types.
    {"Where", 9, 28, importWhere},
    {"Equal", 7, 28, importEqual},
    // Cast: 6 (`to` an int), 9, 13 types, 19 (float8 and `saturate`, which
    // only affects float8 targets), 21, 23 types, 24 (float8e8m0 and
    // `round_mode`, for that target only), 25, 28 types. tcc casts to FLOAT,
    // INT32, INT64 and BOOL, so neither attribute can change its result.
    {"Cast", 6, 28, importCast},
    // ConstantOfShape: 9, 20, 21, 23, 24, 25 types (of `value`).
    {"ConstantOfShape", 9, 28, importConstantOfShape},
    // Range: 11, 27 (float16/bfloat16 and `stash_type` for them).
    {"Range", 11, 28, importRange},

    // Comparisons, logic, extrema (OnnxOpsCompare.cpp). Less, Greater, And,
    // Or, Xor before 7 had a `broadcast` attribute instead of NumPy
    // broadcasting; later versions only add element types. Max and Min
    // broadcast from 8 (before, equal shapes: a special case); CastLike's
    // `saturate` (19) only concerns float8. ReduceMax/ReduceMin take axes as
    // an input from 18 (the builder handles both); ArgMax/ArgMin got
    // select_last_index at 12 (absent: 0).
    {"Less", 7, 28, importLess},
    {"LessOrEqual", 12, 28, importLessOrEqual},
    {"Greater", 7, 28, importGreater},
    {"GreaterOrEqual", 12, 28, importGreaterOrEqual},
    {"And", 7, 28, importAnd},
    {"Or", 7, 28, importOr},
    {"Xor", 7, 28, importXor},
    {"Not", 1, 28, importNot},
    {"CastLike", 15, 28, importCastLike},
    {"Max", 6, 28, importMax},
    {"Min", 6, 28, importMin},
    {"Trilu", 14, 28, importTrilu},
    {"ReduceMax", 1, 28, importReduceMax},
    {"ReduceMin", 1, 28, importReduceMin},
    {"ArgMax", 1, 28, importArgMax},
    {"ArgMin", 1, 28, importArgMin},
    // IsNaN: 9, 13 and 20 types. IsInf: 10, 20 types.
    {"IsNaN", 9, 28, importIsNaN},
    {"IsInf", 10, 28, importIsInf},

    // Reductions, scans, Hardmax (OnnxOpsReduce.cpp). ReduceL1, ReduceL2,
    // ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, ReduceProd: 1, 11
    // (negative axes), 13 types, 18 (axes became optional input 1, with
    // noop_with_empty_axes; both handled). CumSum: 11, 14 types. Hardmax:
    // 1, 11 (negative axis), 13 (one axis, default -1, instead of coercing
    // to 2-D at axis 1: both handled).
    {"ReduceL1", 1, 28, importReduceL1},
    {"ReduceL2", 1, 28, importReduceL2},
    {"ReduceSumSquare", 1, 28, importReduceSumSquare},
    {"ReduceLogSum", 1, 28, importReduceLogSum},
    {"ReduceLogSumExp", 1, 28, importReduceLogSumExp},
    {"ReduceProd", 1, 28, importReduceProd},
    {"CumSum", 11, 28, importCumSum},
    {"Hardmax", 1, 28, importHardmax},

    // Variadic sums and integer arithmetic (OnnxOpsArith.cpp). Sum, Mean: 6
    // (dropped consumed_inputs), 8 (broadcasting; before, equal shapes), 13
    // types. Mod: 10, 13 types. BitShift: 11.
    {"Sum", 6, 28, importSum},
    {"Mean", 6, 28, importMean},
    {"Mod", 10, 28, importMod},
    {"BitShift", 11, 28, importBitShift},
    // QuantizeLinear, DequantizeLinear (OnnxOpsQuantize.cpp): 10, 13
    // (axis), 19 (types; `saturate` for float8 only), 21 (block_size:
    // refused unless 0; output_dtype), 23, 24, 25 types.
    {"QuantizeLinear", 10, 28, importQuantizeLinear},
    {"DequantizeLinear", 10, 28, importDequantizeLinear},

    // Convolution, pooling, batch norm (OnnxOpsConv.cpp).
    // Conv: 1, 11, 22 types.
    {"Conv", 1, 28, importConv},
    // ConvTranspose: 1, 11 (output_shape/auto_pad rules spelled out), 22
    // types; tcc.conv2d_grad_input.
    {"ConvTranspose", 1, 28, importConvTranspose},
    // MaxPool: 1, 8 (Indices output: refused; storage_order), 10 (ceil_mode,
    // dilations), 11, 12 types, 22 (types; says that with ceil_mode a
    // window starting in the end padding is dropped, which tcc does at every
    // opset, as ONNX's reference implementation and PyTorch do).
    {"MaxPool", 1, 28, importMaxPool},
    // AveragePool: 1, 7 (count_include_pad, default 0: opset 1's meaning),
    // 10 (ceil_mode), 11, 19 (dilations: refused unless 1), 22 (as MaxPool).
    {"AveragePool", 1, 28, importAveragePool},
    // GlobalAveragePool: 1, 22 types.
    {"GlobalAveragePool", 1, 28, importGlobalAveragePool},
    // Indexing by data (OnnxOpsIndex.cpp). GatherElements: 11, 13 types.
    // ScatterElements: 11, 13 types, 16 (reduction add/mul), 18 (max/min);
    // Scatter: 9, 11 (negative indices; deprecated for ScatterElements).
    // GatherND: 11, 12 (batch_dims), 13 types. ScatterND: 11, 13 types, 16
    // (reduction add/mul), 18 (max/min). TopK: 1 (k an attribute), 10 (k
    // an input), 11 (largest, sorted, negative axis), 24 types.
    {"GatherElements", 11, 28, importGatherElements},
    {"ScatterElements", 11, 28, importScatterElements},
    {"Scatter", 9, 28, importScatterElements},
    {"GatherND", 11, 28, importGatherND},
    {"ScatterND", 11, 28, importScatterND},
    {"TopK", 1, 28, importTopK},
    // Decompositions (OnnxOpsRearrange.cpp). Tile: 6 (repeats an input),
    // 13 types. DepthToSpace: 1, 11 (mode CRD), 13 types. SpaceToDepth: 1,
    // 13 types. OneHot: 9, 11 (negative axis and indices). EyeLike: 9, 22
    // types. Compress: 9, 11 (negative axis); a constant condition only.
    {"Tile", 6, 28, importTile},
    {"DepthToSpace", 1, 28, importDepthToSpace},
    {"SpaceToDepth", 1, 28, importSpaceToDepth},
    {"OneHot", 9, 28, importOneHot},
    {"EyeLike", 9, 28, importEyeLike},
    {"Compress", 9, 28, importCompress},
    // BatchNormalization: 6 (`is_test` says inference; handled where it
    // agrees with the outputs asked for), 7 (is_test gone: the outputs say
    // it; `spatial` = 0, per-activation statistics, refused), 9 (no
    // `spatial`), 14 (training_mode attribute instead of the statistics
    // outputs asking for training; saved_mean and saved_var gone: both
    // handled), 15 types. Running statistics are state.
    {"BatchNormalization", 6, 28, importBatchNormalization,
     batchNormalizationState},

    // Losses (OnnxOpsLoss.cpp), decomposed into tcc ops.
    // NegativeLogLikelihoodLoss: 12, 13 and 22 types.
    // SoftmaxCrossEntropyLoss: 12, 13 types.
    {"NegativeLogLikelihoodLoss", 12, 28, importNegativeLogLikelihoodLoss},
    {"SoftmaxCrossEntropyLoss", 12, 28, importSoftmaxCrossEntropyLoss},
    // Padding, normalizations, resampling (OnnxOpsPad.cpp, OnnxOpsNorm.cpp):
    // decompositions into existing ops. Pad: 2, 11 (pads and constant_value
    // became inputs; negative pads crop), 13 types, 18 (axes input), 19
    // (wrap mode), 21, 23, 24, 25 types.
    {"Pad", 2, 28, importPad},
    // PRelu: 6 (per-channel slope), 7 (slope broadcasts), 9, 16 types.
    {"PRelu", 6, 28, importPRelu},
    // InstanceNormalization: 6, 22 types. GroupNormalization: 18 (scale and
    // bias per group), 21 (per channel; stash_type). RMSNormalization: 23.
    {"InstanceNormalization", 6, 28, importInstanceNormalization},
    {"GroupNormalization", 18, 28, importGroupNormalization},
    {"RMSNormalization", 23, 28, importRMSNormalization},
    // MeanVarianceNormalization: 9, 13 types. LRN: 1, 13 types.
    // GlobalMaxPool: 1, 22 types.
    {"MeanVarianceNormalization", 9, 28, importMeanVarianceNormalization},
    {"LRN", 1, 28, importLRN},
    {"GlobalMaxPool", 1, 28, importGlobalMaxPool},
    // Resize (OnnxOpsResize.cpp): 10 (scales input; nearest, linear), 11
    // (roi, sizes, coordinate modes, nearest_mode, cubic), 13 (optional
    // roi/scales), 18 (antialias, axes, keep_aspect_ratio_policy), 19
    // (half_pixel_symmetric). Upsample: 7 (scales attribute), 9 (scales
    // input); removed at 10.
    {"Resize", 10, 28, importResize},
    {"Upsample", 7, 9, importUpsample},
    // Recurrent layers (OnnxOpsRecurrent.cpp), unrolled at import. RNN, GRU,
    // LSTM: 1, 3 (GRU: linear_before_reset), 7 (output_sequence dropped:
    // Y and Y_h both optional outputs), 14 (layout), 22 types.
    {"RNN", 7, 28, importRNN},
    {"GRU", 7, 28, importGRU},
    {"LSTM", 7, 28, importLSTM},
    // Random numbers (OnnxOpsRandom.cpp): RandomNormal, RandomUniform and
    // their Like forms 1 (22 adds bfloat16), Bernoulli 15 (22 types).
    {"RandomNormal", 1, 28, importRandomNormal},
    {"RandomUniform", 1, 28, importRandomUniform},
    {"RandomNormalLike", 1, 28, importRandomNormalLike},
    {"RandomUniformLike", 1, 28, importRandomUniformLike},
    {"Bernoulli", 15, 28, importBernoulli},
};

ArrayRef<OnnxOpEntry> mlir::tcc::onnxOpTable() { return kOpTable; }

const OnnxOpEntry *mlir::tcc::findOnnxOp(StringRef opType, int64_t opset) {
  for (const OnnxOpEntry &e : kOpTable)
    if (opType == e.opType && opset >= e.minOpset && opset <= e.maxOpset)
      return &e;
  return nullptr;
}

std::vector<std::string> mlir::tcc::supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const OnnxOpEntry &e : kOpTable)
    ops.push_back(e.opType);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}
