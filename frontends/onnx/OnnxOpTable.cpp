//===- OnnxOpTable.cpp - ONNX (op_type, opset) -> builder -----------------===//
//
// The one place that says what the frontend supports. A row covers the opset
// range whose semantics its builder implements; an op whose definition
// changed meaning within the range gets the versions handled inside the
// builder (Softmax before/after 13, the axes input of ReduceSum >= 13 and
// ReduceMean >= 18). Rows start at the oldest opset with the same meaning
// (tested from 11); 18 is the newest opset checked against.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxImporter.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tcc;

static const OnnxOpEntry kOpTable[] = {
    // Math (OnnxOpsMath.cpp). Add..Div before 7 had `broadcast` and `axis`
    // attributes instead of NumPy broadcasting, Gemm before 7 `broadcast`
    // (the builders handle both); before 6 an ignorable `consumed_inputs`.
    {"Add", 1, 18, importAdd},
    {"Sub", 1, 18, importSub},
    {"Mul", 1, 18, importMul},
    {"Div", 1, 18, importDiv},
    {"Relu", 6, 18, importRelu},
    {"MatMul", 1, 18, importMatMul},
    {"Gemm", 1, 18, importGemm},
    {"ReduceSum", 1, 18, importReduceSum},
    {"ReduceMean", 1, 18, importReduceMean},
    {"Softmax", 1, 18, importSoftmax},
    {"LogSoftmax", 1, 18, importLogSoftmax},
    // Math functions, normalization, dropout (OnnxOpsActivation.cpp). The
    // unary functions had a `consumed_inputs` attribute before 6 (Erf came
    // at 9); Neg folds on integer constants. Pow broadcasts like NumPy from
    // 7 and takes integer exponents from 12. Dropout 7 to 11 is
    // inference-only (identity); from 12 ratio and training_mode are inputs.
    // Gelu is an op from opset 20.
    {"Exp", 6, 18, importExp},
    {"Log", 6, 18, importLog},
    {"Sqrt", 6, 18, importSqrt},
    {"Tanh", 6, 18, importTanh},
    {"Sigmoid", 6, 18, importSigmoid},
    {"Erf", 9, 18, importErf},
    {"Neg", 6, 18, importNeg},
    {"Reciprocal", 6, 18, importReciprocal},
    {"Pow", 7, 18, importPow},
    {"Gelu", 20, 20, importGelu},
    {"LayerNormalization", 17, 18, importLayerNormalization},
    {"Dropout", 7, 11, importDropoutInference},
    {"Dropout", 12, 18, importDropout},
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
    {"Clip", 6, 28, importClip},
    // Shape and data movement (OnnxOpsShape.cpp). Reshape took its shape as
    // an attribute before 5.
    {"Reshape", 5, 18, importReshape},
    {"Flatten", 1, 18, importFlatten},
    {"Transpose", 1, 18, importTranspose},
    {"Identity", 1, 18, importIdentity},
    {"Constant", 1, 18, importConstant},
    // Gathers, slices, joins (OnnxOpsData.cpp): fold on constants, run
    // otherwise. Axes moved from attributes to inputs at 13 (Unsqueeze,
    // Squeeze, Split's sizes) and 10 (Slice), Shape got start/end at 15 and
    // Split num_outputs at 18: the builders handle both forms.
    {"Gather", 1, 18, importGather},
    {"Shape", 1, 18, importShape},
    {"Size", 1, 18, importSize},
    {"Unsqueeze", 1, 18, importUnsqueeze},
    {"Squeeze", 1, 18, importSqueeze},
    {"Concat", 4, 18, importConcat},
    {"Split", 2, 18, importSplit},
    {"Slice", 1, 18, importSlice},
    {"Expand", 8, 18, importExpand},
    // Selection, comparison, casts (OnnxOpsLogic.cpp). Equal before 7 had a
    // `broadcast` attribute, Cast before 6 a string `to`.
    {"Where", 9, 18, importWhere},
    {"Equal", 7, 18, importEqual},
    {"Cast", 6, 18, importCast},
    {"ConstantOfShape", 9, 18, importConstantOfShape},
    {"Range", 11, 18, importRange},
    // Convolution, pooling, batch norm (OnnxOpsConv.cpp). MaxPool got
    // ceil_mode and dilations at 10, AveragePool count_include_pad at 7 and
    // ceil_mode at 10: absent attributes take their defaults. Batch norm
    // lost `spatial` at 9; its running statistics are state.
    {"Conv", 1, 18, importConv},
    {"MaxPool", 1, 18, importMaxPool},
    {"AveragePool", 7, 18, importAveragePool},
    {"GlobalAveragePool", 1, 18, importGlobalAveragePool},
    {"BatchNormalization", 9, 18, importBatchNormalization,
     batchNormalizationState},
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
