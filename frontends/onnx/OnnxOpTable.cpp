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
    // Math (OnnxOpsMath.cpp). Add..Div before 7 had a `broadcast` attribute
    // instead of NumPy broadcasting; Gemm before 7 likewise.
    {"Add", 7, 18, importAdd},
    {"Sub", 7, 18, importSub},
    {"Mul", 7, 18, importMul},
    {"Div", 7, 18, importDiv},
    {"Relu", 6, 18, importRelu},
    {"MatMul", 1, 18, importMatMul},
    {"Gemm", 7, 18, importGemm},
    {"ReduceSum", 1, 18, importReduceSum},
    {"ReduceMean", 1, 18, importReduceMean},
    {"Softmax", 1, 18, importSoftmax},
    {"LogSoftmax", 1, 18, importLogSoftmax},
    // Shape and data movement (OnnxOpsShape.cpp). Reshape took its shape as
    // an attribute before 5.
    {"Reshape", 5, 18, importReshape},
    {"Flatten", 1, 18, importFlatten},
    {"Transpose", 1, 18, importTranspose},
    {"Identity", 1, 18, importIdentity},
    {"Constant", 1, 18, importConstant},
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
