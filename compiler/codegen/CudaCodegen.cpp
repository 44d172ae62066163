//===- CudaCodegen.cpp - CUDA C for tcc.fused regions ---------------------===//
//
// Each region's node graph is built exactly as for the host library
// (KernelGen::analyze, FusedCodegen.cpp) and written as CUDA C by
// CudaEmit.cpp, so both devices compute the same formulas.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CudaCodegen.h"

#include "compiler/codegen/FusedCodegenInternal.h"

using namespace mlir;
using namespace ::tcc::fusedgen;

namespace tcc {
FailureOr<CudaSource> generateCudaSource(ArrayRef<Operation *> fusedOps) {
  CudaSource out;
  out.source = std::string(cudaPrelude()) + "\n";
  for (auto [i, o] : llvm::enumerate(fusedOps)) {
    auto f = cast<FusedOp>(o);
    f.setKernel(static_cast<int64_t>(i));
    KernelGen gen(f, (int)i);
    if (failed(gen.analyze()))
      return failure();
    std::string code;
    rt::DeviceKernel k;
    if (failed(emitCudaKernel(gen, code, k)))
      return failure();
    out.source += code + "\n";
    out.kernels.push_back(std::move(k));
  }
  return out;
}

FailureOr<CudaSource> generateCudaSource(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](FusedOp f) { ops.push_back(f); });
  return generateCudaSource(ops);
}
} // namespace tcc
