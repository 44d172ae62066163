//===- OnnxOpTable.cpp - ONNX (op_type, opset) -> builder -----------------===//
//
// The one place that says what the frontend supports. A row covers the opset
// range whose semantics its builder implements; an op whose definition
// changed meaning within the range gets the versions handled inside the
// builder (Softmax before/after 13, the axes input of ReduceSum >= 13 and
// ReduceMean >= 18). 18 is the newest opset checked against.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxImporter.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tcc;

static const OnnxOpEntry kOpTable[] = {
    // Math (OnnxOpsMath.cpp).
    {"Add", 11, 18, importAdd},
    {"Sub", 11, 18, importSub},
    {"Mul", 11, 18, importMul},
    {"Div", 11, 18, importDiv},
    {"Relu", 11, 18, importRelu},
    {"MatMul", 11, 18, importMatMul},
    {"Gemm", 11, 18, importGemm},
    {"ReduceSum", 11, 18, importReduceSum},
    {"ReduceMean", 11, 18, importReduceMean},
    {"Softmax", 11, 18, importSoftmax},
    {"LogSoftmax", 11, 18, importLogSoftmax},
    // Shape and data movement (OnnxOpsShape.cpp).
    {"Reshape", 11, 18, importReshape},
    {"Flatten", 11, 18, importFlatten},
    {"Transpose", 11, 18, importTranspose},
    {"Identity", 11, 18, importIdentity},
    {"Constant", 11, 18, importConstant},
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
